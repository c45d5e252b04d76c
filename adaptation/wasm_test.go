//go:build !nri_no_wasm

package adaptation_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/nri/pkg/api"
)

// TestInvalidWasmModuleLeftOut: a file of the plugin path that starts like
// a WASM module but is none (or lacks the plugin ABI) is left out: Start
// succeeds and events go on without it, on upstream and on the drop-in.
func TestInvalidWasmModuleLeftOut(t *testing.T) {
	for _, i := range both {
		t.Run(string(i), func(t *testing.T) {
			dir := tempDir(t)
			pluginDir := filepath.Join(dir, "plugins")
			if err := os.Mkdir(pluginDir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, body := range map[string]string{"10-empty": "\x00asm\x01\x00\x00\x00", "20-garbage": "\x00asm\x01\x00\x00\x00garbage"} {
				if err := os.WriteFile(filepath.Join(pluginDir, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			e := start(t, i, setup{pluginDir: pluginDir}, nil)
			ctx := context.Background()
			p := pod("1")
			if err := e.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: p}); err != nil {
				t.Fatal(err)
			}
			rsp, err := e.CreateContainer(ctx, &api.CreateContainerRequest{Pod: p, Container: ctr(p, "1")})
			if err != nil {
				t.Fatal(err)
			}
			if len(rsp.GetAdjust().GetEnv()) != 0 || len(rsp.GetAdjust().GetAnnotations()) != 0 {
				t.Fatalf("adjusted by nobody: %v", rsp.GetAdjust())
			}
		})
	}
}
