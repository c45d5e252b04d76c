package conformance

import (
	"context"
	"strings"
	"sync"
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Classic NRI's TestPluginConfigurationRequest, TestNRIVersionExchange and
// the TestPlugin*Metrics scenarios.

// configureOf returns the Configure request plugin received last.
func (s *S) configureOf(plugin string) *nriv1beta1.ConfigureRequest {
	s.Helper()
	calls := s.Log().Of(plugin, "Configure")
	if len(calls) == 0 {
		s.Fatalf("%s received no Configure", plugin)
	}
	return calls[len(calls)-1].Req.(*nriv1beta1.ConfigureRequest)
}

// MetricsRecorder is a Metrics that records plugin calls and
// synchronizations.
type MetricsRecorder struct {
	mu    sync.Mutex
	calls []MetricsCall
	syncs []MetricsSync
}

// MetricsCall is one recorded plugin call.
type MetricsCall struct {
	Plugin  string
	Event   nriv1beta1.Event
	Outcome nriv1beta1.CallOutcome
}

// MetricsSync is one recorded synchronization.
type MetricsSync struct {
	Plugin  string
	Objects int
}

var _ Metrics = (*MetricsRecorder)(nil)

func (m *MetricsRecorder) PluginCall(plugin string, event nriv1beta1.Event, outcome nriv1beta1.CallOutcome, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, MetricsCall{plugin, event, outcome})
}

func (m *MetricsRecorder) Synchronized(plugin string, objects, _ int, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncs = append(m.syncs, MetricsSync{plugin, objects})
}

// Calls returns the recorded calls of event.
func (m *MetricsRecorder) Calls(event nriv1beta1.Event) []MetricsCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []MetricsCall
	for _, c := range m.calls {
		if c.Event == event {
			out = append(out, c)
		}
	}
	return out
}

// Syncs returns the recorded synchronizations.
func (m *MetricsRecorder) Syncs() []MetricsSync {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]MetricsSync(nil), m.syncs...)
}

func init() {
	const g = "PluginConfigurationRequest"
	add(Upstream, g, "should pass runtime version information to plugins", Options{RuntimeName: "test-runtime", RuntimeVersion: "1.2.3"}, func(s *S) {
		s.Start("00", "test")
		cfg := s.configureOf("00-test")
		if cfg.GetRuntimeName() != "test-runtime" || cfg.GetRuntimeVersion() != "1.2.3" {
			s.Fatalf("Configure runtime %q %q, want test-runtime 1.2.3", cfg.GetRuntimeName(), cfg.GetRuntimeVersion())
		}
	})
	add(Upstream, g, "unchanged: should pass default timeout information to plugins", Options{}, func(s *S) {
		s.Start("00", "test")
		cfg := s.configureOf("00-test")
		if cfg.GetRegistrationTimeout() != 5000 || cfg.GetRequestTimeout() != 2000 {
			s.Fatalf("Configure timeouts: registration %d ms, request %d ms, want 5000 and 2000", cfg.GetRegistrationTimeout(), cfg.GetRequestTimeout())
		}
	})
	add(Upstream, g, "reconfigured: should pass configured timeout information to plugins",
		Options{RegistrationTimeout: 5*time.Second + 5*time.Millisecond, RequestTimeout: 2*time.Second + 7*time.Millisecond}, func(s *S) {
			s.Start("00", "test")
			cfg := s.configureOf("00-test")
			if cfg.GetRegistrationTimeout() != 5005 || cfg.GetRequestTimeout() != 2007 {
				s.Fatalf("Configure timeouts: registration %d ms, request %d ms, want 5005 and 2007", cfg.GetRegistrationTimeout(), cfg.GetRequestTimeout())
			}
		})
	add(Upstream, "NRIVersionExchange", "should pass runtime version information to plugins", Options{RuntimeName: "test-runtime", RuntimeVersion: "1.2.3"}, func(s *S) {
		s.Start("00", "test")
		cfg := s.configureOf("00-test")
		if cfg.GetRuntimeName() != "test-runtime" || cfg.GetRuntimeVersion() != "1.2.3" {
			s.Errorf("Configure runtime %q %q", cfg.GetRuntimeName(), cfg.GetRuntimeVersion())
		}
		// Classic overrides the advertised version for its test; nri-grpc
		// always advertises its protocol ("v1beta1 ...").
		if !strings.HasPrefix(cfg.GetNriVersion(), "v1beta1") {
			s.Errorf("Configure nri_version %q does not name the v1beta1 protocol", cfg.GetNriVersion())
		}
	})

	// Metrics: one call record per dispatched event, with its outcome;
	// classic's adjustment records are checked through the result the
	// runtime gets (nri-grpc's metrics carry no adjustment counts).
	const mg = "PluginMetrics"
	metrics := func(event string) func(s *S) {
		return func(s *S) {
			m := &MetricsRecorder{}
			env := s.MustEnv(Options{Metrics: m})
			s.env = env
			s.Start("00", "test")
			pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
			s.must(event, s.send(event, pod, ctr))
			got := m.Calls(eventOf[event])
			eq(s, event+" records", got, []MetricsCall{{"00-test", eventOf[event], nriv1beta1.CallOutcome_CALL_OUTCOME_OK}})
		}
	}
	for _, e := range lifecycleEvents {
		switch e {
		case "CreateContainer", "UpdateContainer", "StopContainer":
			continue
		}
		addManual(Upstream, mg, "TestPlugin"+e+"Metrics", metrics(e))
	}
	addManual(Upstream, mg, "TestPluginSynchronizeMetrics", func(s *S) {
		m := &MetricsRecorder{}
		s.env = s.MustEnv(Options{Metrics: m})
		s.Env().SetState(s.T, []*nriv1beta1.PodSandbox{newPod("pod0", nil)}, []*nriv1beta1.Container{newCtr("pod0", "ctr0")})
		s.Start("00", "test")
		eq(s, "synchronizations", m.Syncs(), []MetricsSync{{"00-test", 2}})
	})
	addManual(Upstream, mg, "TestPluginCreateContainerMetrics", func(s *S) {
		m := &MetricsRecorder{}
		s.env = s.MustEnv(Options{Metrics: m})
		s.Start("00", "test", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{
				Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"a": "b"}},
				Update: []*nriv1beta1.ContainerUpdate{containerUpdate("ctr9", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "1"}})},
				Evict:  []*nriv1beta1.ContainerEviction{{ContainerId: "ctr8", Reason: "make room"}},
			}, nil
		}))
		rsp := s.mustCreate(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		eq(s, "records", m.Calls(nriv1beta1.Event_EVENT_CREATE_CONTAINER),
			[]MetricsCall{{"00-test", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.CallOutcome_CALL_OUTCOME_OK}})
		if rsp.GetAdjust() == nil || len(rsp.GetUpdate()) != 1 || len(rsp.GetEvict()) != 1 {
			s.Fatalf("result: adjust %v, %d updates, %d evictions; want an adjustment, 1 and 1", rsp.GetAdjust(), len(rsp.GetUpdate()), len(rsp.GetEvict()))
		}
	})
	addManual(Upstream, mg, "TestPluginUpdateContainerMetrics", func(s *S) {
		m := &MetricsRecorder{}
		s.env = s.MustEnv(Options{Metrics: m})
		s.Start("00", "test", onUpdate(func(context.Context, *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
			return &nriv1beta1.UpdateContainerResponse{
				Update: []*nriv1beta1.ContainerUpdate{containerUpdate("ctr9", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "1"}})},
				Evict:  []*nriv1beta1.ContainerEviction{{ContainerId: "ctr8", Reason: "a"}, {ContainerId: "ctr7", Reason: "b"}},
			}, nil
		}))
		rsp, err := s.RT().UpdateContainer(s.ctx, &nriv1beta1.UpdateContainerRequest{Pod: newPod("pod0", nil), Container: newCtr("pod0", "ctr0"),
			LinuxResources: &nriv1beta1.LinuxResources{}})
		s.must("UpdateContainer", err)
		eq(s, "records", m.Calls(nriv1beta1.Event_EVENT_UPDATE_CONTAINER),
			[]MetricsCall{{"00-test", nriv1beta1.Event_EVENT_UPDATE_CONTAINER, nriv1beta1.CallOutcome_CALL_OUTCOME_OK}})
		if len(rsp.GetUpdate()) != 1 || len(rsp.GetEvict()) != 2 {
			s.Fatalf("result: %d updates, %d evictions; want 1 and 2", len(rsp.GetUpdate()), len(rsp.GetEvict()))
		}
	})
	addManual(Upstream, mg, "TestPluginStopContainerMetrics", func(s *S) {
		m := &MetricsRecorder{}
		s.env = s.MustEnv(Options{Metrics: m})
		s.Start("00", "test", onStop(func(context.Context, *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
			return &nriv1beta1.StopContainerResponse{
				Update: []*nriv1beta1.ContainerUpdate{containerUpdate("ctr9", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "1"}})},
			}, nil
		}))
		rsp, err := s.RT().StopContainer(s.ctx, &nriv1beta1.StopContainerRequest{Pod: newPod("pod0", nil), Container: newCtr("pod0", "ctr0")})
		s.must("StopContainer", err)
		eq(s, "records", m.Calls(nriv1beta1.Event_EVENT_STOP_CONTAINER),
			[]MetricsCall{{"00-test", nriv1beta1.Event_EVENT_STOP_CONTAINER, nriv1beta1.CallOutcome_CALL_OUTCOME_OK}})
		if len(rsp.GetUpdate()) != 1 || len(rsp.GetEvict()) != 0 {
			s.Fatalf("result: %d updates, %d evictions; want 1 and 0", len(rsp.GetUpdate()), len(rsp.GetEvict()))
		}
	})
	addManual(Upstream, mg, "TestPluginValidateContainerAdjustmentMetrics", func(s *S) {
		m := &MetricsRecorder{}
		s.env = s.MustEnv(Options{Metrics: m})
		s.Start("00", "test", onValidate(accept))
		s.mustCreate(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		eq(s, "records", m.Calls(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT),
			[]MetricsCall{{"00-test", nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT, nriv1beta1.CallOutcome_CALL_OUTCOME_OK}})
	})
}
