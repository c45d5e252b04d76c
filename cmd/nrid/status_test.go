package main

import (
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
)

// TestPluginStatusHealthAndPolicy: each plugin's status is its own health
// service ("nri.plugin/NN-name": NOT_SERVING while NOT_READY, SERVING when
// READY, SERVICE_UNKNOWN once gone) and never nrid's own health; the
// NOT_READY policy comes from [[plugin]] not_ready, else server.not_ready.
func TestPluginStatusHealthAndPolicy(t *testing.T) {
	n := startNrid(t, "[server]\nnot_ready = \"fail\"\n\n[[plugin]]\nname = \"10-warm\"\nnot_ready = \"skip\"\n")
	cc := n.conn(t)
	watch, err := healthpb.NewHealthClient(cc).Watch(testCtx(t), &healthpb.HealthCheckRequest{Service: PluginHealthPrefix + "10-warm"})
	if err != nil {
		t.Fatal(err)
	}
	next := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		for {
			rsp, err := watch.Recv()
			if err != nil {
				t.Fatalf("waiting for %v: %v", want, err)
			}
			if rsp.GetStatus() == want {
				return
			}
		}
	}
	warm := &testplugin.Plugin{Name: "warm", Index: "10", Status: nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY, StatusReason: "loading"}
	if _, err := warm.Start(testCtx(t), n.sock, n.plugins); err != nil {
		t.Fatal(err)
	}
	defer warm.Stop()
	other := &testplugin.Plugin{Name: "other", Index: "20", Status: nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY}
	if _, err := other.Start(testCtx(t), n.sock, n.plugins); err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	next(healthpb.HealthCheckResponse_NOT_SERVING)
	st, err := healthOf(t, cc, "")
	must(t, err == nil && st == healthpb.HealthCheckResponse_SERVING, "nrid's own health with a NOT_READY plugin: %v %v", st, err)

	plugins, err := listPlugins(t, cc)
	must(t, err == nil && len(plugins) == 2, "plugins: %v %v", plugins, err)
	must(t, plugins[0].GetNotReadyPolicy() == nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP &&
		plugins[1].GetNotReadyPolicy() == nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_FAIL,
		"policies: %v, %v", plugins[0].GetNotReadyPolicy(), plugins[1].GetNotReadyPolicy())
	must(t, plugins[0].GetStatusReason() == "loading", "reason %q", plugins[0].GetStatusReason())

	if err := warm.SetStatus(testCtx(t), nriv1beta1.PluginStatus_PLUGIN_STATUS_READY, ""); err != nil {
		t.Fatal(err)
	}
	next(healthpb.HealthCheckResponse_SERVING)
	warm.Stop()
	next(healthpb.HealthCheckResponse_SERVICE_UNKNOWN)
	st, err = healthOf(t, cc, PluginHealthPrefix+"20-other")
	must(t, err == nil && st == healthpb.HealthCheckResponse_NOT_SERVING, "20-other: %v %v", st, err)
}
