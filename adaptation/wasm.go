package adaptation

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/nri-grpc/nri-grpc/supervisor"
)

// wasmMagic starts a WASM module: "\0asm" and version 1.
var wasmMagic = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

// checkPluginPath fails for a WASM module among the pre-launched plugins:
// upstream runs those in process, nri-grpc does not (yet), and leaving out
// a plugin the operator installed would be worse than not starting.
func (r *Adaptation) checkPluginPath() error {
	plugins, _ := supervisor.Survey(r.pluginPath, "")
	for _, p := range plugins {
		if isWasm(p.Path) {
			return fmt.Errorf("pre-launched NRI plugin %s is a WASM module, which nri-grpc does not run: %w", p.Path, ErrWasmDisabled)
		}
	}
	return nil
}

// isWasm reports whether the file at path starts like a WASM module.
func isWasm(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	head := make([]byte, len(wasmMagic))
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	return bytes.Equal(head, wasmMagic)
}
