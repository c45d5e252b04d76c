package faults_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// createOnly subscribes to CreateContainer only.
var createOnly = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)

// TestHangingPlugin: a plugin that never answers CreateContainer (it hangs
// until nrid's deadline, then returns the deadline's error) is skipped
// under its ignore policy: no event fails, the healthy plugins before and
// after it get every event once and in order. Without keep_connected it is
// evicted (Shutdown EVICTED) after the first timeout; with it, it stays
// registered. Either way nrid's goroutines and files come back to the
// baseline once it is gone.
func TestHangingPlugin(t *testing.T) {
	for _, keep := range []bool{false, true} {
		name := map[bool]string{false: "evicted", true: "keep_connected"}[keep]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, defaultConfig())
			bad := e.badPlugin(createOnly)
			bad.Timeouts = nil // nrid's 300 ms
			bad.FailurePolicy = &nriv1beta1.FailurePolicy{KeepConnected: keep}
			bad.Handle = func(ctx context.Context, method string, _ proto.Message) error {
				if method == "CreateContainer" {
					return hang(ctx)
				}
				return nil
			}
			reg := register(t, e.n, bad)
			runs := e.load(loadPods)
			checkNoFailures(t, runs)
			e.checkHealthy(runs)
			if keep {
				e.checkStays(bad, reg)
			} else {
				e.waitEvicted(bad, nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED)
			}
			e.finish(bad)
		})
	}
}

// TestHungCallDelaysOnlyItsEvent: while a plugin hangs in pod A's
// CreateContainer (it asked for a 10-minute timeout and hangs until the
// test releases it), a whole load of other pods' events it does not
// subscribe to completes: nothing waits for the hung call. No time bound
// stands for "not delayed": the load can only finish if nothing waited.
func TestHungCallDelaysOnlyItsEvent(t *testing.T) {
	e := newEnv(t, defaultConfig())
	release := make(chan struct{})
	inCall := make(chan struct{}, 1)
	bad := e.badPlugin(createOnly)
	bad.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(10 * time.Minute)}
	bad.FailurePolicy = &nriv1beta1.FailurePolicy{KeepConnected: true}
	bad.Handle = hangCreate(inCall, func(ctx context.Context) error { return hangUntil(ctx, release) })
	register(t, e.n, bad)
	podA := e.pods(1)[0]
	aDone := make(chan error, 1)
	go func() {
		_, err := senders["CreateContainer"](e.ctx(), e.c.adapt, podA)
		aDone <- err
	}()
	waitFor(t, inCall, "pod A's CreateContainer to reach the plugin")
	runs := e.load(loadPods, "CreateContainer")
	select {
	case err := <-aDone:
		t.Fatalf("pod A's CreateContainer ended (%v) before the load did: the test proves nothing", clipErr(err))
	default:
	}
	checkNoFailures(t, runs)
	e.checkHealthy(runs)
	close(release)
	if err := <-aDone; err != nil {
		t.Errorf("pod A's CreateContainer = %v, want the released plugin skipped", clipErr(err))
	}
	e.finish(bad)
}

// TestSlowPlugin: a plugin that answers every event after a delay shorter
// than its timeout is a healthy plugin: nothing fails, it stays registered,
// and it, like the others, gets every event once and in each pod's order.
func TestSlowPlugin(t *testing.T) {
	e := newEnv(t, defaultConfig())
	bad := e.badPlugin(lifecycleMask)
	bad.Handle = func(ctx context.Context, method string, _ proto.Message) error {
		if !slices.Contains(lifecycleMethods, method) {
			return nil
		}
		select {
		case <-time.After(20 * time.Millisecond): // the plugin's own slowness
			return nil
		case <-ctx.Done():
			return ctxStatus(ctx)
		}
	}
	reg := register(t, e.n, bad)
	runs := e.load(loadPods)
	checkNoFailures(t, runs)
	e.checkHealthy(runs)
	checkDelivery(t, e.log, runs, badName)
	e.checkStays(bad, reg)
	e.finish(bad)
}

// TestGarbageResponse: a CreateContainer answer that does not decode is a
// protocol error: the plugin is skipped (no event fails), evicted with
// Shutdown EVICTED, and the healthy plugins are untouched.
func TestGarbageResponse(t *testing.T) {
	e := newEnv(t, defaultConfig())
	bad := e.badPlugin(createOnly)
	bad.ServerOptions = []grpc.ServerOption{grpc.ForceServerCodecV2(garbageCodec{})}
	register(t, e.n, bad)
	runs := e.load(loadPods)
	checkNoFailures(t, runs)
	e.checkHealthy(runs)
	e.waitEvicted(bad, nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED)
	e.finish(bad)
}

// TestInvalidUTF8Response: a CreateContainer answer with an environment
// value that is not UTF-8 never reaches the runtime: it is a protocol error
// (the plugin is skipped and evicted), no event fails and the healthy
// plugins are untouched.
func TestInvalidUTF8Response(t *testing.T) {
	e := newEnv(t, defaultConfig())
	bad := e.badPlugin(createOnly)
	bad.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
		return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
			Env: []*nriv1beta1.KeyValue{{Key: "GREETING", Value: string([]byte{'g', 'r', 0xfc, 0xdf, 'e'})}}}}, nil
	}
	register(t, e.n, bad)
	runs := e.load(loadPods)
	checkNoFailures(t, runs)
	for _, r := range runs {
		if s, ok := r.stepOf("CreateContainer"); ok {
			if env := s.rsp.(*nriv1beta1.AdaptationServiceCreateContainerResponse).GetAdjust().GetEnv(); len(env) != 0 {
				t.Errorf("pod %d: the runtime got the bad plugin's environment %q", r.pod, env)
			}
		}
	}
	e.checkHealthy(runs)
	e.waitEvicted(bad, nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED)
	e.finish(bad)
}

// TestOversizedResponse: a CreateContainer answer over nrid's 4 MiB
// message limit is an availability failure that never evicts
// (RESOURCE_EXHAUSTED): every one is skipped, no event fails, the plugin
// stays registered, and nrid's peak memory grows by at most 10 MB per
// oversized answer.
func TestOversizedResponse(t *testing.T) {
	e := newEnv(t, defaultConfig())
	big := strings.Repeat("x", 5<<20)
	bad := e.badPlugin(createOnly)
	bad.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
		return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"big": big}}}, nil
	}
	reg := register(t, e.n, bad)
	before := e.n.peak(t)
	runs := e.load(loadPods)
	hostile := len(e.log.Of(badName, "CreateContainer"))
	checkPeak(t, e.n, before, hostile)
	if hostile != loadPods {
		t.Errorf("the oversized plugin got %d CreateContainer calls, want %d (one per pod)", hostile, loadPods)
	}
	checkNoFailures(t, runs)
	e.checkHealthy(runs)
	e.checkStays(bad, reg)
	e.finish(bad)
}

// checkPeak asserts that nrid's peak resident set grew by at most 10 MB per
// hostile request since before.
func checkPeak(t *testing.T, n *nrid, before int64, hostile int) {
	t.Helper()
	after := n.peak(t)
	grew := after - before
	t.Logf("peak RSS (VmHWM) %.1f MB -> %.1f MB over %d hostile requests: %+.2f MB each",
		float64(before)/1e6, float64(after)/1e6, hostile, float64(grew)/1e6/float64(max(hostile, 1)))
	if hostile > 0 && grew > int64(hostile)*10e6 {
		t.Errorf("peak RSS grew by %.1f MB over %d hostile requests: more than 10 MB each", float64(grew)/1e6, hostile)
	}
}

// TestCrashingPlugin: a plugin that dies in the middle of CreateContainer,
// either the whole process (its server and its registration go) or only
// its connection to nrid, is unregistered; the event goes on without it
// (nothing fails), and the healthy plugins are untouched.
func TestCrashingPlugin(t *testing.T) {
	for _, what := range []string{"process", "connection"} {
		t.Run(what, func(t *testing.T) {
			e := newEnv(t, defaultConfig())
			bad := e.badPlugin(createOnly) // a long timeout: the call is cut by the crash, not by nrid
			conns := newConnTracker()
			bad.ServerOptions = []grpc.ServerOption{grpc.Creds(conns)}
			inCall := make(chan struct{}, 1)
			bad.Handle = hangCreate(inCall, hang)
			register(t, e.n, bad)
			done := e.goLoad(loadPods)
			var runs []podRun
			select {
			case <-inCall:
				if what == "process" {
					bad.Stop()
				} else if n := conns.cut(); n == 0 {
					t.Fatal("the plugin server had no connection to cut")
				}
				runs = <-done
			case <-done:
				t.Fatal("the load ended without calling the plugin")
			}
			checkNoFailures(t, runs)
			e.checkHealthy(runs)
			e.waitEvicted(bad, nriv1beta1.ShutdownKind_SHUTDOWN_KIND_UNSPECIFIED)
			e.finish(bad)
		})
	}
}

// TestErrorCodes: every gRPC status code a plugin can return from
// CreateContainer, against one nrid. Verdict codes veto the event (the
// runtime gets the plugin's code, reason DISPATCH_OUTCOME_VETOED naming it)
// and keep the plugin registered; CANCELLED and RESOURCE_EXHAUSTED fail
// nothing and keep it registered; DEADLINE_EXCEEDED, UNAVAILABLE and
// UNIMPLEMENTED fail nothing and end its registration. The healthy plugin
// before it always gets the event, the one after it only when it was not
// vetoed; both stay registered, and nrid's usage comes back to the baseline
// after all sixteen.
func TestErrorCodes(t *testing.T) {
	cfg := defaultConfig()
	cfg.registerRate = 0 // seventeen registrations in a row
	all := newEnv(t, cfg)
	// Codes that end the registration, and the Shutdown the plugin gets
	// (a lost connection gets none).
	evicts := map[codes.Code]nriv1beta1.ShutdownKind{
		codes.DeadlineExceeded: nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED,
		codes.Unimplemented:    nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED,
		codes.Unavailable:      nriv1beta1.ShutdownKind_SHUTDOWN_KIND_UNSPECIFIED,
	}
	availability := map[codes.Code]bool{codes.Canceled: true, codes.ResourceExhausted: true}
	for code := codes.Canceled; code <= codes.Unauthenticated; code++ {
		t.Run(code.String(), func(t *testing.T) {
			e := all.with(t)
			bad := e.badPlugin(createOnly)
			bad.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				return nil, status.Errorf(code, "bad says %v", code)
			}
			reg := register(t, e.n, bad)
			runs := load(e.ctx(), e.c.adapt, e.pods(3), 3)
			kind, evicted := evicts[code]
			veto := !evicted && !availability[code]
			for _, r := range runs {
				for _, s := range r.steps {
					switch {
					case veto && s.method == "CreateContainer":
						plugins, reason := errorPlugins(s.err)
						if status.Code(s.err) != code || reason != "DISPATCH_OUTCOME_VETOED" || !slices.Equal(plugins, []string{badName}) {
							t.Errorf("pod %d: CreateContainer = %v (reason %q, plugins %v), want a veto by %s with %v",
								r.pod, clipErr(s.err), reason, plugins, badName, code)
						}
					case s.err != nil:
						t.Errorf("pod %d: %s failed: %v", r.pod, s.method, clipErr(s.err))
					}
				}
			}
			e.checkHealthy(runs)
			if evicted {
				e.waitEvicted(bad, kind)
			} else {
				e.checkStays(bad, reg)
			}
			bad.Stop()
			e.waitUnlisted(badName)
		})
	}
	all.n.backToBaseline(t, all.base)
}

// TestHugeStrings: huge strings from a registrant and from a plugin. Ten
// registrations with a 512 KiB name, version or endpoint are refused with
// INVALID_ARGUMENT naming the field in a short message; nine CreateContainer
// answers carry a 1 MiB environment value, a 1 MiB annotation value or a
// veto with a 1 MiB message: the values are refused by the value rules (an
// env entry over execve's MAX_ARG_STRLEN, an annotation over 256 KiB;
// docs/PROTOCOL.md §18) and the containers are created without them, the
// veto reaches the runtime clipped to about 1 KiB. Nothing else
// fails, the healthy plugins are untouched, and nrid's peak memory grows by
// at most 10 MB per hostile request.
func TestHugeStrings(t *testing.T) {
	cfg := defaultConfig()
	cfg.registerRate = 0 // ten hostile registrations in a row
	e := newEnv(t, cfg)
	const mib = 1 << 20
	huge := strings.Repeat("n", mib)
	// A registration is bounded at 1 MiB as a whole (refused unread beyond
	// it: TestOversizeRegistrationMemory), so its fields' rules are tried
	// with half a MiB.
	half := huge[:mib/2]
	before := e.n.peak(t)

	regs := []struct {
		field string
		set   func(*nriv1beta1.RegisterPluginRequest)
	}{
		{"plugin_name", func(r *nriv1beta1.RegisterPluginRequest) { r.PluginName = half }},
		{"nri_version", func(r *nriv1beta1.RegisterPluginRequest) { r.NriVersion = half }},
		{"plugin_version", func(r *nriv1beta1.RegisterPluginRequest) { r.PluginVersion = half }},
		{"endpoint", func(r *nriv1beta1.RegisterPluginRequest) { r.Endpoint = "unix://" + e.n.plugins + "/" + half }},
		{"plugin_name", func(r *nriv1beta1.RegisterPluginRequest) { r.PluginName = strings.Repeat("é", mib/4) }},
	}
	for i := range 10 {
		c := regs[i%len(regs)]
		req := &nriv1beta1.RegisterPluginRequest{PluginName: "huge", PluginIdx: "30", Endpoint: "unix://" + e.n.plugins + "/huge.sock"}
		c.set(req)
		stream, err := e.c.rt.RegisterPlugin(e.ctx(), req)
		if err == nil {
			_, err = stream.Recv()
		}
		msg := status.Convert(err).Message()
		if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(msg, c.field) || len(msg) > 512 {
			t.Errorf("registration with a 512 KiB %s: %v (%d bytes), want INVALID_ARGUMENT naming the field in a short message",
				c.field, clipErr(err), len(msg))
		}
	}

	var calls atomic.Int32
	bad := e.badPlugin(createOnly)
	bad.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
		switch calls.Add(1) % 3 {
		case 0:
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Env: []*nriv1beta1.KeyValue{{Key: "HUGE", Value: huge}}}}, nil
		case 1:
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Annotations: map[string]string{"huge": huge}}}, nil
		default:
			return nil, status.Error(codes.PermissionDenied, huge)
		}
	}
	reg := register(t, e.n, bad)
	runs := load(e.ctx(), e.c.adapt, e.pods(9), 3)
	checkPeak(t, e.n, before, 10+9)

	vetoes, refused := 0, 0
	for _, r := range runs {
		for _, s := range r.steps {
			switch {
			case s.method == "CreateContainer" && s.err != nil:
				vetoes++
				if msg := status.Convert(s.err).Message(); status.Code(s.err) != codes.PermissionDenied || len(msg) > server.MaxMessageLen+256 {
					t.Errorf("pod %d: veto %s with a message of %d bytes, want PERMISSION_DENIED clipped to about %d",
						r.pod, status.Code(s.err), len(msg), server.MaxMessageLen)
				}
			case s.method == "CreateContainer":
				adj := s.rsp.(*nriv1beta1.AdaptationServiceCreateContainerResponse).GetAdjust()
				if _, ok := adj.GetAnnotations()["huge"]; ok || slices.ContainsFunc(adj.GetEnv(), func(kv *nriv1beta1.KeyValue) bool { return kv.GetKey() == "HUGE" }) {
					t.Errorf("pod %d: a 1 MiB value over the value rules' bounds reached the runtime", r.pod)
				} else {
					refused++
				}
			case s.err != nil:
				t.Errorf("pod %d: %s failed: %v", r.pod, s.method, clipErr(s.err))
			}
		}
	}
	if vetoes != 3 || refused != 6 {
		t.Errorf("%d vetoes and %d huge values refused, want 3 and 6", vetoes, refused)
	}
	e.checkHealthy(runs)
	e.checkStays(bad, reg)
	e.finish(bad)
}

// TestReregistrationLoop: a plugin that registers twenty times in quick
// succession while a continuous load runs, alternately dropping its
// registration and letting the next one replace it, never disturbs the
// healthy plugins: nothing fails, they get every event once and in each
// pod's order and stay registered. nrid's rate limit (20 a second here)
// refuses some attempts with RESOURCE_EXHAUSTED, and the loop backs off
// and tries again, as a plugin should; any other refusal fails the test.
func TestReregistrationLoop(t *testing.T) {
	cfg := defaultConfig()
	cfg.registerRate = 20
	e := newEnv(t, cfg)
	stop := make(chan struct{})
	done := e.goLoadUntil(stop)
	var flaps []*testplugin.Plugin
	registered, throttled := 0, 0
	for registered < 20 {
		p := e.badPlugin(lifecycleMask)
		p.Name = "flap"
		_, err := tryRegister(t, e.n, p)
		switch {
		case err == nil:
			registered++
		case status.Code(err) == codes.ResourceExhausted:
			throttled++
			time.Sleep(20 * time.Millisecond) // the plugin's backoff
			continue
		default:
			t.Fatalf("registration %d: %v", registered+1, err)
		}
		if registered%2 == 1 {
			p.Stop() // dropped: the next one registers afresh
		} else {
			flaps = append(flaps, p) // kept: the next one replaces it
		}
	}
	close(stop)
	runs := <-done
	t.Logf("%d registrations during a load of %d pods; %d attempts refused by the rate limit", registered, len(runs), throttled)
	checkNoFailures(t, runs)
	e.checkHealthy(runs)
	for _, p := range flaps {
		p.Stop()
	}
	e.waitUnlisted("10-flap")
	e.n.backToBaseline(t, e.base)
}

// TestHangInConfigure: a registrant that never answers Configure holds up
// nothing: a whole lifecycle load completes while it still hangs (no time
// bound stands for "not delayed": it hangs until the test releases it, so
// the load can only finish if nothing waited for it). Released, its
// registration is refused and nrid's usage comes back to the baseline.
func TestHangInConfigure(t *testing.T) {
	e := newEnv(t, defaultConfig())
	release := make(chan struct{})
	configuring := make(chan struct{})
	var hanging atomic.Bool
	bad := e.badPlugin(lifecycleMask)
	bad.Handle = func(ctx context.Context, method string, _ proto.Message) error {
		if method != "Configure" {
			return nil
		}
		hanging.Store(true)
		defer hanging.Store(false)
		close(configuring)
		return hangUntil(ctx, release)
	}
	refused := make(chan error, 1)
	go func() {
		_, err := tryRegister(t, e.n, bad)
		refused <- err
	}()
	waitFor(t, configuring, "the registrant to reach Configure")
	runs := e.load(loadPods)
	if !hanging.Load() {
		t.Fatal("the registrant stopped hanging before the load ended: the test proves nothing")
	}
	checkNoFailures(t, runs)
	e.checkHealthy(runs)
	close(release)
	if err := <-refused; err == nil {
		t.Fatal("a registrant that failed Configure was registered")
	}
	e.finish(bad)
}

// TestHangInSynchronize: a registrant that asked for a 10-minute
// synchronization and never answers Synchronize, subscribed only to
// PostUpdatePodSandbox, delays no other event: a whole load without
// PostUpdatePodSandbox completes while it hangs. A PostUpdatePodSandbox
// then waits for it only within its own event timeout (nrid's 300 ms
// default) and goes on without it, still while it hangs. Released, its
// registration is refused and nrid's usage comes back to the baseline.
func TestHangInSynchronize(t *testing.T) {
	e := newEnv(t, defaultConfig())
	release := make(chan struct{})
	syncing := make(chan struct{})
	var hanging atomic.Bool
	bad := e.badPlugin(nri.EventMask(nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX))
	bad.Timeouts = &nriv1beta1.Timeouts{Synchronize: durationpb.New(10 * time.Minute)}
	bad.OnSynchronize = func(ctx context.Context, _ *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
		hanging.Store(true)
		defer hanging.Store(false)
		close(syncing)
		return nil, hangUntil(ctx, release)
	}
	refused := make(chan error, 1)
	go func() {
		_, err := tryRegister(t, e.n, bad)
		refused <- err
	}()
	waitFor(t, syncing, "the registrant to reach Synchronize")
	if info := e.listed(badName); info.GetState() != nriv1beta1.PluginState_PLUGIN_STATE_SYNCHRONIZING {
		t.Fatalf("the registrant is listed as %v, want it pending (synchronizing)", info)
	}

	runs := e.load(loadPods, "PostUpdatePodSandbox")
	// Only RunPodSandbox, PostUpdatePodSandbox and the pod's teardown: the
	// one event it subscribed to, which waits for it within its timeout.
	all := slices.Clone(lifecycleMethods)
	subscribed := e.load(1, slices.DeleteFunc(all, func(m string) bool {
		return m == "RunPodSandbox" || m == "PostUpdatePodSandbox" || m == "StopPodSandbox" || m == "RemovePodSandbox"
	})...)
	if !hanging.Load() {
		t.Fatal("the registrant stopped hanging before the load ended: the test proves nothing")
	}
	runs = append(runs, subscribed...)
	checkNoFailures(t, runs)
	e.checkHealthy(runs)
	if got := e.log.Of(badName, lifecycleMethods...); len(got) != 0 {
		t.Errorf("the pending registrant got events: %v", got)
	}
	close(release)
	if err := <-refused; err == nil {
		t.Fatal("a registrant that failed Synchronize was registered")
	}
	e.finish(bad)
}

// waitFor waits until ch is closed, bounded by the test binary's deadline.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testwait.Bound()):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestGracefulStopWithAttachedRuntime: on SIGTERM nrid stops gracefully
// with a runtime attached and plugins registered: the plugins are told
// SERVER_STOPPING, the runtime's Attach stream is ended by nrid (UNAVAILABLE,
// so the runtime attaches again to the next nrid) instead of being cut at
// the stop bound, and nrid exits cleanly.
func TestGracefulStopWithAttachedRuntime(t *testing.T) {
	e := newEnv(t, defaultConfig())
	a := e.attachRuntime()
	runs := e.load(loadPods)
	checkNoFailures(t, runs)
	e.checkHealthy(runs)
	e.n.stop()
	waitFor(t, a.done, "the Attach stream to end")
	if status.Code(a.err) != codes.Unavailable {
		t.Errorf("the Attach stream ended with %v, want UNAVAILABLE from nrid", a.err)
	}
	b, err := os.ReadFile(e.n.logPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if strings.Contains(log, "calls still running at the stop bound") {
		t.Error("nrid cut calls at its stop bound: something did not end with the graceful stop")
	}
	if !strings.Contains(log, "msg=stopped") {
		t.Error("nrid did not log that it stopped")
	}
	for _, p := range e.healthy {
		sd := p.Shutdowns()
		if len(sd) != 1 || sd[0].GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_SERVER_STOPPING {
			t.Errorf("%s got shutdowns %v, want one SERVER_STOPPING", p.Full(), sd)
		}
	}
}
