package bridge

import (
	"context"

	"github.com/containerd/ttrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// W3C trace context crosses the bridge in ttrpc metadata, both ways: the
// runtime side extracts what a classic runtime sends (containerd with its
// otelttrpc interceptors) into the context the server dispatches with, so
// gRPC plugins see the runtime's trace; the plugin side injects the
// dispatching context's trace into the calls to classic plugins.

// traceContext is the W3C trace-context propagator.
var traceContext = propagation.TraceContext{}

// ttrpcCarrier adapts ttrpc metadata to the propagator.
type ttrpcCarrier ttrpc.MD

func (c ttrpcCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c ttrpcCarrier) Set(key, value string) { c[key] = []string{value} }

func (c ttrpcCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// extractTrace returns ctx with the remote span context a classic runtime
// sent, if any.
func extractTrace(ctx context.Context) context.Context {
	md, ok := ttrpc.GetMetadata(ctx)
	if !ok {
		return ctx
	}
	return traceContext.Extract(ctx, ttrpcCarrier(md))
}

// injectTrace returns ctx carrying its span context as ttrpc metadata for a
// call to a classic plugin.
func injectTrace(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	md := ttrpc.MD{}
	if old, ok := ttrpc.GetMetadata(ctx); ok {
		for k, v := range old {
			md[k] = v
		}
	}
	traceContext.Inject(ctx, ttrpcCarrier(md))
	return ttrpc.WithMetadata(ctx, md)
}
