package server_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
)

// syncedStates registers a plugin and returns the state of each container
// its Synchronize carried, by container id.
func syncedStates(h *harness, idx string) map[string]nriv1beta1.ContainerState {
	h.t.Helper()
	var mu sync.Mutex
	got := map[string]nriv1beta1.ContainerState{}
	h.plugin(idx, "late", func(p *testplugin.Plugin) {
		p.OnSynchronize = func(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range req.GetContainers() {
				got[c.GetId()] = c.GetState()
			}
			return &nriv1beta1.SynchronizeResponse{}, nil
		}
	})
	mu.Lock()
	defer mu.Unlock()
	return got
}

// TestRelayedEventsAdvanceContainerState: containerd sends a container in
// StartContainer and PostStartContainer as it was when the event began
// (created). A plugin that registers afterwards must get it in Synchronize
// as it is now: running after PostStartContainer, stopped after
// StopContainer; and an update that carries the stale state does not move
// it back.
func TestRelayedEventsAdvanceContainerState(t *testing.T) {
	h := newHarness(t)
	h.attach(nil, nil)
	ctx := h.ctx()
	pod := fixture.Pod(1)
	if err := h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	running, stopped := fixture.Container(1, 0), fixture.Container(1, 1)
	for _, c := range []*nriv1beta1.Container{running, stopped} {
		if _, err := h.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: c}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.srv.PostCreateContainer(ctx, &nriv1beta1.PostCreateContainerRequest{Pod: pod, Container: c}); err != nil {
			t.Fatal(err)
		}
		if err := h.srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: pod, Container: c}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.srv.PostStartContainer(ctx, &nriv1beta1.PostStartContainerRequest{Pod: pod, Container: c}); err != nil {
			t.Fatal(err)
		}
	}
	// A stale CREATED in a later update must not move it back.
	if _, err := h.srv.PostUpdateContainer(ctx, &nriv1beta1.PostUpdateContainerRequest{Pod: pod, Container: running}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: pod, Container: stopped}); err != nil {
		t.Fatal(err)
	}
	if running.GetState() != nriv1beta1.ContainerState_CONTAINER_STATE_CREATED {
		t.Fatalf("the runtime's request object was modified: %v", running.GetState())
	}
	got := syncedStates(h, "50")
	if s := got[running.GetId()]; s != nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING {
		t.Errorf("started container synchronized as %v, want RUNNING", s)
	}
	if s := got[stopped.GetId()]; s != nriv1beta1.ContainerState_CONTAINER_STATE_STOPPED {
		t.Errorf("stopped container synchronized as %v, want STOPPED", s)
	}
}

// TestUpdatesOfUnknownContainersFail: UpdateContainers naming a container
// nrid does not know lists it as failed (update and eviction alike)
// without asking the runtime, as classic NRI reports it; the known
// container's update is applied.
func TestUpdatesOfUnknownContainersFail(t *testing.T) {
	h := newHarness(t)
	ctr := fixture.Container(1, 0)
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1)}, []*nriv1beta1.Container{ctr})
	p := h.plugin("10", "updater", nil)
	res := &nriv1beta1.LinuxContainerUpdate{Resources: &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "0-1"}}}
	rsp, err := p.UpdateContainers(h.ctx(), &nriv1beta1.UpdateContainersRequest{
		Update: []*nriv1beta1.ContainerUpdate{{ContainerId: ctr.Id, Linux: res}, {ContainerId: "no-such-container", Linux: res}},
		Evict:  []*nriv1beta1.ContainerEviction{{ContainerId: "no-such-container", Reason: "r"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if f := rsp.GetFailed(); len(f) != 1 || f[0].GetContainerId() != "no-such-container" {
		t.Errorf("failed updates %v, want the unknown container's", f)
	}
	if f := rsp.GetFailedEvictions(); len(f) != 1 || f[0].GetContainerId() != "no-such-container" {
		t.Errorf("failed evictions %v, want the unknown container's", f)
	}
	u, e := h.rt.got()
	if len(u) != 1 || u[0].GetContainerId() != ctr.Id || len(e) != 0 {
		t.Errorf("the runtime got %v %v, want the known container's update only", u, e)
	}
}

// TestRequireUntilRegistered: plugins required until they register fail
// creating events while absent, naming them; once one registers, its own
// failure policy applies again, also after it leaves.
func TestRequireUntilRegistered(t *testing.T) {
	h := newHarness(t)
	h.srv.RequireUntilRegistered([]string{"10-back", "20-other"})
	_, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
	if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || !strings.Contains(err.Error(), `["10-back" "20-other"]`) {
		t.Fatalf("with both absent: %v", err)
	}
	p := h.plugin("10", "back", nil)
	_, err = h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
	if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || !strings.Contains(err.Error(), `["20-other"]`) {
		t.Fatalf("with 10-back registered: %v", err)
	}
	h.plugin("20", "other", nil)
	if _, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0)); err != nil {
		t.Fatalf("with both back: %v", err)
	}
	p.Stop()
	t.Logf("10-back stopped: %v", <-p.SessionEnded())
	if _, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 1)); err != nil {
		t.Fatalf("10-back left again, under its own ignore policy: %v", err)
	}
}
