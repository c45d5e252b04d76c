package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// What the alerting rules (deploy/prometheus) need beyond the call metrics:
//
//	nri_plugin_evictions_total{plugin,reason}          counter, plugins the server disconnected for a failure (server.FailureMetrics)
//	nri_plugin_oversize_requests_total{plugin,event}   counter, requests over a plugin's maximum message size (server.FailureMetrics)
//	nri_events_held                                    gauge, events waiting for held plugins now (Watch)
//	nri_required_plugin_missing{plugin}                gauge, 1 per required plugin not registered (Watch)
//	nri_restart_gate_waiting_plugins                   gauge, plugins the restart gate still waits for (RestartGate)
//	nri_serving                                        gauge, 1 while nrid reports SERVING (Serving)
//
// reason is "timeout" (a request timed out and the plugin did not ask to
// stay connected) or "protocol_error" (an undecodable, malformed or
// unimplemented answer). The plugin label of the two counters is bounded as
// for every metric (WithMaxPlugins); nri_required_plugin_missing names the
// operator's configured plugins, a set the operator bounds.

// Eviction reasons, the reason label values of nri_plugin_evictions_total.
const (
	// EvictedTimeout is an eviction after a request timed out.
	EvictedTimeout = "timeout"
	// EvictedProtocolError is an eviction after a protocol error.
	EvictedProtocolError = "protocol_error"
)

// Source is what Metrics reads from the server at each scrape (Watch):
// *server.Server implements it.
type Source interface {
	// EventsHeld returns how many events wait for held plugins now.
	EventsHeld() int
	// MissingRequired returns the required plugins that are not
	// registered now.
	MissingRequired() []string
}

// healthMetrics are the vectors of health.go.
type healthMetrics struct {
	evictions *prometheus.CounterVec
	oversize  *prometheus.CounterVec
	gate      prometheus.Gauge
	serving   prometheus.Gauge
	watched   *sourceCollector
}

func newHealthMetrics(reg *prometheus.Registry) healthMetrics {
	hm := healthMetrics{
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "evictions_total",
			Help: "Plugins the server disconnected after a failed call, by plugin and reason (timeout, protocol_error).",
		}, []string{"plugin", "reason"}),
		oversize: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "oversize_requests_total",
			Help: "Requests not sent to a plugin because they are over its maximum message size (the plugin is skipped under its failure policy), by plugin and event.",
		}, []string{"plugin", "event"}),
		gate: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "restart_gate_waiting_plugins",
			Help: "Plugins registered before a restart or takeover that the restart gate still waits for (0 when it does not wait).",
		}),
		serving: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "serving",
			Help: "1 while nrid reports SERVING (its readiness), 0 while it does not.",
		}),
		watched: &sourceCollector{
			held: prometheus.NewDesc(Namespace+"_events_held",
				"Events waiting now for the plugins of a previous nrid after a takeover (the hold on events).", nil, nil),
			missing: prometheus.NewDesc(Namespace+"_required_plugin_missing",
				"1 for each required plugin (the operator's, or one required until it is back after a restart) that is not registered.", []string{"plugin"}, nil),
		},
	}
	reg.MustRegister(hm.evictions, hm.oversize, hm.gate, hm.serving, hm.watched)
	return hm
}

// sourceCollector reads a Source at each scrape.
type sourceCollector struct {
	held, missing *prometheus.Desc
	mu            sync.Mutex
	src           Source
}

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.held
	ch <- c.missing
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.src
	c.mu.Unlock()
	held := 0
	var missing []string
	if src != nil {
		held, missing = src.EventsHeld(), src.MissingRequired()
	}
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(held))
	for _, p := range missing {
		ch <- prometheus.MustNewConstMetric(c.missing, prometheus.GaugeValue, 1, p)
	}
}

// Watch makes every scrape read nri_events_held and
// nri_required_plugin_missing from src (until then: no events held, no
// plugin missing). A later call replaces src.
func (m *Metrics) Watch(src Source) {
	m.hm.watched.mu.Lock()
	defer m.hm.watched.mu.Unlock()
	m.hm.watched.src = src
}

// Evicted counts one plugin the server disconnected after a failed call,
// for reason (EvictedTimeout, EvictedProtocolError). It implements
// server.FailureMetrics.
func (m *Metrics) Evicted(plugin, reason string) {
	m.hm.evictions.WithLabelValues(m.lookup(plugin).label, reason).Inc()
}

// Oversize counts one request of event not sent to plugin because it is
// over the plugin's maximum message size. It implements
// server.FailureMetrics.
func (m *Metrics) Oversize(plugin string, event nriv1beta1.Event) {
	m.hm.oversize.WithLabelValues(m.lookup(plugin).label, m.eventLabel(event)).Inc()
}

// RestartGate records how many plugins the restart gate waits for now (0:
// it does not wait).
func (m *Metrics) RestartGate(waiting int) { m.hm.gate.Set(float64(waiting)) }

// Serving records whether nrid reports SERVING.
func (m *Metrics) Serving(serving bool) {
	v := 0.0
	if serving {
		v = 1
	}
	m.hm.serving.Set(v)
}
