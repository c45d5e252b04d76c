//go:build nri_no_wasm

package adaptation

import (
	"fmt"

	"github.com/nri-grpc/nri-grpc/bridge"
	"github.com/nri-grpc/nri-grpc/supervisor"
)

// checkPluginPath fails for a WASM module among the pre-launched plugins
// in a build with the nri_no_wasm tag, as upstream's does: leaving out a
// plugin the operator installed would be worse than not starting.
func (r *Adaptation) checkPluginPath() error {
	plugins, _ := supervisor.Survey(r.pluginPath, "")
	for _, p := range plugins {
		if bridge.IsWasm(p.Path) {
			return fmt.Errorf("pre-launched NRI plugin %s is a WASM module, and this build has no WASM support: %w", p.Path, ErrWasmDisabled)
		}
	}
	return nil
}
