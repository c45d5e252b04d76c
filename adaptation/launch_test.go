package adaptation_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/nri/pkg/api"

	"github.com/nri-grpc/nri-grpc/adaptation"
)

// buildOldPlugin builds test/classic-old, a plugin built against NRI
// v0.11.0 (before the dedicated lifecycle RPCs: it only has StateChange),
// as the executable path.
func buildOldPlugin(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", path, ".")
	cmd.Dir = filepath.Join("..", "test", "classic-old")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the v0.11.0 plugin: %v\n%s", err, out)
	}
}

// deprecations records what the runtime's DeprecationRecorder is told.
type deprecations struct {
	mu  sync.Mutex
	got []string
}

func (d *deprecations) PluginWarning(_ context.Context, dep adaptation.Deprecation, plugin, details string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, plugin+": "+dep.String()+": "+details)
}

// TestPreLaunchedOldPluginWithDeprecations: a pre-launched plugin built
// against NRI v0.11.0 is registered when Start returns, adjusts containers,
// is reached through StateChange for the events it has no RPC for, and the
// runtime's DeprecationRecorder hears of each such event once, as from
// upstream.
func TestPreLaunchedOldPluginWithDeprecations(t *testing.T) {
	dir := tempDir(t)
	pluginDir, confDir := filepath.Join(dir, "plugins"), filepath.Join(dir, "conf")
	for _, d := range []string{pluginDir, confDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	buildOldPlugin(t, filepath.Join(pluginDir, "10-old"))
	events := filepath.Join(dir, "events")
	if err := os.WriteFile(filepath.Join(confDir, "10-old.conf"), []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &deprecations{}
	e := start(t, dropIn, setup{pluginDir: pluginDir, confDir: confDir,
		dropInOpt: []adaptation.Option{adaptation.WithDeprecationRecorder(rec)}}, nil)
	// Start returned: the pre-launched plugin is in, no wait needed.
	if !ready(e.nriAPI.(*adaptation.Adaptation), "10-old") {
		t.Fatalf("Start returned before the pre-launched plugin registered: %v", e.nriAPI.(*adaptation.Adaptation).Server().Plugins())
	}
	ctx := context.Background()
	p := pod("1")
	c := ctr(p, "1")
	if err := e.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: p}); err != nil {
		t.Fatal(err)
	}
	rsp, err := e.CreateContainer(ctx, &api.CreateContainerRequest{Pod: p, Container: c})
	if err != nil {
		t.Fatal(err)
	}
	if rsp.GetAdjust().GetAnnotations()["classic-old"] != "v0.11.0" {
		t.Fatalf("the old plugin did not adjust: %v", rsp.GetAdjust())
	}
	for range 2 { // twice: told once
		if err := e.StartContainer(ctx, &api.StartContainerRequest{Pod: p, Container: c}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		seen = append(seen, strings.Fields(l)[0])
	}
	if want := []string{"Configure", "Synchronize", "RunPodSandbox", "CreateContainer", "StartContainer", "StartContainer"}; !slices.Equal(seen, want) {
		t.Fatalf("the old plugin saw %v, want %v", seen, want)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := []string{
		"10-old: deprecated StateChange: does not implement a dedicated RunPodSandbox RPC call",
		"10-old: deprecated StateChange: does not implement a dedicated StartContainer RPC call",
	}
	if !slices.Equal(rec.got, want) {
		t.Fatalf("deprecations %q, want %q", rec.got, want)
	}
}
