package server_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
)

// badOOM answers CreateContainer with a harmless env variable and an OOM
// score the kernel refuses.
func badOOM(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
		Env:   []*nriv1beta1.KeyValue{{Key: "FROM_BAD", Value: "1"}},
		Linux: &nriv1beta1.LinuxContainerAdjustment{OomScoreAdj: wrapperspb.Int64(-100000)},
	}}, nil
}

// fieldOf returns the field a status's BadRequest detail names.
func fieldOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			return br.GetFieldViolations()[0].GetField()
		}
	}
	return ""
}

// TestInvalidValueRefusesTheWholeResponse: a response with one value the
// kernel refuses is refused whole, before anything of it is merged; the
// plugin's failure policy decides the event (ignore: it goes on with the
// other plugins' changes; fail: it fails naming the plugin and the field);
// the plugin stays registered, and its last error names the field and
// INVALID_ARGUMENT.
func TestInvalidValueRefusesTheWholeResponse(t *testing.T) {
	for _, required := range []bool{false, true} {
		name := map[bool]string{false: "ignore", true: "fail"}[required]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			bad := h.plugin("10", "bad", func(p *testplugin.Plugin) {
				p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
				p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: required}
				p.OnCreateContainer = badOOM
			})
			h.plugin("20", "good", func(p *testplugin.Plugin) {
				p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
				p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
					return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
						Env: []*nriv1beta1.KeyValue{{Key: "FROM_GOOD", Value: "1"}}}}, nil
				}
			})
			rsp, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
			if required {
				if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" ||
					!strings.Contains(err.Error(), "10-bad") || !strings.Contains(err.Error(), "adjust.linux.oom_score_adj: ") {
					t.Fatalf("a required plugin's invalid answer: %v", err)
				}
			} else {
				if err != nil {
					t.Fatalf("an ignore plugin's invalid answer failed the event: %v", err)
				}
				var keys []string
				for _, kv := range rsp.GetAdjust().GetEnv() {
					keys = append(keys, kv.GetKey())
				}
				if strings.Join(keys, ",") != "FROM_GOOD" {
					t.Fatalf("merged env %v, want the good plugin's only", keys)
				}
				if rsp.GetAdjust().GetLinux().GetOomScoreAdj() != nil {
					t.Fatalf("the invalid OOM score reached the runtime: %v", rsp.GetAdjust().GetLinux())
				}
			}
			var info *nriv1beta1.PluginInfo
			for _, pi := range h.srv.Plugins() {
				if pi.GetPlugin().GetName() == "bad" {
					info = pi
				}
			}
			if info == nil {
				t.Fatal("the plugin was evicted for an invalid value")
			}
			if c := info.GetCounters(); c.GetRefused() != 1 {
				t.Errorf("counters %v, want one refused response", c)
			}
			if le := info.GetLastError(); !strings.Contains(le, "code = InvalidArgument") || !strings.Contains(le, "adjust.linux.oom_score_adj: -100000") {
				t.Errorf("last error %q", le)
			}
			select {
			case err := <-bad.SessionEnded():
				t.Fatalf("the plugin's session ended: %v", err)
			default:
			}
		})
	}
}

// TestInvalidUnsolicitedUpdatesRefused: UpdateContainers with a value the
// runtime spec forbids gets INVALID_ARGUMENT whose BadRequest detail names
// the field; nothing of the request reaches the runtime, not even its valid
// eviction.
func TestInvalidUnsolicitedUpdatesRefused(t *testing.T) {
	h := newHarness(t)
	ctr := fixture.Container(1, 0)
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1)}, []*nriv1beta1.Container{ctr})
	p := h.plugin("10", "updater", nil)
	good := &nriv1beta1.ContainerUpdate{ContainerId: ctr.Id, Linux: &nriv1beta1.LinuxContainerUpdate{
		Resources: &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "0-1"}}}}
	bad := &nriv1beta1.ContainerUpdate{ContainerId: ctr.Id, Linux: &nriv1beta1.LinuxContainerUpdate{
		Resources: &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(-12345)}}}}
	_, err := p.UpdateContainers(h.ctx(), &nriv1beta1.UpdateContainersRequest{
		Update: []*nriv1beta1.ContainerUpdate{good, bad},
		Evict:  []*nriv1beta1.ContainerEviction{{ContainerId: ctr.Id, Reason: "r"}},
	})
	const field = "update[1].linux.resources.memory.limit"
	if status.Code(err) != codes.InvalidArgument || fieldOf(err) != field || !strings.Contains(status.Convert(err).Message(), field+": ") {
		t.Fatalf("got %v (field %q), want INVALID_ARGUMENT naming %s", err, fieldOf(err), field)
	}
	if u, e := h.rt.got(); len(u) != 0 || len(e) != 0 {
		t.Fatalf("the runtime got %v %v from a refused request", u, e)
	}
	// The same request without the invalid update goes through.
	if _, err := p.UpdateContainers(h.ctx(), &nriv1beta1.UpdateContainersRequest{Update: []*nriv1beta1.ContainerUpdate{good}}); err != nil {
		t.Fatalf("a valid update: %v", err)
	}
	if u, _ := h.rt.got(); len(u) != 1 {
		t.Fatalf("the runtime got %v", u)
	}
}
