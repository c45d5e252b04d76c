package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// launchedMain runs when nrid launched the test binary from [launch]
// plugin_dir: it registers on the endpoint of its launch slot, and its
// CreateContainer returns an annotation and an OCI hook.
func launchedMain() int {
	p := &testplugin.Plugin{
		Name:     os.Getenv(server.EnvPluginName),
		Index:    os.Getenv(server.EnvPluginIndex),
		Endpoint: os.Getenv(server.EnvPluginEndpoint),
		Events:   nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER),
		OnCreateContainer: func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Annotations: map[string]string{"launched": "yes"},
				Hooks:       &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/usr/bin/true"}}},
			}}, nil
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

// TestLaunchIdentity: a plugin nrid launched registers as
// "launch:NN-name". Without a [[policy]] entry naming it, it has every
// plugin grant for its slot; an entry naming it replaces that.
func TestLaunchIdentity(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		policy string
		hooks  bool
	}{
		{"default grants", "", true},
		{"policy names it", "[[policy]]\nidentity = \"launch:10-launched\"\nplugins = [\"10-launched\"]\nevents = [\"all\"]\nadjust = true\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := tempDir(t)
			launch := filepath.Join(dir, "launch")
			if err := os.Mkdir(launch, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(exe, filepath.Join(launch, "10-launched")); err != nil {
				t.Fatal(err)
			}
			n := startNrid(t, "[launch]\nplugin_dir = \""+launch+"\"\n"+c.policy)
			root := n.conn(t)
			// Launch starts the process before nrid logs "serving"; wait for
			// its registration.
			n.logs.wait(t, reLog(`msg="plugin registered" plugin=10-launched .*identity=launch:10-launched`), n.done)
			plugins, err := listPlugins(t, root)
			must(t, err == nil && len(plugins) == 1, "plugins %v %v", plugins, err)
			must(t, plugins[0].GetKind() == nriv1beta1.PluginKind_PLUGIN_KIND_LAUNCHED && plugins[0].GetIdentity() == "launch:10-launched",
				"launched plugin %v", plugins[0])
			rsp, err := createContainer(t, root, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := rsp.GetAdjust().GetHooks() != nil; got != c.hooks {
				t.Errorf("hooks merged: %v, want %v", got, c.hooks)
			}
			if !c.hooks {
				n.logs.wait(t, reLog(`audit: plugin response refused" plugin=10-launched identity=launch:10-launched .*lacks the oci_hooks grant`), nil)
			}
		})
	}
}
