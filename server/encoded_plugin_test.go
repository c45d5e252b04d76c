package server_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// encodedImpl is an in-process plugin taking CreateContainer encoded (as
// the bridge's classic plugins do) and StartContainer not: it records what
// it got each way.
type encodedImpl struct {
	nriv1beta1.UnimplementedPluginServiceServer
	mu      sync.Mutex
	encoded [][]byte // CreateContainer requests, as received
	started int      // StartContainer calls through the method
}

func (p *encodedImpl) Configure(context.Context, *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	return &nriv1beta1.ConfigureResponse{Events: nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_START_CONTAINER)}, nil
}

func (p *encodedImpl) Synchronize(context.Context, *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	return &nriv1beta1.SynchronizeResponse{}, nil
}

func (p *encodedImpl) StartContainer(context.Context, *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	p.mu.Lock()
	p.started++
	p.mu.Unlock()
	return &nriv1beta1.StartContainerResponse{}, nil
}

func (p *encodedImpl) InvokeEncoded(_ context.Context, method string, req []byte, rsp proto.Message) (bool, error) {
	if method != nriv1beta1.PluginService_CreateContainer_FullMethodName {
		return false, nil
	}
	p.mu.Lock()
	p.encoded = append(p.encoded, bytes.Clone(req))
	p.mu.Unlock()
	a := &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"encoded": "yes"}}
	b, err := (&nriv1beta1.CreateContainerResponse{Adjust: a}).MarshalVT()
	if err != nil {
		return true, err
	}
	return true, proto.Unmarshal(b, rsp)
}

var _ server.EncodedPlugin = (*encodedImpl)(nil)

// TestEncodedInProcessPlugin: an in-process plugin that takes requests
// encoded gets the runtime's own bytes (server.Encoded) when the server has
// them, an encoding of the request otherwise, and its answer merges as any
// plugin's; a method it does not take encoded is called the ordinary way.
func TestEncodedInProcessPlugin(t *testing.T) {
	h := newHarness(t)
	h.attach(nil, nil)
	impl := &encodedImpl{}
	if _, err := h.srv.RegisterInProcess(h.ctx(), server.Registration{Name: "enc", Index: "10", Identity: "uid:0"}, impl); err != nil {
		t.Fatal(err)
	}
	req := fixture.CreateContainerRequest(1, 0)
	if err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: req.GetPod()}); err != nil {
		t.Fatal(err)
	}
	raw, err := req.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := h.srv.CreateContainer(h.ctx(), req, server.Encoded(raw))
	if err != nil {
		t.Fatal(err)
	}
	if rsp.GetAdjust().GetAnnotations()["encoded"] != "yes" {
		t.Fatalf("the encoded answer was not merged: %v", rsp.GetAdjust())
	}
	// Without the runtime's bytes: the server's encoding of the request.
	req2 := fixture.CreateContainerRequest(1, 1)
	if _, err := h.srv.CreateContainer(h.ctx(), req2); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.StartContainer(h.ctx(), &nriv1beta1.StartContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()}); err != nil {
		t.Fatal(err)
	}
	impl.mu.Lock()
	defer impl.mu.Unlock()
	if len(impl.encoded) != 2 {
		t.Fatalf("%d CreateContainer calls encoded, want 2", len(impl.encoded))
	}
	if !bytes.Equal(impl.encoded[0], raw) {
		t.Fatal("the plugin did not get the runtime's own bytes")
	}
	got := &nriv1beta1.CreateContainerRequest{}
	// (The server may give the request its normalised shape: empty
	// messages the plugins see either way.)
	if err := got.UnmarshalVT(impl.encoded[1]); err != nil || got.GetContainer().GetId() != req2.GetContainer().GetId() ||
		!proto.Equal(got.GetPod(), req2.GetPod()) || got.GetContainer().GetEnv()[0] != req2.GetContainer().GetEnv()[0] {
		t.Fatalf("the server's encoding decodes to container %q (%v), want the request's %q", got.GetContainer().GetId(), err, req2.GetContainer().GetId())
	}
	if impl.started != 1 {
		t.Fatalf("StartContainer called %d times through the method, want 1", impl.started)
	}
}
