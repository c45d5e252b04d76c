package main

import (
	"maps"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

func TestLabelsFor(t *testing.T) {
	for sel, want := range map[string]map[string]string{
		"":                                {},
		"app=web":                         {"app": "web"},
		"app==web, tier in (a,b),!canary": {"app": "web", "tier": "a"},
		"env notin (prod),x!=y,team":      {"team": "nritest"},
		"k in (v1, v2),k2 in (w)":         {"k": "v1", "k2": "w"},
	} {
		if got := labelsFor(sel); !maps.Equal(got, want) {
			t.Errorf("labelsFor(%q) = %v, want %v", sel, got, want)
		}
	}
}

func TestApplySelector(t *testing.T) {
	pod, ctr := eventPod("p"), eventCtr("p", "c")
	applySelector(&nriv1beta1.EventSelector{Namespaces: []string{"team-a", "team-b"}, PodLabels: "app=db",
		ContainerNames: []string{"side*car?"}, RuntimeHandlers: []string{"kata"}}, pod, ctr)
	if pod.GetNamespace() != "team-a" || pod.GetLabels()["app"] != "db" || pod.GetRuntimeHandler() != "kata" || ctr.GetName() != "sidecarx" {
		t.Errorf("pod %v, container name %q", pod, ctr.GetName())
	}
}
