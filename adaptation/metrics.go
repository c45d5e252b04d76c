package adaptation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/nri/pkg/api"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// Metrics is the runtime's metrics sink, upstream's interface: every call to
// a plugin is recorded with the plugin's full name ("10-name") and the
// event's name ("CreateContainer").
type Metrics interface {
	// RecordPluginInvocation records one call and its error (nil: success).
	RecordPluginInvocation(pluginName, operation string, err error)
	// RecordPluginLatency records how long one call took.
	RecordPluginLatency(pluginName, operation string, latency time.Duration)
	// RecordPluginAdjustments records what a plugin asked for. nri-grpc's
	// server merges adjustments without reporting them per plugin, so it
	// is never called (docs/embedding.md).
	RecordPluginAdjustments(pluginName, operation string, adjust *ContainerAdjustment, updates, evicts int)
	// UpdatePluginCount records the number of registered plugins.
	UpdatePluginCount(count int)
}

// noMetrics is the sink without WithMetrics.
type noMetrics struct{}

func (noMetrics) RecordPluginInvocation(string, string, error)                           {}
func (noMetrics) RecordPluginLatency(string, string, time.Duration)                      {}
func (noMetrics) RecordPluginAdjustments(string, string, *ContainerAdjustment, int, int) {}
func (noMetrics) UpdatePluginCount(int)                                                  {}

// serverMetrics feeds the runtime's Metrics from the server's measurements.
type serverMetrics struct{ m Metrics }

// outcomeErrors are the errors RecordPluginInvocation gets for the outcomes
// of failed calls, made once.
var outcomeErrors = func() map[nriv1beta1.CallOutcome]error {
	m := map[nriv1beta1.CallOutcome]error{}
	for v, name := range nriv1beta1.CallOutcome_name {
		if o := nriv1beta1.CallOutcome(v); o != nriv1beta1.CallOutcome_CALL_OUTCOME_OK {
			m[o] = errors.New("plugin call failed: " + name)
		}
	}
	return m
}()

// PluginCall implements server.Metrics.
func (s serverMetrics) PluginCall(plugin string, event nriv1beta1.Event, outcome nriv1beta1.CallOutcome, d time.Duration) {
	op := api.Event(event).PrettyName()
	s.m.RecordPluginLatency(plugin, op, d)
	var err error
	if outcome != nriv1beta1.CallOutcome_CALL_OUTCOME_OK {
		if err = outcomeErrors[outcome]; err == nil {
			err = fmt.Errorf("plugin call failed: %v", outcome)
		}
	}
	s.m.RecordPluginInvocation(plugin, op, err)
}

// Plugins implements server.Metrics.
func (s serverMetrics) Plugins(n int) { s.m.UpdatePluginCount(n) }

// Synchronized implements server.Metrics (upstream has no such measure).
func (serverMetrics) Synchronized(string, int, int, time.Duration) {}

// CutWait implements server.Metrics (upstream has no such measure).
func (serverMetrics) CutWait(string, time.Duration) {}

// FailedOpen implements server.Metrics (upstream has no such measure).
func (serverMetrics) FailedOpen(string, nriv1beta1.Event, nriv1beta1.CallOutcome) {}

// Deprecation implements server.Metrics; deprecations reach the runtime
// through its DeprecationRecorder (deprecationHook).
func (serverMetrics) Deprecation(string, string) {}

// Deprecation is a deprecated plugin behaviour a DeprecationRecorder is
// told of.
type Deprecation int

const (
	// DeprecatedStateChange: the plugin handles an event through the legacy
	// StateChange call instead of the event's dedicated RPC.
	DeprecatedStateChange Deprecation = iota + 1
)

// String names the deprecation as upstream does.
func (d Deprecation) String() string {
	switch d {
	case DeprecatedStateChange:
		return "deprecated StateChange"
	default:
		return fmt.Sprintf("unknown deprecation (%d)", d)
	}
}

// DeprecationRecorder is the runtime's sink for deprecated plugin
// behaviour.
type DeprecationRecorder interface {
	// PluginWarning reports deprecation d of plugin ("10-name"), details
	// saying what to change.
	PluginWarning(ctx context.Context, d Deprecation, plugin, details string)
}

// deprecationHook returns the server's deprecation hook for the runtime's
// recorder, nil without one (the server logs the first occurrence itself).
func (r *Adaptation) deprecationHook() func(plugin, kind string, event nriv1beta1.Event, details string) {
	if r.deprecation == nil {
		return nil
	}
	return func(plugin, kind string, _ nriv1beta1.Event, details string) {
		d := Deprecation(0)
		if kind == server.DeprecationStateChange {
			d = DeprecatedStateChange
		}
		r.deprecation.PluginWarning(context.Background(), d, plugin, details)
	}
}
