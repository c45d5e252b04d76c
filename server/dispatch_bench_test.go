package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/server"
)

// adjustingImpl is an in-process plugin that answers CreateContainer as
// nribench's plugins do: one annotation and one environment variable of its
// own.
type adjustingImpl struct {
	nriv1beta1.UnimplementedPluginServiceServer
	key, env string
}

func (a *adjustingImpl) Configure(context.Context, *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	return &nriv1beta1.ConfigureResponse{Events: 1 << (uint32(nriv1beta1.Event_EVENT_CREATE_CONTAINER) - 1)}, nil
}

func (a *adjustingImpl) Synchronize(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	return &nriv1beta1.SynchronizeResponse{More: req.GetMore()}, nil
}

func (a *adjustingImpl) CreateContainer(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
		Annotations: map[string]string{a.key: "1"},
		Env:         []*nriv1beta1.KeyValue{{Key: a.env, Value: "1"}},
	}}, nil
}

// BenchmarkServerOverhead is what the server itself costs an event, without
// any transport: CreateContainer dispatched to K in-process plugins that
// adjust it (no encoding, no gRPC). nribench's "floor" row is the transport
// without the server; this is the server without the transport.
func BenchmarkServerOverhead(b *testing.B) {
	for _, k := range []int{1, 8} {
		b.Run(fmt.Sprintf("CreateContainer/K=%d", k), func(b *testing.B) {
			ctx := context.Background()
			srv := benchServer(b, k)
			reqs := make([]*nriv1beta1.CreateContainerRequest, b.N)
			for i := range reqs {
				reqs[i] = fixture.CreateContainerRequest(i, 0)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				rsp, err := srv.CreateContainer(ctx, reqs[i])
				if err != nil {
					b.Fatal(err)
				}
				if len(rsp.GetAdjust().GetAnnotations()) != k {
					b.Fatalf("%d annotations, want %d", len(rsp.GetAdjust().GetAnnotations()), k)
				}
			}
		})
	}
}

// benchServer is a server with a runtime attached and k in-process plugins
// that each adjust every container (adjustingImpl), for benchmarks.
func benchServer(b *testing.B, k int) *server.Server {
	b.Helper()
	ctx := context.Background()
	srv, err := server.New(server.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		server.WithRuntime("bench", "v0"), server.WithNodeName("node"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Shutdown(ctx) })
	if err := srv.SetRuntime(ctx, server.RuntimeInfo{Name: "bench", Version: "v0"}, nil, nil, nil); err != nil {
		b.Fatal(err)
	}
	for i := range k {
		impl := &adjustingImpl{key: fmt.Sprintf("bench.nri-grpc.io/plugin-%02d", i), env: fmt.Sprintf("BENCH_PLUGIN_%02d", i)}
		if _, err := srv.RegisterInProcess(ctx, server.Registration{Name: fmt.Sprintf("p%d", i), Index: fmt.Sprintf("%02d", 10+i),
			Identity: "builtin"}, impl); err != nil {
			b.Fatal(err)
		}
	}
	return srv
}
