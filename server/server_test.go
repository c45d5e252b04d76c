package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

func TestRegistrationConfiguresThenSynchronizes(t *testing.T) {
	h := newHarness(t)
	pods := []*nriv1beta1.PodSandbox{fixture.Pod(1), fixture.Pod(2)}
	ctrs := []*nriv1beta1.Container{fixture.Container(1, 0), fixture.Container(1, 1), fixture.Container(2, 0)}
	h.attach(pods, ctrs)
	p := h.plugin("10", "first", nil)
	eq(t, "calls", h.log.Strings(), []string{"10-first:Configure", "10-first:Synchronize"})
	calls := h.log.Calls()
	cfg := calls[0].Req.(*nriv1beta1.ConfigureRequest)
	if cfg.GetRuntimeName() != "test-runtime" || cfg.GetRuntimeVersion() != "v1" || cfg.GetNodeName() != "node-1" {
		t.Errorf("Configure identity: %v", cfg)
	}
	if cfg.GetRequestTimeout() != 2000 || cfg.GetRegistrationTimeout() != 5000 {
		t.Errorf("Configure timeouts: request %d ms, registration %d ms", cfg.GetRequestTimeout(), cfg.GetRegistrationTimeout())
	}
	sync := calls[1].Req.(*nriv1beta1.SynchronizeRequest)
	if len(sync.GetPods()) != 2 || len(sync.GetContainers()) != 3 || sync.GetMore() || sync.GetEpoch() != 1 ||
		sync.GetReason() != nriv1beta1.SyncReason_SYNC_REASON_REGISTRATION {
		t.Errorf("Synchronize: %d pods, %d containers, more=%v epoch=%d reason=%v", len(sync.GetPods()), len(sync.GetContainers()),
			sync.GetMore(), sync.GetEpoch(), sync.GetReason())
	}
	if !proto.Equal(sync.GetContainers()[0], ctrs[0]) {
		t.Errorf("synchronized container differs from the runtime's")
	}
	reg := p.Registered()
	if reg.GetInstanceId() == "" || reg.GetInstanceId() != cfg.GetInstanceId() {
		t.Errorf("instance id: Registered %q, Configure %q", reg.GetInstanceId(), cfg.GetInstanceId())
	}
	for _, c := range calls {
		if c.InstanceID != reg.GetInstanceId() {
			t.Errorf("%s carried instance id %q, want %q", c, c.InstanceID, reg.GetInstanceId())
		}
	}
	if reg.GetEvents() != int32(nri.AllEvents) {
		t.Errorf("Registered.events = 0x%x, want the full mask 0x%x for a 0 subscription", reg.GetEvents(), nri.AllEvents)
	}
}

func TestLifecycleWithoutPlugins(t *testing.T) {
	h := newHarness(t)
	h.lifecycle(1)
}

func TestPluginSeesEveryEventInOrder(t *testing.T) {
	h := newHarness(t)
	h.plugin("10", "all", nil)
	h.log.Reset()
	h.lifecycle(1)
	var want []string
	for _, e := range lifecycleEvents {
		want = append(want, "10-all:"+e)
	}
	eq(t, "events", h.log.Strings(lifecycleEvents...), want)
}

func TestSubscriptionIsHonored(t *testing.T) {
	h := newHarness(t)
	for i, ev := range []nriv1beta1.Event{
		nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX, nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX,
		nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX, nriv1beta1.Event_EVENT_CREATE_CONTAINER,
		nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, nriv1beta1.Event_EVENT_START_CONTAINER, nriv1beta1.Event_EVENT_POST_START_CONTAINER,
		nriv1beta1.Event_EVENT_UPDATE_CONTAINER, nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER, nriv1beta1.Event_EVENT_STOP_CONTAINER,
		nriv1beta1.Event_EVENT_REMOVE_CONTAINER,
	} {
		h.plugin(strings.Repeat(string(rune('0'+i/10)), 1)+string(rune('0'+i%10)), "only", only(ev))
	}
	h.log.Reset()
	h.lifecycle(1)
	got := h.log.Strings(lifecycleEvents...)
	if len(got) != 13 {
		t.Fatalf("got %d calls, want one per plugin: %v", len(got), got)
	}
	for _, c := range h.log.Calls() {
		want := map[string]nriv1beta1.Event{
			"RunPodSandbox": 1, "StopPodSandbox": 2, "RemovePodSandbox": 3, "CreateContainer": 4, "PostCreateContainer": 5,
			"StartContainer": 6, "PostStartContainer": 7, "UpdateContainer": 8, "PostUpdateContainer": 9, "StopContainer": 10,
			"RemoveContainer": 11, "UpdatePodSandbox": 12, "PostUpdatePodSandbox": 13,
		}[c.Method]
		idx := c.Plugin[:2]
		sub := []nriv1beta1.Event{1, 12, 13, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}[int(idx[0]-'0')*10+int(idx[1]-'0')]
		if want != sub {
			t.Errorf("%s received %s but subscribed to %v", c.Plugin, c.Method, sub)
		}
	}
}

func TestEqualIndicesOrderedByName(t *testing.T) {
	h := newHarness(t)
	for _, id := range [][2]string{{"20", "test"}, {"99", "foo"}, {"00", "bar"}, {"10", "zeta"}, {"10", "alpha"}} {
		h.plugin(id[0], id[1], only(nriv1beta1.Event_EVENT_START_CONTAINER))
	}
	h.log.Reset()
	h.lifecycle(1)
	eq(t, "StartContainer order", h.log.Strings("StartContainer"),
		[]string{"00-bar:StartContainer", "10-alpha:StartContainer", "10-zeta:StartContainer", "20-test:StartContainer", "99-foo:StartContainer"})
}

func TestVerdictVetoesCreatingEvent(t *testing.T) {
	h := newHarness(t)
	h.plugin("10", "veto", func(p *testplugin.Plugin) {
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return nil, status.Error(codes.PermissionDenied, "no GPUs for you")
		}
	})
	h.plugin("20", "later", nil)
	h.log.Reset()
	_, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "10-veto") || !strings.Contains(err.Error(), "no GPUs for you") {
		t.Fatalf("CreateContainer error = %v, want the plugin's PERMISSION_DENIED naming 10-veto", err)
	}
	if r := testplugin.Reason(err); r != "DISPATCH_OUTCOME_VETOED" {
		t.Errorf("ErrorInfo reason %q", r)
	}
	eq(t, "calls", h.log.Strings(), []string{"10-veto:CreateContainer"})

	// Runtimes read the verdict with package nri, in-process and over
	// AdaptationService alike.
	req := fixture.CreateContainerRequest(1, 1)
	_, remote := h.adaptation().CreateContainer(h.ctx(), &nriv1beta1.AdaptationServiceCreateContainerRequest{
		Pod: req.GetPod(), Container: req.GetContainer()})
	for what, err := range map[string]error{"in-process": err, "AdaptationService": remote} {
		if got := nri.OutcomeOf(err); got != nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_VETOED {
			t.Errorf("%s: nri.OutcomeOf = %v (%v)", what, got, err)
		}
		eq(t, what+": nri.PluginsOf", nri.PluginsOf(err), []string{"10-veto"})
	}
}

func TestTeardownErrorsNeverStopDelivery(t *testing.T) {
	h := newHarness(t)
	boom := func(_ context.Context, method string, _ proto.Message) error {
		switch method {
		case "StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox", "PostCreateContainer":
			return status.Error(codes.Internal, "boom")
		}
		return nil
	}
	h.plugin("10", "failing", func(p *testplugin.Plugin) { p.Handle = boom })
	h.plugin("20", "healthy", nil)
	h.log.Reset()
	ctx := h.ctx()
	pod, ctr := fixture.Pod(1), fixture.Container(1, 0)
	rsp, err := h.srv.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatal(err)
	}
	if len(rsp.GetPluginErrors()) != 1 || rsp.GetPluginErrors()[0].GetPlugin().GetName() != "failing" ||
		rsp.GetPluginErrors()[0].GetCode() != int32(codes.Internal) {
		t.Errorf("plugin errors: %v", rsp.GetPluginErrors())
	}
	errs, err := h.srv.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: ctr})
	if err != nil || len(errs) != 1 {
		t.Fatalf("RemoveContainer: %v, %v", errs, err)
	}
	if _, err := h.srv.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.RemovePodSandbox(ctx, &nriv1beta1.RemovePodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls", h.log.Strings(), []string{
		"10-failing:StopContainer", "20-healthy:StopContainer", "10-failing:RemoveContainer", "20-healthy:RemoveContainer",
		"10-failing:StopPodSandbox", "20-healthy:StopPodSandbox", "10-failing:RemovePodSandbox", "20-healthy:RemovePodSandbox",
	})
}

// hang blocks CreateContainer until the call's deadline.
func hang(ctx context.Context, method string, _ proto.Message) error {
	if method == "CreateContainer" {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func TestTimeoutWithIgnorePolicySkipsAndDisconnects(t *testing.T) {
	h := newHarness(t, server.WithRequestTimeout(300*time.Millisecond))
	slow := h.plugin("10", "slow", func(p *testplugin.Plugin) { p.Handle = hang })
	h.plugin("20", "fast", func(p *testplugin.Plugin) {
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"fast": "yes"}}}, nil
		}
	})
	rsp, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
	if err != nil {
		t.Fatalf("CreateContainer failed although the slow plugin's policy is ignore: %v", err)
	}
	if rsp.GetAdjust().GetAnnotations()["fast"] != "yes" {
		t.Errorf("later plugin's adjustment missing: %v", rsp.GetAdjust())
	}
	select {
	case err := <-slow.SessionEnded():
		t.Logf("the timed-out plugin's session ended: %v", err)
	case <-time.After(wait()):
		t.Fatal("the timed-out plugin was not disconnected")
	}
	if sd := slow.Shutdowns(); len(sd) != 1 || sd[0].GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED {
		t.Errorf("shutdowns: %v", sd)
	}
}

func TestRequiredPluginFailsEveryCreatingEvent(t *testing.T) {
	h := newHarness(t, server.WithRequestTimeout(300*time.Millisecond))
	h.plugin("10", "required", func(p *testplugin.Plugin) {
		p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true, KeepConnected: true}
		p.Handle = func(ctx context.Context, method string, _ proto.Message) error {
			if method == "RunPodSandbox" || method == "CreateContainer" {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
	})
	ctx := h.ctx()
	err := h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)})
	if status.Code(err) != codes.Unavailable || testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || !strings.Contains(err.Error(), "10-required") {
		t.Fatalf("RunPodSandbox = %v, want REQUIRED_UNAVAILABLE naming 10-required", err)
	}
	_, err = h.srv.CreateContainer(ctx, fixture.CreateContainerRequest(1, 0))
	if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" {
		t.Fatalf("CreateContainer = %v", err)
	}
	// keep_connected: still registered.
	if n := len(h.srv.Plugins()); n != 1 {
		t.Fatalf("%d plugins registered, want the kept-connected one", n)
	}
}

func TestOperatorRequiredPluginAbsentFailsCreation(t *testing.T) {
	h := newHarness(t, server.WithValidator(validateRequired("gpu")))
	err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)})
	if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || !strings.Contains(err.Error(), "gpu") {
		t.Fatalf("RunPodSandbox without the required plugin = %v", err)
	}
	h.plugin("30", "gpu", nil)
	if err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)}); err != nil {
		t.Fatalf("RunPodSandbox with the required plugin present: %v", err)
	}
}

func TestRegistrationRefusals(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name, idx string
		set       func(*testplugin.Plugin)
		reason    nriv1beta1.RegistrationRefusal
		code      codes.Code
	}{
		{"foo,bar", "10", nil, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_NAME, codes.InvalidArgument},
		{"", "10", nil, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_NAME, codes.InvalidArgument},
		{"ok", "1", nil, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_INDEX, codes.InvalidArgument},
		{"ok", "1a", nil, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_INDEX, codes.InvalidArgument},
		{"ok", "10", func(p *testplugin.Plugin) { p.Events = 1 << 20 }, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_EVENTS, codes.InvalidArgument},
		{"ok", "10", func(p *testplugin.Plugin) {
			p.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(-time.Second)}
		}, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES, codes.InvalidArgument},
		{"ok", "10", func(p *testplugin.Plugin) {
			p.Capabilities = &nriv1beta1.Capabilities{MaxMessageSize: 100}
		}, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES, codes.InvalidArgument},
	}
	for _, c := range cases {
		_, err := h.tryPlugin(c.idx, c.name, c.set)
		if status.Code(err) != c.code || testplugin.Reason(err) != c.reason.String() {
			t.Errorf("%s-%s: got %v (reason %q), want %v %v", c.idx, c.name, err, testplugin.Reason(err), c.code, c.reason)
		}
	}
	if n := len(h.srv.Plugins()); n != 0 {
		t.Errorf("%d plugins registered after refusals", n)
	}
}

func TestEndpointOutsidePolicyIsNeverDialed(t *testing.T) {
	h := newHarness(t)
	outside := filepath.Join(filepath.Dir(h.pluginDir), "outside.sock")
	lis, err := net.Listen("unix", outside)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	// Register by hand with the outside endpoint.
	_, err = registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10", Endpoint: "unix://" + outside})
	if testplugin.Reason(err) != "REGISTRATION_REFUSAL_INVALID_ENDPOINT" || !strings.Contains(err.Error(), "outside the plugin socket directory") {
		t.Fatalf("got %v", err)
	}
	_, err = registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10", Endpoint: "dns:///example.com:443"})
	if testplugin.Reason(err) != "REGISTRATION_REFUSAL_INVALID_ENDPOINT" || !strings.Contains(err.Error(), "only with TLS configured") {
		t.Fatalf("TCP endpoint without WithPluginTLS: got %v", err)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the server dialed the refused endpoint %d times", n)
	}
}

func TestInstanceHandoverReplacesOldInstance(t *testing.T) {
	h := newHarness(t)
	old := h.plugin("10", "same", nil)
	oldID := old.Registered().GetInstanceId()
	newer := h.plugin("10", "same", nil)
	if newer.Registered().GetInstanceId() == oldID {
		t.Fatal("the new registration reused the instance id")
	}
	select {
	case err := <-old.SessionEnded():
		t.Logf("the old instance's session ended: %v", err)
	case <-time.After(wait()):
		t.Fatal("old instance's session did not end")
	}
	sd := old.Shutdowns()
	if len(sd) != 1 || sd[0].GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_REPLACED || sd[0].GetReason() != "replaced by a newer instance" {
		t.Fatalf("old instance shutdowns: %v", sd)
	}
	h.log.Reset()
	h.lifecycle(1)
	for _, c := range h.log.Calls() {
		if c.InstanceID != newer.Registered().GetInstanceId() {
			t.Errorf("%s went to instance %s", c, c.InstanceID)
		}
	}
	if got := len(h.log.Strings(lifecycleEvents...)); got != len(lifecycleEvents) {
		t.Errorf("new instance saw %d events, want %d", got, len(lifecycleEvents))
	}
}

func TestShutdownReachesPluginsOnServerStop(t *testing.T) {
	h := newHarness(t)
	p := h.plugin("10", "bye", nil)
	if err := h.srv.Shutdown(h.ctx()); err != nil {
		t.Fatal(err)
	}
	sd := p.Shutdowns()
	if len(sd) != 1 || sd[0].GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_SERVER_STOPPING || sd[0].GetReason() != "server stopping" {
		t.Fatalf("shutdowns: %v", sd)
	}
	select {
	case err := <-p.SessionEnded():
		// Shutdown told the plugin why, so the session ends cleanly (OK,
		// io.EOF at the client), not with an error status.
		if !errors.Is(err, io.EOF) {
			t.Fatalf("session ended with %v, want a clean end (io.EOF) after Shutdown", err)
		}
	case <-time.After(wait()):
		t.Fatal("session did not end")
	}
	if _, err := h.tryPlugin("20", "late", nil); testplugin.Reason(err) != "REGISTRATION_REFUSAL_SHUTTING_DOWN" {
		t.Fatalf("registration after Shutdown: %v", err)
	}
}

func TestSynchronizePagesBySize(t *testing.T) {
	h := newHarness(t)
	var pods []*nriv1beta1.PodSandbox
	var ctrs []*nriv1beta1.Container
	for i := 0; i < 100; i++ {
		pods = append(pods, fixture.Pod(i))
		ctrs = append(ctrs, fixture.Container(i, 0), fixture.Container(i, 1))
	}
	h.attach(pods, ctrs)
	const limit = 64 << 10
	h.plugin("10", "small", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{MaxMessageSize: limit}
	})
	var pages []*nriv1beta1.SynchronizeRequest
	for _, c := range h.log.Calls() {
		if c.Method == "Synchronize" {
			pages = append(pages, c.Req.(*nriv1beta1.SynchronizeRequest))
		}
	}
	if len(pages) < 2 {
		t.Fatalf("%d pages for about 1.5 MB of state under a 64 KiB limit", len(pages))
	}
	var np, nc int
	for i, pg := range pages {
		if sz := proto.Size(pg); sz > limit {
			t.Errorf("page %d is %d bytes, over the %d limit", i, sz, limit)
		}
		if pg.GetMore() != (i < len(pages)-1) {
			t.Errorf("page %d: more=%v", i, pg.GetMore())
		}
		np += len(pg.GetPods())
		nc += len(pg.GetContainers())
	}
	if np != 100 || nc != 200 {
		t.Errorf("pages carried %d pods and %d containers, want 100 and 200", np, nc)
	}
}

func TestSplitSyncWithoutMoreEchoIsRefused(t *testing.T) {
	h := newHarness(t)
	var ctrs []*nriv1beta1.Container
	for i := 0; i < 40; i++ {
		ctrs = append(ctrs, fixture.Container(i, 0))
	}
	h.attach(nil, ctrs)
	_, err := h.tryPlugin("10", "old", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{MaxMessageSize: 64 << 10}
		p.OnSynchronize = func(context.Context, *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
			return &nriv1beta1.SynchronizeResponse{}, nil // never echoes more
		}
	})
	if testplugin.Reason(err) != "REGISTRATION_REFUSAL_SYNCHRONIZE_FAILED" || !strings.Contains(err.Error(), "split synchronization") {
		t.Fatalf("got %v", err)
	}
	if n := len(h.srv.Plugins()); n != 0 {
		t.Fatalf("%d plugins registered", n)
	}
}

func TestUnsolicitedUpdatesReachRuntime(t *testing.T) {
	h := newHarness(t)
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1)}, []*nriv1beta1.Container{fixture.Container(1, 0)})
	p := h.plugin("10", "updater", nil)
	upd := &nriv1beta1.ContainerUpdate{ContainerId: fixture.Container(1, 0).Id, Linux: &nriv1beta1.LinuxContainerUpdate{
		Resources: &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "0-1"}}}}
	ev := &nriv1beta1.ContainerEviction{ContainerId: fixture.Container(1, 0).Id, Reason: "too hot"}
	rsp, err := p.UpdateContainers(h.ctx(), &nriv1beta1.UpdateContainersRequest{Update: []*nriv1beta1.ContainerUpdate{upd}, Evict: []*nriv1beta1.ContainerEviction{ev}})
	if err != nil || len(rsp.GetFailed()) != 0 {
		t.Fatalf("UpdateContainers: %v %v", rsp, err)
	}
	u, e := h.rt.got()
	if len(u) != 1 || !proto.Equal(u[0], upd) || len(e) != 1 || !proto.Equal(e[0], ev) {
		t.Fatalf("runtime got %v %v", u, e)
	}
}

func TestUnsolicitedUpdatesNeedOwnInstanceID(t *testing.T) {
	h := newHarness(t)
	h.attach(nil, nil)
	h.plugin("10", "updater", nil)
	rt := runtimeClient(h)
	_, err := rt.UpdateContainers(h.ctx(), &nriv1beta1.UpdateContainersRequest{})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "nri-instance-id") {
		t.Fatalf("without metadata: %v", err)
	}
	_, err = rt.UpdateContainers(withInstance(h.ctx(), "10-updater-bogus"), &nriv1beta1.UpdateContainersRequest{})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("with an unknown instance: %v", err)
	}
}

func TestBadRequestsNameTheField(t *testing.T) {
	h := newHarness(t)
	ctx := h.ctx()
	check := func(err error, field string) {
		t.Helper()
		if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(), field+":") {
			t.Errorf("got %v, want INVALID_ARGUMENT naming %s", err, field)
		}
	}
	check(h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{}), "pod")
	check(h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: &nriv1beta1.PodSandbox{}}), "pod.id")
	_, err := h.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: fixture.Pod(1)})
	check(err, "container")
	c := fixture.Container(2, 0)
	_, err = h.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: fixture.Pod(1), Container: c})
	check(err, "container.pod_sandbox_id")
}

// TestShutdownEndsTheAttachStream: Shutdown ends an attached runtime's
// Attach stream with UNAVAILABLE, as it ends WatchEvents streams, so that a
// graceful stop does not wait for the runtime to leave. Before, nrid's stop
// with a runtime attached always ran into its stop_timeout and cut the
// stream there.
func TestShutdownEndsTheAttachStream(t *testing.T) {
	h := newHarness(t)
	stream, err := h.adaptation().Attach(h.ctx())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Hello{Hello: &nriv1beta1.AttachHello{RuntimeName: "rt"}}}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			t.Fatalf("attaching: %v", err)
		}
		if req := m.GetSnapshotRequest(); req != nil {
			if err := stream.Send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Snapshot{Snapshot: &nriv1beta1.StateSnapshot{RequestId: req.GetRequestId()}}}); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	select {
	case <-h.srv.RuntimeAttached():
	case <-h.ctx().Done():
		t.Fatal("the runtime never attached")
	}
	if err := h.srv.Shutdown(h.ctx()); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err = stream.Recv(); err != nil {
			break
		}
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("the Attach stream ended with %v, want UNAVAILABLE (the server is stopping)", err)
	}
}
