package conformance

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// Plugin status and plugin-requested resync (docs/PROTOCOL.md, "Plugin
// status and resync"): a plugin reports READY, NOT_READY or DEGRADED; the
// operator's NOT_READY policy (wait, fail, skip) decides what its events
// do meanwhile; RequestResync brings a new Synchronize epoch.

// StatusReporter is implemented by the plugins of paths whose plugins can
// report their status and ask for a resync (gRPC plugins); the scenarios of
// group PluginStatus need it.
type StatusReporter interface {
	// SetStatus reports the plugin's status (SetPluginStatus).
	SetStatus(ctx context.Context, st nriv1beta1.PluginStatus, reason string) error
	// RequestResync asks for the state again and returns the epoch.
	RequestResync(ctx context.Context, reason string) (uint64, error)
}

// StatusGroup is the group of the plugin status scenarios.
const StatusGroup = "PluginStatus"

// withStatus makes a plugin register with a status.
func withStatus(st nriv1beta1.PluginStatus, reason string) Opt {
	return func(p *PluginSpec) { p.Status, p.StatusReason = st, reason }
}

// notReadyPolicy is the operator's NOT_READY policy for one plugin.
func notReadyPolicy(full string, pol nriv1beta1.NotReadyPolicy) func(string) *server.PluginPolicy {
	return func(f string) *server.PluginPolicy {
		if f != full {
			return nil
		}
		return &server.PluginPolicy{NotReady: pol}
	}
}

// reporter returns p's StatusReporter.
func (s *S) reporter(p Plugin) StatusReporter {
	s.Helper()
	r, ok := p.(StatusReporter)
	if !ok {
		s.Skipf("the plugins of this path cannot report their status (%T)", p)
	}
	return r
}

const (
	notReady = nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY
	ready    = nriv1beta1.PluginStatus_PLUGIN_STATUS_READY
	degraded = nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED
)

func init() {
	const g = StatusGroup
	add(Gap, g, "NOT_READY under wait: the event is not delivered while the plugin is NOT_READY and reaches it once it reports READY",
		Options{PluginPolicy: notReadyPolicy("10-warm", nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_WAIT)}, func(s *S) {
			s.Start("05", "first", events(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX))
			var released, early atomic.Bool
			warm := s.reporter(s.Start("10", "warm", events(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX), withStatus(notReady, "warming up"),
				handle(func(_ context.Context, method string, _ proto.Message) error {
					if method == "RunPodSandbox" && !released.Load() {
						early.Store(true)
					}
					return nil
				})))
			done := make(chan error, 1)
			go func() {
				done <- s.RT().RunPodSandbox(s.ctx, &nriv1beta1.RunPodSandboxRequest{Pod: newPod("pod0", nil)})
			}()
			s.must("the first plugin's call", s.Log().WaitFor(s.ctx, "05-first:RunPodSandbox", 1))
			released.Store(true)
			s.must("SetStatus READY", warm.SetStatus(s.ctx, ready, "warm"))
			s.must("RunPodSandbox", <-done)
			if early.Load() {
				s.Errorf("the plugin was called while NOT_READY")
			}
			eq(s, "calls", s.Log().Strings("RunPodSandbox"), []string{"05-first:RunPodSandbox", "10-warm:RunPodSandbox"})
		})
	add(Gap, g, "NOT_READY under wait: a required plugin still NOT_READY when its time ends fails the creating event, naming it",
		Options{}, func(s *S) {
			s.Start("10", "cold", events(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX), policy(true, false), withStatus(notReady, "loading"),
				timeouts(&nriv1beta1.Timeouts{Request: durationpb.New(shortCall)}))
			err := s.send("RunPodSandbox", newPod("pod0", nil), nil)
			s.failsWith("RunPodSandbox", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "10-cold", "NOT_READY")
			eq(s, "calls", s.Log().Strings("RunPodSandbox"), nil)
		})
	add(Gap, g, "NOT_READY under fail: a required plugin fails creating events at once; teardown goes on without it",
		Options{PluginPolicy: notReadyPolicy("10-strict", nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_FAIL)}, func(s *S) {
			s.Start("10", "strict", policy(true, false), withStatus(notReady, "no license"))
			s.Start("20", "next")
			pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
			err := s.send("RunPodSandbox", pod, nil)
			s.failsWith("RunPodSandbox", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "10-strict", "no license")
			s.must("StopPodSandbox", s.send("StopPodSandbox", pod, ctr))
			eq(s, "calls", s.Log().Strings("RunPodSandbox", "StopPodSandbox"), []string{"20-next:StopPodSandbox"})
		})
	add(Gap, g, "NOT_READY under skip: the plugin is not called and every event goes on, even for a required plugin",
		Options{PluginPolicy: notReadyPolicy("10-lazy", nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP)}, func(s *S) {
			s.Start("10", "lazy", policy(true, false), withStatus(notReady, ""))
			s.Start("20", "next")
			s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
			eq(s, "calls of the NOT_READY plugin", s.Log().Of("10-lazy", lifecycleEvents...), nil)
			if n := len(s.Log().Of("20-next", lifecycleEvents...)); n != len(lifecycleEvents) {
				s.Errorf("the next plugin got %d events, want %d", n, len(lifecycleEvents))
			}
		})
	add(Gap, g, "DEGRADED: events are delivered as for READY",
		Options{PluginPolicy: notReadyPolicy("10-deg", nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_FAIL)}, func(s *S) {
			p := s.reporter(s.Start("10", "deg", policy(true, false), withStatus(degraded, "cache cold")))
			s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
			s.must("SetStatus NOT_READY", p.SetStatus(s.ctx, notReady, "down"))
			err := s.send("RunPodSandbox", newPod("pod1", nil), nil)
			s.failsWith("RunPodSandbox while NOT_READY", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "10-deg")
			s.must("SetStatus DEGRADED", p.SetStatus(s.ctx, degraded, "half"))
			s.must("RunPodSandbox while DEGRADED", s.send("RunPodSandbox", newPod("pod2", nil), nil))
			if n := len(s.Log().Of("10-deg", "RunPodSandbox")); n != 2 {
				s.Errorf("the plugin got %d RunPodSandbox, want 2 (not the one while NOT_READY)", n)
			}
		})
	add(Gap, g, "RequestResync: a Synchronize of the answered epoch, reason PLUGIN_REQUESTED, reaches that plugin only, before its later events",
		Options{}, func(s *S) {
			s.Start("05", "bystander")
			p := s.reporter(s.Start("10", "asker"))
			epoch, err := p.RequestResync(s.ctx, "my view changed")
			s.must("RequestResync", err)
			if epoch != 2 {
				s.Errorf("epoch %d, want 2 (registration was 1)", epoch)
			}
			s.must("the requested Synchronize", s.Log().Wait(s.ctx, func(calls []Call) bool {
				for _, c := range calls {
					if c.String() == "10-asker:Synchronize" && c.Req.(*nriv1beta1.SynchronizeRequest).GetEpoch() == epoch {
						return true
					}
				}
				return false
			}))
			s.runPod(newPod("pod0", nil))
			var got []string
			for _, c := range s.Log().Of("10-asker", "Synchronize", "RunPodSandbox") {
				if r, ok := c.Req.(*nriv1beta1.SynchronizeRequest); ok {
					got = append(got, c.Method+" "+r.GetReason().String())
					continue
				}
				got = append(got, c.Method)
			}
			eq(s, "the asker's calls", got, []string{"Synchronize SYNC_REASON_REGISTRATION", "Synchronize SYNC_REASON_PLUGIN_REQUESTED", "RunPodSandbox"})
			if n := len(s.Log().Of("05-bystander", "Synchronize")); n != 1 {
				s.Errorf("the bystander was synchronized %d times, want 1", n)
			}
		})
}
