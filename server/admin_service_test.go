package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// adminConn is an AdminService (and a guarded AdaptationService) of a
// server, served on a socket of its own and reached over a real gRPC
// connection.
type adminConn struct {
	admin nriv1beta1.AdminServiceClient
	adapt nriv1beta1.AdaptationServiceClient
}

func serveAdmin(t *testing.T, srv *server.Server, opts []server.AdminOption, dial ...grpc.DialOption) adminConn {
	t.Helper()
	dir, err := os.MkdirTemp("", "nria-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "admin.sock")
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(peercred.Credentials{}), codec.ServerOption(), grpc.ChainUnaryInterceptor(srv.SimulationGuard()))
	nriv1beta1.RegisterAdminServiceServer(g, srv.AdminService(opts...))
	nriv1beta1.RegisterAdaptationServiceServer(g, srv.AdaptationService())
	go func() { _ = g.Serve(lis) }()
	cc, err := grpc.NewClient("unix://"+sock, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption(),
	}, dial...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cc.Close()
		g.Stop()
		_ = os.RemoveAll(dir)
	})
	return adminConn{admin: nriv1beta1.NewAdminServiceClient(cc), adapt: nriv1beta1.NewAdaptationServiceClient(cc)}
}

// secrets is what the test plugin injects; it must never show in a
// redacted answer.
const (
	secretEnv        = "hunter2-env"
	secretAnnotation = "hunter2-annotation"
)

// injectSecrets makes a plugin set an env variable and an annotation.
func injectSecrets(p *testplugin.Plugin) {
	p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
		return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
			Annotations: map[string]string{"example.com/token": secretAnnotation},
			Env:         []*nriv1beta1.KeyValue{{Key: "TOKEN", Value: secretEnv}},
		}}, nil
	}
}

func leaks(m proto.Message, secrets ...string) string {
	text := prototext.Format(m)
	for _, s := range secrets {
		if strings.Contains(text, s) {
			return s
		}
	}
	return ""
}

func TestAdminListPluginsShowsCounters(t *testing.T) {
	h := newHarness(t)
	h.plugin("20", "watcher", only(nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_START_CONTAINER))
	h.plugin("10", "veto", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_START_CONTAINER)
		p.Handle = func(_ context.Context, method string, _ proto.Message) error {
			if method == "StartContainer" {
				return status.Error(codes.PermissionDenied, "not today")
			}
			return nil
		}
	})
	a := serveAdmin(t, h.srv, nil)
	ctx := h.ctx()
	for n := range 2 {
		if _, err := h.srv.CreateContainer(ctx, fixture.CreateContainerRequest(n, 0)); err != nil {
			t.Fatal(err)
		}
		err := h.srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: fixture.Pod(n), Container: fixture.Container(n, 0)})
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("StartContainer: %v, want the veto", err)
		}
	}
	rsp, err := a.admin.ListPlugins(ctx, &nriv1beta1.ListPluginsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range rsp.GetPlugins() {
		names = append(names, p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName())
	}
	eq(t, "plugins in dispatch order", names, []string{"10-veto", "20-watcher"})
	veto, watcher := rsp.GetPlugins()[0], rsp.GetPlugins()[1]
	if c := veto.GetCounters(); c.GetCalls() != 2 || c.GetVetoes() != 2 || c.GetErrors() != 0 {
		t.Errorf("10-veto counters: %v", c)
	}
	if !strings.Contains(veto.GetLastError(), "not today") {
		t.Errorf("10-veto last error %q", veto.GetLastError())
	}
	// The veto stops StartContainer before 20-watcher sees it.
	if c := watcher.GetCounters(); c.GetCalls() != 2 || c.GetVetoes() != 0 {
		t.Errorf("20-watcher counters: %v", c)
	}
	if watcher.GetLastError() != "" {
		t.Errorf("20-watcher last error %q", watcher.GetLastError())
	}
	eq(t, "20-watcher events", watcher.GetEvents(), []nriv1beta1.Event{nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_START_CONTAINER})
	if watcher.GetState() != nriv1beta1.PluginState_PLUGIN_STATE_READY || watcher.GetKind() != nriv1beta1.PluginKind_PLUGIN_KIND_REMOTE ||
		watcher.GetInstanceId() == "" || watcher.GetIdentity() == "" || watcher.GetRegisteredAt() == nil ||
		!strings.HasPrefix(watcher.GetEndpoint(), "unix://") || watcher.GetNriVersion() != "testplugin" {
		t.Errorf("20-watcher identity: %v", watcher)
	}
	if watcher.GetTimeouts().GetRequest().AsDuration() != server.DefaultRequestTimeout || watcher.GetFailurePolicy() == nil ||
		watcher.GetCapabilities().GetMaxMessageSize() == 0 {
		t.Errorf("20-watcher grants: %v", watcher)
	}
}

func TestAdminGetStatePagesTenThousandContainers(t *testing.T) {
	h := newHarness(t)
	const perPod, nPods = 16, 625
	var (
		pods []*nriv1beta1.PodSandbox
		ctrs []*nriv1beta1.Container
	)
	for n := range nPods {
		pods = append(pods, fixture.Pod(n))
		for c := range perPod {
			ctrs = append(ctrs, fixture.Container(n, c))
		}
	}
	h.attach(pods, ctrs)
	a := serveAdmin(t, h.srv, nil)
	stream, err := a.admin.GetState(h.ctx(), &nriv1beta1.GetStateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var gotPods, gotCtrs, pages, biggest int
	last := ""
	for {
		page, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pages++
		size := page.SizeVT()
		biggest = max(biggest, size)
		if size >= 4<<20 {
			t.Fatalf("page %d encodes to %d bytes, over 4 MiB", pages, size)
		}
		gotPods += len(page.GetPods())
		for _, c := range page.GetContainers() {
			if c.GetId() <= last {
				t.Fatalf("containers out of order: %s after %s", c.GetId(), last)
			}
			last = c.GetId()
			gotCtrs++
		}
		if pages == 1 || len(page.GetContainers()) > 0 && page.GetContainers()[0].GetEnv()[3] != "APP_ENV="+server.Redacted {
			if s := leaks(page, "postgres://storefront", "8f3b2a1c", "2026-11-22T02:13:44"); s != "" {
				t.Fatalf("page %d shows %q although redaction is on", pages, s)
			}
		}
	}
	t.Logf("%d pages, biggest %d bytes", pages, biggest)
	if gotPods != nPods || gotCtrs != nPods*perPod {
		t.Fatalf("got %d pods and %d containers, want %d and %d", gotPods, gotCtrs, nPods, nPods*perPod)
	}
	if pages < 2 {
		t.Errorf("%d containers came in %d page(s)", gotCtrs, pages)
	}
	// The server's cached objects were not touched by the redaction.
	if !proto.Equal(ctrs[0], fixture.Container(0, 0)) || !proto.Equal(pods[0], fixture.Pod(0)) {
		t.Error("GetState modified the server's cached objects")
	}
}

func TestAdminGetStateFiltersByPod(t *testing.T) {
	h := newHarness(t)
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1), fixture.Pod(2)},
		[]*nriv1beta1.Container{fixture.Container(1, 0), fixture.Container(2, 0), fixture.Container(2, 1)})
	a := serveAdmin(t, h.srv, nil)
	stream, err := a.admin.GetState(h.ctx(), &nriv1beta1.GetStateRequest{PodId: fixture.Pod(2).GetId()})
	if err != nil {
		t.Fatal(err)
	}
	page, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(page.GetPods()) != 1 || len(page.GetContainers()) != 2 || page.GetContainers()[0].GetPodSandboxId() != fixture.Pod(2).GetId() {
		t.Fatalf("pod filter: %d pods, %d containers", len(page.GetPods()), len(page.GetContainers()))
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("second page: %v", err)
	}
	stream, err = a.admin.GetState(h.ctx(), &nriv1beta1.GetStateRequest{PodId: "nope"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "pod_id") {
		t.Fatalf("unknown pod: %v, want NOT_FOUND naming pod_id", err)
	}
}

// watch opens WatchEvents and returns once the watch is in place.
func watch(t *testing.T, ctx context.Context, a adminConn, req *nriv1beta1.WatchEventsRequest) grpc.ServerStreamingClient[nriv1beta1.WatchEventsResponse] {
	t.Helper()
	stream, err := a.admin.WatchEvents(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	md, err := stream.Header()
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Get(nri.MetadataWatch)) != 1 {
		t.Fatalf("WatchEvents header %v lacks %s", md, nri.MetadataWatch)
	}
	return stream
}

// recvRecords reads n records.
func recvRecords(t *testing.T, stream grpc.ServerStreamingClient[nriv1beta1.WatchEventsResponse], n int) []*nriv1beta1.DispatchRecord {
	t.Helper()
	var out []*nriv1beta1.DispatchRecord
	for len(out) < n {
		rsp, err := stream.Recv()
		if err != nil {
			t.Fatalf("after %d records: %v", len(out), err)
		}
		out = append(out, rsp.GetRecord())
	}
	return out
}

func TestAdminWatchEventsRecordsEveryEventRedacted(t *testing.T) {
	h := newHarness(t)
	h.plugin("10", "inject", injectSecrets)
	h.plugin("20", "creates", only(nriv1beta1.Event_EVENT_CREATE_CONTAINER))
	a := serveAdmin(t, h.srv, nil)
	ctx, cancel := context.WithCancel(h.ctx())
	stream := watch(t, ctx, a, &nriv1beta1.WatchEventsRequest{})
	h.lifecycle(1)
	recs := recvRecords(t, stream, len(lifecycleEvents))
	var got []string
	for i, rec := range recs {
		got = append(got, strings.TrimPrefix(rec.GetEvent().String(), "EVENT_"))
		if rec.GetPodId() != fixture.Pod(1).GetId() || rec.GetOutcome() != nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_OK ||
			rec.GetDuration() == nil || rec.GetStartTime() == nil {
			t.Errorf("record %d: %v", i, rec)
		}
		if i > 0 && rec.GetSequence() <= recs[i-1].GetSequence() {
			t.Errorf("sequence %d after %d", rec.GetSequence(), recs[i-1].GetSequence())
		}
		if s := leaks(rec, secretEnv, secretAnnotation); s != "" {
			t.Errorf("record %v shows %q", rec.GetEvent(), s)
		}
	}
	eq(t, "watched events", got, []string{"RUN_POD_SANDBOX", "UPDATE_POD_SANDBOX", "POST_UPDATE_POD_SANDBOX", "CREATE_CONTAINER",
		"POST_CREATE_CONTAINER", "START_CONTAINER", "POST_START_CONTAINER", "UPDATE_CONTAINER", "POST_UPDATE_CONTAINER", "STOP_CONTAINER",
		"REMOVE_CONTAINER", "STOP_POD_SANDBOX", "REMOVE_POD_SANDBOX"})
	create := recs[3]
	var calls []string
	for _, c := range create.GetCalls() {
		calls = append(calls, c.GetPlugin().GetIndex()+"-"+c.GetPlugin().GetName()+":"+strings.TrimPrefix(c.GetOutcome().String(), "CALL_OUTCOME_"))
	}
	// 10-inject subscribed to everything, so it validates too (last).
	eq(t, "CreateContainer calls", calls, []string{"10-inject:OK", "20-creates:OK", "10-inject:OK"})
	changes := map[string]string{}
	for _, ch := range create.GetCalls()[0].GetChanges() {
		changes[ch.GetField().String()+" "+ch.GetKey()] = ch.GetValue()
	}
	if changes["FIELD_ENV TOKEN"] != server.Redacted || changes["FIELD_ANNOTATIONS example.com/token"] != server.Redacted {
		t.Errorf("10-inject changes: %v", changes)
	}
	if create.GetContainerId() != fixture.Container(1, 0).GetId() || create.GetContainerName() != "app-0" {
		t.Errorf("CreateContainer record names %q %q", create.GetContainerId(), create.GetContainerName())
	}
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("after the client went away: %v", err)
	}
}

func TestAdminWatchEventsFilters(t *testing.T) {
	h := newHarness(t)
	h.plugin("10", "starts", only(nriv1beta1.Event_EVENT_START_CONTAINER))
	a := serveAdmin(t, h.srv, nil)
	ctx := h.ctx()
	byEvent := watch(t, ctx, a, &nriv1beta1.WatchEventsRequest{Events: []nriv1beta1.Event{
		nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX}})
	byPlugin := watch(t, ctx, a, &nriv1beta1.WatchEventsRequest{Plugin: "starts"})
	byFull := watch(t, ctx, a, &nriv1beta1.WatchEventsRequest{Plugin: "10-starts"})
	byPod := watch(t, ctx, a, &nriv1beta1.WatchEventsRequest{PodId: fixture.Pod(2).GetId()})
	h.lifecycle(1)
	h.lifecycle(2)
	evs := func(recs []*nriv1beta1.DispatchRecord) (out []string) {
		for _, r := range recs {
			out = append(out, r.GetEvent().String()+"@"+r.GetPodId()[60:])
		}
		return out
	}
	p1, p2 := fixture.Pod(1).GetId()[60:], fixture.Pod(2).GetId()[60:]
	eq(t, "by event", evs(recvRecords(t, byEvent, 4)), []string{"EVENT_CREATE_CONTAINER@" + p1, "EVENT_REMOVE_POD_SANDBOX@" + p1,
		"EVENT_CREATE_CONTAINER@" + p2, "EVENT_REMOVE_POD_SANDBOX@" + p2})
	eq(t, "by plugin name", evs(recvRecords(t, byPlugin, 2)), []string{"EVENT_START_CONTAINER@" + p1, "EVENT_START_CONTAINER@" + p2})
	eq(t, "by full name", evs(recvRecords(t, byFull, 2)), []string{"EVENT_START_CONTAINER@" + p1, "EVENT_START_CONTAINER@" + p2})
	recs := recvRecords(t, byPod, len(lifecycleEvents))
	for _, r := range recs {
		if r.GetPodId() != fixture.Pod(2).GetId() {
			t.Fatalf("pod filter let through %v", r)
		}
	}
	_, err := watch2(ctx, a, &nriv1beta1.WatchEventsRequest{Events: []nriv1beta1.Event{nriv1beta1.Event_EVENT_LAST}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "events[0]") {
		t.Errorf("bad event filter: %v", err)
	}
}

func watch2(ctx context.Context, a adminConn, req *nriv1beta1.WatchEventsRequest) (*nriv1beta1.WatchEventsResponse, error) {
	stream, err := a.admin.WatchEvents(ctx, req)
	if err != nil {
		return nil, err
	}
	return stream.Recv()
}

func TestAdminSlowWatcherNeverBlocksDispatch(t *testing.T) {
	h := newHarness(t)
	// Fixed, small flow-control windows (no BDP growth) and a small watch
	// buffer, so a watcher that does not read is stalled quickly.
	a := serveAdmin(t, h.srv, []server.AdminOption{server.WithWatchBuffer(4)},
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	ctx := h.ctx()
	stalled := watch(t, ctx, a, &nriv1beta1.WatchEventsRequest{})

	// Far more records than the windows and buffers hold; nobody reads.
	const lifecycles = 200
	done := make(chan error, 1)
	go func() {
		for n := range lifecycles {
			if err := h.runLifecycle(n); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("dispatch blocked behind a watcher that does not read")
	}

	// The watcher reads again: it lost records, but it keeps working. Keep
	// dispatching marker pods until one of them reaches it.
	stop, stopped := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-stopped }()
	go func() {
		defer close(stopped)
		for n := 100000; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if h.runLifecycle(n) != nil {
				return
			}
		}
	}()
	var old int
	var prev uint64
	for {
		rsp, err := stalled.Recv()
		if err != nil {
			t.Fatal(err)
		}
		rec := rsp.GetRecord()
		if rec.GetSequence() <= prev {
			t.Fatalf("sequence %d after %d", rec.GetSequence(), prev)
		}
		prev = rec.GetSequence()
		if rec.GetPodId() >= fixture.Pod(100000).GetId() {
			break
		}
		old++
	}
	total := lifecycles * len(lifecycleEvents)
	t.Logf("the stalled watcher got %d of %d records", old, total)
	if old >= total {
		t.Errorf("the watcher got all %d records: it was never stalled, the test proves nothing", total)
	}
}

func TestAdminDryRunOnlyAsksDryRunPlugins(t *testing.T) {
	h := newHarness(t)
	h.plugin("10", "dry", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{DryRun: true}
		injectSecrets(p)
	})
	h.plugin("20", "wet", nil)
	h.log.Reset()
	a := serveAdmin(t, h.srv, nil)
	req := fixture.CreateContainerRequest(1, 0)
	rsp, err := a.admin.DryRun(h.ctx(), &nriv1beta1.DryRunRequest{Event: nriv1beta1.Event_EVENT_CREATE_CONTAINER, Pod: req.Pod, Container: req.Container})
	if err != nil || rsp.GetError() != "" {
		t.Fatalf("DryRun: %q %v", rsp.GetError(), err)
	}
	eq(t, "calls", h.log.Strings(), []string{"10-dry:CreateContainer"})
	if !h.log.Calls()[0].Req.(*nriv1beta1.CreateContainerRequest).GetDryRun() {
		t.Error("the dry-run plugin got a request without dry_run")
	}
	if len(rsp.GetNotEvaluated()) != 1 || rsp.GetNotEvaluated()[0].GetName() != "wet" {
		t.Errorf("not evaluated: %v", rsp.GetNotEvaluated())
	}
	if rsp.GetAdjust().GetAnnotations()["example.com/token"] != server.Redacted || len(rsp.GetAdjust().GetEnv()) != 1 ||
		rsp.GetAdjust().GetEnv()[0].GetValue() != server.Redacted {
		t.Errorf("adjust: %v", rsp.GetAdjust())
	}
	if s := leaks(rsp, secretEnv, secretAnnotation); s != "" {
		t.Errorf("DryRun answer shows %q", s)
	}
	rec := rsp.GetRecord()
	if !rec.GetDryRun() || len(rec.GetCalls()) < 2 {
		t.Fatalf("record: %v", rec)
	}
	outcomes := map[string]nriv1beta1.CallOutcome{}
	for _, c := range rec.GetCalls() {
		if _, seen := outcomes[c.GetPlugin().GetName()]; !seen {
			outcomes[c.GetPlugin().GetName()] = c.GetOutcome()
		}
	}
	if outcomes["dry"] != nriv1beta1.CallOutcome_CALL_OUTCOME_OK || outcomes["wet"] != nriv1beta1.CallOutcome_CALL_OUTCOME_NOT_EVALUATED {
		t.Errorf("record outcomes: %v", outcomes)
	}
	if _, err := a.admin.DryRun(h.ctx(), &nriv1beta1.DryRunRequest{Event: nriv1beta1.Event_EVENT_START_CONTAINER, Pod: req.Pod, Container: req.Container}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("DryRun of StartContainer: %v, want INVALID_ARGUMENT", err)
	}
}

func TestAdminRedactionCanBeTurnedOff(t *testing.T) {
	h := newHarness(t)
	h.plugin("10", "dry", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{DryRun: true}
		injectSecrets(p)
	})
	h.attach([]*nriv1beta1.PodSandbox{fixture.Pod(1)}, []*nriv1beta1.Container{fixture.Container(1, 0)})
	redacted := serveAdmin(t, h.srv, nil)
	clear := serveAdmin(t, h.srv, []server.AdminOption{server.WithoutRedaction()})
	ctx := h.ctx()

	state := func(a adminConn) *nriv1beta1.GetStateResponse {
		stream, err := a.admin.GetState(ctx, &nriv1beta1.GetStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		page, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	// Redacted first: the clear answer afterwards proves the cache is intact.
	r := state(redacted)
	c0 := r.GetContainers()[0]
	if c0.GetAnnotations()["io.kubernetes.container.hash"] != server.Redacted || r.GetPods()[0].GetAnnotations()["prometheus.io/port"] != server.Redacted {
		t.Errorf("annotations not redacted: %v", c0.GetAnnotations())
	}
	if !containsStr(c0.GetEnv(), "DATABASE_URL="+server.Redacted) || !containsStr(c0.GetEnv(), "LANG="+server.Redacted) {
		t.Errorf("env not redacted: %v", c0.GetEnv())
	}
	if c0.GetArgs()[0] != "/usr/local/bin/web-frontend" || c0.GetLabels()["io.kubernetes.container.name"] != "app-0" {
		t.Errorf("redaction went beyond env and annotation values: %v", c0)
	}
	got := state(clear)
	if !proto.Equal(got.GetContainers()[0], fixture.Container(1, 0)) || !proto.Equal(got.GetPods()[0], fixture.Pod(1)) {
		t.Errorf("without redaction the state differs from the runtime's")
	}

	stream := watch(t, ctx, clear, &nriv1beta1.WatchEventsRequest{Events: []nriv1beta1.Event{nriv1beta1.Event_EVENT_CREATE_CONTAINER}})
	if _, err := h.srv.CreateContainer(ctx, fixture.CreateContainerRequest(2, 0)); err != nil {
		t.Fatal(err)
	}
	rec := recvRecords(t, stream, 1)[0]
	if leaks(rec, secretEnv) == "" || leaks(rec, secretAnnotation) == "" {
		t.Errorf("without redaction the record hides the values: %v", rec)
	}
	req := fixture.CreateContainerRequest(3, 0)
	rsp, err := clear.admin.DryRun(ctx, &nriv1beta1.DryRunRequest{Event: nriv1beta1.Event_EVENT_CREATE_CONTAINER, Pod: req.Pod, Container: req.Container})
	if err != nil {
		t.Fatal(err)
	}
	if rsp.GetAdjust().GetEnv()[0].GetValue() != secretEnv || rsp.GetAdjust().GetAnnotations()["example.com/token"] != secretAnnotation {
		t.Errorf("without redaction DryRun hides the values: %v", rsp.GetAdjust())
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDeprecationsAreCountedAndLoggedOnce(t *testing.T) {
	var logs syncBuffer
	srv, err := server.New(server.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	old := &nriv1beta1.PluginInstance{Name: "classic", Index: "05"}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv.RecordDeprecation(old, server.DeprecationStateChange, nriv1beta1.Event_EVENT_START_CONTAINER, "only implements StateChange")
		}()
	}
	wg.Wait()
	srv.RecordDeprecation(old, server.DeprecationStateChange, nriv1beta1.Event_EVENT_POST_START_CONTAINER, "only implements StateChange")
	srv.RecordDeprecation(&nriv1beta1.PluginInstance{Name: "aaa", Index: "01"}, server.DeprecationStateChange, nriv1beta1.Event_EVENT_UNSPECIFIED, "x")

	a := serveAdmin(t, srv, nil)
	rsp, err := a.admin.ListDeprecations(context.Background(), &nriv1beta1.ListDeprecationsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range rsp.GetDeprecations() {
		got = append(got, fmt.Sprintf("%s-%s %s %v %d", d.GetPlugin().GetIndex(), d.GetPlugin().GetName(), d.GetKind(), d.GetEvent(), d.GetCount()))
		if d.GetFirstSeen() == nil || d.GetDetails() == "" {
			t.Errorf("deprecation %v lacks first_seen or details", d)
		}
	}
	eq(t, "deprecations (plugin, kind, event order)", got, []string{
		"01-aaa StateChange EVENT_UNSPECIFIED 1",
		"05-classic StateChange EVENT_START_CONTAINER 10",
		"05-classic StateChange EVENT_POST_START_CONTAINER 1",
	})
	if n := strings.Count(logs.String(), "deprecated plugin behaviour"); n != 3 {
		t.Errorf("logged %d times, want once per plugin, kind and event:\n%s", n, logs.String())
	}
}

func TestSimulationRefusedWhileRuntimeAttached(t *testing.T) {
	h := newHarness(t)
	a := serveAdmin(t, h.srv, nil)
	sim := metadata.AppendToOutgoingContext(h.ctx(), nri.MetadataSimulate, "1")
	pod := fixture.Pod(1)
	if _, err := a.adapt.RunPodSandbox(sim, &nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatalf("simulated call without a runtime: %v", err)
	}
	h.attach(nil, nil)
	_, err := a.adapt.RunPodSandbox(sim, &nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: fixture.Pod(2)})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "simulated") {
		t.Fatalf("simulated call with a runtime attached: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := a.adapt.RunPodSandbox(h.ctx(), &nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: fixture.Pod(3)}); err != nil {
		t.Fatalf("real call with a runtime attached: %v", err)
	}
	h.srv.DetachRuntime(h.rt)
	if _, err := a.adapt.RemovePodSandbox(sim, &nriv1beta1.AdaptationServiceRemovePodSandboxRequest{Pod: pod}); err != nil {
		t.Fatalf("simulated call after the runtime detached: %v", err)
	}
}
