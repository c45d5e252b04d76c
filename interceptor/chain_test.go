package interceptor_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/interceptor"
	"github.com/nri-grpc/nri-grpc/server"
)

// Metadata the test clients send.
const (
	mdCaller    = "x-test-caller"     // who calls; absent: nobody (UNAUTHENTICATED)
	mdPanic     = "x-test-panic"      // the handler panics
	mdAuthPanic = "x-test-auth-panic" // the Authenticator panics
)

// testAuth authenticates the caller its metadata names, the way package
// auth does it: with server.ContextWithIdentity.
type testAuth struct{}

func (testAuth) Authenticate(ctx context.Context) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if len(md.Get(mdAuthPanic)) > 0 {
		panic("authenticator bug")
	}
	who := md.Get(mdCaller)
	if len(who) != 1 {
		return nil, status.Error(codes.Unauthenticated, "no caller")
	}
	return server.ContextWithIdentity(ctx, server.Identity{Name: who[0]}), nil
}

func (testAuth) Caller(ctx context.Context) string {
	id, _ := server.IdentityFromContext(ctx)
	return id.Name
}

// access refuses mallory.
func access(ctx context.Context, _ string) error {
	if id, _ := server.IdentityFromContext(ctx); id.Name == "mallory" {
		return status.Error(codes.PermissionDenied, "not mallory")
	}
	return nil
}

// services counts the calls that reach the handlers; a call whose metadata
// has mdPanic panics there.
type services struct {
	nriv1beta1.UnimplementedAdminServiceServer
	nriv1beta1.UnimplementedRuntimeServiceServer
	reached atomic.Int32
}

func panicIfAsked(ctx context.Context) {
	if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(mdPanic)) > 0 {
		panic("boom")
	}
}

func (s *services) ListPlugins(ctx context.Context, _ *nriv1beta1.ListPluginsRequest) (*nriv1beta1.ListPluginsResponse, error) {
	s.reached.Add(1)
	panicIfAsked(ctx)
	return &nriv1beta1.ListPluginsResponse{}, nil
}

func (s *services) WatchEvents(_ *nriv1beta1.WatchEventsRequest, ss grpc.ServerStreamingServer[nriv1beta1.WatchEventsResponse]) error {
	s.reached.Add(1)
	panicIfAsked(ss.Context())
	return nil
}

func (s *services) RegisterPlugin(_ *nriv1beta1.RegisterPluginRequest, _ grpc.ServerStreamingServer[nriv1beta1.RegisterPluginResponse]) error {
	s.reached.Add(1)
	return nil
}

// logBuffer collects text log lines; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// take returns the lines logged since the last take. The chain logs before
// the call's status goes out, so a finished call's lines are all there.
func (b *logBuffer) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSpace(b.buf.String())
	b.buf.Reset()
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

type fixture struct {
	cc    *grpc.ClientConn
	svc   *services
	logs  *logBuffer
	extra atomic.Value // the identity WithUnary's interceptor last saw
}

// start serves AdminService, RuntimeService and health behind the chain on
// a unix socket.
func start(t *testing.T, opts ...interceptor.Option) *fixture {
	t.Helper()
	f := &fixture{svc: &services{}, logs: &logBuffer{}}
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	extra := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		id, _ := server.IdentityFromContext(ctx)
		f.extra.Store(id.Name)
		return h(ctx, req)
	}
	opts = append([]interceptor.Option{interceptor.WithLogger(log), interceptor.WithUnary(extra)}, opts...)
	srv := grpc.NewServer(interceptor.ServerOptions(opts...)...)
	nriv1beta1.RegisterAdminServiceServer(srv, f.svc)
	nriv1beta1.RegisterRuntimeServiceServer(srv, f.svc)
	healthpb.RegisterHealthServer(srv, health.NewServer())

	sock := filepath.Join(t.TempDir(), "s.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	if f.cc, err = grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.cc.Close() })
	return f
}

// startFull starts nrid's chain, as far as this package knows it.
func startFull(t *testing.T, opts ...interceptor.Option) *fixture {
	return start(t, append([]interceptor.Option{
		interceptor.WithAuthenticator(testAuth{}),
		interceptor.WithAccess(access),
		interceptor.WithPublic(healthpb.Health_ServiceDesc.ServiceName),
	}, opts...)...)
}

// list calls ListPlugins with the given metadata pairs.
func (f *fixture) list(t *testing.T, kv ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), metadata.Pairs(kv...)), 10*time.Second)
	defer cancel()
	_, err := nriv1beta1.NewAdminServiceClient(f.cc).ListPlugins(ctx, &nriv1beta1.ListPluginsRequest{})
	return err
}

// recv opens a server stream with open and reads it to its end.
func recv[T any](t *testing.T, kv []string, open func(context.Context) (grpc.ServerStreamingClient[T], error)) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), metadata.Pairs(kv...)), 10*time.Second)
	defer cancel()
	s, err := open(ctx)
	for err == nil {
		_, err = s.Recv()
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func (f *fixture) watch(t *testing.T, kv ...string) error {
	return recv(t, kv, func(ctx context.Context) (grpc.ServerStreamingClient[nriv1beta1.WatchEventsResponse], error) {
		return nriv1beta1.NewAdminServiceClient(f.cc).WatchEvents(ctx, &nriv1beta1.WatchEventsRequest{})
	})
}

func (f *fixture) register(t *testing.T, kv ...string) error {
	return recv(t, kv, func(ctx context.Context) (grpc.ServerStreamingClient[nriv1beta1.RegisterPluginResponse], error) {
		return nriv1beta1.NewRuntimeServiceClient(f.cc).RegisterPlugin(ctx, &nriv1beta1.RegisterPluginRequest{})
	})
}

func wantStatus(t *testing.T, what string, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), msg) {
		t.Errorf("%s: got %v, want %v with %q", what, err, code, msg)
	}
}

// wantLines checks that lines are exactly the lines matching each of want,
// in order: each want is a list of substrings of one line.
func wantLines(t *testing.T, what string, lines []string, want ...[]string) {
	t.Helper()
	ok := len(lines) == len(want)
	for i := 0; ok && i < len(want); i++ {
		for _, s := range want[i] {
			ok = ok && strings.Contains(lines[i], s)
		}
	}
	if !ok {
		short := make([]string, len(lines))
		for i, l := range lines {
			short[i] = l[:min(len(l), 300)]
		}
		t.Errorf("%s: logged\n\t%s\nwant lines with\n\t%q", what, strings.Join(short, "\n\t"), want)
	}
}

// TestOrder shows what the order of the chain is for: each case would
// come out differently with the pieces in another order.
func TestOrder(t *testing.T) {
	f := startFull(t)

	// Recovery below authentication and the call log: the panic is
	// INTERNAL, logged with the caller, and the call log records it.
	err := f.list(t, mdCaller, "alice", mdPanic, "1")
	wantStatus(t, "a panicking handler", err, codes.Internal, "internal error")
	wantLines(t, "a panicking handler", f.logs.take(),
		[]string{`level=ERROR msg="handler panicked" method=/nri.v1beta1.AdminService/ListPlugins identity=alice panic=boom stack=`},
		[]string{`level=ERROR msg="finished call"`, "identity=alice", "grpc.method=ListPlugins", "grpc.code=Internal"})
	err = f.watch(t, mdCaller, "alice", mdPanic, "1")
	wantStatus(t, "a panicking stream handler", err, codes.Internal, "internal error")
	wantLines(t, "a panicking stream handler", f.logs.take(),
		[]string{`msg="handler panicked" method=/nri.v1beta1.AdminService/WatchEvents identity=alice`},
		[]string{`msg="finished call"`, "identity=alice", "grpc.code=Internal"})

	// Recovery above authentication: the Authenticator's own panic is
	// INTERNAL too, and the server keeps serving.
	err = f.list(t, mdCaller, "alice", mdAuthPanic, "1")
	wantStatus(t, "a panicking Authenticator", err, codes.Internal, "internal error")
	wantLines(t, "a panicking Authenticator", f.logs.take(),
		[]string{`level=ERROR msg="handler panicked" method=/nri.v1beta1.AdminService/ListPlugins panic="authenticator bug"`})

	// Authentication above the call log, access and the handler: a refused
	// caller is one line, and reaches nothing.
	before := f.svc.reached.Load()
	wantStatus(t, "no caller", f.list(t), codes.Unauthenticated, "no caller")
	wantStatus(t, "no caller, stream", f.register(t), codes.Unauthenticated, "no caller")
	wantLines(t, "no caller", f.logs.take(),
		[]string{`level=WARN msg="authentication refused" method=/nri.v1beta1.AdminService/ListPlugins peer=@ reason="no caller"`},
		[]string{`level=WARN msg="authentication refused" method=/nri.v1beta1.RuntimeService/RegisterPlugin`})

	// Access below the call log: its refusal is a WARN line that names the
	// caller.
	wantStatus(t, "mallory", f.list(t, mdCaller, "mallory"), codes.PermissionDenied, "not mallory")
	wantLines(t, "mallory", f.logs.take(),
		[]string{`level=WARN msg="finished call"`, "identity=mallory", "grpc.method=ListPlugins", "grpc.code=PermissionDenied", `grpc.error="rpc error: code = PermissionDenied desc = not mallory"`})
	if got := f.svc.reached.Load(); got != before {
		t.Errorf("%d refused calls reached the handlers", got-before)
	}
	if got, _ := f.extra.Load().(string); got != "alice" {
		t.Errorf("WithUnary's interceptor last saw %q, want alice (and never a refused call)", got)
	}

	// A success is logged at DEBUG, with the caller.
	if err := f.list(t, mdCaller, "bob"); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "a success", f.logs.take(), []string{`level=DEBUG msg="finished call"`, "identity=bob", "grpc.code=OK"})
	if got, _ := f.extra.Load().(string); got != "bob" {
		t.Errorf("WithUnary's interceptor saw %q, want bob", got)
	}

	// Public services skip authentication and the call log.
	_, err = healthpb.NewHealthClient(f.cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("health without a caller: %v", err)
	}
	wantLines(t, "health", f.logs.take())
}

// TestRegisterRate: the rate limit is per caller, and below access.
func TestRegisterRate(t *testing.T) {
	f := startFull(t, interceptor.WithRegisterRate(0.001, 2))
	for i := range 2 {
		if err := f.register(t, mdCaller, "alice"); err != nil {
			t.Fatalf("registration %d of a burst of 2: %v", i, err)
		}
	}
	wantStatus(t, "the 3rd registration", f.register(t, mdCaller, "alice"), codes.ResourceExhausted, `identity "alice" registers too often`)
	if err := f.register(t, mdCaller, "bob"); err != nil {
		t.Errorf("another caller: %v", err)
	}
	// Access first: a refused caller gets its refusal every time, never
	// the rate limit's.
	for range 3 {
		wantStatus(t, "mallory", f.register(t, mdCaller, "mallory"), codes.PermissionDenied, "not mallory")
	}
	// Only RegisterPlugin is limited.
	if err := f.list(t, mdCaller, "alice"); err != nil {
		t.Errorf("ListPlugins over the registration limit: %v", err)
	}
	lines := f.logs.take()
	wantLines(t, "the 3rd registration", lines[2:3], []string{`level=WARN msg="finished call"`, "identity=alice", "grpc.code=ResourceExhausted"})
}

// TestPluginChain is the chain of a plugin's endpoint (package plugin): no
// call log, the panic's value in the status.
func TestPluginChain(t *testing.T) {
	f := start(t,
		interceptor.WithAuthenticator(interceptor.AuthFunc(func(ctx context.Context) (context.Context, error) {
			if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(mdCaller)) == 0 {
				return nil, status.Error(codes.PermissionDenied, "who are you")
			}
			return ctx, nil
		})),
		interceptor.WithoutCallLog(),
		interceptor.WithPanicDetails())
	wantStatus(t, "a panic", f.list(t, mdCaller, "nrid", mdPanic, "1"), codes.Internal, "handler panicked: boom")
	wantLines(t, "a panic", f.logs.take(), []string{`level=ERROR msg="handler panicked" method=/nri.v1beta1.AdminService/ListPlugins panic=boom`})
	wantStatus(t, "a stranger", f.list(t), codes.PermissionDenied, "who are you")
	// Without WithPublic, health is authenticated too.
	_, err := healthpb.NewHealthClient(f.cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	wantStatus(t, "health", err, codes.PermissionDenied, "who are you")
	wantLines(t, "refusals", f.logs.take(),
		[]string{`level=WARN msg="authentication refused" method=/nri.v1beta1.AdminService/ListPlugins`, `reason="who are you"`},
		[]string{`level=WARN msg="authentication refused" method=/grpc.health.v1.Health/Check`})
	if err := f.list(t, mdCaller, "nrid"); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "a success", f.logs.take())
}
