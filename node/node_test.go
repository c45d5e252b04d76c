package node_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/nri-grpc/nri-grpc/config"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/node"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/server"
)

// testCtx ends before the test binary's deadline.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	t.Cleanup(cancel)
	return ctx
}

// testConfig is the default configuration with the sockets in a
// temporary directory.
func testConfig(t *testing.T) *config.Config {
	dir, err := os.MkdirTemp("", "node-test-") // short: unix socket paths are bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := config.Default()
	cfg.Server.Socket = filepath.Join(dir, "nri.sock")
	cfg.Server.PluginSocketDir = filepath.Join(dir, "plugins")
	return cfg
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// started is a node serving on its listeners.
type started struct {
	n      *node.Node
	l      node.Listeners
	cfg    *config.Config
	served chan error
	end    context.CancelFunc
}

// start builds, listens and serves; the cleanup stops it.
func start(t *testing.T, cfg *config.Config, opts ...node.Option) *started {
	t.Helper()
	ctx := testCtx(t)
	n, err := node.New(ctx, cfg, append([]node.Option{node.WithLogger(quiet())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := n.Listen()
	if err != nil {
		n.Stop(ctx)
		t.Fatal(err)
	}
	sctx, end := context.WithCancel(ctx)
	s := &started{n: n, l: l, cfg: cfg, served: make(chan error, 1), end: end}
	go func() { s.served <- n.Serve(sctx, l) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *started) stop(t *testing.T) {
	s.n.Stop(testCtx(t))
	s.end()
}

func (s *started) conn(t *testing.T) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("unix://"+s.cfg.Server.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// waitHealth waits until service's health status is want.
func waitHealth(t *testing.T, cc *grpc.ClientConn, service string, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	w, err := healthpb.NewHealthClient(cc).Watch(testCtx(t), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatal(err)
	}
	for {
		rsp, err := w.Recv()
		if err != nil {
			t.Fatalf("health of %q: %v, want %v", service, err, want)
		}
		if rsp.GetStatus() == want {
			return
		}
	}
}

func check(t *testing.T, cc *grpc.ClientConn, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	rsp, err := healthpb.NewHealthClient(cc).Check(testCtx(t), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("health of %q: %v", service, err)
	}
	return rsp.GetStatus()
}

// TestHealthAndStop: a node starts NOT_SERVING; SetServing sets the
// server's and every service's status; Stop ends Watch streams with a last
// NOT_SERVING and UNAVAILABLE "NAME is stopping", Serve returns nil once
// its context ends, and the socket file is gone.
func TestHealthAndStop(t *testing.T) {
	cfg := testConfig(t)
	s := start(t, cfg, node.WithServiceName("test-node"))
	cc := s.conn(t)
	services := []string{"", nriv1beta1.RuntimeService_ServiceDesc.ServiceName, nriv1beta1.AdaptationService_ServiceDesc.ServiceName,
		nriv1beta1.AdminService_ServiceDesc.ServiceName}
	for _, svc := range services {
		if st := check(t, cc, svc); st != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("health of %q at the start = %v, want NOT_SERVING", svc, st)
		}
	}
	s.n.SetServing(true)
	for _, svc := range services {
		if st := check(t, cc, svc); st != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q after SetServing(true) = %v, want SERVING", svc, st)
		}
	}
	w, err := healthpb.NewHealthClient(cc).Watch(testCtx(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if rsp, err := w.Recv(); err != nil || rsp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("watch: %v, %v; want SERVING", rsp, err)
	}

	stopped := make(chan struct{})
	go func() { s.n.Stop(testCtx(t)); close(stopped) }()
	var last healthpb.HealthCheckResponse_ServingStatus
	for {
		rsp, err := w.Recv()
		if err != nil {
			if status.Code(err) != codes.Unavailable || status.Convert(err).Message() != "test-node is stopping" {
				t.Fatalf("the watch ended with %v, want UNAVAILABLE \"test-node is stopping\"", err)
			}
			break
		}
		last = rsp.GetStatus()
	}
	if last != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("the watch's last status = %v, want NOT_SERVING", last)
	}
	<-stopped
	select {
	case err := <-s.served:
		t.Fatalf("Serve returned %v before its context ended", err)
	default:
	}
	s.end()
	if err := <-s.served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Stat(cfg.Server.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket after Stop: %v, want it removed", err)
	}
}

// configured is a plugin that records the runtime it was configured with.
type configured struct {
	mu      sync.Mutex
	runtime string
}

func (h *configured) Configure(_ context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runtime = req.GetRuntimeName() + " " + req.GetRuntimeVersion()
	return &nriv1beta1.ConfigureResponse{}, nil
}

func (h *configured) CreateContainer(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return &nriv1beta1.CreateContainerResponse{}, nil
}

// runPlugin runs impl as plugin 10-hello against the node until the test
// ends, and waits for its registration.
func runPlugin(t *testing.T, s *started, impl any) (stop func()) {
	t.Helper()
	p, err := plugin.New(impl, plugin.WithName("hello"), plugin.WithIndex("10"),
		plugin.WithServerAddress("unix://"+s.cfg.Server.Socket), plugin.WithSocketDir(s.cfg.Server.PluginSocketDir),
		plugin.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the plugin's Run: %v", err)
		}
	})
	t.Cleanup(stop)
	if _, err := p.WaitRegistered(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return stop
}

// TestServerOptionsWin: WithServerOptions come after the configuration's
// options (runtime.name and version here), so they win.
func TestServerOptionsWin(t *testing.T) {
	cfg := testConfig(t)
	cfg.Runtime.Name, cfg.Runtime.Version = "from-config", "1"
	s := start(t, cfg, node.WithServerOptions(server.WithRuntime("from-embedder", "2")))
	h := &configured{}
	runPlugin(t, s, h)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.runtime != "from-embedder 2" {
		t.Errorf("the plugin was configured with runtime %q, want \"from-embedder 2\"", h.runtime)
	}
}

// TestPluginHealth: each plugin has a health service, SERVING while it is
// registered and SERVICE_UNKNOWN once it is gone; the node's own status
// does not follow it.
func TestPluginHealth(t *testing.T) {
	s := start(t, testConfig(t))
	cc := s.conn(t)
	stop := runPlugin(t, s, &configured{})
	waitHealth(t, cc, node.PluginHealthPrefix+"10-hello", healthpb.HealthCheckResponse_SERVING)
	if st := check(t, cc, ""); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("the node's health = %v, want NOT_SERVING (a plugin does not change it)", st)
	}
	stop()
	waitHealth(t, cc, node.PluginHealthPrefix+"10-hello", healthpb.HealthCheckResponse_SERVICE_UNKNOWN)
}

// sink is an embedder's metrics: it counts what it is told.
type sink struct {
	mu       sync.Mutex
	plugins  []int
	statuses map[string]nriv1beta1.PluginStatus
	changed  chan struct{}
}

func newSink() *sink {
	return &sink{statuses: map[string]nriv1beta1.PluginStatus{}, changed: make(chan struct{})}
}

func (m *sink) note(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *sink) PluginCall(string, nriv1beta1.Event, nriv1beta1.CallOutcome, time.Duration) {}
func (m *sink) Synchronized(string, int, int, time.Duration)                               {}
func (m *sink) CutWait(string, time.Duration)                                              {}
func (m *sink) Plugins(n int)                                                              { m.note(func() { m.plugins = append(m.plugins, n) }) }
func (m *sink) FailedOpen(string, nriv1beta1.Event, nriv1beta1.CallOutcome)                {}
func (m *sink) Deprecation(string, string)                                                 {}

// PluginStatus makes sink a server.StatusMetrics too.
func (m *sink) PluginStatus(plugin string, st nriv1beta1.PluginStatus) {
	m.note(func() { m.statuses[plugin] = st })
}
func (m *sink) NotReadySkip(string, nriv1beta1.Event) {}
func (m *sink) RequestedResync(string)                {}

// wait waits until ok holds.
func (m *sink) wait(t *testing.T, what string, ok func(*sink) bool) {
	t.Helper()
	ctx := testCtx(t)
	for {
		m.mu.Lock()
		done, changed := ok(m), m.changed
		m.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the embedder's metrics never saw %s", what)
		}
	}
}

// TestMetricsTeed: with metrics_address, the node serves its Prometheus
// metrics and the HTTP health probes, and an embedder's metrics
// (WithMetrics) see the same measurements, the optional StatusMetrics
// included.
func TestMetricsTeed(t *testing.T) {
	cfg := testConfig(t)
	cfg.Observability.MetricsAddress = "127.0.0.1:0"
	m := newSink()
	s := start(t, cfg, node.WithMetrics(m))
	if s.l.Metrics == nil {
		t.Fatal("Listen opened no metrics listener with metrics_address")
	}
	base := "http://" + s.l.Metrics.Addr().String()
	if code, _ := get(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before SetServing(true) = %d, want 503", code)
	}
	s.n.SetServing(true)
	if code, _ := get(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after SetServing(true) = %d, want 200", code)
	}
	runPlugin(t, s, &configured{})
	m.wait(t, "Plugins(1)", func(m *sink) bool { return len(m.plugins) > 0 && m.plugins[len(m.plugins)-1] == 1 })
	m.wait(t, "10-hello READY", func(m *sink) bool { return m.statuses["10-hello"] == nriv1beta1.PluginStatus_PLUGIN_STATUS_READY })
	_, body := get(t, base+"/metrics")
	if !strings.Contains(body, "\nnri_plugins_registered 1\n") {
		t.Errorf("/metrics has no nri_plugins_registered 1:\n%s", body)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rsp.StatusCode, string(b)
}

// TestListenWith: the listeners handed in are used as they are, only the
// missing ones are opened, and one the configuration does not name is
// closed.
func TestListenWith(t *testing.T) {
	cfg := testConfig(t)
	ctx := testCtx(t)
	n, err := node.New(ctx, cfg, node.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(ctx)
	if err := os.MkdirAll(filepath.Dir(cfg.Server.Socket), 0o755); err != nil {
		t.Fatal(err)
	}
	inherited, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.Server.Socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stray, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := n.ListenWith(node.Listeners{Unix: inherited, TCP: stray})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Unix != inherited {
		t.Error("ListenWith replaced the unix listener handed in")
	}
	if l.TCP != nil || l.Metrics != nil {
		t.Errorf("ListenWith returned TCP %v, metrics %v without tcp.address or metrics_address", l.TCP, l.Metrics)
	}
	if _, err := stray.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the TCP listener the configuration does not name: Accept = %v, want it closed", err)
	}
	if fi, err := os.Stat(cfg.Server.PluginSocketDir); err != nil || !fi.IsDir() {
		t.Errorf("the plugin socket directory was not prepared: %v", err)
	}
}

// TestListenFailsWhole: when one listener cannot be opened, Listen opens
// none.
func TestListenFailsWhole(t *testing.T) {
	cfg := testConfig(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg.Observability.MetricsAddress = busy.Addr().String()
	ctx := testCtx(t)
	n, err := node.New(ctx, cfg, node.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(ctx)
	if _, err := n.Listen(); err == nil || !strings.Contains(err.Error(), "observability.metrics_address") {
		t.Fatalf("Listen on a busy metrics address: %v, want an error naming observability.metrics_address", err)
	}
	if _, err := os.Stat(cfg.Server.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unix socket after the failed Listen: %v, want it closed and removed", err)
	}
}

// TestServeAfterStop: Serve on a stopped node returns ErrStopped and
// closes the listeners it was given.
func TestServeAfterStop(t *testing.T) {
	cfg := testConfig(t)
	ctx := testCtx(t)
	n, err := node.New(ctx, cfg, node.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	l, err := n.Listen()
	if err != nil {
		t.Fatal(err)
	}
	n.Stop(ctx)
	if err := n.Serve(ctx, l); !errors.Is(err, node.ErrStopped) {
		t.Fatalf("Serve after Stop = %v, want ErrStopped", err)
	}
	if _, err := os.Stat(cfg.Server.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket after Serve on a stopped node: %v, want it removed", err)
	}
}

// TestNewFailsBeforeListening: a [tcp] without its certificate fails New,
// naming the section, and nothing listens.
func TestNewFailsBeforeListening(t *testing.T) {
	cfg := testConfig(t)
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.TCP.CertFile = filepath.Join(t.TempDir(), "missing.pem")
	cfg.TCP.KeyFile = cfg.TCP.CertFile
	if _, err := node.New(testCtx(t), cfg, node.WithLogger(quiet())); err == nil || !strings.HasPrefix(err.Error(), "tcp:") {
		t.Fatalf("New with a missing certificate: %v, want an error starting with tcp:", err)
	}
	if _, err := os.Stat(cfg.Server.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket after a failed New: %v, want none", err)
	}
}

// TestStopHookAndTwice: a stop hook runs after the server's Shutdown
// started and while the gRPC endpoints still answer (NOT_SERVING); two
// concurrent Stops both return once the stop is done.
func TestStopHookAndTwice(t *testing.T) {
	cfg := testConfig(t)
	var s *started
	hookSaw := make(chan string, 1)
	hook := func(ctx context.Context) {
		select {
		case <-s.n.Server().Stopping():
		default:
			hookSaw <- "the hook ran before the server's Shutdown"
			return
		}
		cc, err := grpc.NewClient("unix://"+cfg.Server.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			hookSaw <- err.Error()
			return
		}
		defer cc.Close()
		rsp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			hookSaw <- "health in the hook: " + err.Error()
			return
		}
		hookSaw <- rsp.GetStatus().String()
	}
	s = start(t, cfg, node.WithStopHook(hook))
	s.n.SetServing(true)
	if st := check(t, s.conn(t), ""); st != healthpb.HealthCheckResponse_SERVING { // Serve runs
		t.Fatalf("health before the stop = %v, want SERVING", st)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { s.n.Stop(testCtx(t)) })
	}
	wg.Wait()
	if got := <-hookSaw; got != healthpb.HealthCheckResponse_NOT_SERVING.String() {
		t.Errorf("in the stop hook: %s, want health NOT_SERVING over the still open socket", got)
	}
	select {
	case got := <-hookSaw:
		t.Errorf("the hook ran twice (%s)", got)
	default:
	}
	if _, err := os.Stat(cfg.Server.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket after both Stops returned: %v, want it removed", err)
	}
}
