package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// wait bounds anything a test waits for: the time left before the test
// binary's deadline (internal/testwait), so a loaded machine slows a test
// down instead of failing it.
func wait() time.Duration { return testwait.Bound() }

// nrid is a real NRI server served the way nrid serves it, on a socket of
// its own, with real plugins registering over gRPC.
type nrid struct {
	t         *testing.T
	srv       *server.Server
	sock      string
	pluginDir string
	health    *health.Server
	log       *testplugin.Log
}

func startNrid(t *testing.T) *nrid {
	t.Helper()
	dir, err := os.MkdirTemp("", "nrictl-")
	if err != nil {
		t.Fatal(err)
	}
	pluginDir := filepath.Join(dir, "p")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.WithPluginSocketDir(pluginDir), server.WithDialer(transport.NewDialer()), server.WithRuntime("test-runtime", "v0"), server.WithNodeName("node-1"))
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "nri.sock")
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(peercred.Credentials{}), codec.ServerOption(), grpc.ChainUnaryInterceptor(srv.SimulationGuard()))
	nriv1beta1.RegisterRuntimeServiceServer(g, srv.RuntimeService())
	nriv1beta1.RegisterAdaptationServiceServer(g, srv.AdaptationService())
	nriv1beta1.RegisterAdminServiceServer(g, srv.AdminService())
	hs := health.NewServer()
	healthpb.RegisterHealthServer(g, hs)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait())
		defer cancel()
		_ = srv.Shutdown(ctx)
		g.Stop()
		_ = os.RemoveAll(dir)
	})
	return &nrid{t: t, srv: srv, sock: sock, pluginDir: pluginDir, health: hs, log: testplugin.NewLog()}
}

func (n *nrid) plugin(idx, name string, set func(*testplugin.Plugin)) *testplugin.Plugin {
	n.t.Helper()
	p := &testplugin.Plugin{Name: name, Index: idx, Log: n.log}
	if set != nil {
		set(p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	_, err := p.Start(ctx, n.sock, n.pluginDir)
	n.t.Cleanup(p.Stop)
	if err != nil {
		n.t.Fatalf("registering %s-%s: %v", idx, name, err)
	}
	return p
}

// lifecycle runs pod n with one container through every event.
func (n *nrid) lifecycle(i int) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	pod, ctr := fixture.Pod(i), fixture.Container(i, 0)
	check := func(err error) {
		n.t.Helper()
		if err != nil {
			n.t.Fatal(err)
		}
	}
	check(n.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}))
	_, err := n.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr})
	check(err)
	check(n.srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: pod, Container: ctr}))
	_, err = n.srv.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: pod, Container: ctr})
	check(err)
	_, err = n.srv.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: ctr})
	check(err)
	_, err = n.srv.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: pod})
	check(err)
	_, err = n.srv.RemovePodSandbox(ctx, &nriv1beta1.RemovePodSandboxRequest{Pod: pod})
	check(err)
}

// nrictl runs nrictl against the server and returns its output.
func (n *nrid) nrictl(args ...string) (string, string, error) {
	return n.nrictlTo(nil, args...)
}

func (n *nrid) nrictlTo(stderr io.Writer, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	var out, errb bytes.Buffer
	var ew io.Writer = &errb
	if stderr != nil {
		ew = io.MultiWriter(&errb, stderr)
	}
	env := func(k string) string {
		if k == EnvSocket {
			return n.sock
		}
		return ""
	}
	err := run(ctx, args, env, &out, ew)
	return out.String(), errb.String(), err
}

func (n *nrid) must(args ...string) string {
	n.t.Helper()
	out, errOut, err := n.nrictl(args...)
	if err != nil {
		n.t.Fatalf("nrictl %s: %v\nstderr: %s\nstdout: %s", strings.Join(args, " "), err, errOut, out)
	}
	return out
}

func contains(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

func parseJSON(t *testing.T, s string, m proto.Message) {
	t.Helper()
	if err := protojson.Unmarshal([]byte(s), m); err != nil {
		t.Fatalf("parsing %T: %v\n%s", m, err, s)
	}
}

const secret = "hunter2"

// inject makes a plugin add an annotation and an env variable.
func inject(p *testplugin.Plugin) {
	p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
		return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
			Annotations: map[string]string{"example.com/injected": secret},
			Env:         []*nriv1beta1.KeyValue{{Key: "TOKEN", Value: secret}},
			Linux: &nriv1beta1.LinuxContainerAdjustment{Resources: &nriv1beta1.LinuxResources{
				Cpu: &nriv1beta1.LinuxCPU{Cpus: "2-3"},
			}},
		}}, nil
	}
}

func TestPlugins(t *testing.T) {
	n := startNrid(t)
	n.plugin("10", "inject", inject)
	n.plugin("20", "starts", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_START_CONTAINER)
	})
	n.lifecycle(1)
	out := n.must("plugins")
	contains(t, "plugins", out, "PLUGIN", "CALLS", "10-inject", "20-starts", "remote", "ready", "StartContainer", "all")
	if strings.Index(out, "10-inject") > strings.Index(out, "20-starts") {
		t.Errorf("plugins not in dispatch order:\n%s", out)
	}
	contains(t, "plugins -wide", n.must("plugins", "-wide"), "INSTANCE", "unix://", "testplugin")

	var rsp nriv1beta1.ListPluginsResponse
	parseJSON(t, n.must("-o", "json", "plugins"), &rsp)
	if len(rsp.GetPlugins()) != 2 || rsp.GetPlugins()[1].GetCounters().GetCalls() != 1 || rsp.GetPlugins()[0].GetCounters().GetCalls() < 7 {
		t.Errorf("plugins JSON: %v", &rsp)
	}
	// The global flags work after the command too.
	parseJSON(t, n.must("plugins", "-o", "json"), &rsp)
}

func TestState(t *testing.T) {
	n := startNrid(t)
	if err := n.srv.SetRuntime(context.Background(), server.RuntimeInfo{Name: "rt"}, nil,
		[]*nriv1beta1.PodSandbox{fixture.Pod(1), fixture.Pod(2)},
		[]*nriv1beta1.Container{fixture.Container(1, 0), fixture.Container(2, 0), fixture.Container(2, 1)}); err != nil {
		t.Fatal(err)
	}
	out := n.must("state")
	contains(t, "state", out, "production/"+fixture.Pod(1).GetName(), "app-1", "created", "2 pods, 3 containers", fixture.Pod(2).GetId()[:13])
	if strings.Contains(out, fixture.Pod(2).GetId()) {
		t.Errorf("ids not truncated:\n%s", out)
	}
	contains(t, "state -no-trunc", n.must("state", "-no-trunc"), fixture.Pod(2).GetId())

	var st nriv1beta1.GetStateResponse
	parseJSON(t, n.must("state", "-pod", fixture.Pod(2).GetId(), "-o", "json"), &st)
	if len(st.GetPods()) != 1 || len(st.GetContainers()) != 2 {
		t.Fatalf("state -pod: %d pods, %d containers", len(st.GetPods()), len(st.GetContainers()))
	}
	if env := st.GetContainers()[0].GetEnv(); env[3] != "APP_ENV="+server.Redacted {
		t.Errorf("env not redacted: %v", env)
	}
	_, _, err := n.nrictl("state", "-pod", "nope")
	if err == nil || !strings.Contains(err.Error(), "NOT_FOUND") {
		t.Errorf("state of an unknown pod: %v", err)
	}
}

// signal closes ch on the first write containing s.
type onWrite struct {
	s    string
	once sync.Once
	ch   chan struct{}
}

func (w *onWrite) Write(b []byte) (int, error) {
	if strings.Contains(string(b), w.s) {
		w.once.Do(func() { close(w.ch) })
	}
	return len(b), nil
}

// watchWhile runs nrictl watch and drive once the watch is in place, and
// returns nrictl's output.
func (n *nrid) watchWhile(drive func(), args ...string) string {
	n.t.Helper()
	started := &onWrite{s: "watching", ch: make(chan struct{})}
	type result struct {
		out, errOut string
		err         error
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, err := n.nrictlTo(started, args...)
		done <- result{out, errOut, err}
	}()
	select {
	case <-started.ch:
	case r := <-done:
		n.t.Fatalf("nrictl watch ended early: %v\n%s", r.err, r.errOut)
	}
	drive()
	r := <-done
	if r.err != nil {
		n.t.Fatalf("nrictl %s: %v\n%s", strings.Join(args, " "), r.err, r.errOut)
	}
	return r.out
}

func TestWatch(t *testing.T) {
	n := startNrid(t)
	n.plugin("10", "inject", inject)
	pod := fixture.Pod(1).GetId()
	out := n.watchWhile(func() { n.lifecycle(2); n.lifecycle(1) }, "watch", "-pod", pod, "-count", "7")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var events []string
	for _, l := range lines {
		if !strings.HasPrefix(l, " ") {
			f := strings.Fields(l)
			events = append(events, f[2])
		}
	}
	if strings.Join(events, " ") != "RunPodSandbox CreateContainer StartContainer StopContainer RemoveContainer StopPodSandbox RemovePodSandbox" {
		t.Errorf("watched events %v:\n%s", events, out)
	}
	contains(t, "watch", out, "production/"+fixture.Pod(1).GetName()+" app-0  ok",
		"10-inject", "env[TOKEN]="+server.Redacted, "annotations[example.com/injected]="+server.Redacted, "cpu_set_cpus=2-3")
	if strings.Contains(out, secret) {
		t.Errorf("watch shows a secret:\n%s", out)
	}

	out = n.watchWhile(func() { n.lifecycle(3) }, "-o", "json", "watch", "-event", "CreateContainer,stop-container", "-event", "EVENT_REMOVE_POD_SANDBOX",
		"-plugin", "10-inject", "-count", "3")
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec nriv1beta1.DispatchRecord
		parseJSON(t, l, &rec)
		got = append(got, rec.GetEvent().String())
		if rec.GetPodId() != fixture.Pod(3).GetId() || len(rec.GetCalls()) == 0 {
			t.Errorf("record %v", &rec)
		}
	}
	if strings.Join(got, " ") != "EVENT_CREATE_CONTAINER EVENT_STOP_CONTAINER EVENT_REMOVE_POD_SANDBOX" {
		t.Errorf("watched %v", got)
	}

	if _, _, err := n.nrictl("watch", "-event", "Bogus"); !errors.As(err, new(usageError)) {
		t.Errorf("bad event: %v", err)
	}
}

func TestDryRun(t *testing.T) {
	n := startNrid(t)
	n.plugin("10", "dry", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{DryRun: true}
		inject(p)
	})
	n.plugin("20", "wet", nil)
	out := n.must("dry-run", "-name", "web", "-annotation", "team=a", "-env", "MODE=fast")
	contains(t, "dry-run", out, "CreateContainer of default/web app (dry run)", "result: ok", "10-dry", "ok",
		"not evaluated (no dry-run support): 20-wet", "adjustment:", "annotations[example.com/injected]="+server.Redacted,
		"env[TOKEN]="+server.Redacted, "linux.resources.cpu.cpus=2-3")
	calls := n.log.Calls()
	req := calls[len(calls)-1].Req.(*nriv1beta1.CreateContainerRequest)
	if !req.GetDryRun() || req.GetPod().GetAnnotations()["team"] != "a" || !strings.Contains(strings.Join(req.GetContainer().GetEnv(), " "), "MODE=fast") {
		t.Errorf("the plugin got %v", req)
	}
	for _, c := range calls {
		if c.Plugin == "20-wet" && c.Method == "CreateContainer" {
			t.Error("the plugin without dry-run support was called")
		}
	}

	// From files, as JSON.
	dir := t.TempDir()
	write := func(name string, m proto.Message) string {
		b, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	podFile, ctrFile := write("pod.json", fixture.Pod(7)), write("ctr.json", fixture.Container(7, 0))
	var rsp nriv1beta1.DryRunResponse
	parseJSON(t, n.must("-o", "json", "dry-run", "-pod-file", podFile, "-container-file", ctrFile), &rsp)
	if rsp.GetError() != "" || rsp.GetAdjust().GetEnv()[0].GetValue() != server.Redacted || len(rsp.GetNotEvaluated()) != 1 ||
		!rsp.GetRecord().GetDryRun() {
		t.Errorf("dry-run JSON: %v", &rsp)
	}
	calls = n.log.Calls()
	if got := calls[len(calls)-1].Req.(*nriv1beta1.CreateContainerRequest).GetContainer().GetId(); got != fixture.Container(7, 0).GetId() {
		t.Errorf("the dry run used container %q, not the file's", got)
	}
	parseJSON(t, n.must("-o", "json", "dry-run", "-event", "update", "-container-file", ctrFile), &rsp)
	if rsp.GetError() != "" || rsp.GetLinuxResources() == nil {
		t.Errorf("update dry-run: %v", &rsp)
	}
}

func TestDryRunThatWouldFail(t *testing.T) {
	n := startNrid(t)
	n.plugin("10", "veto", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{DryRun: true}
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return nil, status.Error(codes.PermissionDenied, "no GPUs for you")
		}
	})
	out, errOut, err := n.nrictl("dry-run")
	if exitCode(err, io.Discard) != 1 {
		t.Errorf("exit status %d, want 1", exitCode(err, io.Discard))
	}
	contains(t, "dry-run", out, "result: failed", "no GPUs for you", "10-veto", "veto")
	contains(t, "stderr", errOut, "the event would fail")
}

func TestSimulate(t *testing.T) {
	n := startNrid(t)
	n.plugin("10", "inject", inject)
	n.plugin("20", "grumpy", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_STOP_CONTAINER, nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)
		p.Handle = func(_ context.Context, method string, _ proto.Message) error {
			if method == "StopContainer" {
				return status.Error(codes.Internal, "cannot free the CPUs")
			}
			return nil
		}
	})
	out := n.must("simulate", "-pods", "2", "-name", "sim", "-annotation", "team=a")
	contains(t, "simulate", out, "POD", "default/sim-0", "default/sim-1", "app-0", "RunPodSandbox", "RemovePodSandbox",
		"adjust.annotations[example.com/injected]="+secret, "adjust.env[TOKEN]="+secret, "adjust.linux.resources.cpu.cpus=2-3",
		"plugin error: 20-grumpy: INTERNAL: cannot free the CPUs", "ok (1 plugin error(s))", "26 events, 0 failed")
	var runs int
	for _, c := range n.log.Calls() {
		if c.Method == "RunPodSandbox" && c.Plugin == "10-inject" {
			runs++
			if c.Req.(*nriv1beta1.RunPodSandboxRequest).GetPod().GetAnnotations()["team"] != "a" {
				t.Errorf("the pod lacks the annotation: %v", c.Req)
			}
		}
	}
	if runs != 2 {
		t.Errorf("the plugin saw %d pods, want 2", runs)
	}
	// Torn down: nothing is left in the server's state.
	contains(t, "state after simulate", n.must("state"), "no pods or containers cached")

	var sim simJSON
	raw := n.must("simulate", "-containers", "2", "-o", "json")
	if err := json.Unmarshal([]byte(raw), &sim); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	var evs []string
	for _, st := range sim.Steps {
		evs = append(evs, st.Event+"/"+st.Container)
		if st.Event == "EVENT_CREATE_CONTAINER" {
			var rsp nriv1beta1.AdaptationServiceCreateContainerResponse
			parseJSON(t, string(st.Response), &rsp)
			if rsp.GetAdjust().GetEnv()[0].GetValue() != secret {
				t.Errorf("CreateContainer response %v", &rsp)
			}
		}
		if st.Event == "EVENT_STOP_CONTAINER" {
			var pe nriv1beta1.PluginError
			if len(st.PluginErrors) != 1 {
				t.Fatalf("StopContainer plugin errors: %s", st.PluginErrors)
			}
			parseJSON(t, string(st.PluginErrors[0]), &pe)
			if pe.GetPlugin().GetName() != "grumpy" || pe.GetCode() != int32(codes.Internal) {
				t.Errorf("plugin error %v", &pe)
			}
		}
	}
	want := "EVENT_RUN_POD_SANDBOX/ EVENT_UPDATE_POD_SANDBOX/ EVENT_POST_UPDATE_POD_SANDBOX/ " +
		"EVENT_CREATE_CONTAINER/app-0 EVENT_POST_CREATE_CONTAINER/app-0 EVENT_START_CONTAINER/app-0 EVENT_POST_START_CONTAINER/app-0 " +
		"EVENT_UPDATE_CONTAINER/app-0 EVENT_POST_UPDATE_CONTAINER/app-0 " +
		"EVENT_CREATE_CONTAINER/app-1 EVENT_POST_CREATE_CONTAINER/app-1 EVENT_START_CONTAINER/app-1 EVENT_POST_START_CONTAINER/app-1 " +
		"EVENT_UPDATE_CONTAINER/app-1 EVENT_POST_UPDATE_CONTAINER/app-1 " +
		"EVENT_STOP_CONTAINER/app-0 EVENT_REMOVE_CONTAINER/app-0 EVENT_STOP_CONTAINER/app-1 EVENT_REMOVE_CONTAINER/app-1 " +
		"EVENT_STOP_POD_SANDBOX/ EVENT_REMOVE_POD_SANDBOX/"
	if strings.Join(evs, " ") != want {
		t.Errorf("simulated events:\n got  %s\n want %s", strings.Join(evs, " "), want)
	}
}

func TestSimulateVetoTearsDown(t *testing.T) {
	n := startNrid(t)
	n.plugin("10", "veto", func(p *testplugin.Plugin) {
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return nil, status.Error(codes.PermissionDenied, "no GPUs for you")
		}
	})
	out, errOut, err := n.nrictl("simulate")
	if exitCode(err, io.Discard) != 1 {
		t.Errorf("exit status %d, want 1 (%v)", exitCode(err, io.Discard), err)
	}
	contains(t, "simulate", out, "CreateContainer", "failed: plugin 10-veto vetoed CreateContainer: no GPUs for you",
		"StopContainer", "RemoveContainer", "RemovePodSandbox", "1 failed")
	contains(t, "stderr", errOut, "1 event(s) failed")
	if strings.Contains(out, "StartContainer") {
		t.Errorf("a vetoed container was started:\n%s", out)
	}
}

func TestSimulateRefusedWhileRuntimeAttached(t *testing.T) {
	n := startNrid(t)
	n.plugin("10", "all", nil)
	if err := n.srv.SetRuntime(context.Background(), server.RuntimeInfo{Name: "containerd"}, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	n.log.Reset()
	out, _, err := n.nrictl("simulate")
	if err == nil || !strings.Contains(err.Error(), "FAILED_PRECONDITION") || !strings.Contains(err.Error(), "runtime is attached") {
		t.Fatalf("simulate with a runtime attached: %v\n%s", err, out)
	}
	if calls := n.log.Strings(); len(calls) != 0 {
		t.Errorf("plugins were called: %v", calls)
	}
}

func TestHealth(t *testing.T) {
	n := startNrid(t)
	n.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	out, _, err := n.nrictl("health")
	if exitCode(err, io.Discard) != 1 || strings.TrimSpace(out) != "NOT_SERVING" {
		t.Errorf("health while not serving: %q, %v", out, err)
	}
	if out := n.must("health", "-live"); strings.TrimSpace(out) != "NOT_SERVING" {
		t.Errorf("health -live: %q", out)
	}
	n.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	var rsp healthpb.HealthCheckResponse
	parseJSON(t, n.must("health", "-o", "json"), &rsp)
	if rsp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health: %v", &rsp)
	}
}

func TestCommandLine(t *testing.T) {
	n := startNrid(t)
	contains(t, "version", n.must("version"), "nrictl ", "protocol  v1beta1")
	var v map[string]any
	if err := json.Unmarshal([]byte(n.must("version", "-o", "json")), &v); err != nil || v["protocol"] != "v1beta1" {
		t.Errorf("version JSON: %v %v", v, err)
	}
	for _, args := range [][]string{{}, {"bogus"}, {"plugins", "extra"}, {"-o", "yaml", "plugins"}, {"simulate", "-pods", "0"}} {
		if _, _, err := n.nrictl(args...); exitCode(err, io.Discard) != 2 {
			t.Errorf("nrictl %v: %v, want a usage error", args, err)
		}
	}
	_, _, err := n.nrictl("--socket", "/nonexistent/nri.sock", "plugins")
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing socket: %v", err)
	}
	// The socket from the environment is used (nrictl() sets NRICTL_SOCKET only).
	contains(t, "plugins", n.must("plugins"), "no plugins registered")
	contains(t, "deprecations", n.must("deprecations"), "no deprecations seen")
	n.srv.RecordDeprecation(&nriv1beta1.PluginInstance{Name: "old", Index: "05"}, server.DeprecationStateChange,
		nriv1beta1.Event_EVENT_START_CONTAINER, "only implements StateChange")
	contains(t, "deprecations", n.must("deprecations"), "05-old", "StateChange", "StartContainer", "only implements StateChange")
}
