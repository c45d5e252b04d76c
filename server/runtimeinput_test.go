package server_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// TestRuntimeInvalidUTF8IsRefusedBeforePlugins (issue 28 item 8b): a
// runtime's request with a string that is not valid UTF-8 — over the
// AdaptationService, or handed over encoded as the bridge does — is refused
// with INVALID_ARGUMENT naming the field, before any plugin is called, so a
// strict plugin (standard protobuf-go, which refuses such strings as it
// decodes) is neither called nor blamed.
func TestRuntimeInvalidUTF8IsRefusedBeforePlugins(t *testing.T) {
	h := newHarness(t)
	strict := h.plugin("10", "strict", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_CREATE_CONTAINER,
			nriv1beta1.Event_EVENT_UPDATE_CONTAINER, nriv1beta1.Event_EVENT_STOP_CONTAINER)
		p.ServerOptions = []grpc.ServerOption{grpc.ForceServerCodecV2(encoding.GetCodecV2("proto"))}
	})
	badName := func() *nriv1beta1.CreateContainerRequest {
		req := fixture.CreateContainerRequest(1, 0)
		req.Container.Name = "bad\xff"
		return req
	}
	badLabel := func() *nriv1beta1.PodSandbox {
		pod := fixture.Pod(2)
		pod.Labels["k"] = "\xc3"
		return pod
	}
	ac := h.adaptation()
	cases := []struct {
		what, field string
		call        func() error
	}{
		{"AdaptationService CreateContainer", "container.name", func() error {
			r := badName()
			_, err := ac.CreateContainer(h.ctx(), &nriv1beta1.AdaptationServiceCreateContainerRequest{Pod: r.Pod, Container: r.Container})
			return err
		}},
		{"AdaptationService RunPodSandbox", "pod.labels.value", func() error {
			_, err := ac.RunPodSandbox(h.ctx(), &nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: badLabel()})
			return err
		}},
		{"AdaptationService UpdateContainer", "container.name", func() error {
			r := badName()
			_, err := ac.UpdateContainer(h.ctx(), &nriv1beta1.AdaptationServiceUpdateContainerRequest{Pod: r.Pod, Container: r.Container,
				LinuxResources: &nriv1beta1.LinuxResources{}})
			return err
		}},
		{"AdaptationService StopContainer", "container.name", func() error {
			r := badName()
			_, err := ac.StopContainer(h.ctx(), &nriv1beta1.AdaptationServiceStopContainerRequest{Pod: r.Pod, Container: r.Container})
			return err
		}},
		{"CreateContainer handed over encoded", "container.name", func() error {
			r := badName()
			raw, err := r.MarshalVT()
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.srv.CreateContainer(h.ctx(), r, server.Encoded(raw))
			return err
		}},
		{"UpdateContainer with its received encoding", "container.name", func() error {
			r := badName()
			u := &nriv1beta1.UpdateContainerRequest{Pod: r.Pod, Container: r.Container, LinuxResources: &nriv1beta1.LinuxResources{}}
			raw, err := u.MarshalVT()
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.srv.UpdateContainer(h.ctx(), u, server.Received(raw))
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			err := c.call()
			msg := status.Convert(err).Message()
			if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(msg, c.field+": ") || len(msg) > 200 {
				t.Fatalf("got %v, want INVALID_ARGUMENT starting with %q, short", err, c.field+": ")
			}
		})
	}
	// Registered and synchronized, nothing else: not called, and not
	// disconnected (Shutdown) for failing to decode.
	if calls := h.log.Of(strict.Full()); len(calls) != 2 {
		t.Fatalf("the strict plugin was called with the runtime's bad requests: %v", h.log.Strings())
	}
	info := h.srv.Plugins()[0]
	if c := info.GetCounters(); c.GetCalls() != 0 || c.GetErrors() != 0 || c.GetVetoes() != 0 || info.GetLastError() != "" {
		t.Fatalf("the strict plugin was blamed: counters %v, last error %q", c, info.GetLastError())
	}
	// A valid request still reaches it.
	if _, err := ac.CreateContainer(h.ctx(), &nriv1beta1.AdaptationServiceCreateContainerRequest{
		Pod: fixture.Pod(1), Container: fixture.Container(1, 0)}); err != nil {
		t.Fatal(err)
	}
	if len(h.log.Of(strict.Full(), "CreateContainer")) != 1 {
		t.Fatalf("the strict plugin missed a valid request: %v", h.log.Strings())
	}
}
