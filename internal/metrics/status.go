package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Plugin status metrics (server.StatusMetrics):
//
//	nri_plugin_status{plugin,status}                    gauge, 1 for the plugin's status, 0 for the others
//	nri_plugin_not_ready_skips_total{plugin,event}      counter
//	nri_plugin_requested_resyncs_total{plugin}          counter
//
// status is ready, not_ready or degraded. A plugin that unregisters loses
// its nri_plugin_status series (a gauge of a plugin that is not there would
// lie); its counters stay, as counters must. Plugins beyond WithMaxPlugins
// have no status series (plugin="other" cannot have one status) and are
// counted under plugin="other".

// statusLabels are the status label values, by PluginStatus number.
var statusLabels = map[nriv1beta1.PluginStatus]string{
	nriv1beta1.PluginStatus_PLUGIN_STATUS_READY:     "ready",
	nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY: "not_ready",
	nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED:  "degraded",
}

// statusMetrics are the vectors of the plugin status metrics.
type statusMetrics struct {
	status          *prometheus.GaugeVec
	notReadySkips   *prometheus.CounterVec
	requestedResync *prometheus.CounterVec
}

func newStatusMetrics(reg *prometheus.Registry) statusMetrics {
	sm := statusMetrics{
		status: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "status",
			Help: "Status a registered plugin reports: 1 for its status (ready, not_ready, degraded), 0 for the others.",
		}, []string{"plugin", "status"}),
		notReadySkips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "not_ready_skips_total",
			Help: "Events a NOT_READY plugin was not called for and that went on without it, by plugin and event.",
		}, []string{"plugin", "event"}),
		requestedResync: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "requested_resyncs_total",
			Help: "Resynchronizations plugins asked for (RequestResync; merged requests once), by plugin.",
		}, []string{"plugin"}),
	}
	reg.MustRegister(sm.status, sm.notReadySkips, sm.requestedResync)
	return sm
}

// PluginStatus records plugin's status; UNSPECIFIED drops its status
// series (the plugin is gone). It implements server.StatusMetrics.
func (m *Metrics) PluginStatus(plugin string, status nriv1beta1.PluginStatus) {
	if status == nriv1beta1.PluginStatus_PLUGIN_STATUS_UNSPECIFIED {
		for _, l := range statusLabels {
			m.st.status.DeleteLabelValues(plugin, l)
		}
		return
	}
	if m.lookup(plugin).label == OtherPlugin {
		return
	}
	for st, l := range statusLabels {
		v := 0.0
		if st == status {
			v = 1
		}
		m.st.status.WithLabelValues(plugin, l).Set(v)
	}
}

// NotReadySkip counts an event a NOT_READY plugin was not called for. It
// implements server.StatusMetrics.
func (m *Metrics) NotReadySkip(plugin string, event nriv1beta1.Event) {
	ev := enumLabel(event.String(), "EVENT_")
	if int(event) >= 0 && int(event) < len(m.eventNames) {
		ev = m.eventNames[event]
	}
	m.st.notReadySkips.WithLabelValues(m.lookup(plugin).label, ev).Inc()
}

// RequestedResync counts a resynchronization plugin asked for. It
// implements server.StatusMetrics.
func (m *Metrics) RequestedResync(plugin string) {
	m.st.requestedResync.WithLabelValues(m.lookup(plugin).label).Inc()
}
