package bridge

import (
	"context"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// TestDirectDecoding: a CreateContainer request decoded straight into the
// v1beta1 message with the aliasing decoder equals the request; the methods
// whose answers need the classic arguments are not decoded that way, and a
// request of no event is not served.
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
	if got, ok := req.(*nriv1beta1.CreateContainerRequest); !ok || !got.EqualVT(want) {
		t.Fatal("the direct decoding differs from the request")
	}
	for _, m := range []string{"UpdateContainer", "UpdatePodSandbox", "Configure", "Synchronize", "StateChange"} {
		if directRequest(m) != nil {
			t.Errorf("%s is decoded directly: its handler needs the classic arguments", m)
		}
	}
	rs, err := NewRuntimeSide(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &classicHandlers{r: rs}
	if _, err := h.event(context.Background(), &nriv1beta1.ConfigureRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("a request of no event: %v, want UNIMPLEMENTED", err)
	}
}

// TestStateChangeConverted: what a StateChange carries becomes the v1beta1
// request of its event, converted from the classic pod and container.
func TestStateChangeConverted(t *testing.T) {
	want := fixture.CreateContainerRequest(1, 0)
	pod, err := convert(want.Pod, &v1alpha1.PodSandbox{})
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := convert(want.Container, &v1alpha1.Container{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := stateChangeRequest(&v1alpha1.StateChangeEvent{Event: v1alpha1.Event_START_CONTAINER, Pod: pod, Container: ctr})
	if err != nil {
		t.Fatal(err)
	}
	req, ok := got.(*nriv1beta1.StartContainerRequest)
	if !ok || !req.Pod.EqualVT(want.Pod) || !req.Container.EqualVT(want.Container) {
		t.Fatalf("StateChange(START_CONTAINER) became %T, or differs from the classic arguments", got)
	}
	if _, err := stateChangeRequest(&v1alpha1.StateChangeEvent{Event: v1alpha1.Event_CREATE_CONTAINER, Pod: pod, Container: ctr}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("StateChange(CREATE_CONTAINER): %v, want INVALID_ARGUMENT", err)
	}
}
