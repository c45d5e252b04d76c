//go:build wasip1

package main

import "github.com/containerd/nri/pkg/api"

// init registers the plugin with upstream NRI's WASM ABI: the host calls the
// module's exported plugin_* functions after _initialize has run init.
func init() { api.RegisterPlugin(&plugin{}) }

// main is empty: a c-shared (reactor) module is driven by its exports.
func main() {}
