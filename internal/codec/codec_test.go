package codec_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// TestFixtureSize pins the benchmark payload to the specified size: a
// CreateContainerRequest of about 5.5 kB.
func TestFixtureSize(t *testing.T) {
	n := proto.Size(fixture.CreateContainerRequest(1, 0))
	if n < 5000 || n > 6000 {
		t.Fatalf("fixture CreateContainerRequest is %d bytes, want 5000..6000", n)
	}
}

func TestRoundTripFastPath(t *testing.T) {
	in := fixture.CreateContainerRequest(3, 1)
	var c codec.Codec
	data, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	std, err := proto.MarshalOptions{}.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := data.Len(); got != len(std) {
		t.Fatalf("fast path wrote %d bytes, standard runtime %d", got, len(std))
	}
	out := &nriv1beta1.CreateContainerRequest{}
	if err := c.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	data.Free()
	if !proto.Equal(in, out) {
		t.Fatalf("round trip changed the message")
	}
}

// TestLargeMessageUsesPool covers the pooled-buffer branch (messages above
// gRPC's pooling threshold) with a 10,000-container synchronization page.
func TestLargeMessageUsesPool(t *testing.T) {
	in := &nriv1beta1.SynchronizeRequest{}
	for i := 0; i < 200; i++ {
		in.Pods = append(in.Pods, fixture.Pod(i))
		in.Containers = append(in.Containers, fixture.Container(i, 0))
	}
	var c codec.Codec
	data, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := &nriv1beta1.SynchronizeRequest{}
	if err := c.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	data.Free()
	if !proto.Equal(in, out) {
		t.Fatalf("round trip changed the message")
	}
}

func TestRawPassesThrough(t *testing.T) {
	enc, err := codec.Encode(fixture.CreateContainerResponse())
	if err != nil {
		t.Fatal(err)
	}
	var c codec.Codec
	data, err := c.Marshal(&codec.Raw{Data: enc})
	if err != nil {
		t.Fatal(err)
	}
	if string(data.Materialize()) != string(enc) {
		t.Fatal("Raw bytes were not sent as they are")
	}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(enc)}, &codec.Raw{}); err == nil {
		t.Fatal("decoding into *codec.Raw succeeded, want an error")
	}
}

// TestFallback: messages without fast paths (health) use the standard codec.
func TestFallback(t *testing.T) {
	in := &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}
	var c codec.Codec
	data, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := &grpc_health_v1.HealthCheckResponse{}
	if err := c.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	if out.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("got %v", out.GetStatus())
	}
}

func TestUnmarshalGarbage(t *testing.T) {
	var c codec.Codec
	err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0xff, 0xff, 0xff})}, &nriv1beta1.CreateContainerRequest{})
	if err == nil {
		t.Fatal("garbage decoded without error")
	}
}

// TestCaptureKeepsTheError: decoding into a *Capture succeeds whatever the
// data; the message is decoded into when it can be, and the decoding error
// is kept otherwise.
func TestCaptureKeepsTheError(t *testing.T) {
	var c codec.Codec
	good, err := c.Marshal(&nriv1beta1.GetStateRequest{PodId: "pod-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []proto.Message{&nriv1beta1.GetStateRequest{}, &grpc_health_v1.HealthCheckRequest{}} {
		bad := &codec.Capture{Message: m}
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer{0xff, 0xff}}, bad); err != nil || bad.Err == nil {
			t.Fatalf("%T: Unmarshal returned %v and kept %v, want nil and the decoding error", m, err, bad.Err)
		}
	}
	into := &nriv1beta1.GetStateRequest{}
	ok := &codec.Capture{Message: into}
	if err := c.Unmarshal(good, ok); err != nil || ok.Err != nil || into.GetPodId() != "pod-1" {
		t.Fatalf("Unmarshal returned %v, kept %v, decoded %v", err, ok.Err, into)
	}
}

// TestSmallRequestLimits: a request of a type with its own limit is
// refused from its size alone when over it — the decoding would have
// succeeded — and decoded when at it; other types are not limited.
func TestSmallRequestLimits(t *testing.T) {
	var c codec.Codec
	enc := func(m proto.Message) mem.BufferSlice {
		b, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	over := enc(&nriv1beta1.RegisterPluginRequest{PluginName: strings.Repeat("n", codec.MaxRegisterPluginRequest)})
	err := c.Unmarshal(over, &nriv1beta1.RegisterPluginRequest{})
	var tl *codec.TooLargeError
	if !errors.As(err, &tl) || tl.Type != "RegisterPluginRequest" || tl.Limit != codec.MaxRegisterPluginRequest || tl.Size != over.Len() {
		t.Fatalf("an oversize registration: %v, want a TooLargeError", err)
	}
	captured := &codec.Capture{Message: &nriv1beta1.RegisterPluginRequest{}}
	if err := c.Unmarshal(over, captured); err != nil || !errors.As(captured.Err, &tl) {
		t.Fatalf("an oversize registration into a Capture: %v, kept %v", err, captured.Err)
	}
	// At the limit: decoded (3 bytes of tag and length, the rest the name).
	at := enc(&nriv1beta1.RegisterPluginRequest{PluginName: strings.Repeat("n", codec.MaxRegisterPluginRequest-4)})
	if at.Len() != codec.MaxRegisterPluginRequest {
		t.Fatalf("the registration at the limit is %d bytes", at.Len())
	}
	if err := c.Unmarshal(at, &nriv1beta1.RegisterPluginRequest{}); err != nil {
		t.Fatalf("a registration at the limit: %v", err)
	}
	status := enc(&nriv1beta1.SetPluginStatusRequest{Reason: strings.Repeat("r", codec.MaxStatusRequest)})
	if err := c.Unmarshal(status, &nriv1beta1.SetPluginStatusRequest{}); !errors.As(err, &tl) || tl.Type != "SetPluginStatusRequest" {
		t.Fatalf("an oversize status request: %v", err)
	}
	// The same bytes as a type without a limit of its own decode.
	if err := c.Unmarshal(over, &nriv1beta1.GetStateRequest{}); err != nil {
		t.Fatalf("a large request of a type without its own limit: %v", err)
	}
}
