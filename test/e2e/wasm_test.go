//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nri-grpc/nri-grpc/internal/wasmbuild"
)

// wasmModules builds the suite's WASM plugins into its binaries, each once.
var wasmModules = sync.OnceValue(func() *wasmbuild.Cache { return wasmbuild.NewCache(suite.Bin) })

// WasmAdjuster returns the project's example WASM plugin, built from
// source (GOOS=wasip1 GOARCH=wasm -buildmode=c-shared) into the suite's
// binaries, executable as a pre-launched plugin must be.
func WasmAdjuster(tb testing.TB) string {
	tb.Helper()
	path := wasmModules().Path(tb, "examples/wasm-adjuster")
	if err := os.Chmod(path, 0o755); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestWasmSpecsIdentical: the project's example WASM plugin, the same .wasm
// file, pre-launched by stock containerd (upstream's pkg/adaptation loads
// it), by containerd built with the drop-in, and by nrid from its
// bridge.classic_plugin_dir beside stock containerd, gives a container the
// same full OCI spec (normalised as in specNormalised): its environment
// variables, annotation and RLIMIT_NOFILE, which the running process has.
// A pod annotation it rejects fails the creation on all three.
func TestWasmSpecsIdentical(t *testing.T) {
	mod := WasmAdjuster(t)
	const full, conf = "30-wasm-adjuster", `{"env": {"TEAM": "blue"}}`
	// nrid's plugin directory: the module and its configuration.
	nridDir := filepath.Join(suite.RunDir, "wasm-nrid")
	for _, d := range []string{filepath.Join(nridDir, "plugins"), filepath.Join(nridDir, "conf")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(nridDir, "plugins", full)
	_ = os.Remove(link)
	if err := os.Symlink(mod, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nridDir, "conf", full+".conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	prelaunch := func(e *Env) { e.PrelaunchPlugin(full, mod, conf) }
	sides := []struct {
		name string
		opts EnvOptions
	}{
		{"stock", EnvOptions{NoNrid: true, Prepare: prelaunch}},
		{"drop-in", EnvOptions{DropIn: true, Prepare: prelaunch}},
		{"nrid", EnvOptions{NridTOML: fmt.Sprintf("classic_plugin_dir = %q\nclassic_config_dir = %q\n",
			filepath.Join(nridDir, "plugins"), filepath.Join(nridDir, "conf"))}},
	}
	specs := make([]string, len(sides))
	for i, s := range sides {
		e := NewEnv(t, s.opts)
		if s.name == "nrid" {
			e.WaitPluginReady(full, nil)
			if k := e.Plugins()[full].GetKind().String(); k != "PLUGIN_KIND_WASM" {
				t.Errorf("nrid lists %s as %s", full, k)
			}
		}
		pod := e.RunPodAnnotated("p1", map[string]string{"wasm-adjuster.nri-grpc.io/nofile": "1111:2222"})
		id := e.Run(pod, "c1")
		in := e.Inspect(id)
		specs[i] = specNormalised(t, e, in, pod, id)
		env := e.ProcEnv(in.Pid)
		if env["WASM_ADJUSTER"] != "c1" || env["TEAM"] != "blue" {
			t.Errorf("%s: process env WASM_ADJUSTER=%q TEAM=%q, want c1 and blue", s.name, env["WASM_ADJUSTER"], env["TEAM"])
		}
		if got := in.Spec.Annotations["wasm-adjuster.nri-grpc.io/pod"]; !strings.HasSuffix(got, "/p1") {
			t.Errorf("%s: annotation wasm-adjuster.nri-grpc.io/pod = %q", s.name, got)
		}
		// The hard limit: the Go runtime of /sleeper raises its soft limit.
		if got := procLimit(in.Pid, "Max open files"); !strings.HasSuffix(got, " 2222") {
			t.Errorf("%s: RLIMIT_NOFILE soft/hard = %q, want the hard limit 2222", s.name, got)
		}
		bad := e.RunPodAnnotated("p2", map[string]string{"wasm-adjuster.nri-grpc.io/nofile": "lots"})
		if _, err := e.TryCreate(bad, "c2"); err == nil || !strings.Contains(err.Error(), "wasm-adjuster.nri-grpc.io/nofile") {
			t.Errorf("%s: a malformed nofile annotation: %v, want a failure naming it", s.name, err)
		}
	}
	for i := 1; i < len(sides); i++ {
		if specs[i] != specs[0] {
			t.Errorf("the OCI specs differ between %s and %s:\n%s", sides[0].name, sides[i].name, lineDiff(specs[0], specs[i]))
		}
	}
	if !t.Failed() {
		t.Logf("OCI specs identical on stock containerd, the drop-in and nrid (%d bytes normalised)", len(specs[0]))
	}
}
