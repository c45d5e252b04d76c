// Package wasm runs classic NRI's WebAssembly plugins: modules built
// against github.com/containerd/nri/pkg/api (GOOS=wasip1 GOARCH=wasm
// go build -buildmode=c-shared), which register with api.RegisterPlugin.
//
// The package implements the host side of the ABI those modules export
// (github.com/knqyf263/go-plugin's, as upstream's pkg/adaptation loads
// them): a reactor module whose "_initialize" runs at instantiation,
// "plugin_api_version" returning 1, "malloc" and "free", and one function
// per Plugin method, "plugin_<method in snake case>"(ptr, size uint32)
// uint64, that takes the request's protobuf encoding in the module's
// memory and returns the answer's as ptr<<32|size, bit 31 of size marking
// an error message instead. The host module "env" exports "log"(ptr, size)
// for the module's LogRequests. Calls take and return encodings
// ([Plugin.Call]): the bridge hands a module the bytes the server already
// has, with no conversion per plugin.
//
// # Sandbox
//
// A module runs in its own wazero runtime, compiled ahead of its first
// call (with a compilation cache shared by an [Engine]'s modules), and is
// given only what WASI's clocks and random need:
//
//   - no host filesystem (no preopened directory), no network (no socket),
//     no environment variables or arguments, no stdin; stdout and stderr
//     lines go to the engine's log, as its log calls do;
//   - a memory limit ([WithMemoryLimit], default [DefaultMemoryLimit]): a
//     module that grows past it fails (a Go module crashes with "out of
//     memory");
//   - every call ends when its context does: wazero closes the module
//     when the context is done, even in the middle of an endless loop, and
//     the call returns DEADLINE_EXCEEDED (or CANCELLED). Sleeping cannot
//     stall this: the module's sleeps return to it at least every
//     millisecond;
//   - a module that traps, exits or is closed is dead: every later call
//     returns UNAVAILABLE, and [Plugin.Done] is closed.
//
// A module runs one call at a time; concurrent calls wait their turn
// within their own context.
package wasm
