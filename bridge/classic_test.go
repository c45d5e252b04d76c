package bridge_test

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/proto"

	"github.com/nri-grpc/nri-grpc/bridge"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/supervisor"
)

// buildOldPlugin builds test/classic-old, a plugin against NRI v0.11.0
// (before the dedicated lifecycle RPCs), as plugin file name in dir.
func buildOldPlugin(t *testing.T, dir, name string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), ".")
	cmd.Dir = filepath.Join("..", "test", "classic-old")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the v0.11.0 plugin: %v\n%s", err, out)
	}
}

// waitFor polls cond (a state query, not a timing assertion) until it
// holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait())
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOldClassicPluginLaunchedAndReachedThroughStateChange launches a
// v0.11.0 plugin the classic way (socketpair on fd 3, NRI_* environment)
// and drives a lifecycle through the server: the notifications fall back to
// StateChange, with deprecations recorded.
func TestOldClassicPluginLaunchedAndReachedThroughStateChange(t *testing.T) {
	n := startNrid(t)
	pluginDir, confDir := tempDir(t), tempDir(t)
	buildOldPlugin(t, pluginDir, "10-old")
	out := filepath.Join(tempDir(t), "events")
	if err := os.WriteFile(filepath.Join(confDir, "10-old.conf"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, err := bridge.NewPluginSide(n.srv, bridge.WithPluginLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	sup := supervisor.New(supervisor.WithLogger(testLogger(t)))
	t.Cleanup(func() { _ = sup.Stop(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	if err := ps.Launch(ctx, sup, pluginDir, confDir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the old plugin to register", func() bool { return len(n.srv.Plugins()) == 1 })
	info := n.srv.Plugins()[0]
	if info.GetIdentity() != "launch:10-old" || info.GetKind() != nriv1beta1.PluginKind_PLUGIN_KIND_CLASSIC {
		t.Fatalf("plugin info %v", info)
	}
	pod, ctr := fixture.Pod(1), fixture.Container(1, 0)
	if err := n.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	rsp, err := n.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatal(err)
	}
	if rsp.GetAdjust().GetAnnotations()["classic-old"] != "v0.11.0" {
		t.Fatalf("adjust %v", rsp.GetAdjust())
	}
	if err := n.srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: pod, Container: ctr}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.srv.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: ctr}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		got = append(got, strings.Fields(l)[0])
	}
	want := []string{"Configure", "Synchronize", "RunPodSandbox", "CreateContainer", "StartContainer", "RemoveContainer"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the old plugin saw %v, want %v", got, want)
	}
	deps := n.srv.Deprecations()
	kinds := map[nriv1beta1.Event]bool{}
	for _, d := range deps {
		if d.GetKind() != "StateChange" || d.GetPlugin().GetName() != "old" {
			t.Errorf("deprecation %v", d)
		}
		kinds[d.GetEvent()] = true
	}
	for _, e := range []nriv1beta1.Event{nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_START_CONTAINER, nriv1beta1.Event_EVENT_REMOVE_CONTAINER} {
		if !kinds[e] {
			t.Errorf("no StateChange deprecation recorded for %v: %v", e, deps)
		}
	}
}

// slowPlugin answers CreateContainer after d with an annotation.
func slowPlugin(d time.Duration, key string, required bool) func(*testplugin.Plugin) {
	return func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)
		p.Timeouts = &nriv1beta1.Timeouts{}
		if required {
			p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true, KeepConnected: true}
		}
		p.OnCreateContainer = func(ctx context.Context, _ *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			select { // slow but healthy: it answers unless the call is cut
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{key: "1"}}}, nil
		}
	}
}

// TestBudgetHoldsUnderRuntimeTimeout: three slow but healthy plugins behind
// the bridge under the classic runtime's 2 s timeout. The bridge answers in
// time (the third plugin is skipped under ignore, or fails the creation
// under fail) and the runtime never drops it.
func TestBudgetHoldsUnderRuntimeTimeout(t *testing.T) {
	for _, required := range []bool{false, true} {
		t.Run(map[bool]string{false: "ignore", true: "fail"}[required], func(t *testing.T) {
			n := startNrid(t)
			n.grpcPlugin(t, "10", "a", slowPlugin(600*time.Millisecond, "a", false))
			n.grpcPlugin(t, "20", "b", slowPlugin(600*time.Millisecond, "b", false))
			n.grpcPlugin(t, "30", "c", slowPlugin(600*time.Millisecond, "c", required))
			sock := filepath.Join(tempDir(t), "nri.sock")
			rt := startClassicRuntime(t, sock, nil, nil)
			attachBridge(t, n, sock)
			rt.settled()
			ctx := context.Background()
			rsp, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: alphaCtr(1, 0)})
			if required {
				if err == nil || !strings.Contains(err.Error(), "30-c") {
					t.Fatalf("a required plugin beyond the budget must fail the creation naming it: %v", err)
				}
			} else {
				if err != nil {
					t.Fatalf("CreateContainer through the bridge: %v", err)
				}
				a := rsp.GetAdjust().GetAnnotations()
				if a["a"] != "1" || a["b"] != "1" || a["c"] != "" {
					t.Fatalf("annotations %v: want a and b, c skipped", a)
				}
			}
			// The runtime kept the bridge: the next event still arrives.
			n.log.Reset()
			if err := rt.a.RunPodSandbox(ctx, &v1alpha1.RunPodSandboxRequest{Pod: alphaPod(2)}); err != nil {
				t.Fatal(err)
			}
			if got := n.log.Strings("RunPodSandbox"); len(got) != 3 {
				t.Fatalf("after the slow event the plugins got %v: the runtime dropped the bridge", got)
			}
		})
	}
}

// proxy forwards unix connections to a backend socket, and can cut them
// all: what a runtime crash looks like to the bridge.
type proxy struct {
	lis     net.Listener
	backend string
	mu      sync.Mutex
	conns   []net.Conn
}

func startProxy(t *testing.T, backend string) (*proxy, string) {
	sock := filepath.Join(tempDir(t), "proxy.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{lis: lis, backend: backend}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("unix", p.backend)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(b, c); b.Close() }()
			go func() { _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
	t.Cleanup(func() { lis.Close(); p.cut() })
	return p, sock
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestRuntimeRestartReattachesAndResyncs: the classic runtime restarts
// under a running bridge: it reattaches, the server resyncs its plugins, and
// the next pod's events flow.
func TestRuntimeRestartReattachesAndResyncs(t *testing.T) {
	n := startNrid(t)
	n.grpcPlugin(t, "10", "resyncer", func(p *testplugin.Plugin) { p.Capabilities = &nriv1beta1.Capabilities{Resync: true} })
	n.grpcPlugin(t, "20", "plain", nil)
	sock := filepath.Join(tempDir(t), "nri.sock")
	rt := startClassicRuntime(t, sock, []*v1alpha1.PodSandbox{alphaPod(1)}, []*v1alpha1.Container{alphaCtr(1, 0)})
	px, psock := startProxy(t, sock)
	rs := attachBridge(t, n, psock)
	rt.settled()

	// The runtime "crashes" and comes back with pod 1 gone and pod 2 there.
	rt.a.Stop()
	n.log.Reset()
	px.cut()
	rt2 := startClassicRuntime(t, sock, []*v1alpha1.PodSandbox{alphaPod(2)}, []*v1alpha1.Container{alphaCtr(2, 0)})
	select {
	case <-rs.Synchronized():
	case <-time.After(wait()):
		t.Fatal("the bridge did not reattach")
	}
	rt2.settled()
	ctx := context.Background()
	if err := rt2.a.RunPodSandbox(ctx, &v1alpha1.RunPodSandboxRequest{Pod: alphaPod(3)}); err != nil {
		t.Fatal(err)
	}
	if err := n.log.Wait(ctx2(t), func(c []testplugin.Call) bool {
		return len(filter(c, "RunPodSandbox")) == 2
	}); err != nil {
		t.Fatal(err)
	}
	var resync *nriv1beta1.SynchronizeRequest
	var plainSaw []string
	for _, c := range n.log.Calls() {
		if c.Plugin == "10-resyncer" && c.Method == "Synchronize" {
			resync = c.Req.(*nriv1beta1.SynchronizeRequest)
		}
		if c.Plugin == "20-plain" {
			plainSaw = append(plainSaw, c.Method)
		}
	}
	// Epoch 1 at registration, 2 when the bridge first attached, 3 now.
	if resync == nil || resync.GetEpoch() != 3 || len(resync.GetPods()) != 1 || !proto.Equal(resync.GetPods()[0], betaPod(2)) {
		t.Fatalf("resync: %v", resync)
	}
	want := "StopContainer RemoveContainer StopPodSandbox RemovePodSandbox RunPodSandbox"
	if strings.Join(plainSaw, " ") != want {
		t.Fatalf("plugin without resync saw %v, want %s", plainSaw, want)
	}
}

func betaPod(n int) *nriv1beta1.PodSandbox { return fixture.Pod(n) }

func ctx2(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	t.Cleanup(cancel)
	return ctx
}

func filter(calls []testplugin.Call, method string) []testplugin.Call {
	var out []testplugin.Call
	for _, c := range calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}
