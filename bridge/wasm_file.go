package bridge

import (
	"bytes"
	"io"
	"os"
)

// wasmMagic starts a WebAssembly module: "\0asm" and version 1.
var wasmMagic = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

// IsWasm reports whether the file at path starts like a WebAssembly module
// (classic NRI's test for a pre-launched plugin to load rather than
// execute).
func IsWasm(path string) bool {
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
