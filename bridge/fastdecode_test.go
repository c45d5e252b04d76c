package bridge

import (
	"context"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/ttrpc"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// TestFastDecodeMatchesProtoUnmarshal: what ttrpc's codec decodes through
// fastMsg equals what proto.Unmarshal decodes.
func TestFastDecodeMatchesProtoUnmarshal(t *testing.T) {
	b, err := fixture.CreateContainerRequest(1, 0).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.CreateContainerRequest{}
	if err := proto.Unmarshal(b, want); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.CreateContainerRequest{}
	if err := proto.Unmarshal(b, fastMsg{m: got}); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) || got.GetContainer().GetId() == "" {
		t.Fatal("the fast path decoded something else")
	}
	if err := proto.Unmarshal([]byte{0x0a, 0xff}, fastMsg{m: &v1alpha1.CreateContainerRequest{}}); err == nil {
		t.Fatal("garbage decoded without error")
	}
}

// intercept runs vtServerInterceptor for method with payload b the way
// ttrpc does, with a handler that decodes into a classic request of type
// alpha and reports what it got.
func intercept(t *testing.T, method string, b []byte, alpha proto.Message) (context.Context, proto.Message) {
	t.Helper()
	var got context.Context
	_, err := vtServerInterceptor(context.Background(),
		func(v interface{}) error { return proto.Unmarshal(b, v.(proto.Message)) },
		&ttrpc.UnaryServerInfo{FullMethod: "/nri.pkg.api.v1alpha1.Plugin/" + method},
		func(ctx context.Context, unmarshal func(interface{}) error) (interface{}, error) {
			got = ctx
			return nil, unmarshal(alpha)
		})
	if err != nil {
		t.Fatal(err)
	}
	return got, alpha
}

// TestDirectDecoding: a CreateContainer request is decoded straight into
// the v1beta1 message, which the handler finds with its bytes (handed on to
// the server); the classic message stays empty.
func TestDirectDecoding(t *testing.T) {
	want := fixture.CreateContainerRequest(1, 0)
	b, err := want.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	ctx, alpha := intercept(t, "CreateContainer", b, &v1alpha1.CreateContainerRequest{})
	if alpha.(*v1alpha1.CreateContainerRequest).GetContainer() != nil {
		t.Error("the classic request was decoded too")
	}
	ctx, req, ok, err := direct[*nriv1beta1.CreateContainerRequest](ctx)
	if err != nil || !ok {
		t.Fatalf("no directly decoded request: ok %v, %v", ok, err)
	}
	if !req.EqualVT(want) {
		t.Fatal("the direct decoding differs from the request")
	}
	if ctx.Value(inboundKey{}).(*inbound).raw == nil || string(ctx.Value(inboundKey{}).(*inbound).raw) != string(b) {
		t.Fatal("the bytes decoded are not kept")
	}
	// A handler of another type is an error, not a silent conversion.
	if _, _, _, err := direct[*nriv1beta1.StartContainerRequest](ctx); err == nil {
		t.Fatal("a mismatched handler type was accepted")
	}
}

// TestIndirectDecodingFallsBackToConversion: a request of another method
// (StateChange, which reaches the same handlers) is decoded as v1alpha1, and
// the handlers convert the classic arguments instead.
func TestIndirectDecodingFallsBackToConversion(t *testing.T) {
	want := fixture.CreateContainerRequest(1, 0)
	pod, err := convert(want.Pod, &v1alpha1.PodSandbox{})
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := convert(want.Container, &v1alpha1.Container{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&v1alpha1.StateChangeEvent{Event: v1alpha1.Event_START_CONTAINER, Pod: pod, Container: ctr}).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	ev := &v1alpha1.StateChangeEvent{}
	ctx, _ := intercept(t, "StateChange", b, ev)
	if ctx.Value(inboundKey{}) != nil {
		t.Fatal("StateChange was decoded directly")
	}
	if ev.GetContainer().GetId() != want.Container.Id {
		t.Fatal("StateChange was not decoded as v1alpha1")
	}
	_, req, err := ctrRequest(ctx, ev.Pod, ev.Container, func(p *nriv1beta1.PodSandbox, c *nriv1beta1.Container) *nriv1beta1.StartContainerRequest {
		return &nriv1beta1.StartContainerRequest{Pod: p, Container: c}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !req.Pod.EqualVT(want.Pod) || !req.Container.EqualVT(want.Container) {
		t.Fatal("the converted request differs from the classic arguments")
	}
}
