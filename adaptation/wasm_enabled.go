//go:build !nri_no_wasm

package adaptation

// checkPluginPath has nothing to refuse: WASM plugins of the plugin path
// run in process, sandboxed (package wasm, docs/wasm.md).
func (r *Adaptation) checkPluginPath() error { return nil }
