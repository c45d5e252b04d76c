package selector

import (
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// BenchmarkMatchContainer: the cost the select stage adds per plugin with
// selectors and event (two selectors, the second one matching).
func BenchmarkMatchContainer(b *testing.B) {
	set := MustCompile(
		&nriv1beta1.EventSelector{Namespaces: []string{"kube-system", "monitoring"}, PodLabels: "app=node-exporter"},
		&nriv1beta1.EventSelector{Namespaces: []string{"production"}, PodLabels: "app.kubernetes.io/name in (web, api), tier!=canary",
			ContainerNames: []string{"sidecar-*", "app-?"}},
	)
	pod := &nriv1beta1.PodSandbox{Namespace: "production", Labels: map[string]string{
		"app.kubernetes.io/name": "web", "tier": "stable", "pod-template-hash": "7d9c8b6f5"}}
	ctr := &nriv1beta1.Container{Name: "app-0"}
	b.ReportAllocs()
	for b.Loop() {
		if !set.MatchContainer(pod, ctr) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkParseLabels: parsing a pod_labels of the maximum length.
func BenchmarkParseLabels(b *testing.B) {
	s := "app.kubernetes.io/name in (web, api, worker), tier!=canary, !legacy, region=eu-west-1"
	for len(s)+len(",k0123456789=v0123456789") <= MaxLabelSelectorLen {
		s += ",k0123456789=v0123456789"
	}
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseLabels(s); err != nil {
			b.Fatal(err)
		}
	}
}
