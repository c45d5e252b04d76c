package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/plugin/plugintest"
)

// calls records the calls a test plugin received and lets a test wait for
// them.
type calls struct {
	mu      sync.Mutex
	list    []string
	reqs    []any
	changed chan struct{}
}

func newCalls() *calls { return &calls{changed: make(chan struct{})} }

func (c *calls) add(name string, req any) {
	c.mu.Lock()
	c.list = append(c.list, name)
	c.reqs = append(c.reqs, req)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *calls) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}

// wait blocks until a call named name was recorded (at least n times in
// all) and returns its last request.
func (c *calls) wait(t *testing.T, name string, n int) any {
	t.Helper()
	deadline := time.NewTimer(plugintest.Wait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		count, last := 0, any(nil)
		for i, x := range c.list {
			if x == name {
				count++
				last = c.reqs[i]
			}
		}
		ch := c.changed
		c.mu.Unlock()
		if count >= n {
			return last
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no %d× %s within %v; calls: %v", n, name, plugintest.Wait, c.names())
		}
	}
}

// recorder is a plugin that records pod events, container creation and
// shutdowns, and adds an environment variable to every container.
type recorder struct {
	c *calls
}

func (r *recorder) Synchronize(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	r.c.add("Synchronize", req)
	return nil, nil
}

func (r *recorder) Shutdown(_ context.Context, req *nriv1beta1.ShutdownRequest) {
	r.c.add("Shutdown", req)
}

func (r *recorder) RunPodSandbox(_ context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	r.c.add("RunPodSandbox", req)
	return nil, nil
}

func (r *recorder) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	r.c.add("CreateContainer", req)
	return plugin.NewAdjustment().AddEnv("RECORDED", req.GetContainer().GetName()).Response(), nil
}

func (r *recorder) StopContainer(_ context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	r.c.add("StopContainer", req)
	return nil, nil
}

func (r *recorder) RemoveContainer(_ context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error) {
	r.c.add("RemoveContainer", req)
	return nil, nil
}

func (r *recorder) StopPodSandbox(_ context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error) {
	r.c.add("StopPodSandbox", req)
	return nil, nil
}

func (r *recorder) RemovePodSandbox(_ context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error) {
	r.c.add("RemovePodSandbox", req)
	return nil, nil
}

// resyncer is a recorder with the resync capability.
type resyncer struct{ recorder }

func (r *resyncer) Resync(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	r.c.add("Resync", req)
	return nil, nil
}

func envOf(adj *nriv1beta1.ContainerAdjustment) map[string]string {
	out := map[string]string{}
	for _, kv := range adj.GetEnv() {
		out[kv.GetKey()] = kv.GetValue()
	}
	return out
}

func reasonOf(err error) (string, map[string]string) {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason(), info.GetMetadata()
		}
	}
	return "", nil
}

func TestLifecycleThroughRealServer(t *testing.T) {
	env := plugintest.New(t)
	c := newCalls()
	p := env.Start(t, &recorder{c: c}, plugin.WithName("recorder"), plugin.WithIndex("10"))

	reg := p.Registered()
	if want := p.Events(); reg.GetEvents() != want {
		t.Errorf("Registered.events = %#x, want the derived mask %#x", reg.GetEvents(), want)
	}
	want := nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_CREATE_CONTAINER,
		nriv1beta1.Event_EVENT_STOP_CONTAINER, nriv1beta1.Event_EVENT_REMOVE_CONTAINER,
		nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX)
	if p.Events() != want {
		t.Errorf("derived mask %#x, want %#x", p.Events(), want)
	}
	if reg.GetCapabilities().GetResync() || reg.GetCapabilities().GetDryRun() {
		t.Errorf("capabilities %v: nothing was declared", reg.GetCapabilities())
	}
	res := env.Lifecycle(t, 2)
	for i, r := range res {
		if got := envOf(r.GetAdjust())["RECORDED"]; got != "app-0" {
			t.Errorf("container %d: RECORDED=%q, want app-0 (adjust %v)", i, got, r.GetAdjust())
		}
	}
	c.wait(t, "RemovePodSandbox", 2)
	got := c.names()
	wantOrder := []string{"Synchronize",
		"RunPodSandbox", "CreateContainer", "StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox",
		"RunPodSandbox", "CreateContainer", "StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox"}
	if !slices.Equal(got, wantOrder) {
		t.Errorf("calls\n got %v\nwant %v", got, wantOrder)
	}
}

func TestNewRefusesBadPlugins(t *testing.T) {
	type nothing struct{}
	if _, err := plugin.New(&nothing{}, plugin.WithName("x"), plugin.WithIndex("10")); err == nil ||
		!strings.Contains(err.Error(), "implements no event handler") {
		t.Errorf("plugin without handlers: err = %v", err)
	}
	type generated struct {
		nriv1beta1.UnimplementedPluginServiceServer
	}
	if _, err := plugin.New(&generated{}, plugin.WithName("x"), plugin.WithIndex("10")); err == nil {
		t.Error("a plugin embedding the generated server was accepted")
	}
	r := &recorder{c: newCalls()}
	for _, tc := range []struct {
		opts []plugin.Option
		want string
	}{
		{[]plugin.Option{plugin.WithName("bad name"), plugin.WithIndex("10")}, "allowed are"},
		{[]plugin.Option{plugin.WithName("x"), plugin.WithIndex("7")}, "two ASCII digits"},
		{[]plugin.Option{plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithServerAddress("relative.sock")}, "absolute"},
		{[]plugin.Option{plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithServerAddress("dns:///nrid:9000")}, "needs WithTLS"},
		{[]plugin.Option{plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithEndpoint("/" + strings.Repeat("d", 120))}, "longer than"},
		// Options only record values; New names the one it refuses.
		{[]plugin.Option{plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithTLS(nil, nil)}, "WithTLS: both configurations are nil"},
		{[]plugin.Option{plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithMaxMessageSize(1000)}, "WithMaxMessageSize: 1000 is below"},
		{[]plugin.Option{plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithTimeouts(plugin.Timeouts{Request: -time.Second})}, "WithTimeouts: negative"},
		{[]plugin.Option{plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithTimeouts(plugin.Timeouts{
			Events: map[nriv1beta1.Event]time.Duration{nriv1beta1.Event_EVENT_LAST: time.Second}})}, "WithTimeouts: invalid timeout 1s for event EVENT_LAST"},
		{[]plugin.Option{plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithBackoff(0, time.Second)}, "WithBackoff: invalid bounds 0s, 1s"},
		{[]plugin.Option{plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithBackoff(time.Second, time.Millisecond)}, "WithBackoff: invalid bounds"},
	} {
		if _, err := plugin.New(r, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: err = %v, want one containing %q", err, tc.want)
		}
	}
}

// TestOptionsRecordValues: a later option overrides an earlier one, nil
// options and a nil logger or failure policy leave the defaults.
func TestOptionsRecordValues(t *testing.T) {
	r := &recorder{c: newCalls()}
	p, err := plugin.New(r, plugin.WithName("x"), plugin.WithIndex("10"), nil,
		plugin.WithBackoff(0, 0), plugin.WithBackoff(time.Second, time.Minute),
		plugin.WithMaxMessageSize(1), plugin.WithMaxMessageSize(0),
		plugin.WithLogger(nil), plugin.WithFailurePolicy(nil))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if p.Logger() == nil || p.Capabilities().GetMaxMessageSize() != 0 {
		t.Errorf("logger %v, capabilities %v", p.Logger(), p.Capabilities())
	}
}

func TestIdentityFromEnvironmentAndDefaults(t *testing.T) {
	r := &recorder{c: newCalls()}
	p, err := plugin.New(r, plugin.WithName("x"), plugin.WithIndex("10"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "10-x" || p.Endpoint() != "unix:///var/run/nri/plugins/10-x.sock" {
		t.Errorf("Name %q Endpoint %q", p.Name(), p.Endpoint())
	}
	t.Setenv(plugin.EnvPluginName, "launched")
	t.Setenv(plugin.EnvPluginIndex, "42")
	t.Setenv(plugin.EnvPluginEndpoint, "/run/x/42-launched.sock")
	t.Setenv(plugin.EnvServerAddress, "/run/x/nrid.sock")
	p, err = plugin.New(r, plugin.WithName("x"), plugin.WithIndex("10"), plugin.WithEndpoint("/elsewhere.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "42-launched" || p.Endpoint() != "unix:///run/x/42-launched.sock" {
		t.Errorf("pre-launched: Name %q Endpoint %q", p.Name(), p.Endpoint())
	}
	if idx, name, ok := plugin.ParseName("05-my.plugin"); !ok || idx != "05" || name != "my.plugin" {
		t.Errorf("ParseName = %q %q %v", idx, name, ok)
	}
	if _, _, ok := plugin.ParseName("logger"); ok {
		t.Error("ParseName accepted a name without an index")
	}
}

// TestServerRestart restarts the server under a running plugin: the
// plugin gets Shutdown (SERVER_STOPPING) with its reason, registers again
// with a new instance id, and receives the next pod's events.
func TestServerRestart(t *testing.T) {
	env := plugintest.New(t)
	c := newCalls()
	p := env.Start(t, &recorder{c: c}, plugin.WithName("restart"))
	first := p.Registered().GetInstanceId()
	env.RunPodSandbox(t, plugintest.Pod(0))
	c.wait(t, "RunPodSandbox", 1)

	env.Restart(t)
	sd := c.wait(t, "Shutdown", 1).(*nriv1beta1.ShutdownRequest)
	if sd.GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_SERVER_STOPPING || sd.GetReason() != "server stopping" {
		t.Errorf("Shutdown = %v, want kind SERVER_STOPPING, reason \"server stopping\"", sd)
	}
	reg := p.WaitRegistered(t, first)
	if reg.GetInstanceId() == first {
		t.Fatal("re-registered under the old instance id")
	}
	// The new registration synchronized with the restarted server's state.
	syncReq := c.wait(t, "Synchronize", 2).(*nriv1beta1.SynchronizeRequest)
	if len(syncReq.GetPods()) != 1 || syncReq.GetEpoch() != 1 {
		t.Errorf("Synchronize after restart: %d pods, epoch %d; want 1 pod, epoch 1", len(syncReq.GetPods()), syncReq.GetEpoch())
	}
	pod, ctr := plugintest.Pod(1), plugintest.Container(1, 0)
	env.RunPodSandbox(t, pod)
	rsp := env.CreateContainer(t, pod, ctr)
	if envOf(rsp.GetAdjust())["RECORDED"] != ctr.GetName() {
		t.Errorf("the re-registered plugin did not adjust the next container: %v", rsp.GetAdjust())
	}
	req := c.wait(t, "RunPodSandbox", 2).(*nriv1beta1.RunPodSandboxRequest)
	if req.GetPod().GetId() != pod.GetId() {
		t.Errorf("RunPodSandbox for %s, want %s", req.GetPod().GetId(), pod.GetId())
	}
}

// TestResync: a runtime that attaches again (SetRuntime) resynchronizes
// plugins: Resync with epoch 2 and the full state for a plugin with the
// resync capability, synthesized teardown events for the others.
func TestResync(t *testing.T) {
	pods := []*nriv1beta1.PodSandbox{plugintest.Pod(0), plugintest.Pod(1)}
	ctrs := []*nriv1beta1.Container{plugintest.Container(0, 0), plugintest.Container(1, 0)}
	env := plugintest.New(t, plugintest.WithState(pods, ctrs))
	withResync, without := newCalls(), newCalls()
	p1 := env.Start(t, &resyncer{recorder{c: withResync}}, plugin.WithName("resync"))
	env.Start(t, &recorder{c: without}, plugin.WithName("plain"))
	if !p1.Registered().GetCapabilities().GetResync() {
		t.Fatal("a plugin implementing Resync did not get the resync capability")
	}
	first := withResync.wait(t, "Synchronize", 1).(*nriv1beta1.SynchronizeRequest)
	if first.GetEpoch() != 1 || len(first.GetContainers()) != 2 {
		t.Fatalf("initial Synchronize: epoch %d, %d containers", first.GetEpoch(), len(first.GetContainers()))
	}

	// The runtime restarted and only pod 0 and its container survived.
	env.SetState(t, pods[:1], ctrs[:1])
	rs := withResync.wait(t, "Resync", 1).(*nriv1beta1.SynchronizeRequest)
	if rs.GetEpoch() != 2 || rs.GetReason() != nriv1beta1.SyncReason_SYNC_REASON_RUNTIME_RESTARTED ||
		len(rs.GetPods()) != 1 || len(rs.GetContainers()) != 1 {
		t.Errorf("Resync: epoch %d reason %v, %d pods, %d containers; want epoch 2, RUNTIME_RESTARTED, 1 and 1",
			rs.GetEpoch(), rs.GetReason(), len(rs.GetPods()), len(rs.GetContainers()))
	}
	stop := without.wait(t, "StopContainer", 1).(*nriv1beta1.StopContainerRequest)
	if stop.GetContainer().GetId() != ctrs[1].GetId() {
		t.Errorf("synthesized StopContainer for %s, want the vanished %s", stop.GetContainer().GetId(), ctrs[1].GetId())
	}
	without.wait(t, "RemoveContainer", 1)
	without.wait(t, "StopPodSandbox", 1)
	rp := without.wait(t, "RemovePodSandbox", 1).(*nriv1beta1.RemovePodSandboxRequest)
	if rp.GetPod().GetId() != pods[1].GetId() {
		t.Errorf("synthesized RemovePodSandbox for %s, want %s", rp.GetPod().GetId(), pods[1].GetId())
	}
	if slices.Contains(without.names(), "Resync") {
		t.Error("a plugin without resync got Resync")
	}
}

// TestSplitSynchronize: a state larger than the plugin's message size comes
// in several pages; the handler is called once with all of it.
func TestSplitSynchronize(t *testing.T) {
	var (
		pods []*nriv1beta1.PodSandbox
		ctrs []*nriv1beta1.Container
	)
	for i := range 40 {
		pods = append(pods, plugintest.Pod(i))
		ctrs = append(ctrs, plugintest.Container(i, 0))
	}
	env := plugintest.New(t, plugintest.WithState(pods, ctrs))
	c := newCalls()
	env.Start(t, &recorder{c: c}, plugin.WithName("pages"), plugin.WithMaxMessageSize(64<<10))
	req := c.wait(t, "Synchronize", 1).(*nriv1beta1.SynchronizeRequest)
	if len(req.GetPods()) != 40 || len(req.GetContainers()) != 40 || req.GetMore() {
		t.Errorf("Synchronize: %d pods, %d containers, more=%v; want 40, 40, false", len(req.GetPods()), len(req.GetContainers()), req.GetMore())
	}
	if n := len(c.names()); n != 1 {
		t.Errorf("the handler was called %d times, want once", n)
	}
}

// vetoer vetoes every container with err.
type vetoer struct{ err error }

func (v *vetoer) CreateContainer(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return nil, v.err
}

func TestVeto(t *testing.T) {
	env := plugintest.New(t)
	env.Start(t, &vetoer{err: errors.New("no GPU left on this node")}, plugin.WithName("gpu"), plugin.WithIndex("20"))
	pod, ctr := plugintest.Pod(0), plugintest.Container(0, 0)
	env.RunPodSandbox(t, pod)
	_, err := env.TryCreateContainer(t, pod, ctr)
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("CreateContainer: %v; want FAILED_PRECONDITION (a plain error is a veto)", err)
	}
	msg := status.Convert(err).Message()
	if !strings.Contains(msg, "20-gpu") || !strings.Contains(msg, "no GPU left on this node") {
		t.Errorf("veto message %q does not name the plugin and its reason", msg)
	}
	if reason, md := reasonOf(err); reason != "DISPATCH_OUTCOME_VETOED" || md["plugins"] != "20-gpu" {
		t.Errorf("ErrorInfo %q %v, want DISPATCH_OUTCOME_VETOED by 20-gpu", reason, md)
	}

	env2 := plugintest.New(t)
	env2.Start(t, &vetoer{err: fmt.Errorf("checking: %w", status.Error(codes.InvalidArgument, "annotation foo: not a number"))},
		plugin.WithName("strict"))
	env2.RunPodSandbox(t, pod)
	_, err = env2.TryCreateContainer(t, pod, ctr)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "annotation foo: not a number") {
		t.Errorf("a handler's status error: %v; want its INVALID_ARGUMENT passed through", err)
	}
}

// blocker blocks CreateContainer until its context ends.
type blocker struct{ entered chan struct{} }

func (b *blocker) CreateContainer(ctx context.Context, _ *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestTimeoutSkipped: a handler that outlives its timeout is skipped under
// the default (ignore) failure policy; the event goes on with the other
// plugins.
func TestTimeoutSkipped(t *testing.T) {
	env := plugintest.New(t)
	records := env.Records(t)
	b := &blocker{entered: make(chan struct{}, 1)}
	env.Start(t, b, plugin.WithName("slow"), plugin.WithIndex("10"),
		plugin.WithTimeouts(plugin.Timeouts{Events: map[nriv1beta1.Event]time.Duration{
			nriv1beta1.Event_EVENT_CREATE_CONTAINER: 200 * time.Millisecond,
		}}),
		plugin.WithFailurePolicy(&nriv1beta1.FailurePolicy{KeepConnected: true}))
	c := newCalls()
	env.Start(t, &recorder{c: c}, plugin.WithName("fast"), plugin.WithIndex("20"))
	pod, ctr := plugintest.Pod(0), plugintest.Container(0, 0)
	env.RunPodSandbox(t, pod)
	rsp := env.CreateContainer(t, pod, ctr)
	got := envOf(rsp.GetAdjust())
	if got["RECORDED"] != ctr.GetName() || len(got) != 1 {
		t.Errorf("adjustment env %v: want only the fast plugin's", got)
	}
	<-b.entered
	for rec := range records {
		if rec.GetEvent() != nriv1beta1.Event_EVENT_CREATE_CONTAINER {
			continue
		}
		call := rec.GetCalls()[0]
		if call.GetPlugin().GetName() != "slow" || call.GetOutcome() != nriv1beta1.CallOutcome_CALL_OUTCOME_TIMEOUT || !call.GetFailedOpen() {
			t.Errorf("record of the slow plugin: %v; want TIMEOUT, failed open", call)
		}
		break
	}
}

// TestHandover: a second instance of the same plugin takes over; the first
// one gets Shutdown REPLACED and its Run returns ErrReplaced without
// registering again.
func TestHandover(t *testing.T) {
	env := plugintest.New(t)
	c1, c2 := newCalls(), newCalls()
	p1 := env.Start(t, &recorder{c: c1}, plugin.WithName("ha"))
	p2 := env.Start(t, &recorder{c: c2}, plugin.WithName("ha"),
		plugin.WithEndpoint(filepath.Join(env.PluginDir, "10-ha-new.sock")))
	sd := c1.wait(t, "Shutdown", 1).(*nriv1beta1.ShutdownRequest)
	if sd.GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_REPLACED {
		t.Errorf("old instance's Shutdown = %v, want REPLACED", sd)
	}
	select {
	case <-p1.Done():
	case <-time.After(plugintest.Wait):
		t.Fatal("the replaced instance's Run did not return")
	}
	if err := p1.Err(); !errors.Is(err, plugin.ErrReplaced) {
		t.Errorf("replaced instance's Run = %v, want ErrReplaced", err)
	}
	pod, ctr := plugintest.Pod(0), plugintest.Container(0, 0)
	env.RunPodSandbox(t, pod)
	env.CreateContainer(t, pod, ctr)
	c2.wait(t, "CreateContainer", 1)
	if slices.Contains(c1.names(), "CreateContainer") {
		t.Error("the replaced instance still received events")
	}
	if p2.Registered() == nil {
		t.Error("the new instance is not registered")
	}
}

// dialPlugin connects to a plugin's socket directly, as grpcurl would.
func dialPlugin(t *testing.T, p *plugintest.Instance) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(p.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestInstanceIDChecked: calls naming another instance are refused with
// UNAVAILABLE; Configure without a pending registration too.
func TestInstanceIDChecked(t *testing.T) {
	env := plugintest.New(t)
	c := newCalls()
	p := env.Start(t, &recorder{c: c}, plugin.WithName("inst"))
	client := nriv1beta1.NewPluginServiceClient(dialPlugin(t, p))
	pod := plugintest.Pod(0)
	ctx := metadata.AppendToOutgoingContext(context.Background(), nri.MetadataInstanceID, "bogus-instance")
	_, err := client.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: pod})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("call with a wrong instance id: %v, want UNAVAILABLE", err)
	}
	_, err = client.StopPodSandbox(context.Background(), &nriv1beta1.StopPodSandboxRequest{Pod: pod})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("call without an instance id: %v, want UNAVAILABLE", err)
	}
	if slices.Contains(c.names(), "StopPodSandbox") {
		t.Error("a refused call reached the handler")
	}
	ctx = metadata.AppendToOutgoingContext(context.Background(), nri.MetadataInstanceID, p.Registered().GetInstanceId())
	if _, err := client.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: pod}); err != nil {
		t.Errorf("call with the current instance id: %v", err)
	}
	c.wait(t, "StopPodSandbox", 1)
	if _, err := client.Configure(ctx, &nriv1beta1.ConfigureRequest{InstanceId: "hijack"}); status.Code(err) != codes.Unavailable {
		t.Errorf("Configure without a pending registration: %v, want UNAVAILABLE", err)
	}
	if p.Registered().GetInstanceId() == "hijack" {
		t.Error("a stray Configure changed the instance")
	}
}

// TestHealthAndReflection: the plugin serves health (SERVING while
// registered) and reflection.
func TestHealthAndReflection(t *testing.T) {
	env := plugintest.New(t)
	p := env.Start(t, &recorder{c: newCalls()}, plugin.WithName("probe"))
	cc := dialPlugin(t, p)
	rsp, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || rsp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health: %v %v, want SERVING", rsp, err)
	}
	stream, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !slices.Contains(names, "nri.v1beta1.PluginService") {
		t.Errorf("reflection lists %v, want nri.v1beta1.PluginService", names)
	}
}

// TestGrpcurlAgainstPlugin: grpcurl, as an operator runs it, lists,
// describes and health-checks a Go SDK plugin on its own socket, with no
// descriptor set: the plugin serves reflection with the proto comments.
func TestGrpcurlAgainstPlugin(t *testing.T) {
	bin := os.Getenv("GRPCURL")
	if bin == "" {
		t.Skip("GRPCURL is not set; `make test` sets it")
	}
	env := plugintest.New(t)
	p := env.Start(t, &recorder{c: newCalls()}, plugin.WithName("grpcurl"))
	sock := strings.TrimPrefix(p.Endpoint(), "unix://")
	grpcurl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"-unix", "-plaintext", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("grpcurl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	list := strings.Fields(grpcurl("list"))
	for _, svc := range []string{"nri.v1beta1.PluginService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
		if !slices.Contains(list, svc) {
			t.Errorf("grpcurl list: %v, want %s among them", list, svc)
		}
	}
	if desc := grpcurl("describe", "nri.v1beta1.PluginService"); !strings.Contains(desc, "is a service:") ||
		!strings.Contains(desc, "rpc CreateContainer") {
		t.Errorf("grpcurl describe nri.v1beta1.PluginService:\n%s", desc)
	}
	if desc := grpcurl("describe", "nri.v1beta1.CreateContainerRequest"); !strings.Contains(desc, "Container being created") {
		t.Errorf("describe does not show the proto comments:\n%s", desc)
	}
	if out := grpcurl("grpc.health.v1.Health/Check"); !strings.Contains(out, `"SERVING"`) {
		t.Errorf("health check of a registered plugin: %s", out)
	}
}

// syncUpdater returns an update from Synchronize and can send unsolicited
// updates.
type syncUpdater struct{ recorder }

func (s *syncUpdater) Synchronize(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	s.c.add("Synchronize", req)
	var out []*nriv1beta1.ContainerUpdate
	for _, c := range req.GetContainers() {
		out = append(out, plugin.NewUpdate(c.GetId()).SetLinuxCPUShares(2048).Proto())
	}
	return &nriv1beta1.SynchronizeResponse{Update: out}, nil
}

func TestUpdates(t *testing.T) {
	ctrs := []*nriv1beta1.Container{plugintest.Container(0, 0)}
	env := plugintest.New(t, plugintest.WithState([]*nriv1beta1.PodSandbox{plugintest.Pod(0)}, ctrs))
	p := env.Start(t, &syncUpdater{recorder{c: newCalls()}}, plugin.WithName("updater"))
	got := env.Runtime.WaitUpdates(t, 1)
	if got[0].GetContainerId() != ctrs[0].GetId() || got[0].GetLinux().GetResources().GetCpu().GetShares().GetValue() != 2048 {
		t.Errorf("update from Synchronize: %v", got[0])
	}
	failed, failedEv, err := p.UpdateContainers(context.Background(),
		[]*nriv1beta1.ContainerUpdate{plugin.NewUpdate(ctrs[0].GetId()).SetLinuxMemoryLimit(1 << 30).Proto()},
		[]*nriv1beta1.ContainerEviction{plugin.Evict(ctrs[0].GetId(), "demo")})
	if err != nil || len(failed) != 0 || len(failedEv) != 0 {
		t.Fatalf("UpdateContainers: %v %v %v", failed, failedEv, err)
	}
	got = env.Runtime.WaitUpdates(t, 2)
	if got[1].GetLinux().GetResources().GetMemory().GetLimit().GetValue() != 1<<30 {
		t.Errorf("unsolicited update: %v", got[1])
	}
	if ev := env.Runtime.Evictions(); len(ev) != 1 || ev[0].GetReason() != "demo" {
		t.Errorf("evictions: %v", ev)
	}
}

func TestUpdateContainersUnregistered(t *testing.T) {
	p, err := plugin.New(&recorder{c: newCalls()}, plugin.WithName("x"), plugin.WithIndex("10"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.UpdateContainers(context.Background(), nil, nil); !errors.Is(err, plugin.ErrNotRegistered) {
		t.Errorf("UpdateContainers before Run: %v, want ErrNotRegistered", err)
	}
}

// validator rejects containers named "bad"; accepts others.
type validator struct{}

func (validator) ValidateContainerAdjustment(_ context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	if req.GetContainer().GetName() == "bad" {
		return nil, errors.New("containers named bad are not allowed")
	}
	return nil, nil
}

func TestValidatorErrorRejects(t *testing.T) {
	env := plugintest.New(t)
	env.Start(t, validator{}, plugin.WithName("policy"), plugin.WithIndex("90"))
	pod := plugintest.Pod(0)
	env.RunPodSandbox(t, pod)
	env.CreateContainer(t, pod, plugintest.Container(0, 0))
	bad := plugintest.Container(0, 1)
	bad.Name = "bad"
	_, err := env.TryCreateContainer(t, pod, bad)
	if reason, _ := reasonOf(err); reason != "DISPATCH_OUTCOME_REJECTED" || !strings.Contains(err.Error(), "containers named bad are not allowed") {
		t.Errorf("CreateContainer of a bad container: %v (%s), want a rejection with the reason", err, reason)
	}
}

// configured narrows its subscription in Configure and records the config.
type configured struct {
	recorder
	config string
}

func (c *configured) Configure(_ context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	c.config = req.GetRuntimeName()
	return &nriv1beta1.ConfigureResponse{Events: nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)}, nil
}

func (*configured) SupportsDryRun() bool { return true }

func TestConfigureNarrowsAndCapabilities(t *testing.T) {
	env := plugintest.New(t)
	p := env.Start(t, &configured{recorder: recorder{c: newCalls()}}, plugin.WithName("narrow"),
		plugin.WithMaxConcurrentCalls(4), plugin.WithResync(),
		plugin.WithFailurePolicy(&nriv1beta1.FailurePolicy{FailRequest: true}))
	reg := p.Registered()
	if reg.GetEvents() != nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER) {
		t.Errorf("Registered.events = %#x, want only CreateContainer", reg.GetEvents())
	}
	caps := reg.GetCapabilities()
	if !caps.GetDryRun() || !caps.GetResync() || caps.GetMaxConcurrentCalls() != 4 {
		t.Errorf("granted capabilities %v; want dry_run, resync, 4 concurrent calls", caps)
	}
	if !reg.GetFailurePolicy().GetFailRequest() {
		t.Errorf("failure policy %v, want fail_request", reg.GetFailurePolicy())
	}
}

// TestServerRefusalStopsRun: a registration refused for good (here: an
// endpoint outside the server's plugin socket directory) ends Run with the
// refusal.
func TestServerRefusalStopsRun(t *testing.T) {
	env := plugintest.New(t)
	dir, err := os.MkdirTemp("", "nri-out-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p := env.Launch(t, &recorder{c: newCalls()}, plugin.WithName("outside"), plugin.WithEndpoint(filepath.Join(dir, "x.sock")))
	select {
	case <-p.Done():
	case <-time.After(plugintest.Wait):
		t.Fatal("Run did not return after a permanent refusal")
	}
	if err := p.Err(); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "outside the plugin socket directory") {
		t.Errorf("Run = %v, want the INVALID_ENDPOINT refusal", err)
	}
}

// evictee blocks CreateContainer until its context ends and records
// shutdowns.
type evictee struct {
	blocker
	c *calls
}

func (e *evictee) Shutdown(_ context.Context, req *nriv1beta1.ShutdownRequest) {
	e.c.add("Shutdown", req)
}

// TestEvictedPluginRegistersAgain: a plugin that times out under the
// default policy is evicted by the server (Shutdown EVICTED) and registers
// again with backoff, under a new instance id.
func TestEvictedPluginRegistersAgain(t *testing.T) {
	env := plugintest.New(t)
	e := &evictee{blocker: blocker{entered: make(chan struct{}, 1)}, c: newCalls()}
	p := env.Start(t, e, plugin.WithName("evictee"),
		plugin.WithTimeouts(plugin.Timeouts{Request: 200 * time.Millisecond}))
	first := p.Registered().GetInstanceId()
	pod, ctr := plugintest.Pod(0), plugintest.Container(0, 0)
	env.RunPodSandbox(t, pod)
	env.CreateContainer(t, pod, ctr) // the plugin is skipped (ignore policy)
	sd := e.c.wait(t, "Shutdown", 1).(*nriv1beta1.ShutdownRequest)
	if sd.GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED {
		t.Errorf("Shutdown %v, want EVICTED", sd)
	}
	if reg := p.WaitRegistered(t, first); reg.GetInstanceId() == first {
		t.Error("no new instance")
	}
}
