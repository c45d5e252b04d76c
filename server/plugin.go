package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/selector"
)

// gate is a one-shot readiness signal: closed once a plugin finished
// (re)synchronizing, with the outcome.
type gate struct {
	ch chan struct{}
	ok bool
	// from is the first flights generation that waits for the gate: events
	// that began before a requested resync's cut (status.go) are not held
	// by it (the cut waits for them before the plugin is synchronized).
	from uint64
	// timedOut is set when an event's wait for the gate timed out: later
	// events go on without waiting until the next gate (missed.go).
	timedOut atomic.Bool
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

// settle closes the gate with the outcome of the synchronization.
func (g *gate) settle(ok bool) {
	g.ok = ok
	close(g.ch)
}

// settled reports whether the gate is closed and, if so, the outcome.
func (g *gate) settled() (done, ok bool) {
	select {
	case <-g.ch:
		return true, g.ok
	default:
		return false, false
	}
}

// plugin is one registered plugin instance.
type plugin struct {
	s          *Server
	name, idx  string
	full       string // "NN-name"
	instanceID string
	identity   string
	caller     string
	endpoint   string
	kind       nriv1beta1.PluginKind
	c          *conn
	md         metadata.MD

	nriVersion, pluginVersion string
	registeredAt              time.Time
	admitGen                  uint64 // the flights generation its cut started

	// Set by Configure, read-only afterwards.
	mask     uint32
	policy   *nriv1beta1.FailurePolicy
	caps     *nriv1beta1.Capabilities
	timeouts timeouts
	maxMsg   int

	sel *selector.Set // its event selectors (nil or empty: everything); set before it is visible

	// catchUp is guarded by Server.syncMu.
	catchUp struct {
		syncing bool // a (re)synchronization is under way
		again   bool // the runtime attached again meanwhile
		// What vanished in those attaches, for plugins without resync.
		gonePods []*nriv1beta1.PodSandbox
		goneCtrs []*nriv1beta1.Container
		// Events it missed while synchronizing (missed.go): a plugin with
		// resync is synchronized again; one without is told the events.
		missedResync  bool
		missed        []missedEvent
		missedDropped int
	}
	// syncSeq counts its synchronization snapshots (missed.go).
	syncSeq atomic.Uint64

	sem   chan struct{} // one slot per allowed concurrent call
	ready atomic.Pointer[gate]
	epoch atomic.Uint64
	st    atomic.Int32 // nriv1beta1.PluginState

	retiring  atomic.Bool // being shut down: receives no more events
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error // why, set before closed is closed

	counters struct {
		calls, vetoes, timeouts, unavailable, refused, errors atomic.Uint64
		filtered                                              atomic.Uint64
	}
	lastErr atomic.Pointer[string]

	// status is what the plugin reports of itself, the policy for
	// NOT_READY and its requested resyncs (status.go).
	status statusBox
}

// timeouts are a plugin's effective call timeouts.
type timeouts struct {
	request time.Duration
	sync    time.Duration
	events  [nriv1beta1.Event_EVENT_LAST]time.Duration // 0: use request
}

func (t *timeouts) forEvent(e nriv1beta1.Event) time.Duration {
	if int(e) < len(t.events) && t.events[e] > 0 {
		return t.events[e]
	}
	return t.request
}

func (t *timeouts) proto() *nriv1beta1.Timeouts {
	out := &nriv1beta1.Timeouts{Request: durationpb.New(t.request), Synchronize: durationpb.New(t.sync)}
	for e, d := range t.events {
		if d > 0 {
			out.Events = append(out.Events, &nriv1beta1.EventTimeout{Event: nriv1beta1.Event(e), Timeout: durationpb.New(d)})
		}
	}
	return out
}

func (p *plugin) state() nriv1beta1.PluginState { return nriv1beta1.PluginState(p.st.Load()) }

func (p *plugin) setState(st nriv1beta1.PluginState) { p.st.Store(int32(st)) }

func (p *plugin) required() bool { return p.policy.GetFailRequest() }

func (p *plugin) isClosed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// wait blocks until the plugin is ready to receive an event of generation
// gen (it may be synchronizing after the registration cut, or
// resynchronizing), at most until deadline or ctx ends. It reports whether
// the plugin can be called, and whether it had to wait for that.
func (p *plugin) wait(ctx context.Context, gen uint64, deadline time.Time) (ok, waited bool) {
	if p.retiring.Load() {
		return false, false
	}
	g := p.ready.Load()
	if g.from > gen {
		return !p.isClosed(), false
	}
	select {
	case <-g.ch:
		return g.ok && !p.isClosed(), false
	default:
	}
	if g.timedOut.Load() {
		// An earlier event waited for it in vain: it is not waited for
		// again until it is synchronized (the events it misses are told
		// to it then, missed.go).
		return false, false
	}
	start := time.Now()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	defer func() { p.s.opts.metrics.CutWait(p.full, time.Since(start)) }()
	select {
	case <-g.ch:
		return g.ok && !p.isClosed(), true
	case <-ctx.Done():
	case <-t.C:
		if !g.timedOut.Swap(true) {
			p.s.log.Warn("plugin not synchronized within an event's time for it; events go on without waiting for it until it is, and it is told them then",
				"plugin", p.full, "waited", time.Since(start).Round(time.Millisecond))
		}
	case <-p.closed:
	}
	return false, true
}

// callContext derives the context of one call: the plugin's timeout for the
// event (never past the caller's deadline) and the call metadata.
func (p *plugin) callContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, d)
	if p.c.remote() {
		ctx = metadata.NewOutgoingContext(ctx, p.md)
	} else {
		ctx = metadata.NewIncomingContext(ctx, p.md)
	}
	return ctx, cancel
}

// protocolError is a response nrid refuses to take (not one the plugin
// meant as an error): an availability failure, and the plugin is evicted.
type protocolError struct{ st *status.Status }

func (e protocolError) Error() string { return e.st.Err().Error() }

// GRPCStatus lets status.Convert and status.Code see the status.
func (e protocolError) GRPCStatus() *status.Status { return e.st }

// close ends the plugin's registration for good: its session ends, its
// connection closes and it leaves the dispatch order.
func (p *plugin) close(reason error) {
	p.closeOnce.Do(func() {
		p.closeErr = reason
		p.setState(nriv1beta1.PluginState_PLUGIN_STATE_CLOSING)
		close(p.closed)
		p.s.unregister(p)
		p.s.pluginsChanged()
		if err := p.c.close(); err != nil {
			p.s.log.Debug("closing plugin connection", "plugin", p.full, "error", err)
		}
		if reason != nil {
			p.s.log.Info("plugin unregistered", "plugin", p.full, "instance", p.instanceID, "reason", reason.Error())
		}
	})
}

// shutdown tells the plugin why it goes, best effort and bounded, then
// closes it.
func (p *plugin) shutdown(kind nriv1beta1.ShutdownKind, reason string) {
	if p.isClosed() {
		return
	}
	p.retiring.Store(true)
	p.setState(nriv1beta1.PluginState_PLUGIN_STATE_CLOSING)
	ctx, cancel := context.WithTimeout(context.Background(), p.s.opts.shutdownGrace)
	_, err := call(ctx, p, rpcShutdown, p.s.opts.shutdownGrace, &nriv1beta1.ShutdownRequest{Reason: reason, Kind: kind}, nil)
	cancel()
	if err != nil {
		p.s.log.Debug("shutdown call failed", "plugin", p.full, "error", err)
	}
	p.close(&shutdownError{kind: kind, reason: reason})
}

// shutdownError is the reason a plugin was shut down by the server.
type shutdownError struct {
	kind   nriv1beta1.ShutdownKind
	reason string
}

func (e *shutdownError) Error() string { return e.reason }

func (p *plugin) noteError(err error) {
	s := clip(err.Error())
	p.lastErr.Store(&s)
}

// info describes the plugin for AdminService.
func (p *plugin) info() *nriv1beta1.PluginInfo {
	out := &nriv1beta1.PluginInfo{
		Plugin:        &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx},
		InstanceId:    p.instanceID,
		Identity:      p.identity,
		Kind:          p.kind,
		Endpoint:      p.endpoint,
		Events:        nri.MaskEvents(int32(p.mask)),
		Capabilities:  p.caps,
		FailurePolicy: p.policy,
		Timeouts:      p.timeouts.proto(),
		State:         p.state(),
		RegisteredAt:  timestamppb.New(p.registeredAt),
		NriVersion:    p.nriVersion,
		PluginVersion: p.pluginVersion,
		Counters: &nriv1beta1.PluginCounters{
			Calls:       p.counters.calls.Load(),
			Vetoes:      p.counters.vetoes.Load(),
			Timeouts:    p.counters.timeouts.Load(),
			Unavailable: p.counters.unavailable.Load(),
			Refused:     p.counters.refused.Load(),
			Errors:      p.counters.errors.Load(),
			Filtered:    p.counters.filtered.Load(),
		},
		Selectors: p.sel.Selectors(),
	}
	if e := p.lastErr.Load(); e != nil {
		out.LastError = *e
	}
	p.statusInfo(out)
	return out
}

// String returns the plugin's full name and instance.
func (p *plugin) String() string { return fmt.Sprintf("%s[%s]", p.full, p.instanceID) }

// isGarbage reports a response the gRPC client could not decode (the
// client library's own INTERNAL error, not one the plugin returned).
func isGarbage(err error) bool {
	var pe protocolError
	if errors.As(err, &pe) {
		return true
	}
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.Internal && strings.HasPrefix(s.Message(), "grpc: failed to unmarshal")
}
