package server_test

import (
	"context"
	"fmt"
	"os"
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
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/supervisor"
)

// TestMain doubles as a pre-launched plugin: started by the server's
// launcher with its environment, the test binary registers as a plugin that
// echoes its configuration in an annotation.
func TestMain(m *testing.M) {
	if os.Getenv(server.EnvPluginEndpoint) != "" {
		os.Exit(runLaunchedPlugin())
	}
	os.Exit(m.Run())
}

func runLaunchedPlugin() int {
	var config string
	p := &testplugin.Plugin{
		Name:     os.Getenv(server.EnvPluginName),
		Index:    os.Getenv(server.EnvPluginIndex),
		Endpoint: os.Getenv(server.EnvPluginEndpoint),
		Events:   nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER),
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
	first := waitPlugin(t, h, "", nri.AllEvents)
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
	second := waitPlugin(t, h, first.GetInstanceId(), nri.AllEvents)
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
func waitPlugin(t *testing.T, h *harness, not string, _ int32) *nriv1beta1.PluginInfo {
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
