//go:build !nri_no_wasm

package bridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/supervisor"
	"github.com/nri-grpc/nri-grpc/wasm"
)

// WasmEnabled reports whether this build runs WASM plugins (it was not
// built with the nri_no_wasm tag).
const WasmEnabled = true

// wasmEngineRef is the PluginSide's engine of WASM plugins.
type wasmEngineRef = *wasm.Engine

// wasmTransport calls a classic plugin that is a WebAssembly module, each
// call in a span of its own (a client span, as a gRPC plugin's call has).
type wasmTransport struct {
	mod    *wasm.Plugin
	tracer trace.Tracer
}

// invoke implements transport.
func (t wasmTransport) invoke(ctx context.Context, method string, req []byte) ([]byte, error) {
	ctx, span := t.tracer.Start(ctx, "nri.wasm/"+method, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	if !span.IsRecording() { // tracing off: nothing more on the event's path
		return t.mod.Call(ctx, method, req)
	}
	span.SetAttributes(attribute.String("nri.plugin", t.mod.Name()), attribute.Int("nri.request_bytes", len(req)))
	out, err := t.mod.Call(ctx, method, req)
	if err != nil {
		span.SetStatus(otelcodes.Error, status.Convert(err).Message())
		span.SetAttributes(attribute.String("rpc.grpc.status_code", status.Code(err).String()))
	}
	return out, err
}

// wasmEngine returns the engine of the PluginSide's WASM plugins, created
// at the first one; it is closed when ctx is done or the server stops.
func (ps *PluginSide) wasmEngine(ctx context.Context) (*wasm.Engine, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.wasm != nil {
		return ps.wasm, nil
	}
	opts := []wasm.Option{wasm.WithLogger(ps.log.With("component", "wasm")), wasm.WithInitTimeout(ps.regWait)}
	if ps.wasmCfg.MemoryLimit > 0 {
		opts = append(opts, wasm.WithMemoryLimit(ps.wasmCfg.MemoryLimit))
	}
	if ps.wasmCfg.CacheDir != "" {
		opts = append(opts, wasm.WithCacheDir(ps.wasmCfg.CacheDir))
	}
	eng, err := wasm.NewEngine(opts...)
	if err != nil {
		return nil, err
	}
	ps.wasm = eng
	ps.wasmRuns.Go(func() {
		select {
		case <-ctx.Done():
		case <-ps.srv.Stopping(): // no plugin is loaded after that
		}
		_ = eng.Close(context.WithoutCancel(ctx))
	})
	return eng, nil
}

// launchWasm runs pre-launched plugin p, a WebAssembly module, in
// process: loaded, registered under its launch slot like a launched
// classic plugin, and loaded again with the supervisor's backoff whenever
// it dies or is evicted, until ctx is done or the server stops.
func (ps *PluginSide) launchWasm(ctx context.Context, p supervisor.Plugin, slot *launchSlot) error {
	eng, err := ps.wasmEngine(ctx)
	if err != nil {
		slot.settle()
		return fmt.Errorf("WASM plugin %s: %w", p.FullName(), err)
	}
	ps.wasmRuns.Go(func() {
		backoff := supervisor.DefaultInitialBackoff
		for {
			start := time.Now()
			err := ps.runWasm(ctx, eng, p, slot)
			slot.settle()
			if ctx.Err() != nil || ps.serverStopping() {
				return
			}
			if time.Since(start) >= supervisor.DefaultBackoffReset {
				backoff = supervisor.DefaultInitialBackoff
			}
			ps.log.Warn("WASM plugin stopped; loading it again", "plugin", p.FullName(), "error", err, "after", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, supervisor.DefaultMaxBackoff)
		}
	})
	return nil
}

// serverStopping reports whether the server's Shutdown began: its plugins
// end with "server stopping", and are not loaded again.
func (ps *PluginSide) serverStopping() bool {
	select {
	case <-ps.srv.Stopping():
		return true
	default:
		return false
	}
}

// runWasm loads, registers and runs p once: it returns why it ended.
func (ps *PluginSide) runWasm(ctx context.Context, eng *wasm.Engine, p supervisor.Plugin, slot *launchSlot) error {
	full := p.FullName()
	mod, err := eng.Load(ctx, p.Path, full)
	if err != nil {
		ps.log.Error("loading WASM plugin", "plugin", full, "path", p.Path, "error", err)
		return err
	}
	defer func() { _ = mod.Close(context.WithoutCancel(ctx)) }()
	ps.log.Info("loaded WASM plugin", "plugin", full, "path", p.Path, "memory_bytes", mod.MemorySize())
	cc := &classicConn{ps: ps, tr: wasmTransport{mod: mod, tracer: ps.tracer}, identity: "launch:" + full, slot: slot, full: full,
		synced: make(chan struct{}), settled: make(chan struct{})}
	defer cc.settle()
	var sels []*nriv1beta1.EventSelector
	if ps.selectors != nil {
		sels = ps.selectors(full)
	}
	h, err := ps.srv.RegisterInProcess(ctx, server.Registration{
		Selectors:    sels,
		Name:         p.Name,
		Index:        p.Index,
		Identity:     cc.identity,
		Kind:         nriv1beta1.PluginKind_PLUGIN_KIND_WASM,
		Endpoint:     "wasm:" + p.Path,
		Config:       string(p.Config),
		Capabilities: &nriv1beta1.Capabilities{MaxMessageSize: classicMaxMessage},
	}, cc)
	if err != nil {
		ps.log.Warn("WASM plugin registration failed", "plugin", full, "error", err)
		return err
	}
	cc.handle.Store(h)
	cc.settle()
	select {
	case <-mod.Done():
		h.Close()
		return mod.Err()
	case <-h.Done():
		if err := h.Err(); err != nil {
			return err
		}
		return errors.New("the registration ended")
	case <-ctx.Done():
		h.Close()
		return ctx.Err()
	}
}
