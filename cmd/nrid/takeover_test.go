package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/plugin"
)

// envInjector is a Go SDK plugin that sets TAKEOVER=yes.
type envInjector struct{}

func (envInjector) CreateContainer(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return plugin.NewAdjustment().AddEnv("TAKEOVER", "yes").Response(), nil
}

// runEnvInjector runs envInjector as 10-env on n (and on the nrids after
// it, on the same socket: the SDK registers again) until the test ends.
func runEnvInjector(t *testing.T, n *nrid) {
	t.Helper()
	p, err := plugin.New(envInjector{}, plugin.WithName("env"), plugin.WithIndex("10"),
		plugin.WithServerAddress("unix://"+n.sock), plugin.WithSocketDir(n.plugins),
		plugin.WithLogger(testplugin.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	pctx, stopPlugin := context.WithCancel(context.Background())
	pdone := make(chan error, 1)
	go func() { pdone <- p.Run(pctx) }()
	t.Cleanup(func() { stopPlugin(); t.Logf("plugin: %v", <-pdone) })
}

// waitServing waits until n reports SERVING.
func waitServing(t *testing.T, n *nrid) {
	t.Helper()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel() // an open Watch would delay nrid's graceful stop
	watch, err := healthpb.NewHealthClient(n.conn(t)).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := watch.Recv()
		if err != nil {
			t.Fatalf("waiting for SERVING: %v", err)
		}
		if st.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
	}
}

// TestTakeoverKeepsTheRuntimeConnection: a second nrid started with
// --takeover in the same directory takes over the first one's sockets and
// its connection to a classic runtime (upstream pkg/adaptation) while the
// runtime creates containers without pause. The runtime never sees the
// bridge go (the new nrid is never registered or configured by it), every
// creation succeeds and every one has the required Go SDK plugin's
// adjustment — events wait for the plugin's return to the new nrid —, the
// old nrid returns cleanly and leaves the sockets to the new one.
func TestTakeoverKeepsTheRuntimeConnection(t *testing.T) {
	dir := tempDir(t)
	rtSock := filepath.Join(dir, "nri.sock")
	a := startClassicRuntime(t, dir, rtSock)
	state := filepath.Join(dir, "state")
	cfg := fmt.Sprintf("[server]\nstate_dir = %q\nrestart_grace = \"10m\"\n[runtime]\nrequired = true\n[bridge]\nruntime_socket = %q\n"+
		"[[plugin]]\nname = \"10-env\"\nrequired = true\n", state, rtSock)

	first := startNridAt(t, dir, cfg)
	waitServing(t, first)
	runEnvInjector(t, first)
	first.logs.wait(t, reLog(`restart gate: recorded the registered plugins" .*plugins=\[10-env\]`), first.done)
	a.BlockPluginSync().Unblock()

	ctx := testCtx(t)
	pod := &v1alpha1.PodSandbox{Id: "pod0", Name: "pod0", Namespace: "default"}
	type result struct {
		env string
		err error
	}
	const total = 60
	results := make(chan result, total)
	started := make(chan struct{})
	go func() {
		defer close(results)
		for i := range total {
			if i == 5 {
				close(started)
			}
			rsp, err := a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: pod,
				Container: &v1alpha1.Container{Id: fmt.Sprint("ctr", i), PodSandboxId: "pod0", Name: fmt.Sprint("ctr", i)}})
			var env []string
			for _, kv := range rsp.GetAdjust().GetEnv() {
				env = append(env, kv.GetKey()+"="+kv.GetValue())
			}
			results <- result{strings.Join(env, ","), err}
		}
	}()
	<-started
	second := startNridAt(t, dir, cfg, "--takeover")
	first.waitTakenOver(t)
	i, unadjusted := 0, 0
	for r := range results {
		if r.err != nil {
			t.Fatalf("creation %d failed across the takeover: %v", i, r.err)
		}
		if r.env != "TAKEOVER=yes" {
			unadjusted++
			t.Errorf("creation %d: env %q, want the plugin's TAKEOVER=yes", i, r.env)
		}
		i++
	}
	t.Logf("%d creations across the takeover, %d without the plugin's adjustment", i, unadjusted)
	for _, bad := range []string{"classic runtime connection lost", "attached to classic runtime"} {
		if strings.Contains(second.logs.String(), bad) {
			t.Errorf("the new nrid's log says %q: the runtime connection was not continued; log:\n%s", bad, second.logs.String())
		}
		if strings.Contains(first.logs.String(), bad+";") {
			t.Errorf("the old nrid's log says %q: the runtime connection was not continued; log:\n%s", bad, first.logs.String())
		}
	}
	if !strings.Contains(second.logs.String(), "continuing the classic runtime connection handed over") {
		t.Errorf("the new nrid did not continue the runtime connection")
	}
	if _, err := os.Lstat(second.sock); err != nil {
		t.Errorf("the socket is gone after the old nrid stopped: %v", err)
	}
	// The next upgrade works the same way: the new nrid serves takeovers.
	second.logs.wait(t, reLog(`restart gate: recorded the registered plugins" .*plugins=\[10-env\]`), second.done)
	third := startNridAt(t, dir, cfg, "--takeover")
	if err := <-second.done; err != nil {
		t.Fatalf("the second nrid returned %v", err)
	}
	second.stopped = true
	rsp, err := a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: pod,
		Container: &v1alpha1.Container{Id: "last", PodSandboxId: "pod0", Name: "last"}})
	if err != nil || len(rsp.GetAdjust().GetEnv()) != 1 {
		t.Fatalf("after the second takeover: %v %v; log:\n%s", rsp.GetAdjust().GetEnv(), err, third.logs.String())
	}
}

// TestTakeoverForgetsSelfConnectedClassicPlugins (issue 28, item 5): a
// classic plugin (upstream pkg/stub) connected to nrid's classic plugin
// socket by itself, beside a required Go SDK plugin. After a takeover it
// cannot come back (pkg/stub ends with its connection): the new nrid holds
// the runtime's events for the SDK plugin only, however long restart_grace
// (10 minutes: waiting for the classic plugin would hang the test), and
// its roster forgets the classic plugin, so that the next restart does not
// wait for it either.
func TestTakeoverForgetsSelfConnectedClassicPlugins(t *testing.T) {
	dir := tempDir(t)
	rtSock := filepath.Join(dir, "nri.sock")
	classicSock := filepath.Join(dir, "classic.sock")
	a := startClassicRuntime(t, dir, rtSock)
	state := filepath.Join(dir, "state")
	cfg := fmt.Sprintf("[server]\nstate_dir = %q\nrestart_grace = \"10m\"\n[runtime]\nrequired = true\n[bridge]\nruntime_socket = %q\nplugin_socket = %q\n"+
		"[[plugin]]\nname = \"10-env\"\nrequired = true\n", state, rtSock, classicSock)

	first := startNridAt(t, dir, cfg)
	waitServing(t, first)
	runEnvInjector(t, first)
	closed := make(chan struct{})
	st, err := stub.New(classicAnnotator{}, stub.WithPluginName("selfdial"), stub.WithPluginIdx("20"), stub.WithSocketPath(classicSock),
		stub.WithOnClose(func() { close(closed) }))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	first.logs.wait(t, reLog(`restart gate: recorded the registered plugins" .*plugins="\[10-env 20-selfdial\]"`), first.done)
	a.BlockPluginSync().Unblock()

	second := startNridAt(t, dir, cfg, "--takeover")
	first.waitTakenOver(t)
	select {
	case <-closed:
	case <-time.After(testTimeout()):
		t.Fatal("the classic plugin's connection did not end with the old nrid")
	}
	if _, err := os.Lstat(classicSock); err != nil {
		t.Errorf("the classic plugin socket is gone after the old nrid stopped: %v", err)
	}
	second.logs.wait(t, reLog(`restart gate: not waiting for these plugins[^\n]* plugins=\[20-selfdial\]`), second.done)
	second.logs.wait(t, reLog(`restart gate: waiting for the plugins registered before the restart" .*plugins=\[10-env\]`), second.done)
	second.logs.wait(t, reMsg("restart gate: every plugin is back"), second.done)
	second.logs.wait(t, reLog(`restart gate: recorded the registered plugins" .*plugins=\[10-env\]`), second.done)
	rsp, err := a.CreateContainer(testCtx(t), &v1alpha1.CreateContainerRequest{
		Pod:       &v1alpha1.PodSandbox{Id: "pod0", Name: "pod0", Namespace: "default"},
		Container: &v1alpha1.Container{Id: "ctr0", PodSandboxId: "pod0", Name: "ctr0"}})
	if err != nil || len(rsp.GetAdjust().GetEnv()) != 1 {
		t.Fatalf("after the takeover: %v %v", rsp.GetAdjust().GetEnv(), err)
	}

	// The next start (the roster survives nrid's own stop) waits for the
	// SDK plugin only.
	second.stop(t)
	third := startNridAt(t, dir, cfg)
	third.logs.wait(t, reLog(`restart gate: waiting for the plugins registered before the restart" .*plugins=\[10-env\]`), third.done)
	third.logs.wait(t, reMsg("restart gate: every plugin is back"), third.done)
	if strings.Contains(third.logs.String(), "20-selfdial") {
		t.Errorf("the next nrid still knows 20-selfdial:\n%s", third.logs.String())
	}
	waitServing(t, third) // attached: its stop does not cut the bridge's registration with the runtime
	third.stop(t)
	if _, err := os.Lstat(classicSock); err == nil {
		t.Errorf("nrid left its classic plugin socket %s behind", classicSock)
	}
}
