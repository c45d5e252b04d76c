//go:build !wasip1

package main

import (
	"fmt"
	"os"
)

// main explains how to build the plugin: natively the package exists only so
// that its logic can be tested.
func main() {
	fmt.Fprintln(os.Stderr, "wasmplugin is nribench's WebAssembly NRI plugin; build it with\n"+
		"  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o 00-bench ./bench/wasmplugin")
	os.Exit(2)
}
