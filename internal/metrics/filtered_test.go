package metrics_test

import (
	"context"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/metrics"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/server"
)

// Metrics counts filtered events.
var _ server.FilterMetrics = (*metrics.Metrics)(nil)

// TestFilteredEvents: a real server counts the events a plugin's selectors
// filtered out, by plugin and event; plugin labels stay bounded.
func TestFilteredEvents(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	srv, sock, dir := startServer(t, m)
	startPlugin(t, sock, dir, &testplugin.Plugin{Name: "sel", Index: "10",
		Selectors: []*nriv1beta1.EventSelector{{Namespaces: []string{"kube-system"}}}})
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	for n := range 2 {
		if err := srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(n)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.CreateContainer(ctx, fixture.CreateContainerRequest(0, 0)); err != nil {
		t.Fatal(err)
	}
	eq(t, "filtered", counters(gather(t, m), "nri_plugin_filtered_events_total"), []string{
		"event=create_container,plugin=10-sel 1",
		"event=run_pod_sandbox,plugin=10-sel 2",
		"event=validate_container_adjustment,plugin=10-sel 1",
	})

	b := metrics.New(metrics.WithoutRuntimeCollectors(), metrics.WithMaxPlugins(1))
	for _, p := range []string{"10-a", "20-b", "30-c"} {
		b.Filtered(p, nriv1beta1.Event_EVENT_STOP_CONTAINER)
	}
	eq(t, "bounded", counters(gather(t, b), "nri_plugin_filtered_events_total"), []string{
		"event=stop_container,plugin=10-a 1",
		"event=stop_container,plugin=other 2",
	})
}

// Metrics counts missed events.
var _ server.MissedMetrics = (*metrics.Metrics)(nil)

// TestMissedEvents: nri_plugin_missed_events_total counts by plugin and
// event, with bounded plugin labels.
func TestMissedEvents(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors(), metrics.WithMaxPlugins(1))
	m.MissedEvent("10-a", nriv1beta1.Event_EVENT_CREATE_CONTAINER)
	m.MissedEvent("10-a", nriv1beta1.Event_EVENT_CREATE_CONTAINER)
	m.MissedEvent("20-b", nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)
	eq(t, "missed", counters(gather(t, m), "nri_plugin_missed_events_total"), []string{
		"event=create_container,plugin=10-a 2",
		"event=run_pod_sandbox,plugin=other 1",
	})
}
