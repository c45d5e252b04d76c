package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/selector"
	"github.com/nri-grpc/nri-grpc/server"
)

// hangingRegistrant starts registering a plugin whose first Synchronize
// blocks until the test ends, and returns once it is blocked there (after
// its registration cut: it is the slot's pending instance).
func hangingRegistrant(t *testing.T, h *harness, idx, name string, set func(*testplugin.Plugin)) {
	t.Helper()
	syncing := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	go func() {
		_, _ = h.tryPlugin(idx, name, func(p *testplugin.Plugin) {
			if set != nil {
				set(p)
			}
			p.OnSynchronize = func(ctx context.Context, _ *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
				close(syncing)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, status.Error(codes.Unavailable, "released")
			}
		})
	}()
	select {
	case <-syncing:
	case <-time.After(wait()):
		t.Fatal("the registrant never reached Synchronize")
	}
}

// TestPendingRegistrantDelaysOnlyItsEvents: a registrant hanging in
// Synchronize, with a long synchronization budget and long event timeouts,
// subscribed only to PostUpdatePodSandbox, must not delay any other event:
// they complete while it still hangs. Before the fix every event of every
// pod waited for it (its synchronization budget, 10 minutes here).
func TestPendingRegistrantDelaysOnlyItsEvents(t *testing.T) {
	h := newHarness(t, server.WithMaxTimeout(time.Hour))
	h.plugin("20", "healthy", nil)
	hangingRegistrant(t, h, "10", "stuck", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX)
		p.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(10 * time.Minute), Synchronize: durationpb.New(10 * time.Minute)}
	})
	done := make(chan error, 1)
	go func() {
		ctx := h.ctx()
		err := h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)})
		if err == nil {
			_, err = h.srv.CreateContainer(ctx, fixture.CreateContainerRequest(1, 0))
		}
		if err == nil {
			err = h.srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: fixture.Pod(1), Container: fixture.Container(1, 0)})
		}
		done <- err
	}()
	// No time bound stands for "not delayed": the registrant hangs until the
	// test ends, so the events can only finish here if they never waited.
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait()):
		t.Fatal("events the pending registrant does not subscribe to waited for it")
	}
	eq(t, "healthy's calls", h.log.Strings("RunPodSandbox", "CreateContainer", "StartContainer"),
		[]string{"20-healthy:RunPodSandbox", "20-healthy:CreateContainer", "20-healthy:StartContainer"})
}

// TestPendingRegistrantWaitedForWithinItsEventTimeout: an event the hanging
// registrant subscribed to waits for it only within the registrant's own
// timeout for that event; then it is skipped under ignore (the event goes on
// to the healthy plugin) or fails the event under fail, naming it.
func TestPendingRegistrantWaitedForWithinItsEventTimeout(t *testing.T) {
	for _, fail := range []bool{false, true} {
		name := map[bool]string{false: "ignore", true: "fail"}[fail]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, server.WithMaxTimeout(time.Hour))
			h.plugin("20", "healthy", nil)
			hangingRegistrant(t, h, "10", "stuck", func(p *testplugin.Plugin) {
				p.Events = nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX)
				p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: fail}
				p.Timeouts = &nriv1beta1.Timeouts{
					Request:     durationpb.New(200 * time.Millisecond),
					Synchronize: durationpb.New(10 * time.Minute),
				}
			})
			err := h.srv.RunPodSandbox(h.ctx(), &nriv1beta1.RunPodSandboxRequest{Pod: fixture.Pod(1)})
			if fail {
				if testplugin.Reason(err) != "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE" || !strings.Contains(err.Error(), "10-stuck") {
					t.Fatalf("RunPodSandbox = %v, want REQUIRED_UNAVAILABLE naming 10-stuck", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("RunPodSandbox = %v, want the ignore plugin skipped", err)
			}
			eq(t, "calls", h.log.Strings("RunPodSandbox"), []string{"20-healthy:RunPodSandbox"})
		})
	}
}

// TestAvailabilityCodesNeverEvict: RESOURCE_EXHAUSTED and CANCELLED from a
// plugin are availability failures under its policy, not protocol errors:
// the plugin stays registered and gets the next event.
func TestAvailabilityCodesNeverEvict(t *testing.T) {
	for _, code := range []codes.Code{codes.ResourceExhausted, codes.Canceled} {
		t.Run(code.String(), func(t *testing.T) {
			h := newHarness(t)
			first := true
			p := h.plugin("10", "busy", func(p *testplugin.Plugin) {
				p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
				p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
					if first {
						first = false
						return nil, status.Error(code, "busy, try later")
					}
					return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"busy": "served"}}}, nil
				}
			})
			if _, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0)); err != nil {
				t.Fatalf("first CreateContainer (ignore policy) = %v", err)
			}
			rsp, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 1))
			if err != nil || rsp.GetAdjust().GetAnnotations()["busy"] != "served" {
				t.Fatalf("second CreateContainer = %v, %v: the plugin should still be registered and serve it", rsp.GetAdjust(), err)
			}
			if sd := p.Shutdowns(); len(sd) != 0 {
				t.Fatalf("shutdowns: %v", sd)
			}
		})
	}
}

// TestRequestOverAPluginsMessageSizeEvictsNobody: a request larger than
// one plugin takes is nrid's own limit, not that plugin's failure: it is
// skipped under its policy and stays registered, and a plugin that takes
// larger messages still gets the event. Before the fix the client's
// RESOURCE_EXHAUSTED evicted every plugin the request was sent to.
func TestRequestOverAPluginsMessageSizeEvictsNobody(t *testing.T) {
	h := newHarness(t)
	small := h.plugin("10", "small", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
		p.Capabilities = &nriv1beta1.Capabilities{MaxMessageSize: 64 << 10}
	})
	big := h.plugin("20", "big", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
	})
	req := fixture.CreateContainerRequest(1, 0)
	req.Container.Args = append(req.Container.Args, strings.Repeat("x", 100<<10))
	if _, err := h.srv.CreateContainer(h.ctx(), req); err != nil {
		t.Fatalf("CreateContainer = %v", err)
	}
	eq(t, "calls", h.log.Strings("CreateContainer"), []string{"20-big:CreateContainer"})
	// Both still registered: a normal request reaches both.
	h.log.Reset()
	if _, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 1)); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls", h.log.Strings("CreateContainer"), []string{"10-small:CreateContainer", "20-big:CreateContainer"})
	if len(small.Shutdowns())+len(big.Shutdowns()) != 0 {
		t.Fatalf("shutdowns: %v %v", small.Shutdowns(), big.Shutdowns())
	}
}

// TestInvalidUTF8FromAPluginIsAProtocolError: a response with a string
// that is not UTF-8 never reaches the runtime: the plugin is treated as
// having sent garbage (skipped under ignore, evicted) and the event goes on.
func TestInvalidUTF8FromAPluginIsAProtocolError(t *testing.T) {
	h := newHarness(t)
	bad := h.plugin("10", "latin1", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Env: []*nriv1beta1.KeyValue{{Key: "CITY", Value: string([]byte{'M', 0xfc, 'n', 'c', 'h', 'e', 'n'})}}}}, nil
		}
	})
	h.plugin("20", "good", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"good": "1"}}}, nil
		}
	})
	rsp, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
	if err != nil {
		t.Fatalf("CreateContainer = %v", err)
	}
	if len(rsp.GetAdjust().GetEnv()) != 0 || rsp.GetAdjust().GetAnnotations()["good"] != "1" {
		t.Fatalf("adjust: %v", rsp.GetAdjust())
	}
	if !proto.Equal(rsp, proto.Clone(rsp)) { // the result marshals as protobuf-go would decode it
		t.Fatal("result does not round-trip")
	}
	select {
	case err := <-bad.SessionEnded():
		t.Logf("evicted: %v", err)
	case <-time.After(wait()):
		t.Fatal("the plugin that sent invalid UTF-8 was not evicted")
	}
}

// TestHugeVetoMessageIsClipped: what a plugin says in a veto reaches the
// runtime, the log and the records clipped to server.MaxMessageLen.
func TestHugeVetoMessageIsClipped(t *testing.T) {
	h := newHarness(t)
	h.plugin("10", "loud", func(p *testplugin.Plugin) {
		p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return nil, status.Error(codes.PermissionDenied, strings.Repeat("no! ", 256<<10))
		}
	})
	_, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0))
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("CreateContainer = %v", status.Code(err))
	}
	if n := len(status.Convert(err).Message()); n > server.MaxMessageLen+200 {
		t.Fatalf("veto message of %d bytes reached the runtime", n)
	}
	if le := h.srv.Plugins()[0].GetLastError(); len(le) > server.MaxMessageLen+200 {
		t.Fatalf("last error of %d bytes kept", len(le))
	}
}

// TestRegistrationLimits: what a registrant sends is bounded and checked
// before the endpoint is dialed, and refusals quote at most a prefix.
func TestRegistrationLimits(t *testing.T) {
	h := newHarness(t)
	// Half a MiB: over every field's bound, under the registration's own
	// limit (codec.MaxRegisterPluginRequest, TestRegistrationOverItsLimit).
	long := strings.Repeat("n", 512<<10)
	cases := []struct {
		what, name string
		set        func(*testplugin.Plugin)
		field      string
	}{
		{"a 512 KiB name", long, nil, "plugin_name"},
		{"a 512 KiB name with a bad character", long + ",", nil, "plugin_name"},
		{"plugin_version not UTF-8", "v", nil, "plugin_version"},
		{"nanos out of range", "d", func(p *testplugin.Plugin) {
			p.Timeouts = &nriv1beta1.Timeouts{Request: &durationpb.Duration{Seconds: 1, Nanos: 1_000_000_000}}
		}, "timeouts.request"},
		{"nanos of the other sign", "d", func(p *testplugin.Plugin) {
			p.Timeouts = &nriv1beta1.Timeouts{Synchronize: &durationpb.Duration{Seconds: 1, Nanos: -1}}
		}, "timeouts.synchronize"},
		{"a per-event entry without a duration", "d", func(p *testplugin.Plugin) {
			p.Timeouts = &nriv1beta1.Timeouts{Events: []*nriv1beta1.EventTimeout{{Event: nriv1beta1.Event_EVENT_CREATE_CONTAINER}}}
		}, "timeouts.events[0].timeout"},
		{"two per-event entries for one event", "d", func(p *testplugin.Plugin) {
			p.Timeouts = &nriv1beta1.Timeouts{Events: []*nriv1beta1.EventTimeout{
				{Event: nriv1beta1.Event_EVENT_CREATE_CONTAINER, Timeout: durationpb.New(time.Second)},
				{Event: nriv1beta1.Event_EVENT_CREATE_CONTAINER, Timeout: durationpb.New(2 * time.Second)}}}
		}, "timeouts.events[1].event"},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			client := h.runtimeClient()
			req := &nriv1beta1.RegisterPluginRequest{PluginName: c.name, PluginIdx: "10", Endpoint: "/nonexistent/dir/x.sock"}
			if c.field == "plugin_version" {
				req.PluginVersion = string([]byte{0xff, 0xfe})
			}
			if c.set != nil {
				p := &testplugin.Plugin{}
				c.set(p)
				req.Timeouts = p.Timeouts
			}
			stream, err := client.RegisterPlugin(h.ctx(), req)
			if err == nil {
				_, err = stream.Recv()
			}
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("got %v, want InvalidArgument (the rule, not the missing endpoint)", err)
			}
			msg := status.Convert(err).Message()
			if !strings.HasPrefix(msg, c.field+":") || len(msg) > 300 {
				t.Fatalf("message (%d bytes) %.300q should name %s and be short", len(msg), msg, c.field)
			}
		})
	}
}

// TestRegistrationOverItsLimit: a registration over the registration's own
// limit (1 MiB, well under the 4 MiB maximum message size) is refused from
// its size, before it is decoded, with RESOURCE_EXHAUSTED naming the limit
// in a short message.
func TestRegistrationOverItsLimit(t *testing.T) {
	h := newHarness(t)
	req := &nriv1beta1.RegisterPluginRequest{PluginName: strings.Repeat("n", codec.MaxRegisterPluginRequest), PluginIdx: "10",
		Endpoint: "/nonexistent/dir/x.sock"}
	stream, err := h.runtimeClient().RegisterPlugin(h.ctx(), req)
	if err == nil {
		_, err = stream.Recv()
	}
	msg := status.Convert(err).Message()
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(msg, "RegisterPluginRequest of ") ||
		!strings.Contains(msg, "limit of 1048576 bytes") || len(msg) > 200 {
		t.Fatalf("got %v, want RESOURCE_EXHAUSTED naming the registration's limit, short", err)
	}
}

// TestLargestRegistrationFitsItsLimit: a registration with every field and
// every selector at its bound encodes well under the registration's own
// limit, so the limit refuses only registrations nrid refuses anyway.
func TestLargestRegistrationFitsItsLimit(t *testing.T) {
	list := func() []string {
		l := make([]string, selector.MaxEntries)
		for i := range l {
			l[i] = strings.Repeat("x", selector.MaxEntryLen)
		}
		return l
	}
	req := &nriv1beta1.RegisterPluginRequest{
		PluginName: strings.Repeat("n", 128), PluginIdx: "10",
		NriVersion: strings.Repeat("v", server.MaxVersionLen), PluginVersion: strings.Repeat("v", server.MaxVersionLen),
		Endpoint: strings.Repeat("e", server.MaxEndpointLen), StatusReason: strings.Repeat("r", server.MaxMessageLen),
		Capabilities: &nriv1beta1.Capabilities{MaxConcurrentCalls: 1 << 31, DryRun: true, MaxMessageSize: 1 << 31, Resync: true},
		Timeouts:     &nriv1beta1.Timeouts{Request: durationpb.New(time.Hour), Synchronize: durationpb.New(time.Hour)},
		Status:       nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED,
	}
	for e := nriv1beta1.Event_EVENT_UNSPECIFIED + 1; e < nriv1beta1.Event_EVENT_LAST; e++ {
		req.Timeouts.Events = append(req.Timeouts.Events, &nriv1beta1.EventTimeout{Event: e, Timeout: durationpb.New(time.Hour)})
	}
	for range selector.MaxSelectors {
		req.Selectors = append(req.Selectors, &nriv1beta1.EventSelector{Namespaces: list(), ContainerNames: list(), RuntimeHandlers: list(),
			PodLabels: strings.Repeat("l", selector.MaxLabelSelectorLen)})
	}
	size := req.SizeVT()
	t.Logf("the largest valid registration: %d bytes, the limit %d", size, codec.MaxRegisterPluginRequest)
	if size > codec.MaxRegisterPluginRequest*7/8 {
		t.Fatalf("the largest valid registration is %d bytes, too close to or over its limit of %d", size, codec.MaxRegisterPluginRequest)
	}
}

// cancelAtDeadline answers CreateContainer with CANCELLED when the call's
// context ends, as tonic's timeout does for a slow Rust handler.
type cancelAtDeadline struct{ recordingImpl }

func (c *cancelAtDeadline) CreateContainer(ctx context.Context, _ *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	c.note("CreateContainer")
	<-ctx.Done()
	return nil, status.Error(codes.Canceled, "Timeout expired")
}

// TestCancelledAtTheDeadlineIsATimeout: a plugin that gives up on a call
// because its deadline passed, answering CANCELLED, timed out: the call
// counts as a timeout and the plugin is evicted (its policy does not keep
// it connected), whichever of its answer and nrid's own timer came first.
// A CANCELLED before the deadline stays an availability failure
// (TestAvailabilityCodesNeverEvict).
func TestCancelledAtTheDeadlineIsATimeout(t *testing.T) {
	h := newHarness(t)
	h.attach(nil, nil)
	impl := &cancelAtDeadline{recordingImpl{mask: nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)}}
	hd, err := h.srv.RegisterInProcess(h.ctx(), server.Registration{Name: "slow", Index: "10", Identity: "builtin",
		Timeouts: &nriv1beta1.Timeouts{Request: durationpb.New(100 * time.Millisecond)}}, impl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.CreateContainer(h.ctx(), fixture.CreateContainerRequest(1, 0)); err != nil {
		t.Fatalf("CreateContainer (ignore policy) = %v", err)
	}
	rsp, err := h.srv.AdminService().ListPlugins(h.ctx(), &nriv1beta1.ListPluginsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rsp.GetPlugins() {
		if c := p.GetCounters(); p.GetPlugin().GetName() == "slow" && (c.GetTimeouts() != 1 || c.GetUnavailable() != 0) {
			t.Fatalf("counters %v, want the call counted as a timeout", c)
		}
	}
	select {
	case <-hd.Done():
	case <-h.ctx().Done():
		t.Fatal("the plugin that timed out was not evicted")
	}
	if err := hd.Err(); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("why the plugin went: %v, want the request handling timeout", err)
	}
}
