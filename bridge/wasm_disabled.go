//go:build nri_no_wasm

package bridge

import (
	"context"
	"fmt"

	"github.com/nri-grpc/nri-grpc/supervisor"
)

// WasmEnabled reports whether this build runs WASM plugins (it was not
// built with the nri_no_wasm tag).
const WasmEnabled = false

// wasmEngineRef stands for the engine of WASM plugins, which this build
// does not have.
type wasmEngineRef = *struct{}

// errWasmDisabled is why a WASM plugin is not run by a build with the
// nri_no_wasm tag.
var errWasmDisabled = fmt.Errorf("WASM support is disabled (at build time, tag nri_no_wasm)")

// launchWasm refuses a WASM plugin: this build has no WASM support.
func (ps *PluginSide) launchWasm(_ context.Context, p supervisor.Plugin, slot *launchSlot) error {
	slot.settle()
	return fmt.Errorf("WASM plugin %s: %w", p.FullName(), errWasmDisabled)
}
