//go:build !wasip1

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
)

// module is the plugin built as WebAssembly once for this test binary, the
// way its README says: this package, GOOS=wasip1 GOARCH=wasm,
// -buildmode=c-shared.
var module string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasm-adjuster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	module = filepath.Join(dir, "30-wasm-adjuster.wasm")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-o", module, ".")
	// GOFLAGS may hold flags of the test's own build (-race) that wasip1
	// has not.
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the WASM plugin: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	// Upstream's request timeout (2 s) bounds Configure and every event of
	// a WASM plugin; no test here is about it, and on a loaded machine a
	// call into a freshly loaded module can take longer.
	adaptation.SetPluginRequestTimeout(time.Minute)
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// startUpstream installs the built plugin as 30-wasm-adjuster with the
// configuration cfg in a temporary plugin and configuration directory, and
// starts upstream NRI's adaptation on them.
func startUpstream(t *testing.T, cfg string) *adaptation.Adaptation {
	t.Helper()
	code, err := os.ReadFile(module)
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
	if err := os.WriteFile(filepath.Join(pluginDir, "30-wasm-adjuster"), code, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(confDir, "30-wasm-adjuster.conf"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	syncFn := func(ctx context.Context, cb adaptation.SyncCB) error {
		_, err := cb(ctx, nil, nil)
		return err
	}
	updateFn := func(context.Context, []*adaptation.ContainerUpdate) ([]*adaptation.ContainerUpdate, error) {
		return nil, nil
	}
	r, err := adaptation.New("wasm-test-runtime", "v0.0.1", syncFn, updateFn,
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

// createRequest is a CreateContainer request for container app of pod
// shop/web with the given pod annotations.
func createRequest(annotations map[string]string) *adaptation.CreateContainerRequest {
	return &adaptation.CreateContainerRequest{
		Pod: &adaptation.PodSandbox{Id: "pod-id", Name: "web", Namespace: "shop", Uid: "pod-uid",
			Annotations: annotations},
		Container: &adaptation.Container{Id: "ctr-id", PodSandboxId: "pod-id", Name: "app",
			Env: []string{"PATH=/bin"}},
	}
}

func TestUpstreamCreateContainer(t *testing.T) {
	r := startUpstream(t, `{"env": {"ZONE": "b"}}`)
	rpl, err := r.CreateContainer(t.Context(), createRequest(map[string]string{nofileAnnotation: "1024:4096"}))
	if err != nil {
		t.Fatal(err)
	}
	adj := rpl.GetAdjust()
	env := map[string]string{}
	for _, kv := range adj.GetEnv() {
		env[kv.GetKey()] = kv.GetValue()
	}
	if env[envName] != "app" || env["ZONE"] != "b" {
		t.Errorf("env adjustment %v, want %s=app and ZONE=b", adj.GetEnv(), envName)
	}
	if got := adj.GetAnnotations()[podAnnotation]; got != "shop/web" {
		t.Errorf("annotations %v, want %s=shop/web", adj.GetAnnotations(), podAnnotation)
	}
	var nofile []string
	for _, rl := range adj.GetRlimits() {
		nofile = append(nofile, fmt.Sprintf("%s %d/%d", rl.GetType(), rl.GetSoft(), rl.GetHard()))
	}
	if len(nofile) != 1 || nofile[0] != "RLIMIT_NOFILE 1024/4096" {
		t.Errorf("rlimits %q, want RLIMIT_NOFILE 1024/4096", nofile)
	}
}

func TestUpstreamMalformedNofileFailsCreation(t *testing.T) {
	r := startUpstream(t, "")
	_, err := r.CreateContainer(t.Context(), createRequest(map[string]string{nofileAnnotation: "lots"}))
	if err == nil || !strings.Contains(err.Error(), nofileAnnotation) {
		t.Fatalf("CreateContainer with a malformed annotation: %v, want an error naming %s", err, nofileAnnotation)
	}
}
