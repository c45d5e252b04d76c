package metrics_test

import (
	"slices"
	"testing"

	"github.com/nri-grpc/nri-grpc/internal/metrics"
)

// TestReference: every NRI family with its type and labels, and the
// runtime collectors nrid registers.
func TestReference(t *testing.T) {
	infos, err := metrics.Reference()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]metrics.Info{}
	for _, i := range infos {
		byName[i.Name] = i
	}
	for name, want := range map[string]struct {
		typ    string
		labels []string
	}{
		"nri_plugin_calls_total":           {"counter", []string{"event", "outcome", "plugin"}},
		"nri_plugin_call_duration_seconds": {"histogram", []string{"event", "plugin"}},
		"nri_plugin_evictions_total":       {"counter", []string{"plugin", "reason"}},
		"nri_required_plugin_missing":      {"gauge", []string{"plugin"}},
		"nri_events_held":                  {"gauge", nil},
		"nri_serving":                      {"gauge", nil},
		"go_goroutines":                    {"gauge", nil},
		"process_cpu_seconds_total":        {"counter", nil},
	} {
		got, ok := byName[name]
		if !ok {
			t.Errorf("%s: not in the reference", name)
			continue
		}
		if got.Type != want.typ || !slices.Equal(got.Labels, want.labels) || got.Help == "" {
			t.Errorf("%s = %+v, want type %s, labels %q and a help", name, got, want.typ, want.labels)
		}
	}
	if s := byName["nri_plugin_call_duration_seconds"].Series(); !slices.Equal(s, []string{
		"nri_plugin_call_duration_seconds_bucket", "nri_plugin_call_duration_seconds_sum", "nri_plugin_call_duration_seconds_count"}) {
		t.Errorf("histogram series %q", s)
	}
}
