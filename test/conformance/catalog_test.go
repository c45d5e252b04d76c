package conformance_test

import (
	"testing"

	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// TestScenarioCatalog lists the scenarios by origin and checks that names
// are unique.
func TestScenarioCatalog(t *testing.T) {
	seen := map[string]bool{}
	count := map[conformance.Origin]int{}
	for _, s := range conformance.Scenarios() {
		name := s.Group + "/" + s.Name
		if seen[name] {
			t.Errorf("duplicate scenario %q", name)
		}
		seen[name] = true
		count[s.Origin]++
	}
	t.Logf("%d scenarios: %d mirrored from classic NRI, %d gaps, %d deliberate changes",
		len(seen), count[conformance.Upstream], count[conformance.Gap], count[conformance.Deliberate])
}
