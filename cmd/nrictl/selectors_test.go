package main

import (
	"strings"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
)

// TestPluginsShowSelectors: `nrictl plugins` shows each plugin's selectors
// (compact, "all" without) and how many events they filtered; the JSON has
// them in full.
func TestPluginsShowSelectors(t *testing.T) {
	n := startNrid(t)
	sel := &nriv1beta1.EventSelector{Namespaces: []string{"kube-system", "monitoring"}, PodLabels: "app=node-exporter",
		ContainerNames: []string{"exporter-*"}, RuntimeHandlers: []string{"evil\x1b[2J"}}
	n.plugin("10", "sel", func(p *testplugin.Plugin) { p.Selectors = []*nriv1beta1.EventSelector{sel} })
	n.plugin("20", "all", nil)
	n.lifecycle(1) // pod in "production": filtered out for 10-sel
	out := n.must("plugins")
	contains(t, "plugins", out, "FILTERED", "SELECTORS", "ns=kube-system|monitoring labels=app=no…")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 12 && f[0] == "10-sel" && f[11] == "0" {
			t.Errorf("10-sel filtered nothing:\n%s", out)
		}
		if len(f) > 12 && f[0] == "20-all" && (f[11] != "0" || f[12] != "all") {
			t.Errorf("20-all: filtered %s, selectors %s:\n%s", f[11], f[12], out)
		}
	}
	wide := n.must("plugins", "-wide")
	contains(t, "plugins -wide", wide, "ns=kube-system|monitoring labels=app=node-exporter names=exporter-*", "handlers=evil?[2J")
	if strings.Contains(wide, "\x1b") {
		t.Errorf("a control character of a selector reached the terminal:\n%q", wide)
	}
	var rsp nriv1beta1.ListPluginsResponse
	parseJSON(t, n.must("-o", "json", "plugins"), &rsp)
	p := rsp.GetPlugins()[0]
	if len(p.GetSelectors()) != 1 || p.GetSelectors()[0].GetPodLabels() != "app=node-exporter" || p.GetCounters().GetFiltered() == 0 {
		t.Errorf("plugins JSON: %v", p)
	}
}
