package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// initFiltered creates and registers nri_plugin_filtered_events_total.
func (m *Metrics) initFiltered() {
	m.filtered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "plugin", Name: "filtered_events_total",
		Help: "Events a plugin subscribed to but was not given because its event selectors exclude the pod or container, by plugin and event.",
	}, []string{"plugin", "event"})
	m.missed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "plugin", Name: "missed_events_total",
		Help: "Events a plugin missed while it synchronized (they waited for it once, then went on without it), told to it once synchronized, by plugin and event.",
	}, []string{"plugin", "event"})
	m.reg.MustRegister(m.filtered, m.missed)
}

// Filtered counts one event plugin subscribed to but was not given because
// its selectors exclude the event's pod or container. It implements
// server.FilterMetrics. The plugin label is bounded as for every metric
// (WithMaxPlugins); the event label is the event's name.
func (m *Metrics) Filtered(plugin string, event nriv1beta1.Event) {
	m.filtered.WithLabelValues(m.lookup(plugin).label, m.eventLabel(event)).Inc()
}

// eventLabel is the event label value of event: its name.
func (m *Metrics) eventLabel(event nriv1beta1.Event) string {
	if ev := int(event); ev >= 0 && ev < len(m.eventNames) {
		return m.eventNames[ev]
	}
	return enumLabel(event.String(), "EVENT_")
}

// MissedEvent counts one event plugin missed while it synchronized, told to
// it once it is synchronized. It implements server.MissedMetrics; labels
// are bounded as for Filtered.
func (m *Metrics) MissedEvent(plugin string, event nriv1beta1.Event) {
	m.missed.WithLabelValues(m.lookup(plugin).label, m.eventLabel(event)).Inc()
}
