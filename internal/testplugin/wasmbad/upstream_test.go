//go:build !wasip1

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"

	"github.com/nri-grpc/nri-grpc/internal/wasmbuild"
)

// modules builds the WASM plugin once for this test binary.
var modules *wasmbuild.Cache

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmbad-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	modules = wasmbuild.NewCache(dir)
	// Upstream's request timeout (2 s) bounds Configure and every event of
	// a WASM plugin; no test here is about it, and on a loaded machine a
	// call into a freshly loaded module can take longer.
	adaptation.SetPluginRequestTimeout(time.Minute)
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// startUpstream installs the built plugin as 50-wasmbad with the
// configuration cfg and starts upstream NRI's adaptation on it.
func startUpstream(t *testing.T, cfg string) *adaptation.Adaptation {
	t.Helper()
	module, err := os.ReadFile(modules.Path(t, "internal/testplugin/wasmbad"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pluginDir, confDir := filepath.Join(dir, "plugins"), filepath.Join(dir, "conf")
	for _, d := range []string{pluginDir, confDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Upstream launches only executable files of the plugin directory.
	if err := os.WriteFile(filepath.Join(pluginDir, "50-wasmbad"), module, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "50-wasmbad.conf"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := adaptation.New("wasmbad-test", "v0.0.1",
		func(ctx context.Context, cb adaptation.SyncCB) error { _, err := cb(ctx, nil, nil); return err },
		func(context.Context, []*adaptation.ContainerUpdate) ([]*adaptation.ContainerUpdate, error) {
			return nil, nil
		},
		adaptation.WithPluginPath(pluginDir),
		adaptation.WithPluginConfigPath(confDir),
		adaptation.WithSocketPath(filepath.Join(dir, "nri.sock")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// upstreamCreate calls CreateContainer on r.
func upstreamCreate(t *testing.T, r *adaptation.Adaptation) (*adaptation.CreateContainerResponse, error) {
	return r.CreateContainer(t.Context(), &adaptation.CreateContainerRequest{
		Pod:       &adaptation.PodSandbox{Id: "pod", Name: "p", Namespace: "ns"},
		Container: &adaptation.Container{Id: "ctr", PodSandboxId: "pod", Name: "c"},
	})
}

func TestUpstreamOK(t *testing.T) {
	r := startUpstream(t, `{"mode": "ok"}`)
	rpl, err := upstreamCreate(t, r)
	if err != nil {
		t.Fatal(err)
	}
	env := rpl.GetAdjust().GetEnv()
	if len(env) != 1 || env[0].GetKey() != "WASMBAD" || env[0].GetValue() != "ok" {
		t.Errorf("env adjustment %v, want WASMBAD=ok", env)
	}
}

func TestUpstreamCrashFailsCreation(t *testing.T) {
	r := startUpstream(t, `{"mode": "crash"}`)
	rpl, err := upstreamCreate(t, r)
	if err == nil {
		t.Fatalf("CreateContainer with a crashing plugin succeeded: %v", rpl)
	}
	t.Logf("upstream's error: %v", err)
}
