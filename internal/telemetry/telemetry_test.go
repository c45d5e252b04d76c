package telemetry_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/nri-grpc/nri-grpc/internal/telemetry"
)

// TestOffInstallsNothing checks that tracing off costs nothing: no stats
// handler, no recording spans.
func TestOffInstallsNothing(t *testing.T) {
	for _, exporter := range []string{"", telemetry.ExporterOff} {
		tel, err := telemetry.Setup(context.Background(), telemetry.Config{Exporter: exporter, OTLPEndpoint: "127.0.0.1:4317"})
		if err != nil {
			t.Fatalf("%q: %v", exporter, err)
		}
		if tel.Enabled() || len(tel.ServerOptions()) != 0 || len(tel.DialOptions()) != 0 {
			t.Errorf("%q: enabled %v, %d server options, %d dial options; want none", exporter, tel.Enabled(),
				len(tel.ServerOptions()), len(tel.DialOptions()))
		}
		_, span := tel.TracerProvider().Tracer("test").Start(context.Background(), "x")
		if span.IsRecording() || span.SpanContext().IsValid() {
			t.Errorf("%q: the tracer provider records spans", exporter)
		}
		span.End()
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Errorf("%q: Shutdown: %v", exporter, err)
		}
	}
	var none *telemetry.Telemetry
	if none.Enabled() || none.ServerOptions() != nil || none.DialOptions() != nil || none.Shutdown(context.Background()) != nil {
		t.Error("a nil Telemetry is not off")
	}
}

func TestUnknownExporterIsAnError(t *testing.T) {
	if _, err := telemetry.Setup(context.Background(), telemetry.Config{Exporter: "jaeger"}); err == nil ||
		!strings.Contains(err.Error(), `"jaeger"`) {
		t.Fatalf("Setup with exporter jaeger: %v, want an error naming it", err)
	}
}

// recordSecrets makes a span carrying secrets in every place a careless
// instrumentation could put them.
func recordSecrets(tel *telemetry.Telemetry) {
	_, span := tel.TracerProvider().Tracer("test").Start(context.Background(), "op",
		trace.WithAttributes(
			attribute.String("rpc.method", "nri.v1beta1.PluginService/CreateContainer"),
			attribute.String("nri.plugin", "10-a"),
			attribute.String("container.annotation.secret", secretAnnotation),
		),
		trace.WithLinks(trace.Link{
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}),
			Attributes:  []attribute.KeyValue{attribute.String("env", secretEnv)},
		}))
	span.RecordError(errors.New("bad env " + secretEnv))
	span.SetStatus(codes.Error, "bad annotation "+secretAnnotation)
	span.End()
}

// TestRedaction checks what the redactor keeps and drops.
func TestRedaction(t *testing.T) {
	exp := newExporter()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{}, telemetry.WithSpanExporter(exp))
	if err != nil {
		t.Fatal(err)
	}
	recordSecrets(tel)
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	assertNoSecrets(t, spans)
	if !hasAttr(s.Attributes, "rpc.method", "nri.v1beta1.PluginService/CreateContainer") || !hasAttr(s.Attributes, "nri.plugin", "10-a") ||
		len(s.Attributes) != 2 || s.DroppedAttributes != 1 {
		t.Errorf("attributes %v (dropped %d), want rpc.method and nri.plugin only, 1 dropped", s.Attributes, s.DroppedAttributes)
	}
	if s.Status.Code != codes.Error || s.Status.Description != "" {
		t.Errorf("status %v, want Error without description", s.Status)
	}
	if len(s.Events) != 1 || !hasAttr(s.Events[0].Attributes, "exception.type", "*errors.errorString") || len(s.Events[0].Attributes) != 1 {
		t.Errorf("events %v, want the exception with its type only", s.Events)
	}
	if len(s.Links) != 1 || len(s.Links[0].Attributes) != 0 {
		t.Errorf("links %v, want one without attributes", s.Links)
	}
	_ = tel.Shutdown(context.Background())

	// WithErrorMessages keeps error texts, and still drops attributes.
	exp = newExporter()
	tel, err = telemetry.Setup(context.Background(), telemetry.Config{}, telemetry.WithSpanExporter(exp), telemetry.WithErrorMessages())
	if err != nil {
		t.Fatal(err)
	}
	recordSecrets(tel)
	s = exp.GetSpans()[0]
	if !strings.Contains(s.Status.Description, secretAnnotation) || !hasAttr(s.Events[0].Attributes, "exception.message", "bad env "+secretEnv) {
		t.Errorf("WithErrorMessages: status %v, events %v; want the messages kept", s.Status, s.Events)
	}
	if len(s.Attributes) != 2 || len(s.Links[0].Attributes) != 0 {
		t.Errorf("WithErrorMessages: attributes %v, links %v; want off-list attributes dropped", s.Attributes, s.Links)
	}
	_ = tel.Shutdown(context.Background())
}

func TestStdoutExporter(t *testing.T) {
	var out bytes.Buffer
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Exporter: telemetry.ExporterStdout, ServiceName: "nrid-stdout"},
		telemetry.WithStdout(&out))
	if err != nil {
		t.Fatal(err)
	}
	if len(tel.ServerOptions()) != 1 || len(tel.DialOptions()) != 1 {
		t.Fatal("stdout tracing installs no stats handlers")
	}
	recordSecrets(tel)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, `"Name":"op"`) || !strings.Contains(got, "nrid-stdout") {
		t.Errorf("stdout export lacks the span or the service name: %s", got)
	}
	if strings.Contains(got, secretAnnotation) || strings.Contains(got, secretEnv) {
		t.Errorf("stdout export carries a secret: %s", got)
	}
}

// collector is an OTLP/gRPC trace collector that hands over what it
// receives.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	got chan *coltracepb.ExportTraceServiceRequest
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.got <- req
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestOTLPExporter exports to a real OTLP/gRPC collector over plaintext.
func TestOTLPExporter(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{got: make(chan *coltracepb.ExportTraceServiceRequest, 10)}
	g := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(g, col)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	tel, err := telemetry.Setup(ctx, telemetry.Config{Exporter: telemetry.ExporterOTLP, OTLPEndpoint: lis.Addr().String(), ServiceName: "nrid-otlp"})
	if err != nil {
		t.Fatal(err)
	}
	recordSecrets(tel)
	// Shutdown flushes the batch.
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var req *coltracepb.ExportTraceServiceRequest
	select {
	case req = <-col.got:
	case <-ctx.Done():
		t.Fatal("the collector received nothing")
	}
	rs := req.GetResourceSpans()
	if len(rs) != 1 || len(rs[0].GetScopeSpans()) != 1 || len(rs[0].GetScopeSpans()[0].GetSpans()) != 1 {
		t.Fatalf("collector received %v, want one span", req)
	}
	span := rs[0].GetScopeSpans()[0].GetSpans()[0]
	if span.GetName() != "op" || !strings.Contains(rs[0].GetResource().String(), "nrid-otlp") {
		t.Errorf("collector received span %q of resource %v", span.GetName(), rs[0].GetResource())
	}
	if s := req.String(); strings.Contains(s, secretAnnotation) || strings.Contains(s, secretEnv) {
		t.Errorf("OTLP export carries a secret: %s", s)
	}
}

// flakyExporter fails while fail is set.
type flakyExporter struct {
	*notifyingExporter
	fail bool
}

func (e *flakyExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.fail {
		return errors.New("collector down")
	}
	return e.notifyingExporter.ExportSpans(ctx, spans)
}

// TestExportFailuresAreLoggedOnChange checks that a failing exporter is
// logged once when it starts failing and once when it recovers.
func TestExportFailuresAreLoggedOnChange(t *testing.T) {
	var logs bytes.Buffer
	exp := &flakyExporter{notifyingExporter: newExporter(), fail: true}
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{}, telemetry.WithSpanExporter(exp),
		telemetry.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	span := func() {
		_, s := tel.TracerProvider().Tracer("test").Start(context.Background(), "op")
		s.End()
	}
	span()
	span()
	exp.fail = false
	span()
	span()
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "collector down") ||
		!strings.Contains(lines[1], "level=INFO") || !strings.Contains(lines[1], "recovered") {
		t.Errorf("logs:\n%s\nwant one warning, then one recovery", logs.String())
	}
	if n := len(exp.GetSpans()); n != 2 {
		t.Errorf("%d spans exported, want the 2 after recovery", n)
	}
}
