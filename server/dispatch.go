package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
)

// applyFunc merges one plugin's answer into the event's result. changed
// reports whether the request the next plugin sees was modified; changes,
// when not nil, collects the fields the plugin changed for the record.
//
// delta, when not nil, is the change encoded as a message of the request's
// type holding only what protobuf's merging of concatenated encodings
// applies exactly (see additiveDelta): appended to the request's encoding
// before the change, it encodes the request after it.
// It is asked for only when wantDelta is set.
type applyFunc func(p *plugin, rsp proto.Message, changes *[]*nriv1beta1.FieldChange, wantDelta bool) (changed bool, delta []byte, err error)

// lastRemote returns the position in order of the last slot whose plugin,
// as registered now, subscribes to mask over gRPC, or -1.
func lastRemote(order []*slot, mask uint32) int {
	for i := len(order) - 1; i >= 0; i-- {
		if order[i].anyInstance(func(p *plugin) bool { return p.mask&mask != 0 && p.c.remote() }) {
			return i
		}
	}
	return -1
}

// event runs one event: it is in flight (flights.go) with the dispatch
// order of its start, holds the pod's lock for the whole dispatch, and is
// recorded.
func (s *Server) event(ctx context.Context, ev *eventInfo, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container,
	opts []EventOption, run func(fl *flight) error) error {
	o := applyEventOptions(opts)
	s.awaitHeld(ctx, o)
	fl := s.flights.begin(&s.order)
	fl.opts, fl.raw = o, o.raw
	defer s.flights.end(fl)
	unlock := s.pods.lock(pod.GetId())
	defer unlock()
	fl.rec = s.records.begin(ev.event, pod, ctr)
	err := run(fl)
	s.records.end(fl.rec, err)
	return err
}

// checkRequired fails a creating event when a plugin the operator requires,
// or one required until it registers again (RequireUntilRegistered), is not
// registered.
func (s *Server) checkRequired(ev *eventInfo, order []*slot) error {
	req := s.opts.validator.RequiredPlugins
	if a := s.awaited.Load(); a != nil && len(*a) > 0 {
		req = append(slices.Clone(req), *a...)
	}
	if len(req) == 0 {
		return nil
	}
	var missing []string
	for _, name := range req {
		if !slices.ContainsFunc(order, func(sl *slot) bool { return sl.full == name || sl.full[3:] == name }) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE, missing,
		"%s: required plugins %q not present", ev.name, missing)
}

// dispatch delivers an event to every subscribed plugin in order and merges
// their answers with apply. For a creating event the first veto, conflict
// or unavailable required plugin fails it; for other events errors are
// collected and delivery goes on.
func (s *Server) dispatch(ctx context.Context, ev *eventInfo, req proto.Message, newRsp func() proto.Message,
	apply applyFunc, fl *flight) ([]*nriv1beta1.PluginError, error) {
	return s.dispatchTo(ctx, ev, req, newRsp, apply, fl, nil)
}

// dispatchTo is dispatch; with dry set, only plugins that declared dry-run
// support are called and the others are appended to *dry.
func (s *Server) dispatchTo(ctx context.Context, ev *eventInfo, req proto.Message, newRsp func() proto.Message,
	apply applyFunc, fl *flight, dry *[]*nriv1beta1.PluginInstance) ([]*nriv1beta1.PluginError, error) {
	rec, order := fl.rec, fl.order
	if ev.creating && dry == nil {
		if err := s.checkRequired(ev, order); err != nil {
			return nil, err
		}
	}
	var (
		raw  = fl.raw // req encoded, kept up to date as plugins change it
		errs []*nriv1beta1.PluginError
	)
	// Deltas are worth making only up to the last plugin that takes the
	// encoding.
	last := -1
	if apply != nil {
		last = lastRemote(order, ev.mask())
	}
	share := newBudgetShare(fl, ev.mask())
	for i, sl := range order {
		inst := sl.instanceFor(ev.mask(), fl.gen)
		if inst == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return errs, status.FromContextError(err).Err()
		}
		timeout := inst.timeouts.forEvent(ev.event)
		// cut: the call's time was shortened by the caller's budget or by
		// waiting for the plugin to be ready, so a timeout is a skip, not
		// the plugin's own failure (no eviction).
		cut := false
		if left, ok := share.allowed(i); ok {
			if left <= 0 {
				// The caller's budget is spent: skip the plugin, or fail
				// the event if it is required.
				s.observe(inst, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED, 0, recordCall(rec, inst, 0), nil)
				if inst.required() && ev.creating {
					return errs, dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE,
						[]string{inst.full}, "%s: required plugin %s was not reached within the time budget", ev.name, inst.full)
				}
				continue
			}
			if left < timeout {
				timeout, cut = left, true
			}
		}
		deadline := time.Now().Add(timeout)
		p, ready, waited := sl.target(ctx, ev.mask(), fl.gen, deadline)
		if p == nil {
			if ready {
				continue // it unsubscribed meanwhile (a new instance)
			}
			if err := ctx.Err(); err != nil {
				return errs, status.FromContextError(err).Err()
			}
			// Still synchronizing when its time for the event ran out.
			if err := s.skip(inst, ev, rec, timeout, status.Errorf(codes.Unavailable, "plugin %s was not ready (synchronizing) within its %v for %s",
				inst.full, timeout.Round(time.Millisecond), ev.name)); err != nil {
				return errs, err
			}
			continue
		}
		if dry != nil && !p.caps.GetDryRun() {
			*dry = append(*dry, &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx})
			if rec != nil {
				rec.Calls = append(rec.Calls, &nriv1beta1.PluginCall{Plugin: &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx},
					InstanceId: p.instanceID, Outcome: nriv1beta1.CallOutcome_CALL_OUTCOME_NOT_EVALUATED})
			}
			continue
		}
		if waited {
			timeout, cut = time.Until(deadline), true
		}
		if raw == nil && p.c.remote() {
			var err error
			if raw, err = codec.Encode(req); err != nil {
				return errs, status.Errorf(codes.Internal, "encoding %s: %v", ev.name, err)
			}
		}
		if raw != nil && len(raw) > p.maxMsg {
			// nrid cannot send it.
			if err := s.skip(p, ev, rec, 0, status.Errorf(codes.ResourceExhausted, "%s request of %d bytes is over plugin %s's maximum message size of %d bytes",
				ev.name, len(raw), p.full, p.maxMsg)); err != nil {
				return errs, err
			}
			continue
		}
		start := time.Now()
		rsp, err := p.call(ctx, ev.method, timeout, req, raw, newRsp)
		d := time.Since(start)
		pc := recordCall(rec, p, d)
		if err == nil {
			if refused := s.admitAnswer(p, ev.event, req, rsp); refused != nil {
				s.observe(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_REFUSED, d, pc, refused)
				s.log.Warn("audit: plugin response refused", "plugin", p.full, "identity", p.identity, "event", ev.name,
					"code", status.Code(refused).String(), "reason", status.Convert(refused).Message())
				if p.required() && ev.creating {
					return errs, dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE,
						[]string{p.full}, "%s: required plugin %s: %s", ev.name, p.full, status.Convert(refused).Message())
				}
				s.opts.metrics.FailedOpen(p.full, ev.event, nriv1beta1.CallOutcome_CALL_OUTCOME_REFUSED)
				if pc != nil {
					pc.FailedOpen = true
				}
				continue
			}
			var changes *[]*nriv1beta1.FieldChange
			if pc != nil {
				changes = &pc.Changes
			}
			changed := false
			var delta []byte
			if apply != nil {
				changed, delta, err = apply(p, rsp, changes, raw != nil && i < last)
			}
			if err == nil {
				s.observe(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_OK, d, pc, nil)
				if changed {
					if delta != nil && raw != nil {
						// Appending never rewrites the bytes the finished
						// call sent: raw is clipped or our own.
						raw = append(raw, delta...)
					} else {
						raw = nil
					}
				}
				continue
			}
			// A merge error: the plugin's answer conflicts or is refused.
			s.observe(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_OK, d, pc, nil)
			return errs, err
		}
		if ctx.Err() != nil {
			s.observe(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_UNAVAILABLE, d, pc, err)
			return errs, status.FromContextError(ctx.Err()).Err()
		}
		outcome, avail := classify(err)
		if avail && cut && outcome == nriv1beta1.CallOutcome_CALL_OUTCOME_TIMEOUT {
			// Cut short by the caller's budget or the wait for it, not by
			// its own timeout: skipped, not disconnected.
			outcome = nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED
		}
		if avail {
			s.observe(p, ev, outcome, d, pc, err)
			if outcome != nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED {
				s.afterFailure(p, outcome, err)
			}
			if p.required() && ev.creating {
				return errs, dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE,
					[]string{p.full}, "%s: required plugin %s is unavailable: %s", ev.name, p.full, clip(status.Convert(err).Message()))
			}
			s.opts.metrics.FailedOpen(p.full, ev.event, outcome)
			if pc != nil {
				pc.FailedOpen = true
			}
			continue
		}
		if ev.creating {
			s.observe(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_VETO, d, pc, err)
			st := status.Convert(err)
			return errs, dispatchError(st.Code(), nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_VETOED, []string{p.full},
				"plugin %s vetoed %s: %s", p.full, ev.name, clip(st.Message()))
		}
		s.observe(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_ERROR, d, pc, err)
		st := status.Convert(err)
		errs = append(errs, &nriv1beta1.PluginError{
			Plugin:  &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx},
			Code:    int32(st.Code()),
			Message: clip(st.Message()),
		})
	}
	return errs, nil
}

// skip records that p was not called for ev, after d, for a reason that is
// not its fault (why): an availability failure under its failure policy,
// never an eviction. It returns the error that fails a creating event when
// p is required, else nil (the event goes on without p).
func (s *Server) skip(p *plugin, ev *eventInfo, rec *nriv1beta1.DispatchRecord, d time.Duration, why error) error {
	s.observe(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED, d, recordCall(rec, p, d), why)
	if p.required() && ev.creating {
		return dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE,
			[]string{p.full}, "%s: required plugin %s is unavailable: %s", ev.name, p.full, status.Convert(why).Message())
	}
	s.opts.metrics.FailedOpen(p.full, ev.event, nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED)
	return nil
}

// classify sorts a failed call: availability failures (the plugin could not
// answer) versus verdicts (it answered with an error).
func classify(err error) (nriv1beta1.CallOutcome, bool) {
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		return nriv1beta1.CallOutcome_CALL_OUTCOME_TIMEOUT, true
	case codes.Unavailable, codes.ResourceExhausted, codes.Canceled, codes.Unimplemented:
		return nriv1beta1.CallOutcome_CALL_OUTCOME_UNAVAILABLE, true
	}
	if isGarbage(err) {
		return nriv1beta1.CallOutcome_CALL_OUTCOME_UNAVAILABLE, true
	}
	return nriv1beta1.CallOutcome_CALL_OUTCOME_VETO, false
}

// afterFailure disconnects a plugin after an availability failure, as its
// policy says: a lost connection or a protocol error (UNIMPLEMENTED, an
// undecodable or malformed response) always, a timeout unless the plugin
// asked to stay connected, RESOURCE_EXHAUSTED and CANCELLED never.
func (s *Server) afterFailure(p *plugin, outcome nriv1beta1.CallOutcome, err error) {
	switch {
	case outcome == nriv1beta1.CallOutcome_CALL_OUTCOME_TIMEOUT:
		if !p.policy.GetKeepConnected() {
			p.retiring.Store(true)
			go p.shutdown(nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED, "request handling timeout")
		}
	case status.Code(err) == codes.Unavailable:
		p.close(fmt.Errorf("plugin unavailable: %s", clip(status.Convert(err).Message())))
	case !isGarbage(err) && (status.Code(err) == codes.ResourceExhausted || status.Code(err) == codes.Canceled):
		// Busy, or it gave up on this call: this event's failure under its
		// policy, nothing more. These are availability failures
		// (docs/PROTOCOL.md §8), never a reason to evict a plugin.
	default:
		p.retiring.Store(true)
		go p.shutdown(nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED, "protocol error: "+clip(status.Convert(err).Message()))
	}
}

// observe counts and measures one call.
func (s *Server) observe(p *plugin, ev *eventInfo, outcome nriv1beta1.CallOutcome, d time.Duration, pc *nriv1beta1.PluginCall, err error) {
	p.counters.calls.Add(1)
	switch outcome {
	case nriv1beta1.CallOutcome_CALL_OUTCOME_VETO:
		p.counters.vetoes.Add(1)
	case nriv1beta1.CallOutcome_CALL_OUTCOME_TIMEOUT:
		p.counters.timeouts.Add(1)
	case nriv1beta1.CallOutcome_CALL_OUTCOME_UNAVAILABLE:
		p.counters.unavailable.Add(1)
	case nriv1beta1.CallOutcome_CALL_OUTCOME_REFUSED:
		p.counters.refused.Add(1)
	case nriv1beta1.CallOutcome_CALL_OUTCOME_ERROR:
		p.counters.errors.Add(1)
	}
	if err != nil {
		p.noteError(err)
		// A failed call is the line operators look for when a plugin's
		// changes are missing (docs/containerd.md): warn. A veto is the
		// plugin's verdict, not a failure: info. A refusal has its own
		// audit line.
		level := slog.LevelWarn
		switch outcome {
		case nriv1beta1.CallOutcome_CALL_OUTCOME_VETO:
			level = slog.LevelInfo
		case nriv1beta1.CallOutcome_CALL_OUTCOME_REFUSED:
			level = slog.LevelDebug
		}
		s.log.Log(context.Background(), level, "plugin call failed", "plugin", p.full, "event", ev.name, "outcome", outcome.String(), "error", clip(err.Error()))
	}
	s.opts.metrics.PluginCall(p.full, ev.event, outcome, d)
	if pc != nil {
		pc.Outcome = outcome
		if err != nil {
			pc.Error = clip(status.Convert(err).Message())
		}
	}
}

// recordCall adds a call to the record, if there is one.
func recordCall(rec *nriv1beta1.DispatchRecord, p *plugin, d time.Duration) *nriv1beta1.PluginCall {
	if rec == nil {
		return nil
	}
	pc := &nriv1beta1.PluginCall{
		Plugin:     &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx},
		InstanceId: p.instanceID,
		Duration:   durationpb.New(d),
	}
	rec.Calls = append(rec.Calls, pc)
	return pc
}

// budgetShare divides a caller's budget (Budget) among the plugins an
// event goes to, so that a hung plugin is cut early enough for the plugins
// after it: each later subscribed plugin keeps a reserve of the budget,
// together half of it (total / (2 × subscribed plugins) each). A plugin may
// use everything else that is left. With one plugin it may use it all; with
// three plugins and classic NRI's 2 s (minus the bridge's margin), the first
// may use about 1.3 s and each later one is sure of about 0.3 s.
type budgetShare struct {
	on       bool
	deadline time.Time
	reserve  time.Duration
	after    []int // subscribed slots after each position
}

func newBudgetShare(fl *flight, mask uint32) budgetShare {
	if !fl.opts.hasBudget {
		return budgetShare{}
	}
	d, order, gen := fl.opts.budget, fl.order, fl.gen
	after := make([]int, len(order))
	n := 0
	for i := len(order) - 1; i >= 0; i-- {
		after[i] = n
		if order[i].instanceFor(mask, gen) != nil {
			n++
		}
	}
	b := budgetShare{on: true, deadline: d, after: after}
	if n > 0 {
		b.reserve = time.Until(d) / time.Duration(2*n)
	}
	return b
}

// allowed returns how long the plugin at position i may take (ok false:
// no budget).
func (b budgetShare) allowed(i int) (time.Duration, bool) {
	if !b.on {
		return 0, false
	}
	return time.Until(b.deadline) - b.reserve*time.Duration(b.after[i]), true
}
