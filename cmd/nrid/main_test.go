package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
)

// wantServices are the services nrid serves, and so what reflection lists
// (sorted). PluginService is not among them: plugins serve it.
var wantServices = []string{
	"grpc.health.v1.Health",
	"grpc.reflection.v1.ServerReflection",
	"grpc.reflection.v1alpha.ServerReflection",
	"nri.v1beta1.AdaptationService",
	"nri.v1beta1.AdminService",
	"nri.v1beta1.RuntimeService",
}

// TestDefaultsWithoutConfigFile runs nrid with nothing but --socket: the
// defaults serve at once, every service, on an owner-only socket.
func TestDefaultsWithoutConfigFile(t *testing.T) {
	dir := tempDir(t)
	sock := filepath.Join(dir, "nrid.sock")
	logs := newLogBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--socket", sock}, io.Discard, logs) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("nrid returned %v", err)
		}
	}()
	n := &nrid{sock: sock, logs: logs, stopped: true}
	logs.wait(t, reMsg("serving"), done)
	fi, err := os.Stat(sock)
	must(t, err == nil && fi.Mode().Perm() == 0o600, "socket %v mode %v, want 0600", err, fi.Mode())
	st, err := healthOf(t, n.conn(t), "")
	must(t, err == nil && st == healthpb.HealthCheckResponse_SERVING, "health %v %v", st, err)
	for _, svc := range []string{"nri.v1beta1.RuntimeService", "nri.v1beta1.AdminService", "nri.v1beta1.AdaptationService"} {
		st, err := healthOf(t, n.conn(t), svc)
		must(t, err == nil && st == healthpb.HealthCheckResponse_SERVING, "health of %s: %v %v", svc, st, err)
	}
	// The owner (we are root) may use AdminService.
	_, err = nriv1beta1.NewAdminServiceClient(n.conn(t)).ListPlugins(testCtx(t), &nriv1beta1.ListPluginsRequest{})
	must(t, err == nil, "ListPlugins: %v", err)
}

// TestReflectionListsExactlyWhatIsServed: reflection lists the services
// nrid serves, no more (PluginService, which plugins serve, is not listed:
// calling it on nrid would be UNIMPLEMENTED), and still describes
// PluginService for plugin authors.
func TestReflectionListsExactlyWhatIsServed(t *testing.T) {
	n := startNrid(t, "")
	stream, err := reflectionv1.NewServerReflectionClient(n.conn(t)).ServerReflectionInfo(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ask := func(req *reflectionv1.ServerReflectionRequest) *reflectionv1.ServerReflectionResponse {
		t.Helper()
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		rsp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return rsp
	}
	rsp := ask(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}})
	var got []string
	for _, s := range rsp.GetListServicesResponse().GetService() {
		got = append(got, s.GetName())
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(wantServices, ",") {
		t.Fatalf("reflection lists %v, want %v", got, wantServices)
	}
	rsp = ask(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{
		FileContainingSymbol: "nri.v1beta1.PluginService",
	}})
	if len(rsp.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Errorf("PluginService cannot be described: %v", rsp)
	}
	// What is listed is served: every listed nri service answers (an
	// error of its own, not UNIMPLEMENTED), and PluginService does not.
	_, err = nriv1beta1.NewPluginServiceClient(n.conn(t)).Configure(testCtx(t), &nriv1beta1.ConfigureRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("PluginService/Configure on nrid: %v, want UNIMPLEMENTED", err)
	}
	if _, err := nriv1beta1.NewAdminServiceClient(n.conn(t)).ListPlugins(testCtx(t), &nriv1beta1.ListPluginsRequest{}); err != nil {
		t.Errorf("AdminService/ListPlugins: %v", err)
	}
}

// TestHealthWaitsForRuntime: with runtime.required, health is NOT_SERVING
// until a runtime attaches and synchronizes, and again when it leaves.
func TestHealthWaitsForRuntime(t *testing.T) {
	n := startNrid(t, "[runtime]\nrequired = true\n")
	cc := n.conn(t)
	watch, err := healthpb.NewHealthClient(cc).Watch(testCtx(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	next := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		for {
			rsp, err := watch.Recv()
			if err != nil {
				t.Fatalf("waiting for %v: %v", want, err)
			}
			if rsp.GetStatus() == want {
				return
			}
		}
	}
	next(healthpb.HealthCheckResponse_NOT_SERVING)

	// A runtime attaches through AdaptationService.Attach and answers the
	// snapshot request with an empty state.
	actx, detach := context.WithCancel(testCtx(t))
	attach, err := nriv1beta1.NewAdaptationServiceClient(cc).Attach(actx)
	if err != nil {
		t.Fatal(err)
	}
	if err := attach.Send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Hello{
		Hello: &nriv1beta1.AttachHello{RuntimeName: "test-runtime", RuntimeVersion: "1"},
	}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			m, err := attach.Recv()
			if err != nil {
				return
			}
			if sr := m.GetSnapshotRequest(); sr != nil {
				_ = attach.Send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Snapshot{
					Snapshot: &nriv1beta1.StateSnapshot{RequestId: sr.GetRequestId()},
				}})
			}
		}
	}()
	next(healthpb.HealthCheckResponse_SERVING)
	detach()
	next(healthpb.HealthCheckResponse_NOT_SERVING)
}

// TestGracefulStop: on stop, registered plugins get Shutdown("server
// stopping") before nrid returns, and the socket is gone.
func TestGracefulStop(t *testing.T) {
	n := startNrid(t, "")
	p := &testplugin.Plugin{Name: "stopper", Index: "50"}
	if _, err := p.Start(testCtx(t), n.sock, n.plugins); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	n.stop(t)
	sd := p.Shutdowns()
	must(t, len(sd) == 1 && sd[0].GetKind() == nriv1beta1.ShutdownKind_SHUTDOWN_KIND_SERVER_STOPPING && sd[0].GetReason() == "server stopping",
		"shutdowns %v", sd)
	_, err := os.Lstat(n.sock)
	must(t, os.IsNotExist(err), "socket after stop: %v", err)
}

// grpcurl runs the grpcurl binary named by $GRPCURL (make test builds it).
func grpcurl(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("GRPCURL")
	if bin == "" {
		t.Skip("GRPCURL is not set; `make test` sets it")
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestGrpcurlListAndDescribe(t *testing.T) {
	if os.Getenv("GRPCURL") == "" {
		t.Skip("GRPCURL is not set; `make test` sets it")
	}
	sock := startNrid(t, "").sock
	protoset, err := filepath.Abs("../../gen/go/nri/v1beta1/nri.binpb")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range [][]string{
		{"-unix", "-plaintext", sock},                        // reflection
		{"-protoset", protoset, "-unix", "-plaintext", sock}, // the built descriptor set
	} {
		list := grpcurl(t, append(src[:len(src):len(src)], "list")...)
		if src[0] != "-protoset" {
			// Reflection lists exactly what nrid serves; the descriptor
			// set has every service of the API, PluginService included.
			if got := strings.Fields(list); strings.Join(got, ",") != strings.Join(wantServices, ",") {
				t.Errorf("grpcurl list: %v, want %v", got, wantServices)
			}
		}
		for _, svc := range []string{"nri.v1beta1.AdaptationService", "nri.v1beta1.AdminService", "nri.v1beta1.RuntimeService", "nri.v1beta1.PluginService"} {
			if svc != "nri.v1beta1.PluginService" && !strings.Contains(list, svc) {
				t.Errorf("grpcurl %v list: %s missing from\n%s", src, svc, list)
			}
			desc := grpcurl(t, append(src[:len(src):len(src)], "describe", svc)...)
			if !strings.Contains(desc, "is a service:") || !strings.Contains(desc, "rpc ") {
				t.Errorf("grpcurl describe %s:\n%s", svc, desc)
			}
		}
		desc := grpcurl(t, append(src[:len(src):len(src)], "describe", "nri.v1beta1.CreateContainerRequest")...)
		if !strings.Contains(desc, "Container being created") {
			t.Errorf("describe does not show the proto comments:\n%s", desc)
		}
	}
	out := grpcurl(t, "-unix", "-plaintext", sock, "grpc.health.v1.Health/Check")
	if !strings.Contains(out, "SERVING") {
		t.Errorf("health check: %s", out)
	}
}

// TestMetricsAndTracing: metrics_address serves Prometheus metrics, and
// tracing = "stdout" writes a span per call to standard output.
func TestMetricsAndTracing(t *testing.T) {
	dir := tempDir(t)
	sock := filepath.Join(dir, "nrid.sock")
	path := writeConfig(t, dir, "[observability]\ntracing = \"stdout\"\nmetrics_address = \"127.0.0.1:0\"\n")
	logs := newLogBuffer()
	var stdout syncWriter
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--config", path, "--socket", sock, "--plugin-socket-dir", filepath.Join(dir, "plugins")}, &stdout, logs)
	}()
	m := logs.wait(t, reLog(`msg=serving .*metrics=(\S+)`), done)
	n := &nrid{sock: sock, logs: logs, stopped: true}
	if _, err := listPlugins(t, n.conn(t)); err != nil {
		t.Fatal(err)
	}
	rsp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rsp.Body)
	rsp.Body.Close()
	must(t, rsp.StatusCode == 200 && strings.Contains(string(body), "nri_plugins_registered"), "metrics: %d\n%s", rsp.StatusCode, body)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	must(t, strings.Contains(stdout.String(), "nri.v1beta1.AdminService/ListPlugins"), "no span of ListPlugins on stdout:\n%s", stdout.String())
}

// syncWriter is a bytes.Buffer safe for concurrent writes.
type syncWriter struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestStopIsBounded: a call that never ends (a WatchEvents stream) does not
// hold nrid beyond server.stop_timeout.
// TestStopEndsWatches: an open WatchEvents stream does not hold up the
// graceful stop: it ends with UNAVAILABLE as the server starts stopping, so
// the stop bound never has to cut it.
func TestStopEndsWatches(t *testing.T) {
	n := startNrid(t, "[server]\nstop_timeout = \"30s\"\n")
	watch, err := nriv1beta1.NewAdminServiceClient(n.conn(t)).WatchEvents(testCtx(t), &nriv1beta1.WatchEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Header(); err != nil { // the watch is in place
		t.Fatal(err)
	}
	n.stop(t)
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "stopping") {
		t.Fatalf("the watch ended with %v, want UNAVAILABLE: the server is stopping", err)
	}
	if strings.Contains(n.logs.String(), "calls still running at the stop bound") {
		t.Fatal("the stop had to cut calls")
	}
}
