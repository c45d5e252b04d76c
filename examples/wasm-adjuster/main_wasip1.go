//go:build wasip1

package main

import (
	"context"

	"github.com/containerd/nri/pkg/api"
)

// init registers the plugin with upstream NRI's WASM ABI: the host calls the
// module's exported plugin_* functions after _initialize has run init.
func init() {
	api.RegisterPlugin(newAdjuster(hostLog))
}

// hostLog writes a log line through the host's Log function ("env" "log").
// A failed call has nowhere to be reported and is dropped.
func hostLog(ctx context.Context, level api.LogRequest_Level, msg string) {
	_, _ = api.NewHostFunctions().Log(ctx, &api.LogRequest{Msg: msg, Level: level})
}

// main is empty: a c-shared (reactor) module is driven by its exports.
func main() {}
