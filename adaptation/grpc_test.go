package adaptation_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/nri/pkg/api"

	"github.com/nri-grpc/nri-grpc/adaptation"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/plugin"
)

// grpcInjector is a gRPC plugin (the Go SDK) setting an env var.
type grpcInjector struct{}

func (grpcInjector) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	a := plugin.NewAdjustment()
	a.AddEnv("FROM_GRPC", req.GetContainer().GetId())
	return &nriv1beta1.CreateContainerResponse{Adjust: a.Proto()}, nil
}

// startGRPCPlugin runs a Go SDK plugin registering with the drop-in's gRPC
// socket (the configuration's server.socket) and waits until it is ready.
func startGRPCPlugin(t *testing.T, e *env, dir, name, idx string, impl any) {
	t.Helper()
	p, err := plugin.New(impl, plugin.WithName(name), plugin.WithIndex(idx),
		plugin.WithServerAddress("unix://"+filepath.Join(dir, "nri-grpc.sock")), plugin.WithSocketDir(filepath.Join(dir, "plugins.d")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(ctx, wait())
	defer wcancel()
	if _, err := p.WaitRegistered(wctx); err != nil {
		t.Fatalf("gRPC plugin %s-%s: %v", idx, name, err)
	}
	e.waitRegistered(t, idx+"-"+name)
}

// TestGRPCAndClassicPluginsInTheRuntime: a gRPC plugin on the drop-in's
// gRPC socket and a classic plugin on its classic socket both adjust the
// container the runtime creates, merged in index order, and both are in
// the server's plugin list with their kinds.
func TestGRPCAndClassicPluginsInTheRuntime(t *testing.T) {
	dir := tempDir(t)
	if err := os.Mkdir(filepath.Join(dir, "plugins.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, "")
	e := start(t, dropIn, setup{dropInOpt: []adaptation.Option{adaptation.WithConfigFile(cfg)}}, nil)
	stubPlugin(t, e, "alpha", "10", &injector{base: newBase(), tag: "alpha"})
	startGRPCPlugin(t, e, dir, "grpc", "20", grpcInjector{})

	p := pod("1")
	rsp, err := e.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: p, Container: ctr(p, "1")})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range rsp.GetAdjust().GetEnv() {
		env[kv.GetKey()] = kv.GetValue()
	}
	if env["FROM_GRPC"] != "ctr-1" || env["INJECTED_ALPHA"] != "alpha" {
		t.Fatalf("env %v: want both plugins' variables", env)
	}
	kinds := map[string]nriv1beta1.PluginKind{}
	for _, info := range e.nriAPI.(*adaptation.Adaptation).Server().Plugins() {
		kinds[info.GetPlugin().GetIndex()+"-"+info.GetPlugin().GetName()] = info.GetKind()
	}
	if kinds["10-alpha"] != nriv1beta1.PluginKind_PLUGIN_KIND_CLASSIC || kinds["20-grpc"] == nriv1beta1.PluginKind_PLUGIN_KIND_CLASSIC {
		t.Fatalf("plugin kinds %v", kinds)
	}
}

// TestConfigurationRefusesNridOnlySettings: [bridge] and the restart gate
// are nrid's; Start fails naming them.
func TestConfigurationRefusesNridOnlySettings(t *testing.T) {
	dir := tempDir(t)
	cfg := writeConfig(t, dir, "state_dir = "+quote(filepath.Join(dir, "state"))+"\n[bridge]\nplugin_socket = "+quote(filepath.Join(dir, "c.sock"))+"\n")
	rt := &runtime{}
	a, err := adaptation.New("rt", "1", rt.dropInSyncFn, adaptation.UpdateFn(rt.updateFn), adaptation.WithConfigFile(cfg),
		adaptation.WithSocketPath(filepath.Join(dir, "nri.sock")), adaptation.WithPluginPath(filepath.Join(dir, "none")))
	if err != nil {
		t.Fatal(err)
	}
	err = a.Start()
	if err == nil {
		a.Stop()
		t.Fatal("Start accepted nrid's settings")
	}
	for _, want := range []string{"[bridge]", "server.state_dir", cfg} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
