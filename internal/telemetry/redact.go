package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// allowed reports whether an attribute key survives redaction: RPC and network conventions, which carry method names, status
// codes, addresses and sizes, and nri-grpc's own nri.* keys, which by
// convention carry only names and enums (plugin names, events, outcomes),
// never values of pods or containers.
func allowed(k attribute.Key) bool {
	s := string(k)
	for _, p := range []string{"rpc.", "server.", "client.", "network.", "net.", "message.", "otel.", "nri."} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return s == "error.type" || s == "exception.type"
}

// messageKey reports whether k is one of the attribute keys that carry error text: kept only with
// WithErrorMessages.
func messageKey(k attribute.Key) bool {
	return k == "exception.message" || k == "exception.stacktrace"
}

// redactor is a SpanExporter that strips attributes off the allow-list and,
// unless keepMessages, error messages, then exports to next. Failures of
// next are logged (once per change between failing and working) instead of
// reaching the OpenTelemetry global error handler.
type redactor struct {
	next         sdktrace.SpanExporter
	keepMessages bool
	log          *slog.Logger

	mu      sync.Mutex
	failing bool
}

// ExportSpans implements sdktrace.SpanExporter.
func (r *redactor) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = r.redact(s)
	}
	err := r.next.ExportSpans(ctx, out)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil && !r.failing:
		r.failing = true
		r.log.Warn("trace export failing; spans are dropped until it recovers", "error", err)
	case err == nil && r.failing:
		r.failing = false
		r.log.Info("trace export recovered")
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (r *redactor) Shutdown(ctx context.Context) error { return r.next.Shutdown(ctx) }

func (r *redactor) keep(k attribute.Key) bool {
	return allowed(k) || (r.keepMessages && messageKey(k))
}

// filter returns the attributes to keep and how many were dropped; it
// returns attrs itself when all are kept.
func (r *redactor) filter(attrs []attribute.KeyValue) ([]attribute.KeyValue, int) {
	n := 0
	for _, kv := range attrs {
		if r.keep(kv.Key) {
			n++
		}
	}
	if n == len(attrs) {
		return attrs, 0
	}
	out := make([]attribute.KeyValue, 0, n)
	for _, kv := range attrs {
		if r.keep(kv.Key) {
			out = append(out, kv)
		}
	}
	return out, len(attrs) - n
}

func (r *redactor) redact(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	rs := &redactedSpan{ReadOnlySpan: s, status: s.Status()}
	rs.attrs, rs.dropped = r.filter(s.Attributes())
	if !r.keepMessages {
		rs.status.Description = ""
	}
	if ev := s.Events(); len(ev) > 0 {
		rs.events = make([]sdktrace.Event, len(ev))
		for i, e := range ev {
			e.Attributes, _ = r.filter(e.Attributes)
			rs.events[i] = e
		}
	}
	if ls := s.Links(); len(ls) > 0 {
		rs.links = make([]sdktrace.Link, len(ls))
		for i, l := range ls {
			l.Attributes, _ = r.filter(l.Attributes)
			rs.links[i] = l
		}
	}
	return rs
}

// redactedSpan is a span with redacted attributes, events, links and
// status; everything else is the original's.
type redactedSpan struct {
	sdktrace.ReadOnlySpan
	attrs   []attribute.KeyValue
	dropped int
	events  []sdktrace.Event
	links   []sdktrace.Link
	status  sdktrace.Status
}

// Attributes returns the kept attributes.
func (s *redactedSpan) Attributes() []attribute.KeyValue { return s.attrs }

// Events returns the events with their kept attributes.
func (s *redactedSpan) Events() []sdktrace.Event { return s.events }

// Links returns the links with their kept attributes.
func (s *redactedSpan) Links() []sdktrace.Link { return s.links }

// Status returns the status, without description unless kept.
func (s *redactedSpan) Status() sdktrace.Status { return s.status }

// DroppedAttributes counts the attributes the SDK dropped and those
// redacted.
func (s *redactedSpan) DroppedAttributes() int {
	return s.ReadOnlySpan.DroppedAttributes() + s.dropped
}
