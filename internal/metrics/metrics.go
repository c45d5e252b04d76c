// Package metrics exports the NRI server's measurements as Prometheus
// metrics. A Metrics implements server.Metrics on its own registry (never
// the global one) and serves it over HTTP when the operator asks for it.
//
// # Metrics
//
// All metrics are prefixed "nri_". Label values are plugin full names
// ("NN-name"), event and outcome names and deprecation kinds: never anything
// taken from a pod or container.
//
//	nri_plugin_call_duration_seconds{plugin,event}      histogram, 50µs..10s
//	nri_plugin_calls_total{plugin,event,outcome}        counter
//	nri_plugin_failed_open_total{plugin,event,outcome}  counter
//	nri_plugins_registered                              gauge
//	nri_plugin_deprecations_total{plugin,kind}          counter
//	nri_plugin_sync_objects{plugin}                     histogram, pods+containers per synchronization
//	nri_plugin_sync_bytes{plugin}                       histogram, encoded bytes per synchronization
//	nri_plugin_sync_duration_seconds{plugin}            histogram
//	nri_plugin_cut_wait_seconds{plugin}                 histogram, time an event waited for a synchronizing plugin
//	nri_plugin_filtered_events_total{plugin,event}      counter, events not delivered because of the plugin's selectors
//	nri_plugin_status{plugin,status}                    gauge, the status a plugin reports (status.go)
//	nri_plugin_not_ready_skips_total{plugin,event}      counter
//	nri_plugin_requested_resyncs_total{plugin}          counter
//	nri_plugin_evictions_total{plugin,reason}           counter (health.go)
//	nri_plugin_oversize_requests_total{plugin,event}    counter
//	nri_events_held                                     gauge
//	nri_required_plugin_missing{plugin}                 gauge
//	nri_restart_gate_waiting_plugins                    gauge
//	nri_serving                                         gauge
//
// docs/operations.md has the full reference, generated from the registry
// (cmd/metricsdoc).
//
// plus the Go runtime (go_*) and process (process_*) collectors and the
// handler's own promhttp_* counters.
//
// event is the nri.v1beta1.Event name without its prefix, lowercased
// ("create_container"); outcome is the nri.v1beta1.CallOutcome name without
// its prefix, lowercased: ok, veto, timeout, unavailable, refused, error,
// skipped, not_evaluated (and unspecified).
//
// # Failed open
//
// Failing open is not a call outcome but what the server made of one: a
// timeout, unavailable or refused call of a plugin whose failure policy lets
// the event go on. It is therefore a separate counter,
// nri_plugin_failed_open_total, labelled with the outcome that failed open,
// rather than an extra outcome value: nri_plugin_calls_total still sums to
// the number of calls, and failed_open/calls is the fail-open rate. It is
// recorded by FailedOpen (server.Metrics).
//
// # Cost
//
// PluginCall is on the dispatch path. The label children of every
// plugin × event (× outcome) are resolved once and cached in a copy-on-write
// map read with one atomic load, so a call in steady state costs a map
// lookup, a counter increment and a histogram observation, and allocates
// nothing (see BenchmarkPluginCall). Series of plugins that went away are
// kept for the life of the process, as counters must be; at most
// WithMaxPlugins distinct plugin names get their own series, later ones are
// counted under plugin="other".
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Namespace is the prefix of every metric of this package.
const Namespace = "nri"

// DefaultMaxPlugins is the default number of distinct plugin names that get
// their own series.
const DefaultMaxPlugins = 128

// OtherPlugin is the plugin label value of plugins beyond the limit set by
// WithMaxPlugins. It cannot clash with a plugin's full name, which always
// starts with its two-digit index.
const OtherPlugin = "other"

// Option configures a Metrics.
type Option func(*options)

type options struct {
	maxPlugins        int
	runtimeCollectors bool
}

// WithMaxPlugins bounds the number of distinct plugin names that get their
// own series (default DefaultMaxPlugins); calls of further plugins are
// counted under plugin="other". n <= 0 means the default.
func WithMaxPlugins(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxPlugins = n
		}
	}
}

// WithoutRuntimeCollectors leaves out the Go runtime and process collectors
// (they are included by default).
func WithoutRuntimeCollectors() Option { return func(o *options) { o.runtimeCollectors = false } }

// Metrics records the NRI server's measurements in its own Prometheus
// registry. It implements server.Metrics; create it with New. It is safe
// for concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	callDuration *prometheus.HistogramVec
	calls        *prometheus.CounterVec
	failedOpen   *prometheus.CounterVec
	plugins      prometheus.Gauge
	deprecations *prometheus.CounterVec
	syncObjects  *prometheus.HistogramVec
	syncBytes    *prometheus.HistogramVec
	syncDuration *prometheus.HistogramVec
	cutWait      *prometheus.HistogramVec
	filtered     *prometheus.CounterVec // filtered.go
	missed       *prometheus.CounterVec // filtered.go
	st           statusMetrics          // plugin status (status.go)
	hm           healthMetrics          // evictions, sizes, holds, readiness (health.go)

	// eventNames and outcomeNames are the label values by enum number.
	eventNames   []string
	outcomeNames []string
	maxPlugins   int

	// series maps plugin names to their resolved children; it is replaced,
	// never changed, under mu.
	series atomic.Pointer[map[string]*pluginSeries]
	mu     sync.Mutex
	other  *pluginSeries // series of OtherPlugin, under mu
}

// pluginSeries caches the label children of one plugin label value.
type pluginSeries struct {
	label string
	// latency is indexed by event, calls and failedOpen by
	// event*len(outcomeNames)+outcome; entries are resolved on first use.
	latency    []atomic.Pointer[observer]
	calls      []atomic.Pointer[counter]
	failedOpen []atomic.Pointer[counter]

	syncObjects, syncBytes, syncDuration, cutWait prometheus.Observer
}

type observer struct{ prometheus.Observer }

type counter struct{ prometheus.Counter }

// latencyBuckets cover 50 µs (an in-process or idle local plugin) to 10 s
// (beyond the default 2 s request timeout, up to long asked-for timeouts),
// 1-2.5-5 per decade.
func latencyBuckets() []float64 {
	return []float64{
		50e-6, 100e-6, 250e-6, 500e-6,
		1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
		1, 2.5, 5, 10,
	}
}

// Other buckets: objects 1 to 65536 pods plus containers; bytes 1 KiB to
// 256 MiB; synchronization durations 1 ms to about 65 s (registration
// timeouts plus paged synchronization of large nodes).
func objectBuckets() []float64       { return prometheus.ExponentialBuckets(1, 4, 9) }
func byteBuckets() []float64         { return prometheus.ExponentialBuckets(1024, 4, 10) }
func syncDurationBuckets() []float64 { return prometheus.ExponentialBuckets(1e-3, 4, 9) }

// New returns Metrics with its own registry holding the NRI metrics and,
// unless WithoutRuntimeCollectors, the Go runtime and process collectors.
func New(opts ...Option) *Metrics {
	o := options{maxPlugins: DefaultMaxPlugins, runtimeCollectors: true}
	for _, opt := range opts {
		opt(&o)
	}
	m := &Metrics{
		reg:          prometheus.NewRegistry(),
		eventNames:   enumNames(nriv1beta1.Event_name, "EVENT_"),
		outcomeNames: enumNames(nriv1beta1.CallOutcome_name, "CALL_OUTCOME_"),
		maxPlugins:   o.maxPlugins,
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "call_duration_seconds",
			Help:    "Duration of calls to plugins, by plugin and event (calls that were not made, skipped or not_evaluated, are not observed).",
			Buckets: latencyBuckets(),
		}, []string{"plugin", "event"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "calls_total",
			Help: "Calls to plugins, by plugin, event and outcome (ok, veto, timeout, unavailable, refused, error, skipped, not_evaluated).",
		}, []string{"plugin", "event", "outcome"}),
		failedOpen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "failed_open_total",
			Help: "Failed calls to plugins that the failure policy let the event survive, by plugin, event and the outcome that failed open.",
		}, []string{"plugin", "event", "outcome"}),
		plugins: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "plugins_registered",
			Help: "Number of registered plugins.",
		}),
		deprecations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "deprecations_total",
			Help: "Uses of deprecated protocol features, by plugin and kind.",
		}, []string{"plugin", "kind"}),
		syncObjects: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "sync_objects",
			Help:    "Pods plus containers sent per (re)synchronization of a plugin.",
			Buckets: objectBuckets(),
		}, []string{"plugin"}),
		syncBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "sync_bytes",
			Help:    "Encoded bytes sent per (re)synchronization of a plugin.",
			Buckets: byteBuckets(),
		}, []string{"plugin"}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "sync_duration_seconds",
			Help:    "Duration of (re)synchronizations of a plugin.",
			Buckets: syncDurationBuckets(),
		}, []string{"plugin"}),
		cutWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "plugin", Name: "cut_wait_seconds",
			Help:    "Time events waited at the registration cut for a synchronizing plugin.",
			Buckets: latencyBuckets(),
		}, []string{"plugin"}),
	}
	m.initFiltered()
	empty := map[string]*pluginSeries{}
	m.series.Store(&empty)
	m.reg.MustRegister(m.callDuration, m.calls, m.failedOpen, m.plugins, m.deprecations,
		m.syncObjects, m.syncBytes, m.syncDuration, m.cutWait)
	m.st = newStatusMetrics(m.reg)
	m.hm = newHealthMetrics(m.reg)
	if o.runtimeCollectors {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m.handler = promhttp.InstrumentMetricHandler(m.reg, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:            m.reg,
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	return m
}

// enumNames returns the lowercased names of a protobuf enum without prefix,
// indexed by number; numbers without a name get their decimal form.
func enumNames(names map[int32]string, prefix string) []string {
	n := int32(0)
	for k := range names {
		if k+1 > n {
			n = k + 1
		}
	}
	out := make([]string, n)
	for i := range out {
		if name, ok := names[int32(i)]; ok {
			out[i] = strings.ToLower(strings.TrimPrefix(name, prefix))
		} else {
			out[i] = fmt.Sprint(i)
		}
	}
	return out
}

// Registry returns the registry of the metrics, for example to add the
// collectors of other components.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler returns an HTTP handler serving the registry in the Prometheus
// exposition formats.
func (m *Metrics) Handler() http.Handler { return m.handler }

// PluginCall records one call to a plugin: it counts it by outcome and,
// unless the plugin was not called (skipped, not_evaluated), observes its
// duration. It implements server.Metrics.
func (m *Metrics) PluginCall(plugin string, event nriv1beta1.Event, outcome nriv1beta1.CallOutcome, d time.Duration) {
	ps := m.lookup(plugin)
	ev, oc := int(event), int(outcome)
	if ev < 0 || ev >= len(m.eventNames) || oc < 0 || oc >= len(m.outcomeNames) {
		// An enum value newer than this build: uncached.
		m.calls.WithLabelValues(ps.label, enumLabel(event.String(), "EVENT_"), enumLabel(outcome.String(), "CALL_OUTCOME_")).Inc()
		if called(outcome) {
			m.callDuration.WithLabelValues(ps.label, enumLabel(event.String(), "EVENT_")).Observe(d.Seconds())
		}
		return
	}
	m.counter(&ps.calls[ev*len(m.outcomeNames)+oc], m.calls, ps.label, m.eventNames[ev], m.outcomeNames[oc]).Inc()
	if !called(outcome) {
		return
	}
	h := ps.latency[ev].Load()
	if h == nil {
		h = &observer{m.callDuration.WithLabelValues(ps.label, m.eventNames[ev])}
		ps.latency[ev].Store(h)
	}
	h.Observe(d.Seconds())
}

// FailedOpen records that a failed call (outcome timeout, unavailable or
// refused) of plugin on event failed open: the plugin's failure policy let
// the event go on without it. It is called in addition to PluginCall for
// the same call. It implements server.Metrics.
func (m *Metrics) FailedOpen(plugin string, event nriv1beta1.Event, outcome nriv1beta1.CallOutcome) {
	ps := m.lookup(plugin)
	ev, oc := int(event), int(outcome)
	if ev < 0 || ev >= len(m.eventNames) || oc < 0 || oc >= len(m.outcomeNames) {
		m.failedOpen.WithLabelValues(ps.label, enumLabel(event.String(), "EVENT_"), enumLabel(outcome.String(), "CALL_OUTCOME_")).Inc()
		return
	}
	m.counter(&ps.failedOpen[ev*len(m.outcomeNames)+oc], m.failedOpen, ps.label, m.eventNames[ev], m.outcomeNames[oc]).Inc()
}

// Synchronized records one (re)synchronization of plugin: objects pods and
// containers in bytes encoded bytes, taking d. It implements
// server.Metrics.
func (m *Metrics) Synchronized(plugin string, objects, bytes int, d time.Duration) {
	ps := m.lookup(plugin)
	ps.syncObjects.Observe(float64(objects))
	ps.syncBytes.Observe(float64(bytes))
	ps.syncDuration.Observe(d.Seconds())
}

// CutWait records how long an event waited at the registration cut for
// plugin to finish synchronizing. It implements server.Metrics.
func (m *Metrics) CutWait(plugin string, d time.Duration) {
	m.lookup(plugin).cutWait.Observe(d.Seconds())
}

// Plugins records the number of registered plugins. It implements
// server.Metrics.
func (m *Metrics) Plugins(n int) { m.plugins.Set(float64(n)) }

// Deprecation counts one use of a deprecated protocol feature of the given
// kind (for example a v1alpha1 call through the bridge) by plugin. kind
// should come from a small fixed set: every kind is a series per plugin.
func (m *Metrics) Deprecation(plugin, kind string) {
	m.deprecations.WithLabelValues(m.lookup(plugin).label, kind).Inc()
}

// called reports whether an outcome is of a call that was made.
func called(outcome nriv1beta1.CallOutcome) bool {
	return outcome != nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED &&
		outcome != nriv1beta1.CallOutcome_CALL_OUTCOME_NOT_EVALUATED
}

func enumLabel(name, prefix string) string { return strings.ToLower(strings.TrimPrefix(name, prefix)) }

// counter returns the cached child in cell, resolving it on first use. Two
// goroutines may resolve the same child at once: the vector returns the
// same child to both.
func (m *Metrics) counter(cell *atomic.Pointer[counter], vec *prometheus.CounterVec, labels ...string) *counter {
	if c := cell.Load(); c != nil {
		return c
	}
	c := &counter{vec.WithLabelValues(labels...)}
	cell.Store(c)
	return c
}

// lookup returns the series of plugin, creating them on first sight.
func (m *Metrics) lookup(plugin string) *pluginSeries {
	if ps, ok := (*m.series.Load())[plugin]; ok {
		return ps
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := *m.series.Load()
	if ps, ok := cur[plugin]; ok {
		return ps
	}
	if len(cur) >= m.maxPlugins {
		// Over the limit: share the series of OtherPlugin, without
		// remembering the name, so memory stays bounded.
		if m.other == nil {
			m.other = m.newSeries(OtherPlugin)
		}
		return m.other
	}
	ps := m.newSeries(plugin)
	next := make(map[string]*pluginSeries, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[plugin] = ps
	m.series.Store(&next)
	return ps
}

func (m *Metrics) newSeries(label string) *pluginSeries {
	n := len(m.eventNames) * len(m.outcomeNames)
	// Evictions are rare: their series start at 0 with the plugin's, so
	// that increase() sees the first one (health.go).
	for _, reason := range []string{EvictedTimeout, EvictedProtocolError} {
		m.hm.evictions.WithLabelValues(label, reason)
	}
	return &pluginSeries{
		label:        label,
		latency:      make([]atomic.Pointer[observer], len(m.eventNames)),
		calls:        make([]atomic.Pointer[counter], n),
		failedOpen:   make([]atomic.Pointer[counter], n),
		syncObjects:  m.syncObjects.WithLabelValues(label),
		syncBytes:    m.syncBytes.WithLabelValues(label),
		syncDuration: m.syncDuration.WithLabelValues(label),
		cutWait:      m.cutWait.WithLabelValues(label),
	}
}

// Serve serves the metrics over HTTP at /metrics on address (host:port)
// until ctx ends; it then shuts the server down and returns nil. It returns
// the error if it cannot listen or serving fails. The endpoint is opt-in:
// nothing listens unless Serve is called.
func (m *Metrics) Serve(ctx context.Context, address string, opts ...ServeOption) error {
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", address)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return m.ServeListener(ctx, lis, opts...)
}

// ServeOption adds to what Serve and ServeListener serve.
type ServeOption func(*http.ServeMux)

// WithHandler serves h at pattern (an http.ServeMux pattern) beside
// /metrics, on the same listener and with the same limits: nrid's HTTP
// health probes, for example.
func WithHandler(pattern string, h http.Handler) ServeOption {
	return func(mux *http.ServeMux) { mux.Handle(pattern, h) }
}

// ServeListener is Serve on an open listener, which it closes.
func (m *Metrics) ServeListener(ctx context.Context, lis net.Listener, opts ...ServeOption) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.handler)
	for _, o := range opts {
		if o != nil {
			o(mux)
		}
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		if err != nil {
			return fmt.Errorf("metrics: shutting down: %w", err)
		}
		return nil
	}
}
