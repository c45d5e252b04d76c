package metrics_test

import (
	"fmt"
	"sort"
	"testing"

	dto "github.com/prometheus/client_model/go"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/metrics"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// Metrics records plugin status too.
var _ server.StatusMetrics = (*metrics.Metrics)(nil)

func gauges(fams map[string]*dto.MetricFamily, name string) []string {
	var out []string
	for k, m := range series(fams, name) {
		out = append(out, fmt.Sprintf("%s %g", k, m.GetGauge().GetValue()))
	}
	sort.Strings(out)
	return out
}

// TestStatusMetricsThroughRealServer: a real server's plugin status, a
// NOT_READY plugin's skipped events and a requested resync reach the
// metrics; the status gauge of a plugin that left is gone.
func TestStatusMetricsThroughRealServer(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	srv, sock, dir := startServer(t, m)
	p := &testplugin.Plugin{Name: "lazy", Index: "10", Status: nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY,
		Events: nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)}
	startPlugin(t, sock, dir, p)
	ctx := t.Context()
	if err := srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RequestResync(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	fams := gather(t, m)
	eq(t, "status", gauges(fams, "nri_plugin_status"), []string{
		"plugin=10-lazy,status=degraded 0", "plugin=10-lazy,status=not_ready 1", "plugin=10-lazy,status=ready 0",
	})
	eq(t, "skips", counters(fams, "nri_plugin_not_ready_skips_total"), []string{"event=run_pod_sandbox,plugin=10-lazy 1"})
	eq(t, "resyncs", counters(fams, "nri_plugin_requested_resyncs_total"), []string{"plugin=10-lazy 1"})

	if err := p.SetStatus(ctx, nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED, ""); err != nil {
		t.Fatal(err)
	}
	eq(t, "status after DEGRADED", gauges(gather(t, m), "nri_plugin_status"), []string{
		"plugin=10-lazy,status=degraded 1", "plugin=10-lazy,status=not_ready 0", "plugin=10-lazy,status=ready 0",
	})
	m.PluginStatus("10-lazy", nriv1beta1.PluginStatus_PLUGIN_STATUS_UNSPECIFIED)
	eq(t, "status after leaving", gauges(gather(t, m), "nri_plugin_status"), nil)
}

func TestStatusLabelsAreBounded(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors(), metrics.WithMaxPlugins(1))
	m.PluginStatus("10-a", nriv1beta1.PluginStatus_PLUGIN_STATUS_READY)
	m.PluginStatus("20-b", nriv1beta1.PluginStatus_PLUGIN_STATUS_READY)
	m.RequestedResync("30-c")
	fams := gather(t, m)
	eq(t, "status", gauges(fams, "nri_plugin_status"), []string{
		"plugin=10-a,status=degraded 0", "plugin=10-a,status=not_ready 0", "plugin=10-a,status=ready 1",
	})
	eq(t, "resyncs", counters(fams, "nri_plugin_requested_resyncs_total"), []string{"plugin=other 1"})
}
