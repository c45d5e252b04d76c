package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/nri-grpc/nri-grpc/cmd/nrid/internal/config"
	"github.com/nri-grpc/nri-grpc/internal/metrics"
	"github.com/nri-grpc/nri-grpc/internal/telemetry"
)

// setupTracing sets tracing up as [observability] says: "off" installs
// nothing. With redact_values off, span status messages (which may quote
// pod values) are kept too.
func setupTracing(ctx context.Context, o config.Observability, stdout io.Writer, log *slog.Logger) (*telemetry.Telemetry, error) {
	opts := []telemetry.Option{telemetry.WithLogger(log), telemetry.WithStdout(stdout)}
	if !o.RedactValues {
		opts = append(opts, telemetry.WithErrorMessages())
	}
	return telemetry.Setup(ctx, telemetry.Config{Exporter: o.Tracing, OTLPEndpoint: o.OTLPEndpoint, ServiceName: "nrid"}, opts...)
}

// newMetrics returns the Prometheus metrics served on metrics_address.
func newMetrics() *metrics.Metrics { return metrics.New() }
