package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// cutWaits counts the server's CutWait observations per plugin, and the
// missed events (server.MissedMetrics).
type cutWaits struct {
	mu     sync.Mutex
	waits  map[string]int
	missed map[string]int
}

func newCutWaits() *cutWaits { return &cutWaits{waits: map[string]int{}, missed: map[string]int{}} }

func (m *cutWaits) PluginCall(string, nriv1beta1.Event, nriv1beta1.CallOutcome, time.Duration) {}
func (m *cutWaits) Synchronized(string, int, int, time.Duration)                               {}
func (m *cutWaits) Plugins(int)                                                                {}
func (m *cutWaits) FailedOpen(string, nriv1beta1.Event, nriv1beta1.CallOutcome)                {}
func (m *cutWaits) Deprecation(string, string)                                                 {}
func (m *cutWaits) CutWait(p string, _ time.Duration) {
	m.mu.Lock()
	m.waits[p]++
	m.mu.Unlock()
}
func (m *cutWaits) MissedEvent(p string, _ nriv1beta1.Event) {
	m.mu.Lock()
	m.missed[p]++
	m.mu.Unlock()
}
func (m *cutWaits) get(p string) (waits, missed int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waits[p], m.missed[p]
}

// slowRegistrant starts registering a plugin whose first Synchronize
// blocks until the returned release is called (then it succeeds), and
// returns once it is blocked there, with a channel that yields the
// registration's outcome.
func slowRegistrant(t *testing.T, h *harness, idx, name string, set func(*testplugin.Plugin)) (release func(), registered <-chan error) {
	t.Helper()
	syncing := make(chan struct{})
	rel := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(rel) }) }
	t.Cleanup(release)
	done := make(chan error, 1)
	first := true
	go func() {
		_, err := h.tryPlugin(idx, name, func(p *testplugin.Plugin) {
			p.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(200 * time.Millisecond), Synchronize: durationpb.New(10 * time.Minute)}
			// Every lifecycle event, not validation.
			p.Events = nri.AllEvents &^ nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)
			if set != nil {
				set(p)
			}
			p.OnSynchronize = func(ctx context.Context, _ *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
				if first {
					first = false
					close(syncing)
					select {
					case <-rel:
					case <-ctx.Done():
					}
				}
				return &nriv1beta1.SynchronizeResponse{}, nil
			}
		})
		done <- err
	}()
	select {
	case <-syncing:
	case <-time.After(wait()):
		t.Fatal("the registrant never reached Synchronize")
	}
	return release, done
}

// TestSynchronizingPluginWaitedForOnce: a registrant stuck in Synchronize
// is waited for by the first event it takes, within its timeout for it;
// every later event goes on without waiting until it is synchronized.
// Before, every event waited its full timeout (13 waits for 13 events).
func TestSynchronizingPluginWaitedForOnce(t *testing.T) {
	m := newCutWaits()
	h := newHarness(t, server.WithMetrics(m))
	h.attach(nil, nil)
	h.plugin("20", "healthy", nil)
	slowRegistrant(t, h, "10", "slow", nil)
	h.lifecycle(1)
	if waits, missed := m.get("10-slow"); waits != 1 || missed != len(lifecycleEvents) {
		t.Fatalf("events waited for the synchronizing plugin %d times and it missed %d events, want 1 wait and %d missed",
			waits, missed, len(lifecycleEvents))
	}
	eq(t, "healthy's calls", h.log.Strings(lifecycleEvents...), prefixed("20-healthy", lifecycleEvents))
}

func prefixed(full string, methods []string) []string {
	out := make([]string, len(methods))
	for i, m := range methods {
		out[i] = full + ":" + m
	}
	return out
}

// TestMissedEventsToldAfterSynchronize: what a plugin misses while it
// synchronizes is told to it right after its Synchronize returns, before
// any further event: a plugin with resync gets a second Synchronize
// (reason SYNC_REASON_MISSED_EVENTS) with the pod and its container; a plugin without resync gets the events as notifications
// (RunPodSandbox, PostCreateContainer for the CreateContainer it missed,
// PostStartContainer for StartContainer), in their order.
func TestMissedEventsToldAfterSynchronize(t *testing.T) {
	for _, resync := range []bool{true, false} {
		t.Run(map[bool]string{true: "resync", false: "no-resync"}[resync], func(t *testing.T) {
			m := newCutWaits()
			h := newHarness(t, server.WithMetrics(m))
			h.attach(nil, nil)
			release, registered := slowRegistrant(t, h, "10", "late", func(p *testplugin.Plugin) {
				p.Capabilities = &nriv1beta1.Capabilities{Resync: resync}
			})
			ctx := h.ctx()
			pod, ctr := fixture.Pod(1), fixture.Container(1, 0)
			if err := h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr}); err != nil {
				t.Fatal(err)
			}
			if err := h.srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: pod, Container: ctr}); err != nil {
				t.Fatal(err)
			}
			release()
			if err := <-registered; err != nil {
				t.Fatal(err)
			}
			// One more event after the registration: it must come after
			// what the plugin is told of the missed ones.
			if _, err := h.srv.PostStartContainer(ctx, &nriv1beta1.PostStartContainerRequest{Pod: pod, Container: ctr}); err != nil {
				t.Fatal(err)
			}
			if _, missed := m.get("10-late"); missed != 3 {
				t.Errorf("missed events counted: %d, want 3", missed)
			}
			calls := h.log.Of("10-late")
			var got []string
			for _, c := range calls {
				got = append(got, c.Method)
			}
			if resync {
				eq(t, "calls", got, []string{"Configure", "Synchronize", "Synchronize", "PostStartContainer"})
				s := calls[2].Req.(*nriv1beta1.SynchronizeRequest)
				if s.GetReason() != nriv1beta1.SyncReason_SYNC_REASON_MISSED_EVENTS || s.GetEpoch() != 2 ||
					len(s.GetPods()) != 1 || len(s.GetContainers()) != 1 || s.GetContainers()[0].GetId() != ctr.GetId() {
					t.Fatalf("second Synchronize = epoch %d reason %v, %d pods, %d containers, want epoch 2, MISSED_EVENTS, the pod and its container",
						s.GetEpoch(), s.GetReason(), len(s.GetPods()), len(s.GetContainers()))
				}
				return
			}
			eq(t, "calls", got, []string{"Configure", "Synchronize", "RunPodSandbox", "PostCreateContainer", "PostStartContainer", "PostStartContainer"})
		})
	}
}

// TestMissedEventLandingAfterSynchronizeIsTold: an event that went on
// without a synchronizing plugin but lands only after the plugin's
// Synchronize ended (a later plugin held it up) is still told to it, when
// it lands and before the pod's next event: a Synchronize with reason
// SYNC_REASON_MISSED_EVENTS for a plugin with resync, PostCreateContainer
// for one without.
func TestMissedEventLandingAfterSynchronizeIsTold(t *testing.T) {
	for _, resync := range []bool{true, false} {
		t.Run(map[bool]string{true: "resync", false: "no-resync"}[resync], func(t *testing.T) {
			h := newHarness(t, server.WithMaxTimeout(time.Hour))
			h.attach(nil, nil)
			inCreate, releaseCreate := holdingPlugin(h, "90", "holder")
			ctx := h.ctx()
			pod, ctr := fixture.Pod(1), fixture.Container(1, 0)
			if err := h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}); err != nil {
				t.Fatal(err)
			}
			release, registered := slowRegistrant(t, h, "10", "late", func(p *testplugin.Plugin) {
				p.Capabilities = &nriv1beta1.Capabilities{Resync: resync}
				// The PostCreateContainer below waits for the catch-up: no
				// bound but the test's.
				p.Timeouts.Events = []*nriv1beta1.EventTimeout{{Event: nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, Timeout: durationpb.New(time.Hour)}}
			})
			created := make(chan error, 1)
			go func() {
				_, err := h.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr})
				created <- err
			}()
			<-inCreate // it went on without 10-late, and is held by 90-holder
			release()
			if err := <-registered; err != nil {
				t.Fatal(err)
			}
			close(releaseCreate)
			if err := <-created; err != nil {
				t.Fatal(err)
			}
			if _, err := h.srv.PostCreateContainer(ctx, &nriv1beta1.PostCreateContainerRequest{Pod: pod, Container: ctr}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range h.log.Of("10-late") {
				got = append(got, c.Method)
			}
			if resync {
				eq(t, "calls", got, []string{"Configure", "Synchronize", "Synchronize", "PostCreateContainer"})
				return
			}
			eq(t, "calls", got, []string{"Configure", "Synchronize", "PostCreateContainer", "PostCreateContainer"})
		})
	}
}

// TestAttachDuringAnEventAPluginSaw: a runtime attaches while a
// CreateContainer that a plugin with resync has already seen is held up
// by a later plugin; the runtime's snapshot does not have the container
// yet. The plugin's resynchronization (epoch 2) replaces its view without
// it, so when the creation lands it is told again: a Synchronize of epoch
// 3, reason SYNC_REASON_MISSED_EVENTS, with the container. The attach
// itself did not wait for the held event.
func TestAttachDuringAnEventAPluginSaw(t *testing.T) {
	h := newHarness(t, server.WithMaxTimeout(time.Hour))
	pod, ctr := fixture.Pod(1), fixture.Container(1, 0)
	h.attach([]*nriv1beta1.PodSandbox{pod}, nil)
	h.plugin("10", "seer", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{Resync: true}
		p.Events = nri.AllEvents &^ nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)
	})
	inCreate, releaseCreate := holdingPlugin(h, "90", "holder")
	ctx := h.ctx()
	created := make(chan error, 1)
	go func() {
		_, err := h.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr})
		created <- err
	}()
	<-inCreate
	h.attach([]*nriv1beta1.PodSandbox{pod}, nil) // returns while the creation is held
	if err := h.log.WaitFor(ctx, "10-seer:Synchronize", 2); err != nil {
		t.Fatal(err)
	}
	close(releaseCreate)
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if err := h.log.WaitFor(ctx, "10-seer:Synchronize", 3); err != nil {
		t.Fatal(err)
	}
	var got []string
	var syncs []*nriv1beta1.SynchronizeRequest
	for _, c := range h.log.Of("10-seer") {
		got = append(got, c.Method)
		if s, ok := c.Req.(*nriv1beta1.SynchronizeRequest); ok {
			syncs = append(syncs, s)
		}
	}
	eq(t, "calls", got, []string{"Configure", "Synchronize", "CreateContainer", "Synchronize", "Synchronize"})
	if s := syncs[1]; s.GetEpoch() != 2 || s.GetReason() != nriv1beta1.SyncReason_SYNC_REASON_RUNTIME_RESTARTED || len(s.GetContainers()) != 0 {
		t.Errorf("resync: epoch %d reason %v, %d containers; want epoch 2, RUNTIME_RESTARTED, none", s.GetEpoch(), s.GetReason(), len(s.GetContainers()))
	}
	if s := syncs[2]; s.GetEpoch() != 3 || s.GetReason() != nriv1beta1.SyncReason_SYNC_REASON_MISSED_EVENTS ||
		len(s.GetContainers()) != 1 || s.GetContainers()[0].GetId() != ctr.GetId() {
		t.Errorf("catch-up: epoch %d reason %v, %d containers; want epoch 3, MISSED_EVENTS, the created container", s.GetEpoch(), s.GetReason(), len(s.GetContainers()))
	}
}

// holdingPlugin registers a plugin whose CreateContainer signals inCreate
// and holds the event until release is closed.
func holdingPlugin(h *harness, idx, name string) (inCreate, release chan struct{}) {
	inCreate, release = make(chan struct{}), make(chan struct{})
	h.plugin(idx, name, func(p *testplugin.Plugin) {
		p.Timeouts = &nriv1beta1.Timeouts{Request: durationpb.New(time.Hour)}
		p.OnCreateContainer = func(ctx context.Context, _ *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			close(inCreate)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &nriv1beta1.CreateContainerResponse{}, nil
		}
	})
	return inCreate, release
}

// TestPluginsChangedWhenReadyAgain: a watcher of PluginsChanged that saw a
// plugin resynchronizing (an attach) is woken when it is ready again.
// Before, only registrations and unregistrations woke it, and a watcher
// waiting for the plugin to be ready (nritest's re-registration check, a
// restart gate) waited until its own bound.
func TestPluginsChangedWhenReadyAgain(t *testing.T) {
	h := newHarness(t)
	h.attach(nil, nil)
	inResync := make(chan struct{})
	release := make(chan struct{})
	h.plugin("10", "p", func(p *testplugin.Plugin) {
		p.Capabilities = &nriv1beta1.Capabilities{Resync: true}
		p.OnSynchronize = func(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
			if req.GetEpoch() > 1 {
				close(inResync)
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return &nriv1beta1.SynchronizeResponse{}, nil
		}
	})
	h.attach(nil, nil)
	<-inResync
	ch := h.srv.PluginsChanged()
	if st := h.srv.Plugins()[0].GetState(); st != nriv1beta1.PluginState_PLUGIN_STATE_SYNCHRONIZING {
		t.Fatalf("state during the resync: %v", st)
	}
	close(release)
	select {
	case <-ch:
	case <-time.After(wait()):
		t.Fatal("PluginsChanged did not fire when the plugin was ready again")
	}
	if st := h.srv.Plugins()[0].GetState(); st != nriv1beta1.PluginState_PLUGIN_STATE_READY {
		t.Fatalf("state after PluginsChanged: %v, want READY", st)
	}
}
