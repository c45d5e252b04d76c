package conformance_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// TestExecuteDirect runs part of the catalog on the direct path without
// the testing package's subtests, as nritest does.
func TestExecuteDirect(t *testing.T) {
	rep := conformance.Execute(context.Background(), direct, conformance.Select(func(s conformance.ScenarioInfo) bool {
		return s.Group == "PluginConnection" || s.Group == "Configuration"
	}))
	if len(rep.Scenarios) == 0 {
		t.Fatal("no scenario selected")
	}
	for _, s := range rep.Scenarios {
		if s.Result != conformance.Pass {
			t.Errorf("%s/%s: %s: %s", s.Group, s.Name, s.Result, strings.Join(s.Messages, "; "))
		}
	}
}
