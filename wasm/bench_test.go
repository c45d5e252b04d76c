package wasm_test

import (
	"context"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// benchPlugin is nribench's WASM plugin: an annotation and an env variable
// per CreateContainer.
const benchPlugin = "bench/wasmplugin"

// benchConfig is its configuration.
const benchConfig = `{"annotation": "bench.nri-grpc.io/plugin-00", "env": "BENCH_PLUGIN_00"}`

// benchRequest is a realistic CreateContainerRequest (internal/fixture),
// encoded.
func benchRequest(b *testing.B) []byte {
	b.Helper()
	req, err := (&nriv1beta1.CreateContainerRequest{Pod: fixture.Pod(1), Container: fixture.Container(1, 0)}).MarshalVT()
	if err != nil {
		b.Fatal(err)
	}
	return req
}

// BenchmarkCreateContainer calls one module's CreateContainer, each call
// with a deadline as the server's are: through this package's host (bytes
// in, bytes out: what the bridge does), and through upstream's host
// (github.com/containerd/nri/pkg/api, configured as pkg/adaptation
// configures it: it encodes the request and decodes the answer). The
// difference is the hosts' own cost; the module's is the same.
func BenchmarkCreateContainer(b *testing.B) {
	path := modules.Path(b, benchPlugin)
	req := benchRequest(b)
	ctx := context.Background()
	b.Run("nri-grpc", func(b *testing.B) {
		p, err := engine.Load(ctx, path, "00-bench")
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = p.Close(ctx) }()
		cfg, err := (&api.ConfigureRequest{Config: benchConfig}).MarshalVT()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Call(ctx, "Configure", cfg); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			_, err := p.Call(cctx, "CreateContainer", req)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("upstream-host", func(b *testing.B) {
		host, err := api.NewPluginPlugin(ctx, api.WazeroRuntime(func(ctx context.Context) (wazero.Runtime, error) {
			r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
			if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
				return nil, err
			}
			return r, nil
		}))
		if err != nil {
			b.Fatal(err)
		}
		p, err := host.Load(ctx, path, nopHost{})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = p.Close(ctx) }()
		if _, err := p.Configure(ctx, &api.ConfigureRequest{Config: benchConfig}); err != nil {
			b.Fatal(err)
		}
		var r api.CreateContainerRequest
		if err := r.UnmarshalVT(req); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			_, err := p.CreateContainer(cctx, &r)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// nopHost is upstream's host functions, dropping what the module logs.
type nopHost struct{}

func (nopHost) Log(context.Context, *api.LogRequest) (*api.Empty, error) { return &api.Empty{}, nil }
