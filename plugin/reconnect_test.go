package plugin_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/internal/grpcreg"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/plugin/plugintest"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// hourly is a backoff no test can wait out: a plugin that registers again
// within testwait.Bound() did not sleep it.
var hourly = plugin.WithBackoff(time.Hour, time.Hour)

// killableServer is a real NRI server on a unix socket that a test stops
// the way kill -9 stops nrid: connections break, no Shutdown is sent, and
// the socket file stays behind (connections to it are refused).
type killableServer struct {
	srv *server.Server
	gs  *grpc.Server
}

func serveAt(t testing.TB, sock, pluginDir string, log *slog.Logger) *killableServer {
	t.Helper()
	srv, err := server.New(server.WithPluginSocketDir(pluginDir), server.WithDialer(transport.NewDialer()), server.WithLogger(log.With("component", "server")),
		server.WithRuntime("reconnect-test", "v0"))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	lis.SetUnlinkOnClose(false)
	gs := grpc.NewServer(append(flowctl.ServerOptions(), grpc.Creds(peercred.Credentials{}), codec.ServerOption())...)
	nriv1beta1.RegisterRuntimeServiceServer(grpcreg.Registrar(gs), srv.RuntimeService())
	go func() { _ = gs.Serve(lis) }()
	s := &killableServer{srv: srv, gs: gs}
	t.Cleanup(s.kill)
	return s
}

func (s *killableServer) kill() {
	s.gs.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx) // releases what it holds; the plugin's registration is gone already
}

// logRecord is a log line of the plugin: its message and attributes.
type logRecord struct {
	msg   string
	attrs map[string]string
}

// logSink records the plugin's log lines (and writes them to the test log).
type logSink struct {
	next    slog.Handler
	mu      *sync.Mutex
	recs    *[]logRecord
	changed *chan struct{}
}

func newLogSink(t testing.TB) *logSink {
	ch := make(chan struct{})
	return &logSink{
		next:    plugintest.TestLogger(t, slog.LevelDebug).Handler(),
		mu:      &sync.Mutex{},
		recs:    &[]logRecord{},
		changed: &ch,
	}
}

func (h *logSink) Enabled(context.Context, slog.Level) bool { return true }

func (h *logSink) Handle(ctx context.Context, r slog.Record) error {
	rec := logRecord{msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.recs = append(*h.recs, rec)
	close(*h.changed)
	*h.changed = make(chan struct{})
	h.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h *logSink) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	return &c
}

func (h *logSink) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	return &c
}

// wait returns the first record from index from on with message msg, and
// the index after it.
func (h *logSink) wait(t testing.TB, from int, msg string) (logRecord, int) {
	t.Helper()
	deadline := time.NewTimer(testwait.Bound())
	defer deadline.Stop()
	for {
		h.mu.Lock()
		recs, ch := *h.recs, *h.changed
		h.mu.Unlock()
		for i := from; i < len(recs); i++ {
			if recs[i].msg == msg {
				return recs[i], i + 1
			}
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("the plugin did not log %q", msg)
		}
	}
}

// runPlugin runs a plugin until the test ends; done is closed when Run
// returned, with its error in *err.
func runPlugin(t *testing.T, ctx context.Context, opts ...plugin.Option) (p *plugin.Plugin, done chan struct{}, err *error) {
	t.Helper()
	p, e := plugin.New(&recorder{c: newCalls()}, opts...)
	if e != nil {
		t.Fatal(e)
	}
	ctx, cancel := context.WithCancel(ctx)
	done, err = make(chan struct{}), new(error)
	go func() {
		defer close(done)
		*err = p.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return p, done, err
}

func waitRegistered(t testing.TB, p *plugin.Plugin) *nriv1beta1.Registered {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	reg, err := p.WaitRegistered(ctx)
	if err != nil {
		t.Fatalf("plugin %s did not register: %v", p.Name(), err)
	}
	return reg
}

// sockDirs makes a directory for a server socket and its plugin socket
// directory.
func sockDirs(t testing.TB) (sock, pluginDir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-rc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	pluginDir = filepath.Join(dir, "p")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "nri.sock"), pluginDir
}

// TestRegistersAgainWhenKilledServerIsBack: nrid is killed (its socket
// file stays, refusing connections) and started again on the same socket.
// The plugin does not sleep a backoff meanwhile but watches the socket, and
// registers again as soon as nrid accepts connections: with a backoff of an
// hour, it is back within the test's bound.
func TestRegistersAgainWhenKilledServerIsBack(t *testing.T) {
	sock, pluginDir := sockDirs(t)
	logs := newLogSink(t)
	log := slog.New(logs)
	srv := serveAt(t, sock, pluginDir, log)
	p, _, _ := runPlugin(t, context.Background(), hourly, plugin.WithName("back"), plugin.WithIndex("10"),
		plugin.WithLogger(log), plugin.WithServerAddress("unix://"+sock), plugin.WithSocketDir(pluginDir))
	first := waitRegistered(t, p).GetInstanceId()
	from := 0
	for round := range 3 {
		srv.kill()
		rec, next := logs.wait(t, from, "registration ended; registering again")
		from = next
		if got := rec.attrs["retry"]; got != "when the server accepts connections" {
			t.Fatalf("round %d: the plugin logged %v; want it waiting for the server, not a backoff", round, rec.attrs)
		}
		if _, err := os.Stat(sock); err != nil {
			t.Fatalf("the killed server's socket file is gone: %v", err)
		}
		srv = serveAt(t, sock, pluginDir, log)
		if reg := waitRegistered(t, p); reg.GetInstanceId() == first {
			t.Fatalf("round %d: registered under the old instance %s", round, first)
		}
	}
}

// TestRegistersWhenServerAppears: a plugin started before nrid (its
// socket's directory does not exist yet, so there is nothing to watch and
// the plugin polls) registers once nrid listens.
func TestRegistersWhenServerAppears(t *testing.T) {
	sock, pluginDir := sockDirs(t)
	sock = filepath.Join(filepath.Dir(sock), "later", "nri.sock")
	logs := newLogSink(t)
	log := slog.New(logs)
	p, _, _ := runPlugin(t, context.Background(), hourly, plugin.WithName("early"), plugin.WithIndex("10"),
		plugin.WithLogger(log), plugin.WithServerAddress("unix://"+sock), plugin.WithSocketDir(pluginDir))
	rec, _ := logs.wait(t, 0, "registration failed; retrying with backoff (further failures are logged at debug level)")
	if got := rec.attrs["retry"]; got != "when the server accepts connections" {
		t.Fatalf("the plugin logged %v; want it waiting for the server", rec.attrs)
	}
	serveAt(t, sock, pluginDir, log)
	waitRegistered(t, p)
}

// TestStopsWhileWaitingForServer: cancelling Run while nrid is away ends
// it, with nil.
func TestStopsWhileWaitingForServer(t *testing.T) {
	sock, pluginDir := sockDirs(t)
	logs := newLogSink(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, done, err := runPlugin(t, ctx, hourly, plugin.WithName("away"), plugin.WithIndex("10"),
		plugin.WithLogger(slog.New(logs)), plugin.WithServerAddress("unix://"+sock), plugin.WithSocketDir(pluginDir))
	logs.wait(t, 0, "registration failed; retrying with backoff (further failures are logged at debug level)")
	cancel()
	select {
	case <-done:
	case <-time.After(testwait.Bound()):
		t.Fatal("Run did not return after cancellation")
	}
	if *err != nil {
		t.Errorf("Run = %v, want nil", *err)
	}
}

// refusingRuntime refuses every registration with RESOURCE_EXHAUSTED (a
// rate limit: retryable) and counts them.
type refusingRuntime struct {
	nriv1beta1.UnimplementedRuntimeServiceServer
	mu    sync.Mutex
	calls int
}

func (r *refusingRuntime) RegisterPlugin(*nriv1beta1.RegisterPluginRequest, grpc.ServerStreamingServer[nriv1beta1.RegisterPluginResponse]) error {
	r.mu.Lock()
	r.calls++
	r.mu.Unlock()
	return status.Error(codes.ResourceExhausted, "too many registrations")
}

// TestRefusedByServingServerBacksOff: a refusal by a nrid that serves is
// retried after the backoff, not as soon as the socket accepts
// connections.
func TestRefusedByServingServerBacksOff(t *testing.T) {
	sock, pluginDir := sockDirs(t)
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	rt := &refusingRuntime{}
	gs := grpc.NewServer(grpc.Creds(peercred.Credentials{}), codec.ServerOption())
	nriv1beta1.RegisterRuntimeServiceServer(grpcreg.Registrar(gs), rt)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	logs := newLogSink(t)
	runPlugin(t, context.Background(), hourly, plugin.WithName("refused"), plugin.WithIndex("10"),
		plugin.WithLogger(slog.New(logs)), plugin.WithServerAddress("unix://"+sock), plugin.WithSocketDir(pluginDir))
	rec, _ := logs.wait(t, 0, "registration failed; retrying with backoff (further failures are logged at debug level)")
	d, err := time.ParseDuration(rec.attrs["retry_in"])
	if err != nil || d < 30*time.Minute {
		t.Fatalf("the plugin logged %v; want a retry after the backoff's [30m, 1h]", rec.attrs)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.calls != 1 {
		t.Errorf("%d registrations, want 1", rt.calls)
	}
}

// BenchmarkRegisterAgain measures how long a plugin takes to register again
// after nrid, killed, listens again on its socket (ns/op: from the new
// server's Serve to the plugin's Registered). The plugin's backoff is an
// hour: only the watch of the socket brings it back.
func BenchmarkRegisterAgain(b *testing.B) {
	sock, pluginDir := sockDirs(b)
	logs := newLogSink(b)
	log := slog.New(logs)
	srv := serveAt(b, sock, pluginDir, slog.New(slog.DiscardHandler))
	p, err := plugin.New(&recorder{c: newCalls()}, hourly, plugin.WithName("bench"), plugin.WithIndex("10"),
		plugin.WithLogger(log), plugin.WithServerAddress("unix://"+sock), plugin.WithSocketDir(pluginDir))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitRegistered(b, p)
	from := 0
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		srv.kill()
		_, from = logs.wait(b, from, "registration ended; registering again")
		b.StartTimer()
		start := time.Now()
		srv = serveAt(b, sock, pluginDir, slog.New(slog.DiscardHandler))
		waitRegistered(b, p)
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/reregistration")
}
