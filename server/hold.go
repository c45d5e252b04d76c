package server

import (
	"context"
	"slices"
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// hold is the set of plugins events wait for (HoldEvents).
type hold struct {
	names []string
	until time.Time
}

// HoldEvents makes the runtime's events wait until every plugin of names
// ("NN-name") is registered and ready, or until the time until, whichever
// comes first; then dispatch goes on as usual (a required plugin still
// absent fails creating events, see RequireUntilRegistered). Each event
// waits at most until the middle of its budget (Budget) or of what its
// deadline leaves, counted from when the caller received it (ReceivedAt), so
// that the second half is left to the plugins and it is still answered in
// time. nrid uses it after taking over from another nrid, while the
// plugins of the old one register again: the runtime is attached the whole
// time and its events are delayed by the plugins' return, not run without
// them. A later call replaces the hold;
// an empty names ends it.
func (s *Server) HoldEvents(names []string, until time.Time) {
	if len(names) == 0 {
		s.held.Store(nil)
		return
	}
	s.held.Store(&hold{names: slices.Clone(names), until: until})
}

// awaitHeld is where an event waits for the held plugins (HoldEvents). A
// held plugin whose known selectors exclude the event's pod or container
// is not waited for.
func (s *Server) awaitHeld(ctx context.Context, o eventOptions, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) {
	h := s.held.Load()
	if h == nil {
		return
	}
	ev := &flight{pod: pod, ctr: ctr}
	limit := h.until
	if l, ok := holdLimit(ctx, o, time.Now()); ok {
		limit = earliest(limit, l)
	}
	var timer *time.Timer
	s.holding.Add(1)
	start := time.Now()
	defer func() {
		s.holding.Add(-1)
		if timer != nil {
			timer.Stop()
		}
		if d := time.Since(start); d >= time.Millisecond {
			attrs := []any{"waited", d.Round(time.Millisecond)}
			if !o.receivedAt.IsZero() && o.receivedAt.Before(start) {
				// It had waited this long before the call already.
				attrs = append(attrs, "received_before", start.Sub(o.receivedAt).Round(time.Millisecond))
			}
			s.log.Info("event held for the plugins of the previous nrid", attrs...)
		}
	}()
	for {
		changed := s.PluginsChanged()
		if s.heldPresent(h, nil) {
			s.held.CompareAndSwap(h, nil)
			return
		}
		if s.heldPresent(h, ev) {
			return // the missing ones do not select this event
		}
		wait := time.Until(limit)
		if wait <= 0 {
			if !time.Now().Before(h.until) {
				s.held.CompareAndSwap(h, nil)
			}
			return
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-changed:
		case <-timer.C:
			timer = nil
		case <-ctx.Done():
			return
		}
	}
}

// EventsHeld returns how many events wait for held plugins now
// (HoldEvents).
func (s *Server) EventsHeld() int { return int(s.holding.Load()) }

// heldPresent reports whether every plugin h waits for is ready; with ev,
// every plugin whose selectors would select ev's pod or container.
func (s *Server) heldPresent(h *hold, ev *flight) bool {
	ready := s.Plugins()
	for _, name := range h.names {
		if ev != nil && !s.absentSelects(name, ev) {
			continue
		}
		if !slices.ContainsFunc(ready, func(p *nriv1beta1.PluginInfo) bool {
			return p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY &&
				p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName() == name
		}) {
			return false
		}
	}
	return true
}

// holdLimit is when an event's hold ends at the latest: the middle of its
// budget (Budget), or of what its deadline leaves, counted from when the
// caller received it (ReceivedAt; now when it did not say or says later).
// Without either, false: the hold's own bound applies.
func holdLimit(ctx context.Context, o eventOptions, now time.Time) (time.Time, bool) {
	from := now
	if !o.receivedAt.IsZero() && o.receivedAt.Before(now) {
		from = o.receivedAt
	}
	end, ok := o.budget, o.hasBudget
	if !ok {
		end, ok = ctx.Deadline()
	}
	if !ok {
		return time.Time{}, false
	}
	return from.Add(end.Sub(from) / 2), true
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Snapshot returns the runtime's pods and containers as the server knows
// them, sorted by id: what a plugin registering now is synchronized with.
// The server keeps them encoded: they are decoded for each call, and their
// strings point into the stored encodings, which the server never
// modifies (the objects may be modified; writing into their strings'
// bytes through unsafe means must not).
func (s *Server) Snapshot() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) {
	return s.state.snapshot()
}

// SnapshotEncoded is Snapshot without decoding: the protobuf encodings of
// the pods and containers (nri.v1beta1.PodSandbox and Container), sorted by
// id. The slices are the server's own bytes, which it never modifies; the
// caller must not modify them either.
func (s *Server) SnapshotEncoded() (pods, ctrs [][]byte) {
	st := s.state.encoded()
	pods, ctrs = make([][]byte, len(st.pods)), make([][]byte, len(st.ctrs))
	for i, p := range st.pods {
		pods[i] = p.raw
	}
	for i, c := range st.ctrs {
		ctrs[i] = c.raw
	}
	return pods, ctrs
}
