//go:build !nri_no_wasm

package bridge_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	upstream "github.com/containerd/nri/pkg/adaptation"
	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/proto"

	dropin "github.com/nri-grpc/nri-grpc/adaptation"
	"github.com/nri-grpc/nri-grpc/bridge"
	"github.com/nri-grpc/nri-grpc/config"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/wasmbuild"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/supervisor"
)

// The WASM tests load modules built from source once per test binary: the
// project's example (examples/wasm-adjuster) and the misbehaving test
// plugin (internal/testplugin/wasmbad).
var modules *wasmbuild.Cache

// wasmCache is the plugin sides' compilation cache (WasmConfig.CacheDir):
// a module is compiled once per test binary, not once per test.
var wasmCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nri-bridge-wasm-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	modules = wasmbuild.NewCache(dir)
	wasmCache = filepath.Join(dir, "compiled")
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

const (
	adjusterPkg = "examples/wasm-adjuster"
	badPkg      = "internal/testplugin/wasmbad"
)

// wasmDirs is a plugin directory and its configuration directory.
type wasmDirs struct{ plugins, conf string }

// newWasmDirs makes a plugin directory with the modules of mods
// ("NN-name" -> package) and their configurations (confs, by "NN-name").
func newWasmDirs(t *testing.T, mods, confs map[string]string) wasmDirs {
	t.Helper()
	d := wasmDirs{plugins: filepath.Join(tempDir(t), "plugins"), conf: filepath.Join(tempDir(t), "conf")}
	for _, dir := range []string{d.plugins, d.conf} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for full, pkg := range mods {
		b, err := os.ReadFile(modules.Path(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d.plugins, full), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for full, c := range confs {
		if err := os.WriteFile(filepath.Join(d.conf, full+".conf"), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// launchWasm launches the plugins of d on n's server through a plugin side
// with opts, and waits until each of want is registered.
func launchWasm(t *testing.T, n *nrid, d wasmDirs, want []string, opts ...bridge.PluginOption) *bridge.PluginSide {
	t.Helper()
	ps, err := bridge.NewPluginSide(n.srv, append([]bridge.PluginOption{bridge.WithPluginLogger(testLogger(t)),
		bridge.WithWasm(bridge.WasmConfig{CacheDir: wasmCache})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sup := supervisor.New(supervisor.WithLogger(testLogger(t)))
	if err := ps.Launch(ctx, sup, d.plugins, d.conf); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, wait())
	defer wcancel()
	if err := ps.WaitLaunched(wctx); err != nil {
		t.Fatal(err)
	}
	for _, full := range want {
		waitPlugin(t, n.srv, full, func(p *nriv1beta1.PluginInfo) bool {
			return p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY
		})
	}
	return ps
}

// waitPlugin waits until plugin full's info satisfies ok, and returns it.
func waitPlugin(t *testing.T, srv *server.Server, full string, ok func(*nriv1beta1.PluginInfo) bool) *nriv1beta1.PluginInfo {
	t.Helper()
	deadline := time.After(wait())
	for {
		changed := srv.PluginsChanged()
		for _, p := range srv.Plugins() {
			if p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName() == full && ok(p) {
				return p
			}
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("plugin %s never got there: %v", full, srv.Plugins())
		}
	}
}

// wasmPod is a pod asking the example for RLIMIT_NOFILE 1111:2222.
func wasmPod(nofile string) *v1alpha1.PodSandbox {
	p := alphaPod(1)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["wasm-adjuster.nri-grpc.io/nofile"] = nofile
	return p
}

// wantAdjusted checks the example's adjustment of container ctr.
func wantAdjusted(t *testing.T, where string, adj *v1alpha1.ContainerAdjustment, pod *v1alpha1.PodSandbox, ctr *v1alpha1.Container) {
	t.Helper()
	env := map[string]string{}
	for _, kv := range adj.GetEnv() {
		env[kv.GetKey()] = kv.GetValue()
	}
	if env["WASM_ADJUSTER"] != ctr.GetName() || env["TEAM"] != "blue" {
		t.Errorf("%s: env %v, want WASM_ADJUSTER=%s and TEAM=blue", where, env, ctr.GetName())
	}
	if got := adj.GetAnnotations()["wasm-adjuster.nri-grpc.io/pod"]; got != pod.GetNamespace()+"/"+pod.GetName() {
		t.Errorf("%s: annotation %q", where, got)
	}
	rl := adj.GetRlimits()
	if len(rl) != 1 || rl[0].GetType() != "RLIMIT_NOFILE" || rl[0].GetSoft() != 1111 || rl[0].GetHard() != 2222 {
		t.Errorf("%s: rlimits %v, want RLIMIT_NOFILE 1111/2222", where, rl)
	}
}

// TestWasmDifferential: the project's example, the same .wasm file, adjusts
// a container alike under upstream's pkg/adaptation (which loads it
// itself), under the drop-in, and behind nrid (upstream's pkg/adaptation as
// the runtime, the bridge, the server loading the module), and all three
// fail a creation whose annotation it rejects.
func TestWasmDifferential(t *testing.T) {
	const full = "30-wasm-adjuster"
	d := newWasmDirs(t, map[string]string{full: adjusterPkg}, map[string]string{full: `{"env": {"TEAM": "blue"}}`})
	// Upstream compiles the module when it loads it, within its request
	// timeout for the first call: give a loaded machine time.
	upstream.SetPluginRequestTimeout(wait())
	t.Cleanup(func() { upstream.SetPluginRequestTimeout(upstream.DefaultPluginRequestTimeout) })
	pod, ctr := wasmPod("1111:2222"), alphaCtr(1, 1)
	badPod := wasmPod("lots")
	ctx := context.Background()
	type result struct {
		adj    *v1alpha1.ContainerAdjustment
		badErr string
	}
	run := func(t *testing.T, a dropin.Interface) result {
		t.Helper()
		if err := a.RunPodSandbox(ctx, &v1alpha1.RunPodSandboxRequest{Pod: pod}); err != nil {
			t.Fatal(err)
		}
		rsp, err := a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: pod, Container: ctr})
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: badPod, Container: alphaCtr(1, 2)})
		if err == nil {
			t.Fatal("a malformed nofile annotation was accepted")
		}
		return result{adj: rsp.GetAdjust(), badErr: err.Error()}
	}
	sync := func(ctx context.Context, cb upstream.SyncCB) error { _, err := cb(ctx, nil, nil); return err }
	update := func(context.Context, []*v1alpha1.ContainerUpdate) ([]*v1alpha1.ContainerUpdate, error) {
		return nil, nil
	}
	results := map[string]result{}

	// Upstream's pkg/adaptation with the module in its plugin path.
	up, err := upstream.New("rt", "1", sync, update, upstream.WithSocketPath(filepath.Join(tempDir(t), "nri.sock")),
		upstream.WithPluginPath(d.plugins), upstream.WithPluginConfigPath(d.conf))
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	results["upstream"] = run(t, up)
	up.Stop()

	// The drop-in with the same plugin path.
	dir := tempDir(t)
	cfg := filepath.Join(dir, "nri-grpc.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[server]\nsocket = %q\nplugin_socket_dir = %q\n[wasm]\ncache_dir = %q\n",
		filepath.Join(dir, "g.sock"), filepath.Join(dir, "p.d"), wasmCache)), 0o600); err != nil {
		t.Fatal(err)
	}
	di, err := dropin.New("rt", "1", func(ctx context.Context, cb dropin.SyncCB) error { _, err := cb(ctx, nil, nil); return err }, update,
		dropin.WithSocketPath(filepath.Join(dir, "nri.sock")), dropin.WithPluginPath(d.plugins), dropin.WithPluginConfigPath(d.conf),
		dropin.WithConfigFile(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := di.Start(); err != nil {
		t.Fatal(err)
	}
	if info := waitPlugin(t, di.Server(), full, func(*nriv1beta1.PluginInfo) bool { return true }); info.GetKind() != nriv1beta1.PluginKind_PLUGIN_KIND_WASM {
		t.Errorf("drop-in: kind %v", info.GetKind())
	}
	results["drop-in"] = run(t, di)
	di.Stop()

	// nrid: upstream's pkg/adaptation as the runtime, the bridge attached
	// to it, the module launched by the bridge's plugin side.
	n := startNrid(t)
	rsock := filepath.Join(tempDir(t), "nri.sock")
	rt, err := upstream.New("rt", "1", sync, update, upstream.WithSocketPath(rsock),
		upstream.WithPluginPath(filepath.Join(tempDir(t), "none")), upstream.WithPluginConfigPath(filepath.Join(tempDir(t), "none")))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	launchWasm(t, n, d, []string{full})
	attachBridge(t, n, rsock)
	rt.BlockPluginSync().Unblock()
	results["nrid"] = run(t, rt)

	for where, r := range results {
		wantAdjusted(t, where, r.adj, pod, ctr)
		if !strings.Contains(r.badErr, "wasm-adjuster.nri-grpc.io/nofile") {
			t.Errorf("%s: the rejection does not name the annotation: %s", where, r.badErr)
		}
	}
	for _, where := range []string{"drop-in", "nrid"} {
		if !proto.Equal(fixture.Stripped(results[where].adj), fixture.Stripped(results["upstream"].adj)) {
			t.Errorf("%s adjusts differently from upstream:\n  upstream: %v\n  %s: %v", where, results["upstream"].adj, where, results[where].adj)
		}
	}
}

// wasmServer is an nrid server whose CreateContainer the tests call
// directly.
func wasmServer(t *testing.T, opts ...server.Option) *nrid {
	return startNrid(t, append([]server.Option{server.WithRequestTimeout(2 * time.Second)}, opts...)...)
}

// createIn runs a pod and creates a container in srv.
func createIn(t *testing.T, srv *server.Server, n int) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	t.Helper()
	ctx := context.Background()
	pod := wasmBetaPod(wasmPod("1111:2222"), n)
	if err := srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	ctr := &nriv1beta1.Container{Id: fmt.Sprintf("ctr-%d", n), PodSandboxId: pod.GetId(), Name: fmt.Sprintf("c%d", n)}
	return srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr})
}

// wasmBetaPod is the v1beta1 pod of p, with id and name numbered n.
func wasmBetaPod(p *v1alpha1.PodSandbox, n int) *nriv1beta1.PodSandbox {
	b, _ := p.MarshalVT()
	out := &nriv1beta1.PodSandbox{}
	if err := out.UnmarshalVT(b); err != nil {
		panic(err)
	}
	out.Id, out.Name, out.Uid = fmt.Sprintf("pod-%d", n), fmt.Sprintf("pod%d", n), fmt.Sprintf("uid-%d", n)
	return out
}

func envOf(rsp *nriv1beta1.AdaptationServiceCreateContainerResponse) map[string]string {
	env := map[string]string{}
	for _, kv := range rsp.GetAdjust().GetEnv() {
		env[kv.GetKey()] = kv.GetValue()
	}
	return env
}

// TestWasmPluginLikeAnyPlugin: a WASM plugin is registered as kind WASM
// under its launch slot, ordered by index with a gRPC plugin, merged with
// it, counted, and its calls recorded.
func TestWasmPluginLikeAnyPlugin(t *testing.T) {
	n := wasmServer(t)
	d := newWasmDirs(t, map[string]string{"30-wasm-adjuster": adjusterPkg},
		map[string]string{"30-wasm-adjuster": `{"env": {"TEAM": "blue"}, "events": ["CreateContainer"]}`})
	launchWasm(t, n, d, []string{"30-wasm-adjuster"})
	// A gRPC plugin after it sets the same variable: the merge refuses a
	// second owner, and names both.
	n.grpcPlugin(t, "40", "grpc", func(p *testplugin.Plugin) {
		p.OnCreateContainer = func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Env: []*nriv1beta1.KeyValue{{Key: "GRPC", Value: "yes"}}}}, nil
		}
	})
	rsp, err := createIn(t, n.srv, 1)
	if err != nil {
		t.Fatal(err)
	}
	env := envOf(rsp)
	if env["WASM_ADJUSTER"] != "c1" || env["TEAM"] != "blue" || env["GRPC"] != "yes" {
		t.Fatalf("merged env %v", env)
	}
	info := waitPlugin(t, n.srv, "30-wasm-adjuster", func(p *nriv1beta1.PluginInfo) bool {
		return p.GetCounters().GetCalls() > 0
	})
	if info.GetKind() != nriv1beta1.PluginKind_PLUGIN_KIND_WASM || info.GetIdentity() != "launch:30-wasm-adjuster" ||
		!strings.HasPrefix(info.GetEndpoint(), "wasm:") {
		t.Errorf("plugin info: kind %v identity %q endpoint %q", info.GetKind(), info.GetIdentity(), info.GetEndpoint())
	}
	if evs := info.GetEvents(); len(evs) != 1 || evs[0] != nriv1beta1.Event_EVENT_CREATE_CONTAINER {
		t.Errorf("subscribed to %v, want its configured CreateContainer only", evs)
	}
	// Ownership: a second plugin setting WASM_ADJUSTER conflicts.
	n.grpcPlugin(t, "50", "clash", func(p *testplugin.Plugin) {
		p.OnCreateContainer = func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Env: []*nriv1beta1.KeyValue{{Key: "WASM_ADJUSTER", Value: "other"}}}}, nil
		}
	})
	_, err = createIn(t, n.srv, 2)
	if err == nil || !strings.Contains(err.Error(), "30-wasm-adjuster") || !strings.Contains(err.Error(), "50-clash") {
		t.Fatalf("conflicting env: %v, want a conflict naming both plugins", err)
	}
}

// TestWasmCrashEvictsOnlyIt: a module that crashes (a panic) in
// CreateContainer is an availability failure: the creation goes on with
// the healthy WASM plugin's adjustment, the crashed plugin is evicted and
// then loaded again. Required, its crash fails the creation.
func TestWasmCrashEvictsOnlyIt(t *testing.T) {
	for _, mode := range []string{"crash", "exit"} {
		t.Run(mode, func(t *testing.T) {
			n := wasmServer(t)
			d := newWasmDirs(t, map[string]string{"20-wasmbad": badPkg, "30-wasm-adjuster": adjusterPkg},
				map[string]string{"20-wasmbad": fmt.Sprintf(`{"mode": %q}`, mode), "30-wasm-adjuster": `{"env": {"TEAM": "blue"}}`})
			launchWasm(t, n, d, []string{"20-wasmbad", "30-wasm-adjuster"})
			first := waitPlugin(t, n.srv, "20-wasmbad", func(*nriv1beta1.PluginInfo) bool { return true }).GetInstanceId()
			rsp, err := createIn(t, n.srv, 1)
			if err != nil {
				t.Fatalf("the creation failed with the crashed plugin not required: %v", err)
			}
			if envOf(rsp)["WASM_ADJUSTER"] != "c1" {
				t.Fatalf("the healthy plugin's adjustment is missing: %v", rsp.GetAdjust())
			}
			// Loaded again: a new instance, ready.
			waitPlugin(t, n.srv, "20-wasmbad", func(p *nriv1beta1.PluginInfo) bool {
				return p.GetInstanceId() != first && p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY
			})
			if _, err := createIn(t, n.srv, 2); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWasmServerStopEndsThem: when the server stops, its WASM plugins end
// ("server stopping") and are not loaded again: the plugin side's
// goroutines and engine end with the server, before Launch's context does
// (Wait returns), with nothing more to say in the log.
func TestWasmServerStopEndsThem(t *testing.T) {
	n := wasmServer(t)
	d := newWasmDirs(t, map[string]string{"30-wasm-adjuster": adjusterPkg}, nil)
	var logs lockedBuffer
	ps := launchWasm(t, n, d, []string{"30-wasm-adjuster"}, bridge.WithPluginLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	if err := n.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { ps.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the WASM plugin side still runs after the server stopped")
	}
	if out := logs.String(); strings.Contains(out, "loading it again") || strings.Contains(out, "WARN") {
		t.Errorf("the plugin side warned after the server stopped:\n%s", out)
	}
}

// TestWasmTimeoutStopsAndEvicts: a module looping in CreateContainer is
// stopped at the request timeout: the creation returns with the other
// plugin's adjustment, the looping plugin is evicted for the timeout and
// loaded again.
func TestWasmTimeoutStopsAndEvicts(t *testing.T) {
	fm := &evictions{}
	n := wasmServer(t, server.WithMetrics(fm))
	d := newWasmDirs(t, map[string]string{"20-wasmbad": badPkg, "30-wasm-adjuster": adjusterPkg},
		map[string]string{"20-wasmbad": `{"mode": "loop"}`, "30-wasm-adjuster": `{"env": {"TEAM": "blue"}}`})
	launchWasm(t, n, d, []string{"20-wasmbad", "30-wasm-adjuster"})
	first := waitPlugin(t, n.srv, "20-wasmbad", func(*nriv1beta1.PluginInfo) bool { return true }).GetInstanceId()
	done := make(chan error, 1)
	var rsp *nriv1beta1.AdaptationServiceCreateContainerResponse
	go func() {
		var err error
		rsp, err = createIn(t, n.srv, 1)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait()):
		t.Fatal("the creation never returned: the looping module was not stopped")
	}
	if envOf(rsp)["WASM_ADJUSTER"] != "c1" {
		t.Fatalf("the healthy plugin's adjustment is missing: %v", rsp.GetAdjust())
	}
	waitPlugin(t, n.srv, "20-wasmbad", func(p *nriv1beta1.PluginInfo) bool {
		return p.GetInstanceId() != first && p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY
	})
	if got := fm.get("20-wasmbad"); got != "timeout" {
		t.Fatalf("eviction reasons %q, want timeout", got)
	}
}

// evictions is a server.Metrics that records evictions.
type evictions struct {
	mu  sync.Mutex
	got map[string]string
}

func (e *evictions) Evicted(plugin, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.got == nil {
		e.got = map[string]string{}
	}
	e.got[plugin] += reason
}

func (e *evictions) Oversize(string, nriv1beta1.Event) {}
func (e *evictions) PluginCall(string, nriv1beta1.Event, nriv1beta1.CallOutcome, time.Duration) {
}
func (e *evictions) Synchronized(string, int, int, time.Duration)                {}
func (e *evictions) CutWait(string, time.Duration)                               {}
func (e *evictions) Plugins(int)                                                 {}
func (e *evictions) FailedOpen(string, nriv1beta1.Event, nriv1beta1.CallOutcome) {}
func (e *evictions) Deprecation(string, string)                                  {}

func (e *evictions) get(plugin string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.got[plugin]
}

// TestWasmPolicyGrant: an operator's [[policy]] entry for a WASM plugin's
// launch slot replaces its default grants: events it is not granted refuse
// its registration, and it registers once it asks only for granted ones.
func TestWasmPolicyGrant(t *testing.T) {
	cfg, err := config.Parse([]byte(`
[[policy]]
identity = "launch:30-wasm-adjuster"
plugins = ["wasm-adjuster"]
events = ["create_container"]
adjust = true
`), "test", config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := cfg.CompilePolicy()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		config string
		ok     bool
	}{
		{`{"env": {"TEAM": "blue"}}`, false}, // the default subscription: seven events
		{`{"env": {"TEAM": "blue"}, "events": ["CreateContainer"]}`, true},
	} {
		n := wasmServer(t, server.WithAuthorizer(pol))
		d := newWasmDirs(t, map[string]string{"30-wasm-adjuster": adjusterPkg}, map[string]string{"30-wasm-adjuster": tc.config})
		launchWasm(t, n, d, nil)
		registered := false
		for _, p := range n.srv.Plugins() {
			registered = registered || p.GetPlugin().GetName() == "wasm-adjuster"
		}
		if registered != tc.ok {
			t.Errorf("config %s: registered %v, want %v", tc.config, registered, tc.ok)
		}
		if tc.ok {
			rsp, err := createIn(t, n.srv, 1)
			if err != nil || envOf(rsp)["TEAM"] != "blue" {
				t.Errorf("granted: %v %v", rsp, err)
			}
		}
	}
}
