package bridge

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/nri"
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
// method with the request's encoding (for a reshaped request: for checking
// only) and the budget.
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
		got, opts = req, countOptions(o)
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
		opts = countOptions(o)
		return nil, nil
	})
	if _, err := reshapedEntry(context.Background(), nil); err != nil || opts != 2 {
		t.Fatalf("a reshaped request: %v, %d options instead of Received and Budget", err, opts)
	}
}

// countOptions counts the options that are set (not nil).
func countOptions(o []server.EventOption) int {
	n := 0
	for _, f := range o {
		if f != nil {
			n++
		}
	}
	return n
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

// TestSynchronizeKeepsEncodings: the runtime's Synchronize pages are split
// into the encodings of their pods and containers, which the server keeps
// and decodes to the runtime's objects; a malformed page, or a malformed
// entry in one, fails the Synchronize with INVALID_ARGUMENT and leaves the
// server's state as it was.
func TestSynchronizeKeepsEncodings(t *testing.T) {
	srv, err := server.New()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := NewRuntimeSide(srv)
	if err != nil {
		t.Fatal(err)
	}
	h := newClassicHandlers(rs)
	pods := []*v1alpha1.PodSandbox{
		convert(t, fixture.Pod(1), &v1alpha1.PodSandbox{}), convert(t, fixture.Pod(2), &v1alpha1.PodSandbox{})}
	ctrs := []*v1alpha1.Container{
		convert(t, fixture.Container(1, 0), &v1alpha1.Container{}), convert(t, fixture.Container(2, 0), &v1alpha1.Container{})}
	page := func(req *v1alpha1.SynchronizeRequest) []byte {
		b, err := req.MarshalVT()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ctx := context.Background()
	out, err := h.serve(ctx, "Synchronize", page(&v1alpha1.SynchronizeRequest{Pods: pods[:1], Containers: ctrs[:1], More: true}))
	if err != nil {
		t.Fatal(err)
	}
	if r := (&nriv1beta1.SynchronizeResponse{}); r.UnmarshalVT(out) != nil || !r.More {
		t.Fatal("the reply to a page with more is not more=true")
	}
	if _, err := h.serve(ctx, "Synchronize", page(&v1alpha1.SynchronizeRequest{Pods: pods[1:], Containers: ctrs[1:]})); err != nil {
		t.Fatal(err)
	}
	gotPods, gotCtrs := srv.Snapshot()
	if len(gotPods) != 2 || len(gotCtrs) != 2 || !proto.Equal(gotPods[0], fixture.Pod(1)) || !proto.Equal(gotCtrs[1], fixture.Container(2, 0)) {
		t.Fatalf("the server's state: %d pods, %d containers, or not the runtime's objects", len(gotPods), len(gotCtrs))
	}
	good := page(&v1alpha1.SynchronizeRequest{Pods: pods[:1]})
	badCtr := append(page(&v1alpha1.SynchronizeRequest{Pods: pods[:1]}),
		protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), page(&v1alpha1.SynchronizeRequest{}))...)
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"truncated page", good[:len(good)-1], "bridge: Synchronize: undecodable request"},
		{"pods of the wrong wire type", protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1), "field 1 has wire type 0"},
		{"a container without an id", badCtr, "containers[0]: id: must not be empty"},
	} {
		_, err := h.serve(ctx, "Synchronize", tc.payload)
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tc.want) {
			t.Errorf("%s: %v, want INVALID_ARGUMENT with %q", tc.name, err, tc.want)
		}
		if p, c := srv.Snapshot(); len(p) != 2 || len(c) != 2 {
			t.Fatalf("%s: the refused Synchronize changed the state", tc.name)
		}
	}
}

// countingPlugin is an in-process plugin that counts the events it gets.
type countingPlugin struct {
	nriv1beta1.UnimplementedPluginServiceServer
	mu     sync.Mutex
	events int
}

func (c *countingPlugin) Configure(context.Context, *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	return &nriv1beta1.ConfigureResponse{Events: int32(nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_UPDATE_CONTAINER))}, nil
}

func (c *countingPlugin) Synchronize(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	return &nriv1beta1.SynchronizeResponse{More: req.GetMore()}, nil
}

func (c *countingPlugin) CreateContainer(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	return &nriv1beta1.CreateContainerResponse{}, nil
}

func (c *countingPlugin) UpdateContainer(context.Context, *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	return &nriv1beta1.UpdateContainerResponse{}, nil
}

// TestRuntimeInvalidUTF8Refused (issue 28 item 8b): a classic runtime's
// request with a string that is not valid UTF-8 — handed over encoded
// (CreateContainer) or reshaped by the server (UpdateContainer) — is
// refused with INVALID_ARGUMENT naming the field, and no plugin is called.
func TestRuntimeInvalidUTF8Refused(t *testing.T) {
	srv, err := server.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { _ = srv.Shutdown(ctx) })
	if err := srv.SetRuntime(ctx, server.RuntimeInfo{Name: "classic", Version: "v0"}, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	plugin := &countingPlugin{}
	if _, err := srv.RegisterInProcess(ctx, server.Registration{Name: "count", Index: "10", Identity: "builtin"}, plugin); err != nil {
		t.Fatal(err)
	}
	rs, err := NewRuntimeSide(srv)
	if err != nil {
		t.Fatal(err)
	}
	h := newClassicHandlers(rs)
	bad := fixture.CreateContainerRequest(1, 0)
	bad.Container.Name = "bad\xff"
	create, err := bad.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	update, err := (&nriv1beta1.UpdateContainerRequest{Pod: bad.Pod, Container: bad.Container,
		LinuxResources: &nriv1beta1.LinuxResources{}}).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	for method, payload := range map[string][]byte{"CreateContainer": create, "UpdateContainer": update} {
		_, err := h.serve(ctx, method, payload)
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), "container.name: not valid UTF-8") {
			t.Errorf("%s with an invalid container name: %v, want INVALID_ARGUMENT naming container.name", method, err)
		}
	}
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	if plugin.events != 0 {
		t.Fatalf("the plugin was called %d times with the runtime's bad requests", plugin.events)
	}
}
