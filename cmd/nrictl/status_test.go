package main

import (
	"context"
	"strings"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
)

// TestPluginsStatus: `nrictl plugins` shows each plugin's status; -wide
// adds the reason (with control characters neutralized), the NOT_READY
// policy and the not-ready skips; JSON carries the fields.
func TestPluginsStatus(t *testing.T) {
	n := startNrid(t)
	n.plugin("10", "warm", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)
		p.Status, p.StatusReason = nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY, "loading model \x1b[31mred"
	})
	n.plugin("20", "deg", func(p *testplugin.Plugin) { p.Status = nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED })
	n.plugin("30", "fine", nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	if err := n.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)}); err != nil {
		t.Fatal(err)
	}
	out := n.must("plugins")
	contains(t, "plugins", out, "STATUS", "not-ready", "degraded")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "30-fine") && !strings.HasSuffix(strings.TrimSpace(line), "ready") {
			t.Errorf("30-fine's status: %q", line)
		}
	}
	wide := n.must("plugins", "-wide")
	contains(t, "plugins -wide", wide, "STATUS REASON", "loading model ?[31mred", "NOT READY", "skip", "NR SKIPS")
	if strings.Contains(wide, "\x1b") {
		t.Error("the reason's escape sequence reached the terminal")
	}
	var rsp nriv1beta1.ListPluginsResponse
	parseJSON(t, n.must("-o", "json", "plugins"), &rsp)
	if p := rsp.GetPlugins()[0]; p.GetStatus() != nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY || p.GetCounters().GetNotReadySkips() != 1 ||
		p.GetNotReadyPolicy() != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP {
		t.Errorf("JSON: %v", p)
	}
}
