package node

import (
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// teeMetrics is one server.Metrics that forwards to every sink (nil
// without any, the sink itself for one), and the optional metrics
// interfaces to the sinks that implement them.
func teeMetrics(sinks []server.Metrics) server.Metrics {
	switch len(sinks) {
	case 0:
		return nil
	case 1:
		return sinks[0]
	}
	return tee(sinks)
}

type tee []server.Metrics

var (
	_ server.FilterMetrics  = tee(nil)
	_ server.StatusMetrics  = tee(nil)
	_ server.MissedMetrics  = tee(nil)
	_ server.FailureMetrics = tee(nil)
)

func (t tee) PluginCall(plugin string, event nriv1beta1.Event, outcome nriv1beta1.CallOutcome, d time.Duration) {
	for _, m := range t {
		m.PluginCall(plugin, event, outcome, d)
	}
}

func (t tee) Synchronized(plugin string, objects, bytes int, d time.Duration) {
	for _, m := range t {
		m.Synchronized(plugin, objects, bytes, d)
	}
}

func (t tee) CutWait(plugin string, d time.Duration) {
	for _, m := range t {
		m.CutWait(plugin, d)
	}
}

func (t tee) Plugins(n int) {
	for _, m := range t {
		m.Plugins(n)
	}
}

func (t tee) FailedOpen(plugin string, event nriv1beta1.Event, outcome nriv1beta1.CallOutcome) {
	for _, m := range t {
		m.FailedOpen(plugin, event, outcome)
	}
}

func (t tee) Deprecation(plugin, kind string) {
	for _, m := range t {
		m.Deprecation(plugin, kind)
	}
}

func (t tee) Filtered(plugin string, event nriv1beta1.Event) {
	for _, m := range t {
		if f, ok := m.(server.FilterMetrics); ok {
			f.Filtered(plugin, event)
		}
	}
}

func (t tee) PluginStatus(plugin string, status nriv1beta1.PluginStatus) {
	for _, m := range t {
		if s, ok := m.(server.StatusMetrics); ok {
			s.PluginStatus(plugin, status)
		}
	}
}

func (t tee) NotReadySkip(plugin string, event nriv1beta1.Event) {
	for _, m := range t {
		if s, ok := m.(server.StatusMetrics); ok {
			s.NotReadySkip(plugin, event)
		}
	}
}

func (t tee) RequestedResync(plugin string) {
	for _, m := range t {
		if s, ok := m.(server.StatusMetrics); ok {
			s.RequestedResync(plugin)
		}
	}
}

func (t tee) MissedEvent(plugin string, event nriv1beta1.Event) {
	for _, m := range t {
		if mm, ok := m.(server.MissedMetrics); ok {
			mm.MissedEvent(plugin, event)
		}
	}
}

func (t tee) Evicted(plugin, reason string) {
	for _, m := range t {
		if f, ok := m.(server.FailureMetrics); ok {
			f.Evicted(plugin, reason)
		}
	}
}

func (t tee) Oversize(plugin string, event nriv1beta1.Event) {
	for _, m := range t {
		if f, ok := m.(server.FailureMetrics); ok {
			f.Oversize(plugin, event)
		}
	}
}
