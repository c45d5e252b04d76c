package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// The lifecycle events in the order a runtime sends them for one pod with
// one container; ValidateContainerAdjustment comes within CreateContainer.
var lifecycle = []nriv1beta1.Event{
	nriv1beta1.Event_EVENT_RUN_POD_SANDBOX,
	nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX,
	nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX,
	nriv1beta1.Event_EVENT_CREATE_CONTAINER,
	nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT,
	nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER,
	nriv1beta1.Event_EVENT_START_CONTAINER,
	nriv1beta1.Event_EVENT_POST_START_CONTAINER,
	nriv1beta1.Event_EVENT_UPDATE_CONTAINER,
	nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER,
	nriv1beta1.Event_EVENT_STOP_CONTAINER,
	nriv1beta1.Event_EVENT_REMOVE_CONTAINER,
	nriv1beta1.Event_EVENT_STOP_POD_SANDBOX,
	nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX,
}

// check builds a check of group "plugin".
func check(name string, run func(ctx context.Context, t conformance.T)) conformance.Check {
	return conformance.Check{ScenarioInfo: conformance.ScenarioInfo{Group: "plugin", Name: name, Origin: conformance.Behaviour}, Run: run}
}

// checks returns the checks in the order they run: each builds on the
// ones before (one plugin process, one server restarted once).
func (h *pluginHarness) checks() []conformance.Check {
	cs := []conformance.Check{
		check("registers", h.checkRegisters),
		check("configure", h.checkConfigure),
		check("synchronize", h.checkSynchronize),
	}
	for _, ev := range lifecycle {
		cs = append(cs, check("event/"+nri.EventName(ev), func(ctx context.Context, t conformance.T) { h.checkEvent(ctx, t, ev) }))
	}
	cs = append(cs,
		check("concurrent-events", h.checkConcurrent),
		check("health", h.checkHealth),
		check("reflection", h.checkReflection),
		check("shutdown", h.checkShutdown),
		check("re-registration", h.checkReregistration),
		check("process", h.checkProcess),
	)
	return cs
}

// checkRegisters starts the server and the plugin and waits for the
// registration (Configure and every Synchronize page answered).
func (h *pluginHarness) checkRegisters(ctx context.Context, t conformance.T) {
	start := time.Now()
	s, err := h.startServer(ctx)
	if err != nil {
		h.mu.Lock()
		h.regErr = err
		h.mu.Unlock()
		t.Fatalf("starting the server and the plugin: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, h.o.registerWait)
	defer cancel()
	info, err := waitPlugin(wctx, s.srv, h.o.full)
	if err != nil {
		h.mu.Lock()
		h.regErr = fmt.Errorf("not registered within %v", h.o.registerWait)
		h.mu.Unlock()
		if st, ok := h.procStatus(); ok && st.LastExit != nil {
			t.Errorf("the plugin process exited %d times, last: %v", st.Restarts, st.LastExit)
		}
		t.Fatalf("%s did not register within %v (-register-timeout); last log lines:\n%s", h.o.full, h.o.registerWait, h.logTail())
	}
	h.mu.Lock()
	h.info = info
	h.mu.Unlock()
	var evs []string
	for _, e := range info.GetEvents() {
		evs = append(evs, nri.EventName(e))
	}
	t.Logf("registered in %v as %s (%s), events: %s", time.Since(start).Round(time.Millisecond), h.o.full,
		strings.TrimPrefix(info.GetKind().String(), "PLUGIN_KIND_"), strings.Join(evs, ","))
	if sels := info.GetSelectors(); len(sels) > 0 {
		var parts []string
		for _, sel := range sels {
			parts = append(parts, strings.TrimSpace(prototextShort(sel)))
		}
		t.Logf("selectors: %s (the event checks use pods the first one selects)", strings.Join(parts, " | "))
	}
	switch info.GetStatus() {
	case nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY:
		conformance.Warnf(t, "the plugin reports NOT_READY: %s", info.GetStatusReason())
	case nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED:
		conformance.Warnf(t, "the plugin reports DEGRADED: %s", info.GetStatusReason())
	}
	if info.GetPluginVersion() != "" || info.GetNriVersion() != "" {
		t.Logf("plugin version %q, NRI version %q", info.GetPluginVersion(), info.GetNriVersion())
	}
}

// checkConfigure checks the Configure call: answered, its subscription
// accepted by the server.
func (h *pluginHarness) checkConfigure(_ context.Context, t conformance.T) {
	info := h.registered(t)
	if h.o.classic {
		t.Logf("answered through the bridge; subscription %d events accepted", len(info.GetEvents()))
		return
	}
	cfgs := h.cfg.rec.since(0, "Configure")
	if len(cfgs) == 0 {
		t.Fatal("no Configure call was recorded")
	}
	c := cfgs[0]
	if c.Err != nil {
		t.Fatalf("Configure failed: %v", c.Err)
	}
	rsp, _ := c.Rsp.(*nriv1beta1.ConfigureResponse)
	if len(info.GetEvents()) == 0 {
		t.Errorf("the plugin subscribed to no event (ConfigureResponse.events %#x)", rsp.GetEvents())
	}
	t.Logf("answered in %v: events %#x (%d events), accepted", c.Dur.Round(time.Millisecond), rsp.GetEvents(), len(info.GetEvents()))
}

// checkSynchronize checks the Synchronize pages of the registration.
func (h *pluginHarness) checkSynchronize(_ context.Context, t conformance.T) {
	info := h.registered(t)
	want := len(h.cfg.pods) + len(h.cfg.ctrs)
	if h.o.classic {
		if got := h.cfg.met.lastSynced(); got != want {
			t.Errorf("synchronized %d objects, want %d", got, want)
		}
		t.Logf("%d pods and %d containers synchronized through the bridge", len(h.cfg.pods), len(h.cfg.ctrs))
		return
	}
	pages := h.cfg.rec.since(0, "Synchronize")
	pods, ctrs := 0, 0
	for i, p := range pages {
		req, _ := p.Req.(*nriv1beta1.SynchronizeRequest)
		pods += len(req.GetPods())
		ctrs += len(req.GetContainers())
		if p.Err != nil {
			t.Errorf("page %d of %d failed: %v", i+1, len(pages), p.Err)
		}
	}
	switch {
	case len(info.GetSelectors()) > 0:
		// The server sends only the pods the selectors select; nritest
		// does not evaluate selectors itself.
		if pods > len(h.cfg.pods) || ctrs > len(h.cfg.ctrs) {
			t.Errorf("the pages carried %d pods and %d containers, more than the state's %d and %d", pods, ctrs, len(h.cfg.pods), len(h.cfg.ctrs))
		}
		t.Logf("the plugin's selectors filter the state: %d of %d pods", pods, len(h.cfg.pods))
	case len(pages) < 2:
		t.Errorf("the state went in %d page(s); nritest sizes it for several (-sync-pods)", len(pages))
	case pods != len(h.cfg.pods) || ctrs != len(h.cfg.ctrs):
		t.Errorf("the pages carried %d pods and %d containers, want %d and %d", pods, ctrs, len(h.cfg.pods), len(h.cfg.ctrs))
	}
	t.Logf("%d pages answered (%d pods, %d containers)", len(pages), pods, ctrs)
}

// drive sends one lifecycle event for pod and ctr and returns the plugin
// errors and the error the runtime got.
func drive(ctx context.Context, srv *server.Server, ev nriv1beta1.Event, pod *nriv1beta1.PodSandbox,
	ctr *nriv1beta1.Container) ([]*nriv1beta1.PluginError, error) {
	switch ev {
	case nriv1beta1.Event_EVENT_RUN_POD_SANDBOX:
		return nil, srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod})
	case nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX:
		return nil, srv.UpdatePodSandbox(ctx, &nriv1beta1.UpdatePodSandboxRequest{Pod: pod,
			LinuxResources: &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Shares: u64(2048)}}})
	case nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX:
		return srv.PostUpdatePodSandbox(ctx, &nriv1beta1.PostUpdatePodSandboxRequest{Pod: pod})
	case nriv1beta1.Event_EVENT_CREATE_CONTAINER:
		_, err := srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr})
		return nil, err
	case nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER:
		return srv.PostCreateContainer(ctx, &nriv1beta1.PostCreateContainerRequest{Pod: pod, Container: ctr})
	case nriv1beta1.Event_EVENT_START_CONTAINER:
		return nil, srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: pod, Container: ctr})
	case nriv1beta1.Event_EVENT_POST_START_CONTAINER:
		return srv.PostStartContainer(ctx, &nriv1beta1.PostStartContainerRequest{Pod: pod, Container: ctr})
	case nriv1beta1.Event_EVENT_UPDATE_CONTAINER:
		_, err := srv.UpdateContainer(ctx, &nriv1beta1.UpdateContainerRequest{Pod: pod, Container: ctr,
			LinuxResources: &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: i64(512 << 20)}}})
		return nil, err
	case nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER:
		return srv.PostUpdateContainer(ctx, &nriv1beta1.PostUpdateContainerRequest{Pod: pod, Container: ctr})
	case nriv1beta1.Event_EVENT_STOP_CONTAINER:
		rsp, err := srv.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: pod, Container: ctr})
		return rsp.GetPluginErrors(), err
	case nriv1beta1.Event_EVENT_REMOVE_CONTAINER:
		return srv.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: ctr})
	case nriv1beta1.Event_EVENT_STOP_POD_SANDBOX:
		return srv.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: pod})
	case nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX:
		return srv.RemovePodSandbox(ctx, &nriv1beta1.RemovePodSandboxRequest{Pod: pod})
	}
	return nil, nil // ValidateContainerAdjustment: within CreateContainer
}

// eventPod returns an event pod with the -annotation flags and its
// container, both shaped after the plugin's first selector, if any.
func (h *pluginHarness) eventPod(podID, ctrID string) (*nriv1beta1.PodSandbox, *nriv1beta1.Container) {
	p, c := eventPod(podID), eventCtr(podID, ctrID)
	for _, a := range h.o.annotations {
		k, v, _ := strings.Cut(a, "=")
		p.Annotations[k] = v
	}
	h.mu.Lock()
	sels := h.info.GetSelectors()
	h.mu.Unlock()
	if len(sels) > 0 {
		applySelector(sels[0], p, c)
	}
	return p, c
}

// clonePod and cloneCtr give every call its own request (NRI owns them).
func clonePod(p *nriv1beta1.PodSandbox) *nriv1beta1.PodSandbox { return p.CloneVT() }
func cloneCtr(c *nriv1beta1.Container) *nriv1beta1.Container   { return c.CloneVT() }

// checkEvent drives one lifecycle event of the pod "nritest-pod" and
// checks the plugin's answer, when it subscribed to the event.
func (h *pluginHarness) checkEvent(ctx context.Context, t conformance.T, ev nriv1beta1.Event) {
	info := h.registered(t)
	srv := h.server().srv
	pod, ctr := h.eventPod("nritest-pod", "nritest-ctr")
	recFrom, metFrom := h.cfg.rec.len(), h.cfg.met.len()
	if ev == nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT {
		// Sent within CreateContainer: look at what that check recorded.
		recFrom, metFrom = h.lastCreate()
	} else {
		if ev == nriv1beta1.Event_EVENT_CREATE_CONTAINER {
			h.mu.Lock()
			h.createMarks = [2]int{recFrom, metFrom}
			h.mu.Unlock()
		}
		perrs, err := drive(ctx, srv, ev, clonePod(pod), cloneCtr(ctr))
		h.eventErrors(t, ev, perrs, err)
	}
	if !subscribed(info, ev) {
		t.Skipf("not subscribed")
	}
	outs := filterEvent(h.cfg.met.since(metFrom, h.o.full), ev)
	if len(outs) != 1 {
		t.Fatalf("the server recorded %d calls of %s to the plugin, want 1", len(outs), nri.EventName(ev))
	}
	o := outs[0]
	var callErr error
	if !h.o.classic {
		if calls := h.cfg.rec.since(recFrom, nri.EventName(ev)); len(calls) > 0 {
			callErr = calls[0].Err
			if calls[0].Err == nil {
				t.Logf("answered in %v%s", calls[0].Dur.Round(time.Microsecond), describe(calls[0].Rsp))
			}
		}
	} else {
		t.Logf("answered in %v", o.Dur.Round(time.Microsecond))
	}
	judge(t, o, callErr, h.callFailure(nri.EventName(ev)))
}

// lastCreate returns the record positions before the CreateContainer check.
func (h *pluginHarness) lastCreate() (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.createMarks[0], h.createMarks[1]
}

// eventErrors reports the errors the runtime got from an event: plugin
// errors naming the plugin are its failures; a vetoed event is reported
// by the outcome.
func (h *pluginHarness) eventErrors(t conformance.T, ev nriv1beta1.Event, perrs []*nriv1beta1.PluginError, err error) {
	for _, pe := range perrs {
		t.Logf("plugin error reported to the runtime: %s-%s: %s", pe.GetPlugin().GetIndex(), pe.GetPlugin().GetName(), pe.GetMessage())
	}
	if err != nil {
		t.Logf("the runtime's %s failed: %v", nri.EventName(ev), err)
	}
}

func filterEvent(outs []outcome, ev nriv1beta1.Event) []outcome {
	var r []outcome
	for _, o := range outs {
		if o.Event == ev {
			r = append(r, o)
		}
	}
	return r
}

// prototextShort renders a message on one line.
func prototextShort(m proto.Message) string { return prototext.MarshalOptions{}.Format(m) }

// callFailure returns the server's reason for the plugin's last failed
// call of event (its log line "plugin call failed"), "" if none.
func (h *pluginHarness) callFailure(event string) string {
	lines := h.logs.lines(1, "plugin call failed", "plugin="+h.o.full+" ", "event="+event+" ")
	if len(lines) == 0 {
		return ""
	}
	_, rest, ok := strings.Cut(lines[0], " error=")
	if !ok {
		return ""
	}
	if q, err := strconv.QuotedPrefix(rest); err == nil {
		if u, err := strconv.Unquote(q); err == nil {
			return u
		}
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
}

// judge turns a call's outcome into the check's result: answered (or a
// veto, which is the plugin's right) passes; a timeout, an error, an
// unreachable plugin or a response the server refused fails.
func judge(t conformance.T, o outcome, callErr error, reason string) {
	t.Helper()
	if reason == "" && callErr != nil {
		reason = callErr.Error()
	}
	switch o.Outcome {
	case nriv1beta1.CallOutcome_CALL_OUTCOME_OK:
	case nriv1beta1.CallOutcome_CALL_OUTCOME_VETO:
		t.Logf("the plugin vetoed the event (its right): %s", reason)
	case nriv1beta1.CallOutcome_CALL_OUTCOME_REFUSED:
		t.Errorf("the server refused the plugin's response (invalid values or fields not granted): %s", reason)
	case nriv1beta1.CallOutcome_CALL_OUTCOME_TIMEOUT:
		t.Errorf("no answer within the plugin's timeout (%v)", o.Dur.Round(time.Millisecond))
	default:
		t.Errorf("outcome %s: %s", strings.TrimPrefix(o.Outcome.String(), "CALL_OUTCOME_"), reason)
	}
}

// describe summarizes a response's adjustments and updates.
func describe(rsp any) string {
	var parts []string
	switch r := rsp.(type) {
	case *nriv1beta1.CreateContainerResponse:
		if a := r.GetAdjust(); a != nil {
			parts = append(parts, "adjusts "+setFields(a))
		}
		if n := len(r.GetUpdate()); n > 0 {
			parts = append(parts, fmt.Sprintf("%d updates", n))
		}
		if n := len(r.GetEvict()); n > 0 {
			parts = append(parts, fmt.Sprintf("%d evictions", n))
		}
	case *nriv1beta1.UpdateContainerResponse:
		if n := len(r.GetUpdate()); n > 0 {
			parts = append(parts, fmt.Sprintf("%d updates", n))
		}
	case *nriv1beta1.StopContainerResponse:
		if n := len(r.GetUpdate()); n > 0 {
			parts = append(parts, fmt.Sprintf("%d updates", n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// setFields names the set top-level fields of a ContainerAdjustment.
func setFields(a *nriv1beta1.ContainerAdjustment) string {
	var names []string
	m := a.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); m.Has(fd) {
			names = append(names, string(fd.Name()))
		}
	}
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ",")
}

// checkConcurrent runs the lifecycles of several pods at once.
func (h *pluginHarness) checkConcurrent(ctx context.Context, t conformance.T) {
	info := h.registered(t)
	want := 0
	for _, ev := range lifecycle {
		if subscribed(info, ev) {
			want++
		}
	}
	if want == 0 {
		t.Skip("subscribed to no lifecycle event")
	}
	srv := h.server().srv
	metFrom := h.cfg.met.len()
	n := h.o.concurrency
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("nritest-conc-%d", i)
			pod, ctr := h.eventPod(id, id+"-ctr")
			for _, ev := range lifecycle {
				if _, err := drive(ctx, srv, ev, clonePod(pod), cloneCtr(ctr)); err != nil && errs[i] == nil {
					errs[i] = fmt.Errorf("%s: %w", nri.EventName(ev), err)
				}
			}
		}()
	}
	wg.Wait()
	outs := h.cfg.met.since(metFrom, h.o.full)
	bad := map[string]int{}
	for _, o := range outs {
		if o.Outcome != nriv1beta1.CallOutcome_CALL_OUTCOME_OK && o.Outcome != nriv1beta1.CallOutcome_CALL_OUTCOME_VETO {
			bad[nri.EventName(o.Event)+" "+strings.TrimPrefix(o.Outcome.String(), "CALL_OUTCOME_")]++
		}
	}
	// A vetoed CreateContainer ends that container's lifecycle early in a
	// real runtime; nritest sends the rest anyway: only the plugin's
	// failures count.
	if len(bad) > 0 {
		t.Errorf("calls that failed: %v", bad)
	}
	if len(outs) < n*want-n*2 && len(bad) == 0 {
		t.Errorf("the server recorded %d calls to the plugin, want about %d", len(outs), n*want)
	}
	for _, err := range errs {
		if err != nil && status.Code(err) != codes.OK {
			t.Logf("runtime error: %v", err)
			break
		}
	}
	t.Logf("%d pods at once: %d calls answered", n, len(outs))
}

// endpoint returns the endpoint the plugin registered (its launch slot,
// unless it chose another one).
func (h *pluginHarness) endpoint() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ep := h.info.GetEndpoint(); ep != "" {
		if strings.Contains(ep, "://") {
			return ep
		}
		return "unix://" + ep
	}
	return "unix://" + h.cfg.pluginDir + "/" + h.o.full + ".sock"
}

// dialPlugin connects to the plugin's endpoint.
func (h *pluginHarness) dialPlugin(t conformance.T) *grpc.ClientConn {
	t.Helper()
	ep := h.endpoint()
	if !strings.HasPrefix(ep, "unix://") {
		t.Skipf("the plugin's endpoint %s is not a unix socket (TLS endpoints are not probed)", ep)
	}
	cc, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// checkHealth asks the plugin's endpoint for gRPC health (optional:
// a warning when not served).
func (h *pluginHarness) checkHealth(ctx context.Context, t conformance.T) {
	h.registered(t)
	if h.o.classic {
		t.Skip("classic plugins serve ttrpc over their connection, no endpoint")
	}
	cc := h.dialPlugin(t)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rsp, err := healthpb.NewHealthClient(cc).Check(cctx, &healthpb.HealthCheckRequest{})
	switch {
	case status.Code(err) == codes.Unimplemented:
		conformance.Warnf(t, "the endpoint serves no grpc.health.v1.Health (optional; nrictl and probes use it)")
	case err != nil:
		t.Fatalf("health check: %v", err)
	case rsp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		t.Errorf("health: %s while registered, want SERVING", rsp.GetStatus())
	default:
		t.Logf("SERVING")
	}
}

// checkReflection asks the plugin's endpoint for server reflection
// (optional: a warning when not served).
func (h *pluginHarness) checkReflection(ctx context.Context, t conformance.T) {
	h.registered(t)
	if h.o.classic {
		t.Skip("classic plugins serve ttrpc over their connection, no endpoint")
	}
	cc := h.dialPlugin(t)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(cctx)
	if err == nil {
		err = stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
	}
	var rsp *reflectionpb.ServerReflectionResponse
	if err == nil {
		rsp, err = stream.Recv()
	}
	switch {
	case status.Code(err) == codes.Unimplemented:
		conformance.Warnf(t, "the endpoint serves no grpc.reflection.v1 (optional; grpcurl uses it)")
		return
	case err != nil:
		t.Fatalf("reflection: %v", err)
	}
	var names []string
	for _, s := range rsp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !slices.Contains(names, "nri.v1beta1.PluginService") {
		t.Errorf("reflection lists %v, without nri.v1beta1.PluginService", names)
	}
	t.Logf("services: %s", strings.Join(names, ", "))
}

// checkShutdown stops the server: the plugin gets Shutdown, answers it,
// and its registration ends.
func (h *pluginHarness) checkShutdown(ctx context.Context, t conformance.T) {
	h.registered(t)
	if st, ok := h.procStatus(); ok {
		h.mu.Lock()
		h.exits, h.stopped = st, true
		h.mu.Unlock()
	}
	n := 0
	for _, o := range h.cfg.met.since(0, h.o.full) {
		if o.Outcome == nriv1beta1.CallOutcome_CALL_OUTCOME_UNAVAILABLE {
			n++
		}
	}
	h.mu.Lock()
	h.unreachable = n
	h.mu.Unlock()
	s := h.server()
	recFrom := h.cfg.rec.len()
	sctx, cancel := context.WithTimeout(ctx, conformance.Wait)
	defer cancel()
	if err := s.stop(sctx); err != nil {
		t.Errorf("server shutdown: %v", err)
	}
	if h.o.classic {
		t.Logf("registration ended; the bridge told the plugin")
		return
	}
	calls := h.cfg.rec.since(recFrom, "Shutdown")
	if len(calls) == 0 {
		t.Fatal("no Shutdown call was recorded")
	}
	if err := calls[0].Err; err != nil {
		t.Errorf("Shutdown failed: %v", err)
	}
	req, _ := calls[0].Req.(*nriv1beta1.ShutdownRequest)
	t.Logf("Shutdown (%s) answered in %v", req.GetKind(), calls[0].Dur.Round(time.Microsecond))
}

// checkReregistration starts a new server on the same socket: the plugin
// (still running, or restarted by the supervisor) registers again within
// -restart-timeout.
func (h *pluginHarness) checkReregistration(ctx context.Context, t conformance.T) {
	h.registered(t)
	switch {
	case h.o.skipRestart:
		t.Skip("-no-restart")
	case h.o.classic:
		t.Skip("a classic plugin launched over a socketpair cannot reconnect: nrid restarts it with the bridge")
	}
	start := time.Now()
	s, err := h.startServer(ctx)
	if err != nil {
		t.Fatalf("restarting the server: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, h.o.restartWait)
	defer cancel()
	if _, err := waitPlugin(wctx, s.srv, h.o.full); err != nil {
		t.Fatalf("%s did not register again within %v (-restart-timeout); last log lines:\n%s", h.o.full, h.o.restartWait, h.logTail())
	}
	restarts := 0
	if st, ok := h.procStatus(); ok {
		restarts = st.Restarts - h.exits.Restarts
	}
	how := "the same process"
	if restarts > 0 {
		how = fmt.Sprintf("after the process exited and the supervisor restarted it %d time(s)", restarts)
	}
	t.Logf("registered again in %v (%s)", time.Since(start).Round(time.Millisecond), how)
}

// checkProcess fails when the plugin process exited before the shutdown
// check (a crash the supervisor hid by restarting it).
func (h *pluginHarness) checkProcess(_ context.Context, t conformance.T) {
	st, ok := h.procStatus()
	if !ok {
		t.Skip("no process was started")
	}
	h.mu.Lock()
	crashes := h.crashes
	h.mu.Unlock()
	h.mu.Lock()
	unreachable := h.unreachable
	h.mu.Unlock()
	if unreachable > 0 {
		crashes = append(crashes, fmt.Sprintf("%d call(s) found the plugin unreachable before the shutdown check", unreachable))
	}
	if h.o.classic {
		// The bridge launches classic plugins: their exits show in the
		// supervisor's restarts.
		h.mu.Lock()
		before, stopped := h.exits, h.stopped
		h.mu.Unlock()
		if !stopped {
			before = st
		}
		if before.Restarts > 0 || before.LastExit != nil || !before.ExitedAt.IsZero() {
			crashes = append(crashes, fmt.Sprintf("%d restart(s), last exit: %v", before.Restarts, before.LastExit))
		}
	}
	if len(crashes) > 0 {
		t.Errorf("the plugin process exited or went away before the shutdown check: %s", strings.Join(crashes, "; "))
	}
	if !st.Running {
		t.Logf("not running at the end (%v)", errors.Join(st.LastExit))
		return
	}
	t.Logf("pid %d, %d restart(s) in all", st.PID, st.Restarts)
}
