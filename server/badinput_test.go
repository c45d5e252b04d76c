package server_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// garbageCodec answers CreateContainer with bytes that are not a message.
type garbageCodec struct{ codec.Codec }

func (g garbageCodec) Marshal(v any) (mem.BufferSlice, error) {
	if _, ok := v.(*nriv1beta1.CreateContainerResponse); ok {
		return mem.BufferSlice{mem.SliceBuffer([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})}, nil
	}
	return g.Codec.Marshal(v)
}

func TestMalformedResponseIsAnAvailabilityFailure(t *testing.T) {
	h := newHarness(t)
	bad := h.plugin("10", "garbage", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
		p.ServerOptions = []grpc.ServerOption{grpc.ForceServerCodecV2(garbageCodec{})}
	})
	h.plugin("20", "good", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"good": "1"}}}, nil
		}
	})
	rsp, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
	if err != nil {
		t.Fatalf("a garbage answer from an ignore plugin failed the event: %v", err)
	}
	if rsp.GetAdjust().GetAnnotations()["good"] != "1" {
		t.Fatalf("adjust: %v", rsp.GetAdjust())
	}
	select {
	case err := <-bad.SessionEnded():
		t.Logf("the misbehaving plugin's session ended: %v", err)
	case <-h.ctx().Done():
		t.Fatal("the misbehaving plugin was not disconnected")
	}
}

func TestOversizedResponseIsAnAvailabilityFailure(t *testing.T) {
	h := newHarness(t)
	h.plugin("10", "huge", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
		p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true}
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Annotations: map[string]string{"big": strings.Repeat("x", 5<<20)}}}, nil
		}
	})
	_, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
	if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || !strings.Contains(err.Error(), "10-huge") {
		t.Fatalf("an oversized answer from a required plugin: %v", err)
	}
}

func TestUpdateOfTheContainerBeingCreatedIsRefused(t *testing.T) {
	h := newHarness(t)
	req := fixture.CreateContainerRequest(1, 0)
	h.plugin("10", "self", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{{ContainerId: req.Container.Id,
				Linux: &nriv1beta1.LinuxContainerUpdate{Resources: &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "1"}}}}}}, nil
		}
	})
	_, err := h.srv.CreateContainer(h.ctx(), req)
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "during creation") || !strings.Contains(err.Error(), "10-self") {
		t.Fatalf("got %v", err)
	}
}

func TestRegistrationByAnotherIdentityIsRefused(t *testing.T) {
	h := newHarness(t)
	impl := &recordingImpl{}
	if _, err := h.srv.RegisterInProcess(h.ctx(), server.Registration{Name: "owned", Index: "10", Identity: "uid:0"}, impl); err != nil {
		t.Fatal(err)
	}
	_, err := h.srv.RegisterInProcess(h.ctx(), server.Registration{Name: "owned", Index: "10", Identity: "uid:1000"}, &recordingImpl{})
	if status.Code(err) != codes.PermissionDenied || testplugin.Reason(err) != "REGISTRATION_REFUSAL_IDENTITY_MISMATCH" {
		t.Fatalf("hijack attempt: %v", err)
	}
	if n := len(h.srv.Plugins()); n != 1 {
		t.Fatalf("%d plugins after the refused hijack", n)
	}
}
