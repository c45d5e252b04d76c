package metrics

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Info describes one metric family nrid exports.
type Info struct {
	// Name is the family's name ("nri_plugin_calls_total").
	Name string
	// Type is "counter", "gauge", "histogram", "summary" or "untyped".
	Type string
	// Labels are the family's label names, sorted.
	Labels []string
	// Help is the family's help text.
	Help string
}

// Series returns the names of the series a query can select for the
// family: the name itself, and for a histogram (summary) its _bucket
// (quantile-labelled), _sum and _count series.
func (i Info) Series() []string {
	switch i.Type {
	case "histogram":
		return []string{i.Name + "_bucket", i.Name + "_sum", i.Name + "_count"}
	case "summary":
		return []string{i.Name, i.Name + "_sum", i.Name + "_count"}
	}
	return []string{i.Name}
}

// Reference returns every metric family of the registry New builds (with
// the Go runtime and process collectors and the handler's promhttp_*
// counters), sorted by name. It fills every vector with a sample (a plugin
// "00-reference") so that each family and its labels show, and fails if a
// registered metric still has none: a metric added without a line in
// exercise below.
func Reference() ([]Info, error) {
	m := New()
	exercise(m)
	fams, err := m.reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("metrics: gathering: %w", err)
	}
	var out []Info
	got := map[string]bool{}
	for _, f := range fams {
		info := Info{Name: f.GetName(), Type: strings.ToLower(f.GetType().String()), Help: f.GetHelp()}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if !slices.Contains(info.Labels, l.GetName()) {
					info.Labels = append(info.Labels, l.GetName())
				}
			}
		}
		if f.GetType() == dto.MetricType_SUMMARY && !slices.Contains(info.Labels, "quantile") {
			info.Labels = append(info.Labels, "quantile")
		}
		slices.Sort(info.Labels)
		out = append(out, info)
		got[info.Name] = true
	}
	descs := make(chan *prometheus.Desc)
	go func() {
		defer close(descs)
		for _, c := range m.collectors() {
			c.Describe(descs)
		}
	}()
	var missing []string
	for d := range descs {
		if name := descName(d); name != "" && !got[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("metrics: Reference has no sample of %s: record one in exercise (reference.go)", strings.Join(missing, ", "))
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// collectors are the NRI collectors New registers (not the runtime ones).
func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.callDuration, m.calls, m.failedOpen, m.plugins, m.deprecations,
		m.syncObjects, m.syncBytes, m.syncDuration, m.cutWait, m.filtered, m.missed,
		m.st.status, m.st.notReadySkips, m.st.requestedResync,
		m.hm.evictions, m.hm.oversize, m.hm.gate, m.hm.serving, m.hm.watched,
	}
}

// descName is the fully-qualified name of d, from its String form
// (client_golang has no accessor): `Desc{fqName: "name", ...`.
func descName(d *prometheus.Desc) string {
	s := d.String()
	const key = `fqName: "`
	i := strings.Index(s, key)
	if i < 0 {
		return ""
	}
	s = s[i+len(key):]
	if j := strings.IndexByte(s, '"'); j >= 0 {
		return s[:j]
	}
	return ""
}

// referenceSource is a Source with one event held and one plugin missing.
type referenceSource struct{}

func (referenceSource) EventsHeld() int           { return 1 }
func (referenceSource) MissingRequired() []string { return []string{"00-reference"} }

// exercise records one sample in every metric of m.
func exercise(m *Metrics) {
	const p = "00-reference"
	ev := nriv1beta1.Event_EVENT_CREATE_CONTAINER
	m.PluginCall(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_OK, time.Millisecond)
	m.FailedOpen(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_TIMEOUT)
	m.Synchronized(p, 1, 1, time.Millisecond)
	m.CutWait(p, time.Millisecond)
	m.Plugins(1)
	m.Deprecation(p, "reference")
	m.Filtered(p, ev)
	m.MissedEvent(p, ev)
	m.PluginStatus(p, nriv1beta1.PluginStatus_PLUGIN_STATUS_READY)
	m.NotReadySkip(p, ev)
	m.RequestedResync(p)
	m.Evicted(p, EvictedTimeout)
	m.Oversize(p, ev)
	m.RestartGate(0)
	m.Serving(true)
	m.Watch(referenceSource{})
}
