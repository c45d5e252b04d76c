package server_test

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// TestRegistrationCutNothingLostNothingTwice: a pod created while a new
// plugin synchronizes is either in its snapshot or delivered as an event
// after its Synchronize, never both and never neither.
func TestRegistrationCutNothingLostNothingTwice(t *testing.T) {
	h := newHarness(t)
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1)}, nil)
	release := make(chan struct{})
	syncing := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := h.tryPlugin("10", "late", func(p *testplugin.Plugin) {
			p.OnSynchronize = func(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
				close(syncing)
				<-release
				return &nriv1beta1.SynchronizeResponse{}, nil
			}
		})
		done <- err
	}()
	<-syncing
	// The cut is taken: this pod is not in the snapshot. The event must wait
	// for the plugin and reach it after Synchronize.
	evDone := make(chan error, 1)
	go func() {
		evDone <- h.srv.RunPodSandbox(context.Background(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(2)})
	}()
	select {
	case err := <-evDone:
		t.Fatalf("RunPodSandbox finished (%v) while the new plugin was still synchronizing", err)
	case <-time.After(100 * time.Millisecond):
		// Not a timing assertion on the server: only a window in which a
		// broken cut would have let the event through.
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-evDone; err != nil {
		t.Fatal(err)
	}
	eq(t, "calls", h.log.Strings(), []string{"10-late:Configure", "10-late:Synchronize", "10-late:RunPodSandbox"})
	sync := h.log.Calls()[1].Req.(*nriv1beta1.SynchronizeRequest)
	if len(sync.GetPods()) != 1 || sync.GetPods()[0].GetId() != fixture.Pod(1).GetId() {
		t.Fatalf("snapshot pods: %v", sync.GetPods())
	}
	if got := h.log.Calls()[2].Req.(*nriv1beta1.RunPodSandboxRequest).GetPod().GetId(); got != fixture.Pod(2).GetId() {
		t.Fatalf("event for pod %s", got)
	}
}

func TestResyncRepeatsSynchronizeWithEpoch(t *testing.T) {
	h := newHarness(t)
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1)}, []*nriv1beta1.Container{fixture.Container(1, 0)})
	h.plugin("10", "resyncer", func(p *testplugin.Plugin) { p.Capabilities = &nriv1beta1.Capabilities{Resync: true} })
	h.log.Reset()
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(2)}, []*nriv1beta1.Container{fixture.Container(2, 0)})
	ctx := h.ctx()
	if err := h.log.Wait(ctx, func(c []testplugin.Call) bool { return len(c) >= 1 }); err != nil {
		t.Fatal(err)
	}
	// An event after the resync started waits for it.
	if err := h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(3)}); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls", h.log.Strings(), []string{"10-resyncer:Synchronize", "10-resyncer:RunPodSandbox"})
	req := h.log.Calls()[0].Req.(*nriv1beta1.SynchronizeRequest)
	if req.GetEpoch() != 2 || req.GetReason() != nriv1beta1.SyncReason_SYNC_REASON_RUNTIME_RESTARTED {
		t.Fatalf("resync epoch %d reason %v", req.GetEpoch(), req.GetReason())
	}
	if len(req.GetPods()) != 1 || req.GetPods()[0].GetId() != fixture.Pod(2).GetId() || len(req.GetContainers()) != 1 {
		t.Fatalf("resync state: %v", req)
	}
}

// TestResyncDuringResyncCatchesUp: the runtime attaches again while a
// plugin is still resynchronizing to the previous attach. The plugin must
// end up with the newest state (a third Synchronize, epoch 3), and events
// wait until it has it. Before the fix the second attach skipped the plugin
// (it was not READY) and it kept the old state for good.
func TestResyncDuringResyncCatchesUp(t *testing.T) {
	h := newHarness(t)
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1)}, nil)
	entered := make(chan uint64, 4)
	release := make(chan struct{})
	h.plugin("10", "resyncer", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{Resync: true}
		p.OnSynchronize = func(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
			if req.GetEpoch() == 2 {
				entered <- req.GetEpoch()
				<-release // hold the first resync until the runtime attached again
			}
			return &nriv1beta1.SynchronizeResponse{}, nil
		}
	})
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(2)}, nil)
	<-entered
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(3)}, nil)
	close(release)
	ctx := h.ctx()
	// An event after both attaches reaches the plugin only once it caught up.
	if err := h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(4)}); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls", h.log.Strings(), []string{"10-resyncer:Configure", "10-resyncer:Synchronize",
		"10-resyncer:Synchronize", "10-resyncer:Synchronize", "10-resyncer:RunPodSandbox"})
	last := h.log.Calls()[3].Req.(*nriv1beta1.SynchronizeRequest)
	if last.GetEpoch() != 3 || len(last.GetPods()) != 1 || last.GetPods()[0].GetId() != fixture.Pod(3).GetId() {
		t.Fatalf("last resync: epoch %d, pods %v; want epoch 3 with the newest state", last.GetEpoch(), last.GetPods())
	}
}

// TestAttachDuringRegistrationCatchesUp: the runtime attaches while a new
// plugin synchronizes with the snapshot of its registration cut. The plugin
// must learn the new state before it is promoted: a resync for a plugin that
// declared it, synthesized teardown for one that did not.
func TestAttachDuringRegistrationCatchesUp(t *testing.T) {
	for _, resync := range []bool{true, false} {
		t.Run(fmt.Sprintf("resync=%v", resync), func(t *testing.T) {
			h := newHarness(t)
			h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1)}, []*nriv1beta1.Container{fixture.Container(1, 0)})
			syncing := make(chan struct{})
			release := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				_, err := h.tryPlugin("10", "late", func(p *testplugin.Plugin) {
					p.Capabilities = &nriv1beta1.Capabilities{Resync: resync}
					p.OnSynchronize = func(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
						if req.GetEpoch() == 1 {
							close(syncing)
							<-release
						}
						return &nriv1beta1.SynchronizeResponse{}, nil
					}
				})
				done <- err
			}()
			<-syncing
			// SetRuntime returns once the new state is in place; the
			// registrant is still in its first Synchronize.
			h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(2)}, nil)
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if resync {
				eq(t, "calls", h.log.Strings(), []string{"10-late:Configure", "10-late:Synchronize", "10-late:Synchronize"})
				r := h.log.Calls()[2].Req.(*nriv1beta1.SynchronizeRequest)
				if r.GetEpoch() != 2 || len(r.GetPods()) != 1 || r.GetPods()[0].GetId() != fixture.Pod(2).GetId() {
					t.Fatalf("catch-up: epoch %d, pods %v", r.GetEpoch(), r.GetPods())
				}
				return
			}
			// Without resync: what vanished since the cut arrives as
			// teardown events, before the registration completes.
			eq(t, "calls", h.log.Strings(), []string{"10-late:Configure", "10-late:Synchronize",
				"10-late:StopContainer", "10-late:RemoveContainer", "10-late:StopPodSandbox", "10-late:RemovePodSandbox"})
			if id := h.log.Calls()[2].Req.(*nriv1beta1.StopContainerRequest).GetContainer().GetId(); id != fixture.Container(1, 0).GetId() {
				t.Errorf("synthesized stop for %s", id)
			}
		})
	}
}

func TestResyncWithoutCapabilitySynthesizesTeardown(t *testing.T) {
	h := newHarness(t)
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1), fixture.Pod(2)},
		[]*nriv1beta1.Container{fixture.Container(1, 0), fixture.Container(2, 0)})
	h.plugin("10", "classic", nil)
	h.log.Reset()
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(2)}, []*nriv1beta1.Container{fixture.Container(2, 0)})
	ctx := h.ctx()
	if err := h.log.Wait(ctx, func(c []testplugin.Call) bool { return len(c) >= 4 }); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls", h.log.Strings(), []string{"10-classic:StopContainer", "10-classic:RemoveContainer",
		"10-classic:StopPodSandbox", "10-classic:RemovePodSandbox"})
	c := h.log.Calls()
	if id := c[0].Req.(*nriv1beta1.StopContainerRequest).GetContainer().GetId(); id != fixture.Container(1, 0).GetId() {
		t.Errorf("synthesized stop for %s", id)
	}
	if id := c[3].Req.(*nriv1beta1.RemovePodSandboxRequest).GetPod().GetId(); id != fixture.Pod(1).GetId() {
		t.Errorf("synthesized pod removal for %s", id)
	}
}

// TestConcurrentPodsKeepPerPodOrder is the race-enabled stress test: 16
// pods' full lifecycles run concurrently through 3 plugins while a fourth
// plugin is restarted at random; every healthy plugin sees every event of
// every pod exactly once and in the pod's order.
func TestConcurrentPodsKeepPerPodOrder(t *testing.T) {
	h := newHarness(t)
	h.attach(nil, nil)
	var inflight, maxInflight atomic.Int32
	track := func(ctx context.Context, method string, _ proto.Message) error {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			m := maxInflight.Load()
			if n <= m || maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		return nil
	}
	h.plugin("10", "a", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{MaxConcurrentCalls: 1}
		p.Handle = track
	})
	h.plugin("20", "b", func(p *testplugin.Plugin) { p.Capabilities = &nriv1beta1.Capabilities{MaxConcurrentCalls: 8} })
	h.plugin("30", "c", nil)
	restarts := make(chan struct{})
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		rng := rand.New(rand.NewSource(1))
		for i := 0; ; i++ {
			select {
			case <-restarts:
				return
			default:
			}
			p := &testplugin.Plugin{Name: "flaky", Index: "40", Log: testplugin.NewLog(), Events: nri.AllEvents &^ nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)}
			ctx, cancel := context.WithTimeout(context.Background(), wait())
			if _, err := p.Start(ctx, h.sock, h.pluginDir); err != nil {
				t.Errorf("restart %d: %v", i, err)
			}
			cancel()
			time.Sleep(time.Duration(rng.Intn(5)) * time.Millisecond) // load shape only
			p.Stop()
		}
	}()
	var wg sync.WaitGroup
	for n := 0; n < 16; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.runLifecycle(100 + n); err != nil {
				t.Errorf("pod %d: %v", 100+n, err)
			}
		}()
	}
	wg.Wait()
	close(restarts)
	rwg.Wait()
	if m := maxInflight.Load(); m > 1 {
		t.Errorf("plugin 10-a declared one call at a time but had %d concurrent calls", m)
	}
	perPod := map[string]map[string][]string{} // plugin -> pod -> methods
	for _, c := range h.log.Calls() {
		pod := podOf(c.Req)
		if pod == "" {
			continue
		}
		if perPod[c.Plugin] == nil {
			perPod[c.Plugin] = map[string][]string{}
		}
		perPod[c.Plugin][pod] = append(perPod[c.Plugin][pod], c.Method)
	}
	for _, pl := range []string{"10-a", "20-b", "30-c"} {
		if len(perPod[pl]) != 16 {
			t.Errorf("%s saw %d pods, want 16", pl, len(perPod[pl]))
		}
		for pod, methods := range perPod[pl] {
			if fmt.Sprint(methods) != fmt.Sprint(withValidation) {
				t.Errorf("%s pod %s: %v", pl, pod[len(pod)-8:], methods)
			}
		}
	}
}

func podOf(m proto.Message) string {
	if r, ok := m.(interface{ GetPod() *nriv1beta1.PodSandbox }); ok {
		return r.GetPod().GetId()
	}
	return ""
}

func TestInProcessPluginUsesTheSamePath(t *testing.T) {
	h := newHarness(t)
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1)}, nil)
	impl := &recordingImpl{mask: nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)}
	hd, err := h.srv.RegisterInProcess(h.ctx(), server.Registration{Name: "builtin", Index: "05", Identity: "builtin"}, impl)
	if err != nil {
		t.Fatal(err)
	}
	if hd.InstanceID() == "" || hd.Registered().GetEvents() != impl.mask {
		t.Fatalf("registered: %v", hd.Registered())
	}
	h.plugin("10", "remote", nil)
	h.log.Reset()
	rsp, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if rsp.GetAdjust().GetAnnotations()["builtin"] != "was-here" {
		t.Fatalf("in-process adjustment missing: %v", rsp.GetAdjust())
	}
	// The remote plugin, later in order, saw the in-process plugin's change.
	seen := h.log.Calls()[0].Req.(*nriv1beta1.CreateContainerRequest).GetContainer().GetAnnotations()["builtin"]
	if seen != "was-here" {
		t.Fatalf("later plugin saw annotation %q", seen)
	}
	if got := impl.calls(); fmt.Sprint(got) != "[Configure Synchronize CreateContainer]" {
		t.Fatalf("in-process calls: %v", got)
	}
	hd.Close()
	if _, _, err := hd.UpdateContainers(h.ctx(), nil, nil); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("UpdateContainers after Close: %v", err)
	}
}

type recordingImpl struct {
	nriv1beta1.UnimplementedPluginServiceServer
	mask int32
	mu   sync.Mutex
	got  []string
}

func (r *recordingImpl) note(m string) {
	r.mu.Lock()
	r.got = append(r.got, m)
	r.mu.Unlock()
}

func (r *recordingImpl) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func (r *recordingImpl) Configure(context.Context, *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	r.note("Configure")
	return &nriv1beta1.ConfigureResponse{Events: r.mask}, nil
}

func (r *recordingImpl) Synchronize(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	r.note("Synchronize")
	return &nriv1beta1.SynchronizeResponse{More: req.GetMore()}, nil
}

func (r *recordingImpl) CreateContainer(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	r.note("CreateContainer")
	return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"builtin": "was-here"}}}, nil
}

func TestDryRunOnlyAsksPluginsThatDeclaredIt(t *testing.T) {
	h := newHarness(t)
	annotate := func(key string) func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
		return func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			if !req.GetDryRun() {
				return nil, status.Error(codes.Internal, "expected a dry run")
			}
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{key: "1"}}}, nil
		}
	}
	h.plugin("10", "dry", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{DryRun: true}
		p.OnCreateContainer = annotate("dry")
	})
	h.plugin("20", "wet", func(p *testplugin.Plugin) { p.OnCreateContainer = annotate("wet") })
	h.log.Reset()
	req := fixture.CreateContainerRequest(1, 0)
	before := proto.Clone(req)
	rsp, err := h.srv.DryRun(h.ctx(), &nriv1beta1.DryRunRequest{Event: nriv1beta1.Event_EVENT_CREATE_CONTAINER, Pod: req.Pod, Container: req.Container})
	if err != nil || rsp.GetError() != "" {
		t.Fatalf("DryRun: %v %v", rsp.GetError(), err)
	}
	if rsp.GetAdjust().GetAnnotations()["dry"] != "1" || rsp.GetAdjust().GetAnnotations()["wet"] != "" {
		t.Errorf("adjust: %v", rsp.GetAdjust())
	}
	if len(rsp.GetNotEvaluated()) != 1 || rsp.GetNotEvaluated()[0].GetName() != "wet" {
		t.Errorf("not evaluated: %v", rsp.GetNotEvaluated())
	}
	eq(t, "calls", h.log.Strings(), []string{"10-dry:CreateContainer"})
	if !proto.Equal(before, req) {
		t.Error("DryRun modified the caller's objects")
	}
}
