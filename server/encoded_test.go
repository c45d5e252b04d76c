package server_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// marker is an unknown field (number 999): present in the encoding handed
// over with server.Encoded but not in the request itself, it shows which
// encoding a plugin received — the handed-over one (with deltas appended)
// keeps it, an encoding of the request made by the server does not.
var marker = protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 1)

func hasMarker(req *nriv1beta1.CreateContainerRequest) bool {
	return string(req.ProtoReflect().GetUnknown()) == string(marker)
}

func TestEncodedRequestAndDeltas(t *testing.T) {
	h := newHarness(t)
	got := map[string]*nriv1beta1.CreateContainerRequest{}
	record := func(name string, adj *nriv1beta1.ContainerAdjustment) func(*testplugin.Plugin) {
		return func(p *testplugin.Plugin) {
			p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
			p.OnCreateContainer = func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				got[name] = req
				return &nriv1beta1.CreateContainerResponse{Adjust: adj}, nil
			}
		}
	}
	// 10 adds (a delta), 20 adds again (a delta), 30 removes an annotation
	// (the server encodes the request whole), 40 only looks.
	h.plugin("10", "add", record("10", &nriv1beta1.ContainerAdjustment{
		Annotations: map[string]string{"ten.example.com/a": "1"},
		Env:         []*nriv1beta1.KeyValue{{Key: "TEN", Value: "10"}},
	}))
	h.plugin("20", "add", record("20", &nriv1beta1.ContainerAdjustment{
		Annotations: map[string]string{"twenty.example.com/a": "2"},
	}))
	h.plugin("30", "remove", record("30", &nriv1beta1.ContainerAdjustment{
		Annotations: map[string]string{"-ten.example.com/a": ""},
	}))
	h.plugin("40", "look", record("40", nil))

	req := fixture.CreateContainerRequest(1, 0)
	raw, err := req.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	raw = append(raw, marker...)
	handed := string(raw[:cap(raw)]) // with the spare capacity after it
	if _, err := h.srv.CreateContainer(h.ctx(), req, server.Encoded(raw)); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"10": true, "20": true, "30": true, "40": false} {
		if hasMarker(got[name]) != want {
			t.Errorf("plugin %s received the handed-over encoding: %v, want %v", name, !want, want)
		}
	}
	if got["20"].Container.Annotations["ten.example.com/a"] != "1" || got["20"].Container.Env[len(got["20"].Container.Env)-1] != "TEN=10" {
		t.Errorf("plugin 20 does not see plugin 10's changes: %v / %v", got["20"].Container.Annotations, got["20"].Container.Env)
	}
	if got["30"].Container.Annotations["twenty.example.com/a"] != "2" {
		t.Errorf("plugin 30 does not see plugin 20's annotation")
	}
	if _, ok := got["40"].Container.Annotations["ten.example.com/a"]; ok {
		t.Errorf("plugin 40 still sees the annotation plugin 30 removed")
	}
	// Every plugin saw exactly the request as merged so far.
	got["30"].ProtoReflect().SetUnknown(nil)
	want := fixture.CreateContainerRequest(1, 0)
	want.Container.Annotations["ten.example.com/a"] = "1"
	want.Container.Annotations["twenty.example.com/a"] = "2"
	want.Container.Env = append(want.Container.Env, "TEN=10")
	if !got["30"].EqualVT(want) {
		t.Errorf("plugin 30 received\n%v\nwant\n%v", got["30"], want)
	}

	if string(raw[:cap(raw)]) != handed {
		t.Errorf("the server wrote into the encoding handed over")
	}
}

// TestEncodedRequestNormalised: a handed-over encoding of a container
// without hooks and resources (as a classic runtime may send it) reaches
// the first gRPC plugin in the shape every later plugin sees — the shape
// merge.NewCreate gives the request — and not as the runtime encoded it.
func TestEncodedRequestNormalised(t *testing.T) {
	h := newHarness(t)
	got := map[string]*nriv1beta1.CreateContainerRequest{}
	for _, idx := range []string{"10", "20"} {
		h.plugin(idx, "look", func(p *testplugin.Plugin) {
			p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
			p.OnCreateContainer = func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				got[idx] = req
				// 10 changes nothing the delta cannot carry, so 20 is sent
				// the handed-over encoding too.
				return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
					Annotations: map[string]string{idx + ".example.com/seen": "1"}}}, nil
			}
		})
	}
	req := fixture.CreateContainerRequest(1, 0)
	req.Container.Linux, req.Container.Hooks = nil, nil
	raw, err := req.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	raw = append(raw, marker...)
	if _, err := h.srv.CreateContainer(h.ctx(), req, server.Encoded(raw)); err != nil {
		t.Fatal(err)
	}
	for _, idx := range []string{"10", "20"} {
		r := got[idx]
		if !hasMarker(r) {
			t.Errorf("plugin %s was not sent the handed-over encoding", idx)
		}
		c := r.GetContainer()
		if c.GetHooks() == nil || c.GetLinux().GetResources().GetMemory() == nil || c.GetLinux().GetResources().GetCpu() == nil {
			t.Errorf("plugin %s received an unnormalised container: hooks %v, linux %v", idx, c.GetHooks(), c.GetLinux())
		}
	}
	if got["20"].GetContainer().GetAnnotations()["10.example.com/seen"] != "1" {
		t.Errorf("plugin 20 does not see plugin 10's annotation")
	}
}
