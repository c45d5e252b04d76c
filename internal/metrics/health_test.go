package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/metrics"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// Metrics counts evictions and oversize requests, and reads a server.
var (
	_ server.FailureMetrics = (*metrics.Metrics)(nil)
	_ metrics.Source        = (*server.Server)(nil)
)

// TestTimeoutEvictionIsCounted: a plugin that does not answer within the
// request timeout is evicted by a real server, and the eviction is counted
// with reason timeout beside the call's timeout outcome.
func TestTimeoutEvictionIsCounted(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	srv, sock, dir := startServer(t, m, server.WithRequestTimeout(200*time.Millisecond))
	p := &testplugin.Plugin{Name: "slow", Index: "10", Events: nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER),
		OnCreateContainer: func(ctx context.Context, _ *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
	startPlugin(t, sock, dir, p)
	// The series exist at 0 once the plugin registered, so that
	// increase() sees the first eviction.
	eq(t, "before", counters(gather(t, m), "nri_plugin_evictions_total"), []string{
		"plugin=10-slow,reason=protocol_error 0", "plugin=10-slow,reason=timeout 0"})
	if _, err := srv.CreateContainer(t.Context(), fixture.CreateContainerRequest(1, 0)); err != nil {
		t.Fatalf("CreateContainer = %v (the plugin's default policy ignores failures)", err)
	}
	fams := gather(t, m)
	eq(t, "evictions", counters(fams, "nri_plugin_evictions_total"), []string{
		"plugin=10-slow,reason=protocol_error 0", "plugin=10-slow,reason=timeout 1"})
	eq(t, "calls", counters(fams, "nri_plugin_calls_total"), []string{"event=create_container,outcome=timeout,plugin=10-slow 1"})
}

// TestOversizeRequestIsCounted: a request over a plugin's maximum message
// size is counted for that plugin only, and nobody is evicted.
func TestOversizeRequestIsCounted(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	srv, sock, dir := startServer(t, m)
	for _, p := range []*testplugin.Plugin{
		{Name: "small", Index: "10", Events: nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER),
			Capabilities: &nriv1beta1.Capabilities{MaxMessageSize: 64 << 10}},
		{Name: "big", Index: "20", Events: nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)},
	} {
		startPlugin(t, sock, dir, p)
	}
	ctx := t.Context()
	if _, err := srv.CreateContainer(ctx, fixture.CreateContainerRequest(1, 0)); err != nil {
		t.Fatal(err)
	}
	eq(t, "small request", counters(gather(t, m), "nri_plugin_oversize_requests_total"), nil)
	req := fixture.CreateContainerRequest(1, 1)
	req.Container.Args = append(req.Container.Args, strings.Repeat("x", 100<<10))
	if _, err := srv.CreateContainer(ctx, req); err != nil {
		t.Fatal(err)
	}
	fams := gather(t, m)
	eq(t, "oversize", counters(fams, "nri_plugin_oversize_requests_total"), []string{"event=create_container,plugin=10-small 1"})
	eq(t, "evictions", counters(fams, "nri_plugin_evictions_total"), []string{
		"plugin=10-small,reason=protocol_error 0", "plugin=10-small,reason=timeout 0",
		"plugin=20-big,reason=protocol_error 0", "plugin=20-big,reason=timeout 0"})
}

// TestRequiredPluginMissing: the operator's required plugins and those
// required until they are back are reported missing until they register.
func TestRequiredPluginMissing(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	eq(t, "unwatched", gauges(gather(t, m), "nri_required_plugin_missing"), nil)
	srv, sock, dir := startServer(t, m, server.WithValidator(validate.Config{RequiredPlugins: []string{"guard"}}))
	m.Watch(srv)
	srv.RequireUntilRegistered([]string{"20-back"})
	eq(t, "none registered", gauges(gather(t, m), "nri_required_plugin_missing"), []string{"plugin=20-back 1", "plugin=guard 1"})
	startPlugin(t, sock, dir, &testplugin.Plugin{Name: "guard", Index: "10"})
	eq(t, "guard registered", gauges(gather(t, m), "nri_required_plugin_missing"), []string{"plugin=20-back 1"})
	startPlugin(t, sock, dir, &testplugin.Plugin{Name: "back", Index: "20"})
	eq(t, "both registered", gauges(gather(t, m), "nri_required_plugin_missing"), nil)
}

// TestEventsHeld: an event waiting for a held plugin (a takeover's hold)
// shows in nri_events_held until the plugin registers.
func TestEventsHeld(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	srv, sock, dir := startServer(t, m)
	m.Watch(srv)
	eq(t, "idle", gauges(gather(t, m), "nri_events_held"), []string{" 0"})
	srv.HoldEvents([]string{"10-late"}, time.Now().Add(time.Hour))
	ctx, cancel := context.WithTimeout(t.Context(), wait())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)}) }()
	deadline := time.Now().Add(wait() / 2)
	for strings.Join(gauges(gather(t, m), "nri_events_held"), "") != " 1" {
		if time.Now().After(deadline) {
			t.Fatalf("nri_events_held never 1: %q", gauges(gather(t, m), "nri_events_held"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	startPlugin(t, sock, dir, &testplugin.Plugin{Name: "late", Index: "10"})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	eq(t, "released", gauges(gather(t, m), "nri_events_held"), []string{" 0"})
}

// TestGateAndServing: the gauges nrid sets itself.
func TestGateAndServing(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	fams := gather(t, m)
	eq(t, "gate", gauges(fams, "nri_restart_gate_waiting_plugins"), []string{" 0"})
	eq(t, "serving", gauges(fams, "nri_serving"), []string{" 0"})
	m.RestartGate(2)
	m.Serving(true)
	fams = gather(t, m)
	eq(t, "gate", gauges(fams, "nri_restart_gate_waiting_plugins"), []string{" 2"})
	eq(t, "serving", gauges(fams, "nri_serving"), []string{" 1"})
	m.RestartGate(0)
	m.Serving(false)
	fams = gather(t, m)
	eq(t, "gate", gauges(fams, "nri_restart_gate_waiting_plugins"), []string{" 0"})
	eq(t, "serving", gauges(fams, "nri_serving"), []string{" 0"})
}
