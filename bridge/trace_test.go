package bridge_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/ttrpc"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/telemetry"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/server"
)

const (
	traceID    = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceparen = "00-" + traceID + "-00f067aa0ba902b7-01"
)

// TestTraceContextCrossesTheRuntimeSide: a classic runtime that sends W3C
// trace context in ttrpc metadata (containerd with otelttrpc) has its trace
// continued to the gRPC plugins behind the bridge.
func TestTraceContextCrossesTheRuntimeSide(t *testing.T) {
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{}, telemetry.WithSpanExporter(tracetest.NewInMemoryExporter()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	n := startNrid(t, server.WithDialOptions(tel.DialOptions()...))
	var mu sync.Mutex
	var got string
	n.grpcPlugin(t, "10", "traced", func(p *testplugin.Plugin) {
		p.Handle = func(ctx context.Context, method string, _ proto.Message) error {
			if method == "CreateContainer" {
				md, _ := metadata.FromIncomingContext(ctx)
				mu.Lock()
				got = strings.Join(md.Get("traceparent"), ",")
				mu.Unlock()
			}
			return nil
		}
	})
	sock := filepath.Join(tempDir(t), "nri.sock")
	rt := startClassicRuntime(t, sock, nil, nil)
	attachBridge(t, n, sock)
	rt.settled()
	ctx := ttrpc.WithMetadata(context.Background(), ttrpc.MD{"traceparent": {traceparen}})
	if _, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: alphaCtr(1, 0)}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(got, traceID) {
		t.Fatalf("the gRPC plugin got traceparent %q, want trace %s", got, traceID)
	}
}

// TestTraceContextReachesClassicPlugins: the server's trace reaches classic
// plugins behind the plugin side as ttrpc metadata.
func TestTraceContextReachesClassicPlugins(t *testing.T) {
	n := startNrid(t)
	sock := servePluginSide(t, n)
	var mu sync.Mutex
	var got string
	startStub(t, sock, "10", &classicPlugin{name: "10-classic", log: n.log,
		create: func(*v1alpha1.PodSandbox, *v1alpha1.Container) (*v1alpha1.ContainerAdjustment, []*v1alpha1.ContainerUpdate, error) {
			return nil, nil, nil
		}, onCtx: func(ctx context.Context) {
			v, _ := ttrpc.GetMetadataValue(ctx, "traceparent")
			mu.Lock()
			got = v
			mu.Unlock()
		}})
	waitFor(t, "the classic plugin", func() bool { return readyPlugins(n.srv) == 1 })
	tid, _ := trace.TraceIDFromHex(traceID)
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithRemoteSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
	if _, err := n.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: fixture.Pod(1), Container: fixture.Container(1, 0)}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(got, traceID) {
		t.Fatalf("the classic plugin got traceparent %q, want trace %s", got, traceID)
	}
}
