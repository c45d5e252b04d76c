// Package telemetry sets up OpenTelemetry tracing for nri-grpc's gRPC
// servers and clients.
//
// Setup builds a TracerProvider from a Config and hands out gRPC options
// that install otelgrpc stats handlers using it and the W3C Trace Context
// propagator: ServerOptions for the daemon's gRPC servers (RuntimeService,
// AdaptationService, ...) and DialOptions for its clients, notably the
// server's connections to plugins (server.WithDialOptions), so a trace runs
// runtime → bridge → server → plugin and plugins receive a "traceparent"
// header they can continue.
//
// Nothing here is global: the OpenTelemetry global TracerProvider,
// propagator and MeterProvider are neither set nor used; everything is
// passed to otelgrpc explicitly, and export failures are logged through
// WithLogger rather than the global error handler. otelgrpc's own OpenTelemetry metrics go to
// a no-op MeterProvider (nri-grpc's metrics are Prometheus, see
// internal/metrics).
//
// # Off costs nothing
//
// With Exporter "off" (the default) there is no TracerProvider and no stats
// handler at all: ServerOptions and DialOptions return empty slices and
// TracerProvider returns a no-op provider.
//
// # What spans contain
//
// otelgrpc records, per RPC, the method (rpc.method, the span name), the
// status code (rpc.response.status_code), the peer's address
// (server.address, server.port) and rpc.system.name. It does not record
// message payloads or metadata (its InPayload/OutPayload handling is empty,
// and the optional message events, which are off here, would only carry
// sizes and sequence numbers), so pod and container data (labels,
// annotations, environment, mounts, ...) never reaches a span from gRPC.
//
// Two things could still carry such values: the status message of a failed
// call (a plugin's veto text may quote an annotation or an environment
// variable), which otelgrpc copies into the span status, and attributes
// that later instrumentation might add. Every exporter is therefore wrapped
// by a redactor that, before export,
//   - keeps only attributes whose keys are on an allow-list of RPC and
//     network conventions (rpc.*, server.*, client.*, network.*, net.*,
//     message.*, error.type, exception.type, otel.*) and nri-grpc's own
//     nri.* keys (names and enums only, by convention), on spans, span
//     events and links;
//   - drops status descriptions and exception messages, unless
//     WithErrorMessages is given.
//
// Baggage is not propagated: only the W3C traceparent/tracestate headers.
package telemetry

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/nri-grpc/nri-grpc/internal/version"
)

// Exporter names for Config.Exporter.
const (
	// ExporterOff disables tracing (the default; also the meaning of "").
	ExporterOff = "off"
	// ExporterStdout writes spans as JSON lines to standard output (or the
	// writer of WithStdout).
	ExporterStdout = "stdout"
	// ExporterOTLP sends spans with OTLP over gRPC to Config.OTLPEndpoint.
	ExporterOTLP = "otlp"
)

// DefaultServiceName is the service.name of spans when Config.ServiceName
// is empty.
const DefaultServiceName = "nrid"

// Config selects the trace exporter.
type Config struct {
	// Exporter is "off" (default when empty), "stdout" or "otlp".
	Exporter string
	// OTLPEndpoint is the host:port of the OTLP/gRPC collector, for
	// example "127.0.0.1:4317". Empty means the exporter's default
	// (OTEL_EXPORTER_OTLP_ENDPOINT or localhost:4317). The connection is
	// plaintext unless WithOTLPTLS is given.
	OTLPEndpoint string
	// ServiceName is the service.name resource attribute (default "nrid").
	ServiceName string
}

// Option configures Setup.
type Option func(*options)

type options struct {
	exporter      sdktrace.SpanExporter
	stdout        io.Writer
	tls           *tls.Config
	sampler       sdktrace.Sampler
	errorMessages bool
	log           *slog.Logger
}

// WithSpanExporter makes Setup export to exp, whatever Config.Exporter
// says (tracing is then on even for "off"). Spans are handed to exp
// synchronously as they end, still through the redactor: meant for tests,
// with tracetest.NewInMemoryExporter. Shutdown shuts exp down.
func WithSpanExporter(exp sdktrace.SpanExporter) Option {
	return func(o *options) { o.exporter = exp }
}

// WithStdout sets the writer of the "stdout" exporter (default os.Stdout).
func WithStdout(w io.Writer) Option { return func(o *options) { o.stdout = w } }

// WithOTLPTLS makes the "otlp" exporter connect with TLS configured by c
// instead of plaintext.
func WithOTLPTLS(c *tls.Config) Option { return func(o *options) { o.tls = c } }

// WithSampler sets the sampler (default: parent-based, sampling every root
// span).
func WithSampler(s sdktrace.Sampler) Option { return func(o *options) { o.sampler = s } }

// WithErrorMessages keeps span status descriptions and exception messages,
// which are dropped by default because a plugin's error text may quote
// values of pods and containers.
func WithErrorMessages() Option { return func(o *options) { o.errorMessages = true } }

// WithLogger sets the logger for export failures (default: discard). A
// failing exporter is logged once when it starts failing and once when it
// recovers.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Telemetry holds the tracing set up by Setup. The zero value and nil are
// "off".
type Telemetry struct {
	tp     *sdktrace.TracerProvider // nil when off
	server []grpc.ServerOption
	dial   []grpc.DialOption
}

// Setup builds the tracing described by cfg. With Exporter "off" (or "")
// and no WithSpanExporter it returns a Telemetry that installs nothing. ctx
// bounds the creation of the exporter; the OTLP exporter connects lazily and
// does not fail when the collector is down.
func Setup(ctx context.Context, cfg Config, opts ...Option) (*Telemetry, error) {
	o := options{stdout: os.Stdout, sampler: sdktrace.ParentBased(sdktrace.AlwaysSample())}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}

	var exp sdktrace.SpanExporter
	switch {
	case o.exporter != nil:
		exp = o.exporter
	case cfg.Exporter == "" || cfg.Exporter == ExporterOff:
		return &Telemetry{}, nil
	case cfg.Exporter == ExporterStdout:
		e, err := stdouttrace.New(stdouttrace.WithWriter(o.stdout))
		if err != nil {
			return nil, fmt.Errorf("telemetry: stdout exporter: %w", err)
		}
		exp = e
	case cfg.Exporter == ExporterOTLP:
		eopts := []otlptracegrpc.Option{}
		if cfg.OTLPEndpoint != "" {
			eopts = append(eopts, otlptracegrpc.WithEndpoint(cfg.OTLPEndpoint))
		}
		if o.tls != nil {
			eopts = append(eopts, otlptracegrpc.WithTLSCredentials(credentials.NewTLS(o.tls)))
		} else {
			eopts = append(eopts, otlptracegrpc.WithInsecure())
		}
		e, err := otlptracegrpc.New(ctx, eopts...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP exporter for %q: %w", cfg.OTLPEndpoint, err)
		}
		exp = e
	default:
		return nil, fmt.Errorf("telemetry: unknown exporter %q (want %q, %q or %q)", cfg.Exporter, ExporterOff, ExporterStdout, ExporterOTLP)
	}

	name := cfg.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", name),
		attribute.String("service.version", version.Server()),
	))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}

	red := &redactor{next: exp, keepMessages: o.errorMessages, log: o.log}
	processor := sdktrace.WithBatcher(red)
	if o.exporter != nil {
		processor = sdktrace.WithSyncer(red)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSampler(o.sampler), processor)

	hopts := []otelgrpc.Option{
		otelgrpc.WithTracerProvider(tp),
		otelgrpc.WithPropagators(Propagator()),
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
		// Health checks and reflection are noise.
		otelgrpc.WithFilter(filters.None(filters.HealthCheck(), filters.ServicePrefix("grpc.reflection."))),
	}
	return &Telemetry{
		tp:     tp,
		server: []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(hopts...))},
		dial:   []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(hopts...))},
	}, nil
}

// Propagator returns the propagator nri-grpc uses on every hop: W3C Trace
// Context (traceparent, tracestate) only.
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// Enabled reports whether tracing is on.
func (t *Telemetry) Enabled() bool { return t != nil && t.tp != nil }

// ServerOptions returns the options that trace a gRPC server: an otelgrpc
// server stats handler with this TracerProvider and the W3C propagator. It
// returns an empty slice when tracing is off. The slice is the caller's.
func (t *Telemetry) ServerOptions() []grpc.ServerOption {
	if !t.Enabled() {
		return nil
	}
	return append([]grpc.ServerOption(nil), t.server...)
}

// DialOptions returns the options that trace a gRPC client connection: an
// otelgrpc client stats handler that starts a client span per call and
// injects its context as a traceparent header. Pass them to
// server.WithDialOptions to trace the server's calls to plugins. It returns
// an empty slice when tracing is off. The slice is the caller's.
func (t *Telemetry) DialOptions() []grpc.DialOption {
	if !t.Enabled() {
		return nil
	}
	return append([]grpc.DialOption(nil), t.dial...)
}

// TracerProvider returns the TracerProvider, for spans of nri-grpc's own
// code; a no-op provider when tracing is off.
func (t *Telemetry) TracerProvider() trace.TracerProvider {
	if !t.Enabled() {
		return tracenoop.NewTracerProvider()
	}
	return t.tp
}

// Shutdown flushes the spans not yet exported and stops the exporter,
// within ctx. Spans ended afterwards are dropped. It does nothing when
// tracing is off.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}
