package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// podIn is fixture pod n in namespace ns.
func podIn(n int, ns string) *nriv1beta1.PodSandbox {
	p := fixture.Pod(n)
	p.Namespace = ns
	return p
}

// inNamespaces selects the pods of the namespaces.
func inNamespaces(ns ...string) []*nriv1beta1.EventSelector {
	return []*nriv1beta1.EventSelector{{Namespaces: ns}}
}

// lifecycleIn runs every event of pod n (namespace ns) with container c.
func lifecycleIn(t *testing.T, h *harness, n int, ns string, c int) {
	t.Helper()
	ctx := h.ctx()
	pod, ctr := podIn(n, ns), fixture.Container(n, c)
	steps := []func() error{
		func() error { return h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}) },
		func() error { return h.srv.UpdatePodSandbox(ctx, &nriv1beta1.UpdatePodSandboxRequest{Pod: pod}) },
		func() error {
			_, err := h.srv.PostUpdatePodSandbox(ctx, &nriv1beta1.PostUpdatePodSandboxRequest{Pod: pod})
			return err
		},
		func() error {
			_, err := h.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr})
			return err
		},
		func() error {
			return h.srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: pod, Container: ctr})
		},
		func() error {
			_, err := h.srv.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: pod, Container: ctr})
			return err
		},
		func() error {
			_, err := h.srv.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: ctr})
			return err
		},
		func() error {
			_, err := h.srv.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: pod})
			return err
		},
		func() error {
			_, err := h.srv.RemovePodSandbox(ctx, &nriv1beta1.RemovePodSandboxRequest{Pod: pod})
			return err
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d of pod %d in %s: %v", i, n, ns, err)
		}
	}
}

func info(t *testing.T, h *harness, full string) *nriv1beta1.PluginInfo {
	t.Helper()
	for _, p := range h.srv.Plugins() {
		if p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName() == full {
			return p
		}
	}
	t.Fatalf("plugin %s is not registered", full)
	return nil
}

// TestSelectorsFilterEvents: a plugin selecting namespace "a" and
// containers "app-1" gets the pod events of pods in "a" (container_names
// does not filter them), the container events of app-1 in "a" only, and
// nothing of namespace "b"; a plugin without selectors gets everything.
// Registered and AdminService echo the selectors; filtered events are
// counted.
func TestSelectorsFilterEvents(t *testing.T) {
	h := newHarness(t)
	sels := []*nriv1beta1.EventSelector{{Namespaces: []string{"a"}, ContainerNames: []string{"app-1"}}}
	sel := h.plugin("10", "sel", func(p *testplugin.Plugin) { p.Selectors = sels })
	h.plugin("20", "all", nil)
	if got := sel.Registered().GetSelectors(); len(got) != 1 || !proto.Equal(got[0], sels[0]) {
		t.Fatalf("Registered.selectors = %v, want %v", got, sels)
	}
	lifecycleIn(t, h, 1, "a", 0) // pod selected, container not
	lifecycleIn(t, h, 2, "a", 1) // both selected
	lifecycleIn(t, h, 3, "b", 1) // neither
	var got []string
	for _, c := range h.log.Of("10-sel") {
		if c.Method == "Configure" || c.Method == "Synchronize" {
			continue
		}
		id := ""
		switch r := c.Req.(interface{ GetPod() *nriv1beta1.PodSandbox }); {
		case r != nil:
			id = r.GetPod().GetNamespace()
		}
		got = append(got, c.Method+"@"+id)
	}
	podEvents := []string{"RunPodSandbox@a", "UpdatePodSandbox@a", "PostUpdatePodSandbox@a"}
	podEnd := []string{"StopPodSandbox@a", "RemovePodSandbox@a"}
	want := slices.Concat(podEvents, podEnd, podEvents,
		[]string{"CreateContainer@a", "ValidateContainerAdjustment@a", "StartContainer@a", "StopContainer@a", "RemoveContainer@a"}, podEnd)
	eq(t, "10-sel's events", got, want)
	if n := len(h.log.Of("20-all")); n < 3*9 {
		t.Fatalf("20-all got %d calls, want every event of the three pods", n)
	}
	pi := info(t, h, "10-sel")
	if len(pi.GetSelectors()) != 1 || !proto.Equal(pi.GetSelectors()[0], sels[0]) {
		t.Fatalf("PluginInfo.selectors = %v", pi.GetSelectors())
	}
	// Filtered: pod 1's 5 container events (Create, Validate, Start, Stop,
	// Remove), pod 3's 5 pod events and 5 container events.
	if f := pi.GetCounters().GetFiltered(); f != 15 {
		t.Fatalf("counters.filtered = %d, want 15", f)
	}
	if f := info(t, h, "20-all").GetCounters().GetFiltered(); f != 0 {
		t.Fatalf("20-all counters.filtered = %d, want 0", f)
	}
}

// TestFilteredOutPluginIsNeverWaitedFor: a plugin busy with (blocked in) an
// event of a pod it selects does not delay the events of a pod it does not
// select, although it takes one call at a time; and a required registrant
// hanging in Synchronize is not waited for by the pods it does not select.
func TestFilteredOutPluginIsNeverWaitedFor(t *testing.T) {
	h := newHarness(t, server.WithMaxTimeout(time.Hour))
	release := make(chan struct{})
	defer close(release)
	h.plugin("10", "busy", func(p *testplugin.Plugin) {
		p.Selectors = inNamespaces("a")
		p.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(10 * time.Minute)}
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
	h.plugin("20", "other", nil)
	hangingRegistrant(t, h, "15", "stuck", func(p *testplugin.Plugin) {
		p.Selectors = inNamespaces("a")
		p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true}
		p.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(10 * time.Minute), Synchronize: durationpb.New(10 * time.Minute)}
	})
	blocked := make(chan error, 1)
	go func() {
		blocked <- h.srv.RunPodSandbox(context.Background(), &nriv1beta1.RunPodSandboxRequest{Pod: podIn(1, "a")})
	}()
	if err := h.log.WaitFor(h.ctx(), "10-busy:RunPodSandbox", 1); err != nil {
		t.Fatal(err)
	}
	// Pod 2 in "b": neither 10-busy (busy) nor 15-stuck (synchronizing,
	// required) select it. Its events finish while both still hang; no time
	// bound stands for "not delayed", as they hang until the test ends.
	done := make(chan error, 1)
	go func() {
		ctx := h.ctx()
		err := h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: podIn(2, "b")})
		if err == nil {
			_, err = h.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: podIn(2, "b"), Container: fixture.Container(2, 0)})
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-blocked:
		t.Fatalf("pod 1's event ended first (%v): the test proves nothing", err)
	case <-time.After(wait()):
		t.Fatal("pod 2's events waited for plugins that do not select it")
	}
	eq(t, "events of pod 2", h.log.Strings("RunPodSandbox", "CreateContainer"),
		[]string{"10-busy:RunPodSandbox", "20-other:RunPodSandbox", "20-other:CreateContainer"})
}

// syncedIDs collects the pod and container ids of a plugin's Synchronize
// pages with the given epoch, and the number of pages.
func syncedIDs(log *testplugin.Log, full string, epoch uint64) (pods, ctrs []string, pages int) {
	for _, c := range log.Of(full, "Synchronize") {
		r := c.Req.(*nriv1beta1.SynchronizeRequest)
		if r.GetEpoch() != epoch {
			continue
		}
		pages++
		for _, p := range r.GetPods() {
			pods = append(pods, p.GetId())
		}
		for _, x := range r.GetContainers() {
			ctrs = append(ctrs, x.GetId())
		}
	}
	slices.Sort(pods)
	slices.Sort(ctrs)
	return pods, ctrs, pages
}

// TestSynchronizeCarriesOnlySelected: the initial Synchronize, paged by a
// small maximum message size, and a resync after the runtime attached again
// carry exactly the selected pods and containers (containers by their pod
// and their name), in as many pages as they need.
func TestSynchronizeCarriesOnlySelected(t *testing.T) {
	h := newHarness(t)
	state := func(base int) (pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container, wantPods, wantCtrs []string) {
		for n := base; n < base+120; n++ {
			ns := []string{"a", "b"}[n%2]
			pod := podIn(n, ns)
			pods = append(pods, pod)
			if ns == "a" {
				wantPods = append(wantPods, pod.GetId())
			}
			for c := range 2 {
				ctr := fixture.Container(n, c)
				ctrs = append(ctrs, ctr)
				if ns == "a" && ctr.GetName() == "app-1" {
					wantCtrs = append(wantCtrs, ctr.GetId())
				}
			}
		}
		slices.Sort(wantPods)
		slices.Sort(wantCtrs)
		return
	}
	pods, ctrs, wantPods, wantCtrs := state(0)
	h.attach(pods, ctrs)
	h.plugin("10", "sel", func(p *testplugin.Plugin) {
		p.Selectors = []*nriv1beta1.EventSelector{{Namespaces: []string{"a"}, ContainerNames: []string{"*-1"}}}
		p.Capabilities = &nriv1beta1.Capabilities{MaxMessageSize: 64 << 10, Resync: true}
	})
	gotPods, gotCtrs, pages := syncedIDs(h.log, "10-sel", 1)
	eq(t, "synchronized pods", gotPods, wantPods)
	eq(t, "synchronized containers", gotCtrs, wantCtrs)
	if pages < 2 {
		t.Fatalf("%d page(s): the test wants the selected state paged", pages)
	}
	pods, ctrs, wantPods, wantCtrs = state(1000)
	h.attach(pods, ctrs)
	if err := h.log.Wait(h.ctx(), func(calls []testplugin.Call) bool {
		for _, c := range calls {
			if r, ok := c.Req.(*nriv1beta1.SynchronizeRequest); ok && r.GetEpoch() == 2 && !r.GetMore() {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	gotPods, gotCtrs, _ = syncedIDs(h.log, "10-sel", 2)
	eq(t, "resynchronized pods", gotPods, wantPods)
	eq(t, "resynchronized containers", gotCtrs, wantCtrs)
}

// TestRequiredOnlyForSelected: a plugin required by its failure policy
// fails the creations of the pods it selects when it is unavailable, and
// is not called for the others.
func TestRequiredOnlyForSelected(t *testing.T) {
	h := newHarness(t)
	h.plugin("10", "req", func(p *testplugin.Plugin) {
		p.Selectors = inNamespaces("a")
		p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true, KeepConnected: true}
		p.Handle = func(_ context.Context, method string, _ proto.Message) error {
			if method == "RunPodSandbox" {
				return status.Error(codes.ResourceExhausted, "busy")
			}
			return nil
		}
	})
	err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: podIn(1, "a")})
	if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" {
		t.Fatalf("selected pod: %v, want REQUIRED_UNAVAILABLE", err)
	}
	if err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: podIn(2, "b")}); err != nil {
		t.Fatalf("pod the required plugin does not select: %v", err)
	}
}

// TestAbsentRequiredPluginOnlyForSelected: the operator's required plugin,
// the required-plugins annotation and RequireUntilRegistered require an
// absent plugin only for what its known selectors select: those it last
// registered with, or those RememberSelectors gave.
func TestAbsentRequiredPluginOnlyForSelected(t *testing.T) {
	create := func(h *harness, n int, ns string, annotate string) error {
		pod := podIn(n, ns)
		if annotate != "" {
			pod.Annotations[validate.RequiredPluginsAnnotation] = annotate
		}
		_, err := h.srv.CreateContainer(h.ctx(), &nriv1beta1.CreateContainerRequest{Pod: pod, Container: fixture.Container(n, 0)})
		return err
	}
	missing := func(t *testing.T, err error, name string) {
		t.Helper()
		if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || !strings.Contains(err.Error(), name) {
			t.Fatalf("got %v, want REQUIRED_UNAVAILABLE naming %s", err, name)
		}
	}
	t.Run("operator list, selectors of its last registration", func(t *testing.T) {
		h := newHarness(t, server.WithValidator(validateRequired("req")))
		p := h.plugin("10", "req", func(p *testplugin.Plugin) { p.Selectors = inNamespaces("a") })
		if err := create(h, 1, "b", ""); err != nil {
			t.Fatalf("registered, not selecting: %v", err)
		}
		p.Stop()
		waitGone(t, h, "10-req")
		missing(t, create(h, 2, "a", ""), "req")
		if err := create(h, 3, "b", ""); err != nil {
			t.Fatalf("absent, known not to select the pod: %v", err)
		}
	})
	t.Run("annotation, remembered selectors", func(t *testing.T) {
		h := newHarness(t)
		if err := h.srv.RememberSelectors("10-req", inNamespaces("a")); err != nil {
			t.Fatal(err)
		}
		missing(t, create(h, 1, "a", `["req"]`), "req")
		if err := create(h, 2, "b", `["req"]`); err != nil {
			t.Fatalf("annotated, absent, known not to select the pod: %v", err)
		}
		missing(t, create(h, 3, "b", `["other"]`), "other")
	})
	t.Run("RequireUntilRegistered, remembered selectors", func(t *testing.T) {
		h := newHarness(t)
		h.srv.RequireUntilRegistered([]string{"10-req", "20-unknown"})
		if err := h.srv.RememberSelectors("10-req", inNamespaces("a")); err != nil {
			t.Fatal(err)
		}
		err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: podIn(1, "b")})
		missing(t, err, "20-unknown") // unknown selectors: everything
		if strings.Contains(err.Error(), "10-req") {
			t.Fatalf("%v names 10-req, which does not select the pod", err)
		}
		h.srv.RequireUntilRegistered([]string{"10-req"})
		if err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: podIn(2, "b")}); err != nil {
			t.Fatal(err)
		}
		missing(t, h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: podIn(3, "a")}), "10-req")
	})
	t.Run("RememberSelectors checks its input", func(t *testing.T) {
		h := newHarness(t)
		if err := h.srv.RememberSelectors("req", nil); err == nil {
			t.Fatal("accepted a name without index")
		}
		if err := h.srv.RememberSelectors("10-req", []*nriv1beta1.EventSelector{{PodLabels: "x in ()"}}); err == nil {
			t.Fatal("accepted an invalid selector")
		}
	})
}

func waitGone(t *testing.T, h *harness, full string) {
	t.Helper()
	ctx := h.ctx()
	for {
		ch := h.srv.PluginsChanged()
		if !slices.ContainsFunc(h.srv.Plugins(), func(p *nriv1beta1.PluginInfo) bool {
			return p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName() == full
		}) {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s is still registered", full)
		}
	}
}

// TestInvalidSelectorsRefused: invalid selectors are refused before
// anything else (the endpoint is never dialed), with
// REGISTRATION_REFUSAL_INVALID_SELECTORS, the field path in the message,
// ErrorInfo and BadRequest, and a short message; nothing is registered.
func TestInvalidSelectorsRefused(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("x", 512<<10) // under the registration's own limit of 1 MiB
	for _, tc := range []struct {
		what  string
		sels  []*nriv1beta1.EventSelector
		field string
	}{
		{"bad label selector", []*nriv1beta1.EventSelector{{}, {PodLabels: "app in ()"}}, "selectors[1].pod_labels"},
		{"huge label selector", []*nriv1beta1.EventSelector{{PodLabels: long}}, "selectors[0].pod_labels"},
		{"too many selectors", make([]*nriv1beta1.EventSelector, 17), "selectors"},
		{"namespace too long", []*nriv1beta1.EventSelector{{Namespaces: []string{"a", long}}}, "selectors[0].namespaces[1]"},
		{"container name not UTF-8", []*nriv1beta1.EventSelector{{ContainerNames: []string{"\xff"}}}, "selectors[0].container_names[0]"},
		{"too many handlers", []*nriv1beta1.EventSelector{{RuntimeHandlers: make([]string, 65)}}, "selectors[0].runtime_handlers"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			_, err := registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "sel", PluginIdx: "10",
				Endpoint: "/nonexistent/dir/x.sock", Selectors: tc.sels})
			if status.Code(err) != codes.InvalidArgument || testplugin.Reason(err) != "REGISTRATION_REFUSAL_INVALID_SELECTORS" {
				t.Fatalf("got %v, want InvalidArgument INVALID_SELECTORS", err)
			}
			st := status.Convert(err)
			if !strings.HasPrefix(st.Message(), tc.field+":") || len(st.Message()) > 300 {
				t.Fatalf("message (%d bytes) %.300q should start with %s and be short", len(st.Message()), st.Message(), tc.field)
			}
			var field string
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) == 1 {
					field = br.GetFieldViolations()[0].GetField()
				}
			}
			if field != tc.field {
				t.Fatalf("BadRequest field %q, want %q", field, tc.field)
			}
		})
	}
	if n := len(h.srv.Plugins()); n != 0 {
		t.Fatalf("%d plugins registered", n)
	}
	// In-process registrations are checked the same way.
	_, err := h.srv.RegisterInProcess(h.ctx(), server.Registration{Name: "sel", Index: "10",
		Selectors: []*nriv1beta1.EventSelector{{PodLabels: "=x"}}}, nil)
	if testplugin.Reason(err) != "REGISTRATION_REFUSAL_INVALID_SELECTORS" {
		t.Fatalf("in process: %v", err)
	}
}

// TestUpdatesOutsideSelectorsFail: unsolicited updates and evictions for
// containers outside the plugin's selectors are not applied and are
// reported failed; the others are applied.
func TestUpdatesOutsideSelectorsFail(t *testing.T) {
	h := newHarness(t)
	in, out := fixture.Container(1, 0), fixture.Container(2, 0)
	h.attach([]*nriv1beta1.PodSandbox{podIn(1, "a"), podIn(2, "b")}, []*nriv1beta1.Container{in, out})
	p := h.plugin("10", "sel", func(p *testplugin.Plugin) { p.Selectors = inNamespaces("a") })
	res := &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "0"}}
	rsp, err := p.UpdateContainers(h.ctx(), &nriv1beta1.UpdateContainersRequest{
		Update: []*nriv1beta1.ContainerUpdate{{ContainerId: in.GetId(), Linux: &nriv1beta1.LinuxContainerUpdate{Resources: res}},
			{ContainerId: out.GetId(), Linux: &nriv1beta1.LinuxContainerUpdate{Resources: res}}},
		Evict: []*nriv1beta1.ContainerEviction{{ContainerId: out.GetId(), Reason: "test"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rsp.GetFailed()) != 1 || rsp.GetFailed()[0].GetContainerId() != out.GetId() ||
		len(rsp.GetFailedEvictions()) != 1 || rsp.GetFailedEvictions()[0].GetContainerId() != out.GetId() {
		t.Fatalf("failed %v / %v, want the container outside the selectors", rsp.GetFailed(), rsp.GetFailedEvictions())
	}
	updates, evicts := h.rt.got()
	if len(updates) != 1 || updates[0].GetContainerId() != in.GetId() || len(evicts) != 0 {
		t.Fatalf("runtime got %v / %v", updates, evicts)
	}
}

// TestOperatorSelectors: the operator's selectors (PluginPolicy.Selectors)
// apply to a plugin that registers without its own; a plugin's own win.
func TestOperatorSelectors(t *testing.T) {
	h := newHarness(t, server.WithPluginPolicy(func(_, full string) *server.PluginPolicy {
		return &server.PluginPolicy{Selectors: inNamespaces("a")}
	}))
	h.plugin("10", "plain", nil)
	own := h.plugin("20", "own", func(p *testplugin.Plugin) { p.Selectors = inNamespaces("b") })
	if got := info(t, h, "10-plain").GetSelectors(); len(got) != 1 || got[0].GetNamespaces()[0] != "a" {
		t.Fatalf("10-plain's selectors %v, want the operator's", got)
	}
	if got := own.Registered().GetSelectors(); len(got) != 1 || got[0].GetNamespaces()[0] != "b" {
		t.Fatalf("20-own's selectors %v, want its own", got)
	}
	for n, ns := range []string{"a", "b", "c"} {
		if err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: podIn(n, ns)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, c := range h.log.Calls("RunPodSandbox") {
		got = append(got, c.Plugin+"@"+c.Req.(*nriv1beta1.RunPodSandboxRequest).GetPod().GetNamespace())
	}
	eq(t, "calls", got, []string{"10-plain@a", "20-own@b"})
}

// TestFilteredPluginTakesNoBudgetShare: a later plugin whose selectors
// exclude the event keeps no reserve of the caller's budget: the first
// plugin may use all of it (with the later plugin counted it would keep a
// quarter back).
func TestFilteredPluginTakesNoBudgetShare(t *testing.T) {
	h := newHarness(t, server.WithMaxTimeout(time.Hour))
	long := &nriv1beta1.Timeouts{Request: durationpb.New(time.Hour)}
	left := make(chan time.Duration, 1)
	h.plugin("10", "first", func(p *testplugin.Plugin) {
		p.Timeouts = long
		p.Handle = func(ctx context.Context, method string, _ proto.Message) error {
			if d, ok := ctx.Deadline(); ok && method == "RunPodSandbox" {
				left <- time.Until(d)
			}
			return nil
		}
	})
	h.plugin("20", "sel", func(p *testplugin.Plugin) {
		p.Timeouts = long
		p.Selectors = inNamespaces("elsewhere")
	})
	const budget = 40 * time.Second
	if err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: podIn(1, "a")},
		server.Budget(time.Now().Add(budget))); err != nil {
		t.Fatal(err)
	}
	// Counted, 20-sel would keep budget/4 (10 s) back from 10-first.
	if got := <-left; got <= budget*3/4 {
		t.Fatalf("10-first was allowed %v of a %v budget: the filtered plugin kept a reserve", got, budget)
	}
}
