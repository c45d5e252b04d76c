package plugin_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/plugin/plugintest"
)

// TestWithSelectors: the selectors are sent at registration and at every
// re-registration, Registered and Selectors report them, and the plugin
// gets only the events of what they select.
func TestWithSelectors(t *testing.T) {
	env := plugintest.New(t)
	c := newCalls()
	sel := &nriv1beta1.EventSelector{Namespaces: []string{"a"}, PodLabels: "tier in (web)"}
	p := env.Start(t, &recorder{c: c}, plugin.WithName("sel"), plugin.WithSelectors(sel))
	if got := p.Selectors(); len(got) != 1 || !proto.Equal(got[0], sel) {
		t.Fatalf("Selectors() = %v, want %v", got, sel)
	}
	other, mine := plugintest.Pod(1), plugintest.Pod(2)
	other.Namespace = "b"
	mine.Namespace = "a"
	mine.Labels["tier"] = "web"
	env.RunPodSandbox(t, other)
	env.RunPodSandbox(t, mine)
	req := c.wait(t, "RunPodSandbox", 1).(*nriv1beta1.RunPodSandboxRequest)
	if req.GetPod().GetId() != mine.GetId() {
		t.Fatalf("RunPodSandbox of pod %s, want only %s", req.GetPod().GetId(), mine.GetId())
	}
	first := p.Registered().GetInstanceId()
	env.Restart(t)
	reg := p.WaitRegistered(t, first)
	if len(reg.GetSelectors()) != 1 || !proto.Equal(reg.GetSelectors()[0], sel) {
		t.Fatalf("after re-registration Registered.selectors = %v", reg.GetSelectors())
	}
	// The Synchronize after the restart has the selected pod only.
	syncReq := c.wait(t, "Synchronize", 2).(*nriv1beta1.SynchronizeRequest)
	if len(syncReq.GetPods()) != 1 || syncReq.GetPods()[0].GetId() != mine.GetId() {
		t.Fatalf("Synchronize pods %v, want only %s", syncReq.GetPods(), mine.GetId())
	}
}

func TestWithSelectorsChecked(t *testing.T) {
	_, err := plugin.New(&recorder{c: newCalls()}, plugin.WithName("sel"), plugin.WithIndex("10"),
		plugin.WithSelectors(&nriv1beta1.EventSelector{}, &nriv1beta1.EventSelector{PodLabels: "a in ()"}))
	if err == nil || !strings.Contains(err.Error(), "WithSelectors: selectors[1].pod_labels") {
		t.Fatalf("New = %v, want an error naming WithSelectors and selectors[1].pod_labels", err)
	}
}
