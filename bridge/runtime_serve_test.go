package bridge

import (
	"context"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// TestDirectDecoding: a CreateContainer request decoded straight into the
// v1beta1 message with the aliasing decoder equals the request, and the
// handler finds it (and its bytes) in the context.
func TestDirectDecoding(t *testing.T) {
	want := fixture.CreateContainerRequest(1, 0)
	b, err := want.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	req := directRequest("CreateContainer")
	if err := req.UnmarshalVTUnsafe(b); err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), inboundKey{}, &inbound{req: req, raw: b})
	_, got, ok, err := direct[*nriv1beta1.CreateContainerRequest](ctx)
	if err != nil || !ok {
		t.Fatalf("no directly decoded request: ok %v, %v", ok, err)
	}
	if !got.EqualVT(want) {
		t.Fatal("the direct decoding differs from the request")
	}
	// A handler of another type is an error, not a silent conversion.
	if _, _, _, err := direct[*nriv1beta1.StartContainerRequest](ctx); err == nil {
		t.Fatal("a mismatched handler type was accepted")
	}
	for _, m := range []string{"UpdateContainer", "UpdatePodSandbox", "Configure", "Synchronize", "StateChange"} {
		if directRequest(m) != nil {
			t.Errorf("%s is decoded directly: its handler needs the classic arguments", m)
		}
	}
}

// TestIndirectFallsBackToConversion: without a directly decoded request
// (a StateChange), the handlers convert the classic arguments.
func TestIndirectFallsBackToConversion(t *testing.T) {
	want := fixture.CreateContainerRequest(1, 0)
	pod, err := convert(want.Pod, &v1alpha1.PodSandbox{})
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := convert(want.Container, &v1alpha1.Container{})
	if err != nil {
		t.Fatal(err)
	}
	_, req, err := ctrRequest(context.Background(), pod, ctr, func(p *nriv1beta1.PodSandbox, c *nriv1beta1.Container) *nriv1beta1.StartContainerRequest {
		return &nriv1beta1.StartContainerRequest{Pod: p, Container: c}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !req.Pod.EqualVT(want.Pod) || !req.Container.EqualVT(want.Container) {
		t.Fatal("the converted request differs from the classic arguments")
	}
}
