//go:build nri_no_wasm

package adaptation_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nri-grpc/nri-grpc/adaptation"
)

// TestNoWasmBuildRefusesWasmPlugins: built with the nri_no_wasm tag, the
// drop-in fails Start for a WASM module in the plugin path, with a message
// naming it and wrapping ErrWasmDisabled.
func TestNoWasmBuildRefusesWasmPlugins(t *testing.T) {
	dir := tempDir(t)
	wasm := filepath.Join(dir, "10-wasm")
	if err := os.WriteFile(wasm, []byte("\x00asm\x01\x00\x00\x00"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := adaptation.New("rt", "1", (&runtime{}).dropInSyncFn, adaptation.UpdateFn((&runtime{}).updateFn),
		adaptation.WithPluginPath(dir), adaptation.WithSocketPath(filepath.Join(dir, "nri.sock")),
		adaptation.WithConfigFile(writeConfig(t, dir, "")))
	if err != nil {
		t.Fatal(err)
	}
	err = a.Start()
	if err == nil {
		a.Stop()
		t.Fatal("Start accepted a WASM plugin")
	}
	if !errors.Is(err, adaptation.ErrWasmDisabled) || !strings.Contains(err.Error(), wasm) {
		t.Fatalf("error %q does not name the module or wrap ErrWasmDisabled", err)
	}
}
