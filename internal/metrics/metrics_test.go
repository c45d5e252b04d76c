package metrics_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/metrics"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// Metrics is a server.Metrics.
var _ server.Metrics = (*metrics.Metrics)(nil)

// wait bounds what a test waits for: the time left before the test
// binary's deadline (internal/testwait).
func wait() time.Duration { return testwait.Bound() }

// nopRuntime accepts every unsolicited update.
type nopRuntime struct{}

func (nopRuntime) UpdateContainers(context.Context, string, []*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	return nil, nil, nil
}

// startServer runs a real server with m (and opts) on a unix socket and
// returns it with its socket and plugin directory.
func startServer(t *testing.T, m server.Metrics, opts ...server.Option) (srv *server.Server, sock, pluginDir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	pluginDir = filepath.Join(dir, "p")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err = server.New(append([]server.Option{server.WithPluginSocketDir(pluginDir), server.WithDialer(transport.NewDialer()),
		server.WithMetrics(m), server.WithRuntime("test-runtime", "v0")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "nri.sock")
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(peercred.Credentials{}), codec.ServerOption())
	nriv1beta1.RegisterRuntimeServiceServer(g, srv.RuntimeService())
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait())
		defer cancel()
		_ = srv.Shutdown(ctx)
		g.Stop()
		_ = os.RemoveAll(dir)
	})
	return srv, sock, pluginDir
}

func startPlugin(t *testing.T, sock, pluginDir string, p *testplugin.Plugin) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	_, err := p.Start(ctx, sock, pluginDir)
	t.Cleanup(p.Stop)
	if err != nil {
		t.Fatalf("registering %s: %v", p.Full(), err)
	}
}

// scrape GETs url and parses the text exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	rsp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, rsp.Status)
	}
	if ct := rsp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want the text exposition", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rsp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// series returns the metrics of family name as "label=value,..." → metric.
func series(fams map[string]*dto.MetricFamily, name string) map[string]*dto.Metric {
	out := map[string]*dto.Metric{}
	for _, m := range fams[name].GetMetric() {
		var kv []string
		for _, l := range m.GetLabel() {
			kv = append(kv, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(kv)
		out[strings.Join(kv, ",")] = m
	}
	return out
}

// counters renders the counters of a family as "labels value" lines.
func counters(fams map[string]*dto.MetricFamily, name string) []string {
	var out []string
	for k, m := range series(fams, name) {
		out = append(out, fmt.Sprintf("%s %g", k, m.GetCounter().GetValue()))
	}
	sort.Strings(out)
	return out
}

// histCounts renders the sample counts of a histogram family as
// "labels count" lines.
func histCounts(fams map[string]*dto.MetricFamily, name string) []string {
	var out []string
	for k, m := range series(fams, name) {
		out = append(out, fmt.Sprintf("%s %d", k, m.GetHistogram().GetSampleCount()))
	}
	sort.Strings(out)
	return out
}

func eq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// TestScrapeShowsPluginCalls runs a real server with two real plugins,
// dispatches events and reads the metrics back over HTTP.
func TestScrapeShowsPluginCalls(t *testing.T) {
	m := metrics.New()
	srv, sock, pluginDir := startServer(t, m)
	pods := []*nriv1beta1.PodSandbox{fixture.Pod(1), fixture.Pod(2)}
	ctrs := []*nriv1beta1.Container{fixture.Container(1, 0), fixture.Container(1, 1), fixture.Container(2, 0)}
	if err := srv.SetRuntime(context.Background(), server.RuntimeInfo{Name: "test-runtime", Version: "v1"}, nopRuntime{}, pods, ctrs); err != nil {
		t.Fatal(err)
	}

	log := testplugin.NewLog()
	startPlugin(t, sock, pluginDir, &testplugin.Plugin{
		Name: "observed", Index: "10", Log: log,
		Events: nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_STOP_CONTAINER),
		OnStopContainer: func(context.Context, *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
			return nil, status.Error(codes.Internal, "cannot stop")
		},
	})
	startPlugin(t, sock, pluginDir, &testplugin.Plugin{
		Name: "vetoer", Index: "20", Log: log,
		Events: nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER),
		OnCreateContainer: func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return nil, status.Error(codes.PermissionDenied, "no")
		},
	})

	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	for i := range 3 {
		pod, ctr := fixture.Pod(3), fixture.Container(3, i)
		if _, err := srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr}); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("CreateContainer %d: %v, want the veto", i, err)
		}
	}
	for i := range 2 {
		pod, ctr := fixture.Pod(1), fixture.Container(1, i)
		if _, err := srv.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: pod, Container: ctr}); err != nil {
			t.Fatalf("StopContainer %d: %v", i, err)
		}
	}
	m.Deprecation("10-observed", server.DeprecationStateChange)
	m.FailedOpen("10-observed", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.CallOutcome_CALL_OUTCOME_TIMEOUT)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- m.ServeListener(sctx, lis) }()
	fams := scrape(t, "http://"+lis.Addr().String()+"/metrics")

	eq(t, "nri_plugin_calls_total", counters(fams, "nri_plugin_calls_total"), []string{
		"event=create_container,outcome=ok,plugin=10-observed 3",
		"event=create_container,outcome=veto,plugin=20-vetoer 3",
		"event=stop_container,outcome=error,plugin=10-observed 2",
	})
	eq(t, "nri_plugin_call_duration_seconds counts", histCounts(fams, "nri_plugin_call_duration_seconds"), []string{
		"event=create_container,plugin=10-observed 3",
		"event=create_container,plugin=20-vetoer 3",
		"event=stop_container,plugin=10-observed 2",
	})
	for k, s := range series(fams, "nri_plugin_call_duration_seconds") {
		h := s.GetHistogram()
		// 17 bounds from 50 µs to 10 s; the parser adds +Inf.
		if b := h.GetBucket(); h.GetSampleSum() <= 0 || len(b) != 18 || b[0].GetUpperBound() != 50e-6 ||
			b[16].GetUpperBound() != 10 || b[17].GetCumulativeCount() != h.GetSampleCount() {
			t.Errorf("latency %s: sum %g, %d buckets %v", k, h.GetSampleSum(), len(h.GetBucket()), h.GetBucket())
		}
	}
	if g := fams["nri_plugins_registered"].GetMetric(); len(g) != 1 || g[0].GetGauge().GetValue() != 2 {
		t.Errorf("nri_plugins_registered: %v, want 2", g)
	}
	for _, name := range []string{"nri_plugin_sync_objects", "nri_plugin_sync_bytes", "nri_plugin_sync_duration_seconds"} {
		eq(t, name+" counts", histCounts(fams, name), []string{"plugin=10-observed 1", "plugin=20-vetoer 1"})
	}
	for k, s := range series(fams, "nri_plugin_sync_objects") {
		if got := s.GetHistogram().GetSampleSum(); got != 5 {
			t.Errorf("nri_plugin_sync_objects %s: sum %g, want 2 pods + 3 containers", k, got)
		}
	}
	for k, s := range series(fams, "nri_plugin_sync_bytes") {
		// The state holds two pods and three containers of about 5 kB
		// between them.
		if got := s.GetHistogram().GetSampleSum(); got < 5000 {
			t.Errorf("nri_plugin_sync_bytes %s: sum %g, want the encoded size of the state", k, got)
		}
	}
	eq(t, "nri_plugin_deprecations_total", counters(fams, "nri_plugin_deprecations_total"),
		[]string{"kind=StateChange,plugin=10-observed 1"})
	eq(t, "nri_plugin_failed_open_total", counters(fams, "nri_plugin_failed_open_total"),
		[]string{"event=create_container,outcome=timeout,plugin=10-observed 1"})
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "promhttp_metric_handler_requests_total"} {
		if fams[name] == nil {
			t.Errorf("%s missing from the scrape", name)
		}
	}

	stop()
	if err := <-served; err != nil {
		t.Errorf("ServeListener after cancel: %v", err)
	}
}

// TestEveryOutcomeHasALabel checks the label values derived from the enums.
func TestEveryOutcomeHasALabel(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	for v := range nriv1beta1.CallOutcome_name {
		m.PluginCall("10-p", nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.CallOutcome(v), time.Millisecond)
	}
	// An enum value newer than this build still counts.
	m.PluginCall("10-p", nriv1beta1.Event(99), nriv1beta1.CallOutcome(42), time.Millisecond)
	fams := gather(t, m)
	eq(t, "outcomes", counters(fams, "nri_plugin_calls_total"), []string{
		"event=99,outcome=42,plugin=10-p 1",
		"event=run_pod_sandbox,outcome=error,plugin=10-p 1",
		"event=run_pod_sandbox,outcome=not_evaluated,plugin=10-p 1",
		"event=run_pod_sandbox,outcome=ok,plugin=10-p 1",
		"event=run_pod_sandbox,outcome=refused,plugin=10-p 1",
		"event=run_pod_sandbox,outcome=skipped,plugin=10-p 1",
		"event=run_pod_sandbox,outcome=timeout,plugin=10-p 1",
		"event=run_pod_sandbox,outcome=unavailable,plugin=10-p 1",
		"event=run_pod_sandbox,outcome=unspecified,plugin=10-p 1",
		"event=run_pod_sandbox,outcome=veto,plugin=10-p 1",
	})
	// Calls that were not made (skipped, not_evaluated) have no duration.
	eq(t, "durations", histCounts(fams, "nri_plugin_call_duration_seconds"), []string{
		"event=99,plugin=10-p 1",
		"event=run_pod_sandbox,plugin=10-p 7",
	})
}

func TestPluginLabelsAreBounded(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors(), metrics.WithMaxPlugins(2))
	for _, p := range []string{"10-a", "20-b", "30-c", "40-d", "10-a"} {
		m.PluginCall(p, nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.CallOutcome_CALL_OUTCOME_OK, time.Millisecond)
		m.CutWait(p, time.Millisecond)
	}
	fams := gather(t, m)
	eq(t, "calls", counters(fams, "nri_plugin_calls_total"), []string{
		"event=create_container,outcome=ok,plugin=10-a 2",
		"event=create_container,outcome=ok,plugin=20-b 1",
		"event=create_container,outcome=ok,plugin=other 2",
	})
	eq(t, "cut waits", histCounts(fams, "nri_plugin_cut_wait_seconds"), []string{
		"plugin=10-a 2", "plugin=20-b 1", "plugin=other 2",
	})
}

func TestServeFailsOnBadAddress(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	if err := m.Serve(context.Background(), "256.0.0.1:bad"); err == nil {
		t.Fatal("Serve on a bad address returned nil")
	}
}

// gather scrapes m through its handler over a real listener.
func gather(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: wait()}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Close()
	return scrape(t, "http://"+lis.Addr().String()+"/")
}
