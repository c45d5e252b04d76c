package bridge

import (
	"context"
	"slices"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/server"
)

// TestMethodTable: the table has one entry per method of the classic
// Plugin service, and nothing else; a method it lacks is UNIMPLEMENTED, an
// undecodable request INVALID_ARGUMENT naming the method.
func TestMethodTable(t *testing.T) {
	h := newClassicHandlers(newTestRuntimeSide(t))
	var want, got []string
	methods := v1alpha1.File_pkg_api_api_proto.Services().ByName("Plugin").Methods()
	for i := 0; i < methods.Len(); i++ {
		want = append(want, string(methods.Get(i).Name()))
	}
	for m := range h.methods {
		got = append(got, m)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("method table %v, classic Plugin service %v", got, want)
	}
	if _, err := h.serve(context.Background(), "RegisterPlugin", nil); status.Code(err) != codes.Unimplemented {
		t.Fatalf("a method of no entry: %v, want UNIMPLEMENTED", err)
	}
	_, err := h.serve(context.Background(), "CreateContainer", []byte{0xff})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message()[:24] != "bridge: CreateContainer:" {
		t.Fatalf("an undecodable request: %v, want INVALID_ARGUMENT naming CreateContainer", err)
	}
}

// TestDirectDecoding: an event's entry decodes the request straight into
// its v1beta1 message with the aliasing decoder, and calls the server's
// method with the request's encoding and the budget.
func TestDirectDecoding(t *testing.T) {
	want := fixture.CreateContainerRequest(1, 0)
	b, err := want.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	h := newClassicHandlers(newTestRuntimeSide(t))
	var got *nriv1beta1.CreateContainerRequest
	var opts int
	entry := relayed(h, func(_ context.Context, req *nriv1beta1.CreateContainerRequest, o ...server.EventOption) ([]byte, error) {
		got, opts = req, len(o)
		return []byte("reply"), nil
	})
	out, err := entry(context.Background(), b)
	if err != nil || string(out) != "reply" {
		t.Fatalf("the entry answered %q, %v", out, err)
	}
	if !got.EqualVT(want) || opts != 2 {
		t.Fatalf("the direct decoding differs from the request, or %d options instead of Encoded and Budget", opts)
	}
	opts = -1
	reshapedEntry := reshaped(h, func(_ context.Context, _ *nriv1beta1.UpdateContainerRequest, o ...server.EventOption) ([]byte, error) {
		opts = len(o)
		return nil, nil
	})
	if _, err := reshapedEntry(context.Background(), nil); err != nil || opts != 1 {
		t.Fatalf("a reshaped request: %v, %d options instead of the budget alone", err, opts)
	}
}

// TestStateChangeServed: a StateChange is served by its event's entry; an
// event classic runtimes never sent as StateChange is refused.
func TestStateChangeServed(t *testing.T) {
	want := fixture.CreateContainerRequest(1, 0)
	sc, err := (&v1alpha1.StateChangeEvent{Event: v1alpha1.Event_START_CONTAINER,
		Pod: convert(t, want.Pod, &v1alpha1.PodSandbox{}), Container: convert(t, want.Container, &v1alpha1.Container{})}).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	h := newClassicHandlers(newTestRuntimeSide(t))
	var got *nriv1beta1.StartContainerRequest
	h.methods["StartContainer"] = relayed(h, func(_ context.Context, req *nriv1beta1.StartContainerRequest, _ ...server.EventOption) ([]byte, error) {
		got = req
		return nil, nil
	})
	if _, err := h.serve(context.Background(), "StateChange", sc); err != nil {
		t.Fatal(err)
	}
	if got == nil || !got.Pod.EqualVT(want.Pod) || !got.Container.EqualVT(want.Container) {
		t.Fatal("StateChange(START_CONTAINER) did not reach StartContainer with the classic pod and container")
	}
	sc, err = (&v1alpha1.StateChangeEvent{Event: v1alpha1.Event_CREATE_CONTAINER}).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.serve(context.Background(), "StateChange", sc); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("StateChange(CREATE_CONTAINER): %v, want INVALID_ARGUMENT", err)
	}
}

// newTestRuntimeSide is a runtime side without a server, for the tests of
// its method table.
func newTestRuntimeSide(t *testing.T) *RuntimeSide {
	t.Helper()
	rs, err := NewRuntimeSide(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
