package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/supervisor"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/server"
)

// TestMain doubles as a pre-launched plugin: started by the server's
// launcher with its environment, the test binary registers as a plugin that
// echoes its configuration in an annotation.
func TestMain(m *testing.M) {
	if os.Getenv(server.EnvPluginEndpoint) != "" {
		os.Exit(runLaunchedPlugin())
	}
	if path := os.Getenv(listenAsEnv); path != "" {
		os.Exit(listenAndWait(path))
	}
	os.Exit(m.Run())
}

func runLaunchedPlugin() int {
	var config string
	p := &testplugin.Plugin{
		Name:     os.Getenv(server.EnvPluginName),
		Index:    os.Getenv(server.EnvPluginIndex),
		Endpoint: os.Getenv(server.EnvPluginEndpoint),
		Events:   server.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER),
		Handle: func(_ context.Context, method string, req proto.Message) error {
			if method == "Configure" {
				config = req.(*nriv1beta1.ConfigureRequest).GetConfig()
			}
			return nil
		},
		OnCreateContainer: func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Annotations: map[string]string{"launched-config": config, "launched-pid": strconv.Itoa(os.Getpid())}}}, nil
		},
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	sock := strings.TrimPrefix(os.Getenv(server.EnvServerAddress), "unix://")
	if _, err := p.Start(ctx, sock, ""); err != nil {
		fmt.Fprintln(os.Stderr, "register:", err)
		return 1
	}
	select {
	case <-ctx.Done():
	case err := <-p.SessionEnded():
		fmt.Fprintln(os.Stderr, "session ended:", err)
	}
	p.Stop()
	return 0
}

func TestPreLaunchedPluginsRegisterWithConfigAndRestart(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(dir, "10-launched")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "not-a-plugin"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := t.TempDir()
	if err := os.WriteFile(filepath.Join(conf, "launched.conf"), []byte("answer: 42"), 0o644); err != nil {
		t.Fatal(err)
	}
	sup := supervisor.New(supervisor.WithLogger(testLogger(t)), supervisor.WithInitialBackoff(10*time.Millisecond))
	t.Cleanup(func() { _ = sup.Stop(context.Background()) })
	err = h.srv.Launch(h.ctx(), sup, server.LaunchConfig{PluginDir: dir, ConfigDir: conf, ServerAddress: "unix://" + h.sock})
	if err == nil || !strings.Contains(err.Error(), "not-a-plugin") {
		t.Fatalf("Launch should report the badly named file: %v", err)
	}
	first := waitPlugin(t, h, "", server.AllEvents)
	if first.GetKind() != nriv1beta1.PluginKind_PLUGIN_KIND_LAUNCHED || first.GetIdentity() != "launch:10-launched" {
		t.Fatalf("launched plugin: kind %v identity %q", first.GetKind(), first.GetIdentity())
	}
	rsp, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := rsp.GetAdjust().GetAnnotations()["launched-config"]; got != "answer: 42" {
		t.Fatalf("the plugin got config %q", got)
	}
	pid, _ := strconv.Atoi(rsp.GetAdjust().GetAnnotations()["launched-pid"])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second := waitPlugin(t, h, first.GetInstanceId(), server.AllEvents)
	if second.GetInstanceId() == first.GetInstanceId() {
		t.Fatal("no new instance after the crash")
	}
	procs := sup.Procs()
	if len(procs) != 1 || procs[0].Status().Restarts < 1 {
		t.Fatalf("supervisor: %d procs, status %+v", len(procs), procs[0].Status())
	}
}

// waitPlugin polls the registry until a ready plugin other than instance
// `not` is registered.
func waitPlugin(t *testing.T, h *harness, not string, _ uint32) *nriv1beta1.PluginInfo {
	t.Helper()
	deadline := time.Now().Add(wait())
	for time.Now().Before(deadline) {
		for _, p := range h.srv.Plugins() {
			if p.GetInstanceId() != not && p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no ready plugin (other than %q) within %v: %v", not, wait(), h.srv.Plugins())
	return nil
}

// listenAsEnv makes the test binary listen on a unix socket and wait (run
// as another uid by TestEndpointOfAnotherUIDIsRefused).
const listenAsEnv = "NRI_TEST_LISTEN_AS"

func listenAndWait(path string) int {
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := os.Stdout.WriteString("listening\n"); err != nil {
		return 1
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return 0
		}
		c.Close()
	}
}

// TestEndpointOfAnotherUIDIsRefused: a socket file of another uid than the
// registrant's is refused before nrid connects to it, and a socket file of
// the registrant's on which another uid listens after connecting (the
// peer's SO_PEERCRED); the registrant gets the same refusal for both (the
// uniform one of an endpoint nrid could not connect to), and the log tells
// which.
func TestEndpointOfAnotherUIDIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a listener as another uid")
	}
	logOpt, logs := captureLog(t)
	h := newHarness(t, logOpt)
	if err := os.Chmod(h.pluginDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(h.pluginDir), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(h.pluginDir, "foreign.sock")
	// The go build directory is private: copy the test binary where the
	// other uid can run it.
	exe := filepath.Join(filepath.Dir(h.pluginDir), "listener")
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), listenAsEnv+"="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "listening\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	// The socket file is uid 65534's.
	_, err = registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10", Endpoint: "unix://" + sock})
	owner := unreachable(t, "a socket file of uid 65534", err)
	if len(logs.grep("plugin=10-x", "foreign.sock: is owned by another uid: uid 65534, want uid 0")) == 0 {
		t.Error("the log does not name the socket file's owner")
	}
	// The file is the registrant's now, but uid 65534 still listens on it.
	if err := os.Chown(sock, 0, 0); err != nil {
		t.Fatal(err)
	}
	_, err = registerRaw(h, &nriv1beta1.RegisterPluginRequest{PluginName: "x", PluginIdx: "10", Endpoint: "unix://" + sock})
	if peer := unreachable(t, "a socket served by uid 65534", err); peer != owner {
		t.Errorf("the refusals differ: %v", err)
	}
	if len(logs.grep("plugin=10-x", "foreign.sock is served by uid 65534", "the registrant is uid 0")) == 0 {
		t.Error("the log does not name the listening process's uid")
	}
}
