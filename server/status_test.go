package server_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

const (
	notReady = nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY
	ready    = nriv1beta1.PluginStatus_PLUGIN_STATUS_READY
	degraded = nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED
)

// policyOf sets the operator's NOT_READY policy for one plugin.
func policyOf(full string, pol nriv1beta1.NotReadyPolicy) server.Option {
	return server.WithPluginPolicy(func(_, f string) *server.PluginPolicy {
		if f != full {
			return nil
		}
		return &server.PluginPolicy{NotReady: pol}
	})
}

// infoOf returns the PluginInfo of full.
func infoOf(t *testing.T, h *harness, full string) *nriv1beta1.PluginInfo {
	t.Helper()
	for _, pi := range h.srv.Plugins() {
		if pi.GetPlugin().GetIndex()+"-"+pi.GetPlugin().GetName() == full {
			return pi
		}
	}
	t.Fatalf("plugin %s is not registered", full)
	return nil
}

// notReadyPlugin registers a plugin subscribed to RunPodSandbox that
// registers NOT_READY, with a long timeout of its own.
func notReadyPlugin(h *harness, idx, name string, set func(*testplugin.Plugin)) *testplugin.Plugin {
	return h.plugin(idx, name, func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)
		p.Status, p.StatusReason = notReady, "warming up"
		p.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(10 * time.Minute)}
		if set != nil {
			set(p)
		}
	})
}

// TestNotReadyWaitReleasedByReady: under WAIT an event waits for a
// NOT_READY plugin (it is not called while NOT_READY) and is delivered to
// it as soon as it reports READY: woken by the change, long before its
// 10-minute timeout.
func TestNotReadyWaitReleasedByReady(t *testing.T) {
	// The first plugin's call is measured as the event leaves it: from
	// there to the NOT_READY plugin's readiness stage the event does no I/O,
	// so the status report (a gRPC call) comes while the event waits.
	firstDone := make(chan struct{})
	var once sync.Once
	m := &statusMetrics{onCall: func(plugin string) {
		if plugin == "05-first" {
			once.Do(func() { close(firstDone) })
		}
	}}
	h := newHarness(t, server.WithMaxTimeout(time.Hour), policyOf("10-warm", nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_WAIT),
		server.WithMetrics(m))
	h.plugin("05", "first", only(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX))
	// The server's view of the plugin when its call arrives: never
	// NOT_READY.
	var early atomic.Bool
	warm := notReadyPlugin(h, "10", "warm", func(p *testplugin.Plugin) {
		p.Handle = func(_ context.Context, method string, _ proto.Message) error {
			for _, pi := range h.srv.Plugins() {
				if method == "RunPodSandbox" && pi.GetPlugin().GetName() == "warm" && pi.GetStatus() == notReady {
					early.Store(true)
				}
			}
			return nil
		}
	})
	if pi := infoOf(t, h, "10-warm"); pi.GetStatus() != notReady || pi.GetStatusReason() != "warming up" ||
		pi.GetNotReadyPolicy() != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_WAIT || pi.GetStatusSince() == nil {
		t.Fatalf("admin view of the registration: %v", pi)
	}
	done := make(chan error, 1)
	go func() { done <- h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)}) }()
	select {
	case <-firstDone:
	case <-time.After(wait()):
		t.Fatal("the first plugin was not called")
	}
	if got := h.log.Of("10-warm", "RunPodSandbox"); len(got) != 0 {
		t.Fatalf("the NOT_READY plugin was called: %v", got)
	}
	if err := warm.SetStatus(h.ctx(), ready, "warm"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait()):
		t.Fatal("the event was not released by READY")
	}
	if early.Load() {
		t.Fatal("the plugin was called while NOT_READY")
	}
	if got := h.log.Of("10-warm", "RunPodSandbox"); len(got) != 1 {
		t.Fatalf("the plugin got %d RunPodSandbox after READY", len(got))
	}
	pi := infoOf(t, h, "10-warm")
	if pi.GetStatus() != ready || pi.GetStatusReason() != "warm" || pi.GetCounters().GetNotReadySkips() != 0 {
		t.Fatalf("after READY: %v", pi)
	}
}

// TestNotReadyWaitEndsAtItsTime: a required plugin that stays NOT_READY
// is waited for within its own time for the event only; then the call is
// unavailable and its failure policy fails the creating event, naming it.
func TestNotReadyWaitEndsAtItsTime(t *testing.T) {
	h := newHarness(t)
	const timeout = 200 * time.Millisecond
	notReadyPlugin(h, "10", "cold", func(p *testplugin.Plugin) {
		p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true}
		p.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(timeout)}
	})
	if pol := infoOf(t, h, "10-cold").GetNotReadyPolicy(); pol != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_WAIT {
		t.Fatalf("default policy of a required plugin: %v", pol)
	}
	start := time.Now()
	err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)})
	took := time.Since(start)
	if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || !strings.Contains(err.Error(), "10-cold") ||
		!strings.Contains(err.Error(), "NOT_READY") {
		t.Fatalf("got %v", err)
	}
	if took < timeout {
		t.Fatalf("failed after %v, before the plugin's %v", took, timeout)
	}
	if got := h.log.Of("10-cold", "RunPodSandbox"); len(got) != 0 {
		t.Fatalf("the NOT_READY plugin was called: %v", got)
	}
	// Within a caller's budget: the plugin's share of it, not its own
	// timeout.
	h2 := newHarness(t, server.WithMaxTimeout(time.Hour))
	notReadyPlugin(h2, "10", "cold", func(p *testplugin.Plugin) {
		p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true}
	})
	start = time.Now()
	err = h2.srv.RunPodSandbox(h2.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)}, server.Budget(time.Now().Add(timeout)))
	if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || time.Since(start) > wait()/2 {
		t.Fatalf("within a budget: %v after %v", err, time.Since(start))
	}
}

// TestNotReadyFail: under FAIL a NOT_READY plugin is unavailable at once:
// a required one fails the creating event (its 10-minute timeout is not
// waited for), one that is not required is failed open.
func TestNotReadyFail(t *testing.T) {
	h := newHarness(t, server.WithMaxTimeout(time.Hour), server.WithNotReadyPolicy(nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_FAIL))
	notReadyPlugin(h, "10", "req", func(p *testplugin.Plugin) {
		p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true}
	})
	notReadyPlugin(h, "20", "opt", nil)
	err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)})
	if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || !strings.Contains(err.Error(), "10-req") {
		t.Fatalf("got %v", err)
	}
	// The required plugin READY again: the other one, NOT_READY under
	// FAIL but not required, is failed open.
	req := pluginNamed(t, h, "10-req")
	if err := req.SetStatus(ready, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(2)}); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls", h.log.Strings("RunPodSandbox"), []string{"10-req:RunPodSandbox"})
	if n := infoOf(t, h, "20-opt").GetCounters().GetNotReadySkips(); n != 1 {
		t.Fatalf("not_ready_skips of the optional plugin: %d, want 1", n)
	}
}

// pluginNamed returns a status handle for a remote test plugin (through
// the RuntimeService as it would call it).
func pluginNamed(t *testing.T, h *harness, full string) *statusCaller {
	return &statusCaller{t: t, h: h, id: infoOf(t, h, full).GetInstanceId()}
}

type statusCaller struct {
	t  *testing.T
	h  *harness
	id string
}

func (c *statusCaller) SetStatus(st nriv1beta1.PluginStatus, reason string) error {
	_, err := runtimeClient(c.h).SetPluginStatus(withInstance(c.h.ctx(), c.id), &nriv1beta1.SetPluginStatusRequest{Status: st, Reason: reason})
	return err
}

// TestNotReadySkipNeverWaits: under SKIP (the default of a plugin that is
// not required) a NOT_READY plugin with a 10-minute timeout is never
// called and never waited for, whatever its failure policy; its events are
// counted as not-ready skips.
func TestNotReadySkipNeverWaits(t *testing.T) {
	h := newHarness(t, server.WithMaxTimeout(time.Hour), policyOf("20-skipreq", nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP))
	h.plugin("05", "ok", nil)
	// Every event but validation (a validator's default is WAIT).
	notReadyPlugin(h, "10", "lazy", func(p *testplugin.Plugin) {
		p.Events = nri.AllEvents &^ nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)
	})
	notReadyPlugin(h, "20", "skipreq", func(p *testplugin.Plugin) {
		p.Events = 0
		p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true}
	})
	if pol := infoOf(t, h, "10-lazy").GetNotReadyPolicy(); pol != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP {
		t.Fatalf("default policy of an optional plugin: %v", pol)
	}
	// No time bound stands for "never waits": were either waited for, the
	// lifecycle would take 10 minutes per event.
	h.lifecycle(1)
	for full, want := range map[string]int{"10-lazy": len(lifecycleEvents), "20-skipreq": len(withValidation)} {
		if got := h.log.Of(full, withValidation...); len(got) != 0 {
			t.Fatalf("%s was called while NOT_READY: %v", full, got)
		}
		if n := infoOf(t, h, full).GetCounters().GetNotReadySkips(); n != uint64(want) {
			t.Fatalf("%s: not_ready_skips %d, want %d", full, n, want)
		}
	}
	eq(t, "the READY plugin's calls", callMethods(h.log.Of("05-ok", withValidation...)), withValidation)
}

func callMethods(calls []testplugin.Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Method
	}
	return out
}

// TestDegradedIsDelivered: a DEGRADED plugin gets its events like a READY
// one; operators see the reason.
func TestDegradedIsDelivered(t *testing.T) {
	h := newHarness(t, server.WithNotReadyPolicy(nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_FAIL))
	h.plugin("10", "deg", func(p *testplugin.Plugin) {
		p.Status, p.StatusReason = degraded, "cache cold"
		p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true}
	})
	h.lifecycle(1)
	eq(t, "calls", callMethods(h.log.Of("10-deg", withValidation...)), withValidation)
	if pi := infoOf(t, h, "10-deg"); pi.GetStatus() != degraded || pi.GetStatusReason() != "cache cold" {
		t.Fatalf("admin view: %v", pi)
	}
}

// TestNotReadyValidators: validating plugins follow the same rules
// (validators fail closed, so FAIL rejects the creation and SKIP lets it
// through unvalidated); a required plugin a creation did not call because
// it was NOT_READY does not count as present for the default validator's
// required-plugins check.
func TestNotReadyValidators(t *testing.T) {
	validator := func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)
		p.Status = notReady
		p.OnValidate = func(context.Context, *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
			return &nriv1beta1.ValidateContainerAdjustmentResponse{Reject: true, Reason: "no"}, nil
		}
	}
	t.Run("skip", func(t *testing.T) {
		h := newHarness(t, policyOf("10-val", nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP))
		h.plugin("10", "val", validator)
		if _, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0)); err != nil {
			t.Fatalf("a skipped validator rejected: %v", err)
		}
		if n := infoOf(t, h, "10-val").GetCounters().GetNotReadySkips(); n != 1 {
			t.Fatalf("not_ready_skips %d", n)
		}
	})
	t.Run("fail", func(t *testing.T) {
		h := newHarness(t, policyOf("10-val", nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_FAIL))
		h.plugin("10", "val", func(p *testplugin.Plugin) {
			validator(p)
			p.OnValidate = nil // it would accept: the rejection is its status
		})
		_, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
		if testplugin.Reason(err) != "DISPATCH_OUTCOME_REJECTED" || !strings.Contains(err.Error(), "NOT_READY") {
			t.Fatalf("got %v", err)
		}
		if got := h.log.Of("10-val", "ValidateContainerAdjustment"); len(got) != 0 {
			t.Fatal("called while NOT_READY")
		}
	})
	t.Run("required-by-operator", func(t *testing.T) {
		h := newHarness(t, server.WithValidator(validateRequired("gpu")), policyOf("10-gpu", nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP))
		g := notReadyPlugin(h, "10", "gpu", func(p *testplugin.Plugin) { p.Events = 0 })
		_, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
		if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || !strings.Contains(err.Error(), "gpu") {
			t.Fatalf("a skipped required plugin: %v", err)
		}
		if err := g.SetStatus(h.ctx(), degraded, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 1)); err != nil {
			t.Fatal(err)
		}
	})
}

// TestNotReadyDelaysNoOtherEvents: a NOT_READY plugin under WAIT with a
// 10-minute timeout, subscribed to RunPodSandbox only, delays no other
// event and no other plugin's event of another pod.
func TestNotReadyDelaysNoOtherEvents(t *testing.T) {
	h := newHarness(t, server.WithMaxTimeout(time.Hour), server.WithNotReadyPolicy(nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_WAIT))
	h.plugin("20", "other", nil)
	notReadyPlugin(h, "10", "waiting", nil)
	go func() { _ = h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(9)}) }()
	// Not a time bound: the held event waits 10 minutes.
	ctx := h.ctx()
	if _, err := h.srv.CreateContainer(ctx, fixture.CreateContainerRequest(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: fixture.Pod(1), Container: fixture.Container(1, 0)}); err != nil {
		t.Fatal(err)
	}
}

// TestStatusBadInput: SetPluginStatus and RequestResync refuse a missing
// or unknown instance, another identity's instance, a reason that is too
// long or not UTF-8 and an unknown status, naming the rule, and nothing
// changes. A registration with a bad status is refused.
func TestStatusBadInput(t *testing.T) {
	h := newHarness(t)
	p := h.plugin("10", "st", nil)
	rc := runtimeClient(h)
	good := withInstance(h.ctx(), p.InstanceID())
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		req   *nriv1beta1.SetPluginStatusRequest
		code  codes.Code
		field string
	}{
		{"no instance", h.ctx(), &nriv1beta1.SetPluginStatusRequest{Status: notReady}, codes.InvalidArgument, nri.MetadataInstanceID},
		{"unknown instance", withInstance(h.ctx(), "10-st-1-1"), &nriv1beta1.SetPluginStatusRequest{Status: notReady}, codes.FailedPrecondition, "is not registered"},
		{"long reason", good, &nriv1beta1.SetPluginStatusRequest{Status: notReady, Reason: strings.Repeat("r", 1025)}, codes.InvalidArgument, "reason"},
		{"not UTF-8", good, &nriv1beta1.SetPluginStatusRequest{Status: notReady, Reason: "\xff"}, codes.InvalidArgument, "reason"},
		{"bad enum", good, &nriv1beta1.SetPluginStatusRequest{Status: 7}, codes.InvalidArgument, "status"},
	} {
		_, err := rc.SetPluginStatus(tc.ctx, tc.req)
		if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.field) {
			t.Errorf("%s: got %v, want %v naming %s", tc.name, err, tc.code, tc.field)
		}
		if strings.Contains(status.Convert(err).Message(), strings.Repeat("r", 100)) {
			t.Errorf("%s: the error echoes the input", tc.name)
		}
	}
	if _, err := rc.RequestResync(good, &nriv1beta1.RequestResyncRequest{Reason: "\xff"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("RequestResync with a bad reason: %v", err)
	}
	if _, err := rc.RequestResync(h.ctx(), &nriv1beta1.RequestResyncRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("RequestResync without an instance: %v", err)
	}
	// Another identity's instance, as the authentication interceptor
	// would tell it.
	other := server.ContextWithIdentity(metadata.NewIncomingContext(context.Background(),
		metadata.Pairs(nri.MetadataInstanceID, p.InstanceID())), server.Identity{Name: "uid:4242", UID: 4242, Unix: true})
	rs := h.srv.RuntimeService()
	if _, err := rs.SetPluginStatus(other, &nriv1beta1.SetPluginStatusRequest{Status: notReady}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("another identity's SetPluginStatus: %v", err)
	}
	if _, err := rs.RequestResync(other, &nriv1beta1.RequestResyncRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("another identity's RequestResync: %v", err)
	}
	pi := infoOf(t, h, "10-st")
	if pi.GetStatus() != ready || pi.GetStatusReason() != "" || pi.GetCounters().GetRequestedResyncs() != 0 {
		t.Fatalf("changed by refused calls: %v", pi)
	}
	if len(h.log.Of("10-st", "Synchronize")) != 1 {
		t.Fatal("a refused RequestResync synchronized")
	}

	for _, tc := range []struct {
		req   *nriv1beta1.RegisterPluginRequest
		field string
	}{
		{&nriv1beta1.RegisterPluginRequest{PluginName: "bad", PluginIdx: "10", Status: 4}, "status"},
		{&nriv1beta1.RegisterPluginRequest{PluginName: "bad", PluginIdx: "10", StatusReason: strings.Repeat("x", 1025)}, "status_reason"},
	} {
		_, err := registerRaw(h, tc.req)
		if status.Code(err) != codes.InvalidArgument || testplugin.Reason(err) != "REGISTRATION_REFUSAL_INVALID_SELECTORS" ||
			!strings.Contains(err.Error(), tc.field) {
			t.Errorf("registration with a bad %s: %v", tc.field, err)
		}
	}
}

// syncGate is an OnSynchronize handler that records every Synchronize and
// blocks the ones of the epochs in hold until released.
type syncGate struct {
	mu      sync.Mutex
	got     []*nriv1beta1.SynchronizeRequest
	holding map[uint64]chan struct{}
	arrived chan uint64
}

func newSyncGate(hold ...uint64) *syncGate {
	g := &syncGate{holding: map[uint64]chan struct{}{}, arrived: make(chan uint64, 16)}
	for _, e := range hold {
		g.holding[e] = make(chan struct{})
	}
	return g
}

func (g *syncGate) handle(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	g.mu.Lock()
	g.got = append(g.got, req)
	ch := g.holding[req.GetEpoch()]
	g.mu.Unlock()
	g.arrived <- req.GetEpoch()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	return &nriv1beta1.SynchronizeResponse{}, nil
}

func (g *syncGate) release(epoch uint64) { close(g.holding[epoch]) }

func (g *syncGate) awaitEpoch(t *testing.T, epoch uint64) {
	t.Helper()
	for {
		select {
		case e := <-g.arrived:
			if e == epoch {
				return
			}
		case <-time.After(wait()):
			t.Fatalf("no Synchronize of epoch %d", epoch)
		}
	}
}

func (g *syncGate) requests() []*nriv1beta1.SynchronizeRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*nriv1beta1.SynchronizeRequest(nil), g.got...)
}

// TestRequestedResync: RequestResync answers at once with the epoch, then
// a Synchronize of that epoch with reason PLUGIN_REQUESTED reaches that
// plugin only; events that begin after the request reach it after that
// Synchronize (and are not in its state), while other plugins and other
// events go on; requests made while one is pending merge into it.
func TestRequestedResync(t *testing.T) {
	h := newHarness(t, server.WithMinResyncInterval(0), server.WithMaxTimeout(time.Hour))
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1)}, nil)
	h.plugin("05", "bystander", nil)
	g := newSyncGate(2)
	p := h.plugin("10", "asker", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)
		p.Capabilities = &nriv1beta1.Capabilities{Resync: true}
		p.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(10 * time.Minute)}
		p.OnSynchronize = g.handle
	})
	g.awaitEpoch(t, 1)
	epoch, err := p.RequestResync(h.ctx(), "my view changed")
	if err != nil || epoch != 2 {
		t.Fatalf("RequestResync: epoch %d, %v", epoch, err)
	}
	g.awaitEpoch(t, 2) // held
	// While it synchronizes: a new pod's event waits for it, the
	// bystander gets it, and an event it does not subscribe to completes.
	done := make(chan error, 1)
	go func() { done <- h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(2)}) }()
	if err := h.log.WaitFor(h.ctx(), "05-bystander:RunPodSandbox", 1); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.UpdatePodSandbox(h.ctx(), &nriv1beta1.UpdatePodSandboxRequest{Pod: fixture.Pod(1)}); err != nil {
		t.Fatal(err)
	}
	// Merging: one more epoch for requests during the synchronization.
	e3, err := p.RequestResync(h.ctx(), "again")
	if err != nil || e3 != 3 {
		t.Fatalf("second request: epoch %d, %v", e3, err)
	}
	if e, err := p.RequestResync(h.ctx(), "and again"); err != nil || e != 3 {
		t.Fatalf("merged request: epoch %d, %v", e, err)
	}
	if got := h.log.Of("10-asker", "RunPodSandbox"); len(got) != 0 {
		t.Fatal("an event that began after the request reached the plugin before its Synchronize")
	}
	g.release(2)
	g.awaitEpoch(t, 3)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reqs := g.requests()
	var epochs []uint64
	for _, r := range reqs {
		epochs = append(epochs, r.GetEpoch())
	}
	eq(t, "epochs", epochs, []uint64{1, 2, 3})
	for _, r := range reqs[1:] {
		if r.GetReason() != nriv1beta1.SyncReason_SYNC_REASON_PLUGIN_REQUESTED {
			t.Fatalf("reason %v", r.GetReason())
		}
	}
	if n := len(reqs[1].GetPods()); n != 1 || reqs[1].GetPods()[0].GetId() != fixture.Pod(1).GetId() {
		t.Fatalf("epoch 2 state: %v (the new pod's event comes after it)", reqs[1].GetPods())
	}
	eq(t, "the asker's calls", callMethods(h.log.Of("10-asker", "Synchronize", "RunPodSandbox")),
		[]string{"Synchronize", "Synchronize", "Synchronize", "RunPodSandbox"})
	if n := infoOf(t, h, "10-asker").GetCounters().GetRequestedResyncs(); n != 2 {
		t.Fatalf("requested_resyncs %d, want 2 (merged once)", n)
	}
	if len(h.log.Of("05-bystander", "Synchronize")) != 1 {
		t.Fatal("the bystander was resynchronized")
	}
}

// TestRequestedResyncWithoutCapability: a plugin that did not declare
// resync may ask; it gets a Synchronize of a new epoch.
func TestRequestedResyncWithoutCapability(t *testing.T) {
	h := newHarness(t, server.WithMinResyncInterval(0))
	g := newSyncGate()
	p := h.plugin("10", "plain", func(p *testplugin.Plugin) { p.OnSynchronize = g.handle })
	g.awaitEpoch(t, 1)
	epoch, err := p.RequestResync(h.ctx(), "")
	if err != nil || epoch != 2 {
		t.Fatalf("epoch %d, %v", epoch, err)
	}
	g.awaitEpoch(t, 2)
}

// TestRequestedResyncInterval: requests sooner than the minimum interval
// after the last requested resync are accepted and merged, and do not
// hold the plugin's events.
func TestRequestedResyncInterval(t *testing.T) {
	h := newHarness(t, server.WithMinResyncInterval(time.Hour))
	g := newSyncGate()
	p := h.plugin("10", "loop", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{Resync: true}
		p.OnSynchronize = g.handle
	})
	if e, err := p.RequestResync(h.ctx(), ""); err != nil || e != 2 {
		t.Fatalf("epoch %d, %v", e, err)
	}
	g.awaitEpoch(t, 2)
	for i := 0; i < 50; i++ {
		if e, err := p.RequestResync(h.ctx(), ""); err != nil || e != 3 {
			t.Fatalf("request %d: epoch %d, %v", i, e, err)
		}
	}
	// Its events are not held by the deferred request (no time bound:
	// the interval is an hour).
	h.lifecycle(1)
	if n := infoOf(t, h, "10-loop").GetCounters().GetRequestedResyncs(); n != 2 {
		t.Fatalf("requested_resyncs %d, want 2", n)
	}
}

// TestStatusChangedAndMetrics: status changes wake StatusChanged and reach
// a StatusMetrics sink; repeated identical reports change nothing.
func TestStatusChangedAndMetrics(t *testing.T) {
	m := &statusMetrics{}
	h := newHarness(t, server.WithMetrics(m))
	ch := h.srv.StatusChanged()
	p := h.plugin("10", "m", func(p *testplugin.Plugin) { p.Status = notReady })
	<-ch
	ch = h.srv.StatusChanged()
	since := infoOf(t, h, "10-m").GetStatusSince().AsTime()
	for i := 0; i < 3; i++ {
		if err := p.SetStatus(h.ctx(), notReady, ""); err != nil {
			t.Fatal(err)
		}
	}
	if got := infoOf(t, h, "10-m").GetStatusSince().AsTime(); !got.Equal(since) {
		t.Fatal("an unchanged status moved status_since")
	}
	if err := p.SetStatus(h.ctx(), ready, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(wait()):
		t.Fatal("StatusChanged did not fire")
	}
	p.Stop()
	for {
		ch := h.srv.StatusChanged()
		if len(h.srv.Plugins()) == 0 {
			break
		}
		select {
		case <-ch:
		case <-time.After(wait()):
			t.Fatal("the plugin did not go")
		}
	}
	eq(t, "gauge updates", m.got(), []string{"10-m=PLUGIN_STATUS_NOT_READY", "10-m=PLUGIN_STATUS_READY", "10-m=PLUGIN_STATUS_UNSPECIFIED"})
}

type statusMetrics struct {
	mu     sync.Mutex
	status []string
	onCall func(plugin string) // called for every PluginCall, if set
}

func (m *statusMetrics) PluginStatus(plugin string, st nriv1beta1.PluginStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status = append(m.status, plugin+"="+st.String())
}
func (m *statusMetrics) NotReadySkip(string, nriv1beta1.Event) {}
func (m *statusMetrics) RequestedResync(string)                {}
func (m *statusMetrics) Plugins(int)                           {}
func (m *statusMetrics) Synchronized(string, int, int, time.Duration) {
}
func (m *statusMetrics) PluginCall(plugin string, _ nriv1beta1.Event, _ nriv1beta1.CallOutcome, _ time.Duration) {
	if m.onCall != nil {
		m.onCall(plugin)
	}
}
func (m *statusMetrics) CutWait(string, time.Duration)                               {}
func (m *statusMetrics) FailedOpen(string, nriv1beta1.Event, nriv1beta1.CallOutcome) {}
func (m *statusMetrics) Deprecation(string, string)                                  {}

func (m *statusMetrics) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.status...)
}

// TestRequestedResyncCutWaitsForEarlierEvents: an event that began before
// a RequestResync reaches the plugin before the requested Synchronize (the
// cut waits for it and the event does not wait for the cut), and its
// change is in that Synchronize's state: nothing lost, nothing twice. Were
// the event held at the plugin's closed gate, it would wait for the
// plugin's 10-minute timeout while the cut waits for it.
func TestRequestedResyncCutWaitsForEarlierEvents(t *testing.T) {
	h := newHarness(t, server.WithMinResyncInterval(0), server.WithMaxTimeout(time.Hour))
	release := make(chan struct{})
	h.plugin("05", "slow", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)
		p.Handle = func(ctx context.Context, method string, _ proto.Message) error {
			if method == "RunPodSandbox" {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		}
	})
	g := newSyncGate()
	p := h.plugin("10", "asker", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)
		p.Capabilities = &nriv1beta1.Capabilities{Resync: true}
		p.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(10 * time.Minute)}
		p.OnSynchronize = g.handle
	})
	done := make(chan error, 1)
	go func() { done <- h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)}) }()
	if err := h.log.WaitFor(h.ctx(), "05-slow:RunPodSandbox", 1); err != nil {
		t.Fatal(err)
	}
	if e, err := p.RequestResync(h.ctx(), ""); err != nil || e != 2 {
		t.Fatalf("epoch %d, %v", e, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	g.awaitEpoch(t, 2)
	eq(t, "the asker's calls", callMethods(h.log.Of("10-asker", "Synchronize", "RunPodSandbox")),
		[]string{"Synchronize", "RunPodSandbox", "Synchronize"})
	if pods := g.requests()[1].GetPods(); len(pods) != 1 || pods[0].GetId() != fixture.Pod(1).GetId() {
		t.Fatalf("the requested Synchronize's state: %v", pods)
	}
}
