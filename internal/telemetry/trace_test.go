package telemetry_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/telemetry"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// wait bounds what a test waits for: the time left before the test
// binary's deadline (internal/testwait).
func wait() time.Duration { return testwait.Bound() }

// Values that must never reach a span.
const (
	secretAnnotation = "annotation-value-8c1f0e2d"
	secretEnv        = "env-value-5b7a9d34"
)

// notifyingExporter is an in-memory exporter that signals every export, so
// tests wait for spans without sleeping.
type notifyingExporter struct {
	*tracetest.InMemoryExporter
	mu      sync.Mutex
	changed chan struct{}
}

func newExporter() *notifyingExporter {
	return &notifyingExporter{InMemoryExporter: tracetest.NewInMemoryExporter(), changed: make(chan struct{})}
}

func (e *notifyingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.InMemoryExporter.ExportSpans(ctx, spans)
	e.mu.Lock()
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
	return err
}

// waitFor returns the exported spans once pred finds what it wants in them.
// Server spans end after the client has its answer: they are polled for.
func (e *notifyingExporter) waitFor(t *testing.T, what string, pred func(tracetest.SpanStubs) bool) tracetest.SpanStubs {
	t.Helper()
	deadline := time.NewTimer(wait())
	defer deadline.Stop()
	for {
		e.mu.Lock()
		ch := e.changed
		e.mu.Unlock()
		spans := e.GetSpans()
		if pred(spans) {
			return spans
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("waiting for %s; have spans %v", what, names(spans))
		}
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.SpanKind.String()+":"+s.Name)
	}
	return out
}

func find(spans tracetest.SpanStubs, name string, kind trace.SpanKind) *tracetest.SpanStub {
	for i := range spans {
		if spans[i].Name == name && spans[i].SpanKind == kind {
			return &spans[i]
		}
	}
	return nil
}

// nopRuntime accepts every unsolicited update.
type nopRuntime struct{}

func (nopRuntime) UpdateContainers(context.Context, string, []*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	return nil, nil, nil
}

// tracedPlugin is a minimal plugin whose gRPC server is traced with the
// test's telemetry; it records the traceparent header and span context of
// the calls it receives.
type tracedPlugin struct {
	nriv1beta1.UnimplementedPluginServiceServer

	mu          sync.Mutex
	traceparent []string
	spanCtx     trace.SpanContext
}

func (p *tracedPlugin) Configure(context.Context, *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	mask := nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_STOP_CONTAINER)
	return &nriv1beta1.ConfigureResponse{Events: int32(mask)}, nil
}

func (p *tracedPlugin) Synchronize(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	return &nriv1beta1.SynchronizeResponse{More: req.GetMore()}, nil
}

func (p *tracedPlugin) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	p.mu.Lock()
	p.traceparent = md.Get("traceparent")
	p.spanCtx = trace.SpanContextFromContext(ctx)
	p.mu.Unlock()
	return &nriv1beta1.CreateContainerResponse{}, nil
}

// StopContainer fails with a message quoting the container's secrets, as a
// careless plugin might.
func (p *tracedPlugin) StopContainer(_ context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	return nil, fmt.Errorf("cannot stop: annotation %q, env %v", req.GetContainer().GetAnnotations()["secret"], req.GetContainer().GetEnv())
}

// start serves the plugin on a socket in dir with opts and registers it
// with the server on sock; it returns once the server has registered it.
func (p *tracedPlugin) start(t *testing.T, sock, dir string, opts ...grpc.ServerOption) {
	t.Helper()
	path := filepath.Join(dir, "10-traced.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(append(opts, codec.ServerOption())...)
	nriv1beta1.RegisterPluginServiceServer(g, p)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)

	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := nriv1beta1.NewRuntimeServiceClient(cc).RegisterPlugin(ctx, &nriv1beta1.RegisterPluginRequest{
		PluginName: "traced", PluginIdx: "10", NriVersion: "test", Endpoint: "unix://" + path,
	})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		rsp, err := stream.Recv()
		if err == nil && rsp.GetRegistered() == nil {
			err = fmt.Errorf("first registration message is not Registered: %v", rsp)
		}
		first <- err
		for err == nil {
			_, err = stream.Recv()
		}
	}()
	select {
	case err := <-first:
		if err != nil {
			t.Fatalf("registering: %v", err)
		}
	case <-time.After(wait()):
		t.Fatal("registration did not finish")
	}
}

// startServer runs a real server whose gRPC server is traced with tel and
// whose connections to plugins are dialed with tel's options.
func startServer(t *testing.T, tel *telemetry.Telemetry) (srv *server.Server, sock, pluginDir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	pluginDir = filepath.Join(dir, "p")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err = server.New(server.WithPluginSocketDir(pluginDir), server.WithDialer(transport.NewDialer()), server.WithRuntime("test-runtime", "v0"),
		server.WithDialOptions(tel.DialOptions()...))
	if err != nil {
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "nri.sock")
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(append(tel.ServerOptions(), grpc.Creds(peercred.Credentials{}), codec.ServerOption())...)
	nriv1beta1.RegisterRuntimeServiceServer(g, srv.RuntimeService())
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait())
		defer cancel()
		_ = srv.Shutdown(ctx)
		g.Stop()
		_ = os.RemoveAll(dir)
	})
	if err := srv.SetRuntime(context.Background(), server.RuntimeInfo{Name: "test-runtime", Version: "v1"}, nopRuntime{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	return srv, sock, pluginDir
}

// TestTraceReachesPlugin checks that a call from the server to a plugin
// continues the caller's trace: the server's client span is a child of the
// caller's span, the plugin receives a traceparent header naming it, and
// the plugin's server span is its remote child in the same trace. It also
// checks that no annotation or environment value reaches a span.
func TestTraceReachesPlugin(t *testing.T) {
	exp := newExporter()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "nrid-test"}, telemetry.WithSpanExporter(exp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	if len(tel.ServerOptions()) != 1 || len(tel.DialOptions()) != 1 {
		t.Fatalf("%d server and %d dial options, want one stats handler each", len(tel.ServerOptions()), len(tel.DialOptions()))
	}
	srv, sock, pluginDir := startServer(t, tel)
	plugin := &tracedPlugin{}
	plugin.start(t, sock, pluginDir, tel.ServerOptions()...)

	ctr := fixture.Container(1, 0)
	ctr.Annotations["secret"] = secretAnnotation
	ctr.Env = append(ctr.Env, "SECRET="+secretEnv)
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	ctx, parent := tel.TracerProvider().Tracer("test").Start(ctx, "runtime CreateContainer")
	if _, err := srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: fixture.Pod(1), Container: ctr}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	// A plugin error that quotes the secrets: its text must not be exported.
	if _, err := srv.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: fixture.Pod(1), Container: ctr}); err != nil {
		t.Fatal(err)
	}

	const method = "nri.v1beta1.PluginService/CreateContainer"
	const stop = "nri.v1beta1.PluginService/StopContainer"
	spans := exp.waitFor(t, "the plugin's server spans", func(s tracetest.SpanStubs) bool {
		return find(s, method, trace.SpanKindServer) != nil && find(s, stop, trace.SpanKindServer) != nil
	})
	client := find(spans, method, trace.SpanKindClient)
	srvSpan := find(spans, method, trace.SpanKindServer)
	if client == nil {
		t.Fatalf("no client span for %s in %v", method, names(spans))
	}
	pc := parent.SpanContext()
	if client.SpanContext.TraceID() != pc.TraceID() || client.Parent.SpanID() != pc.SpanID() {
		t.Errorf("client span: trace %s parent %s, want trace %s parent %s",
			client.SpanContext.TraceID(), client.Parent.SpanID(), pc.TraceID(), pc.SpanID())
	}
	if srvSpan.SpanContext.TraceID() != pc.TraceID() {
		t.Errorf("plugin span trace %s, want the caller's %s", srvSpan.SpanContext.TraceID(), pc.TraceID())
	}
	if srvSpan.Parent.SpanID() != client.SpanContext.SpanID() || !srvSpan.Parent.IsRemote() {
		t.Errorf("plugin span parent %s (remote %v), want the client span %s as a remote parent",
			srvSpan.Parent.SpanID(), srvSpan.Parent.IsRemote(), client.SpanContext.SpanID())
	}
	if got := srvSpan.Resource.Attributes(); !hasAttr(got, "service.name", "nrid-test") {
		t.Errorf("resource %v lacks service.name=nrid-test", got)
	}

	plugin.mu.Lock()
	tp, sc := plugin.traceparent, plugin.spanCtx
	plugin.mu.Unlock()
	want := fmt.Sprintf("00-%s-%s-01", pc.TraceID(), client.SpanContext.SpanID())
	if len(tp) != 1 || tp[0] != want {
		t.Errorf("plugin received traceparent %q, want [%q]", tp, want)
	}
	if sc.TraceID() != pc.TraceID() || sc.SpanID() != srvSpan.SpanContext.SpanID() {
		t.Errorf("plugin handler ran in span %s/%s, want %s/%s", sc.TraceID(), sc.SpanID(), pc.TraceID(), srvSpan.SpanContext.SpanID())
	}

	// The failed StopContainer is visible as an error, without its text.
	for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		s := find(spans, stop, kind)
		if s == nil {
			t.Fatalf("no %s span for %s", kind, stop)
		}
		if s.Status.Code.String() != "Error" || !hasAttr(s.Attributes, "rpc.response.status_code", "UNKNOWN") {
			t.Errorf("%s %s: status %v, attributes %v; want an UNKNOWN error", kind, stop, s.Status, s.Attributes)
		}
	}
	assertNoSecrets(t, spans)
}

// hasAttr reports whether attrs has key with the value v.
func hasAttr(attrs []attribute.KeyValue, key, v string) bool {
	for _, kv := range attrs {
		if string(kv.Key) == key && kv.Value.String() == v {
			return true
		}
	}
	return false
}

// assertNoSecrets fails if any span carries a secret anywhere it exports
// text: attributes, events, links, status.
func assertNoSecrets(t *testing.T, spans tracetest.SpanStubs) {
	t.Helper()
	for _, s := range spans {
		all := fmt.Sprint(s.Name, s.Attributes, s.Events, s.Links, s.Status)
		for _, secret := range []string{secretAnnotation, secretEnv} {
			if strings.Contains(all, secret) {
				t.Errorf("span %s %s carries %q: %s", s.SpanKind, s.Name, secret, all)
			}
		}
	}
}
