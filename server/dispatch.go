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

// The dispatch pipeline: one event's delivery to the plugins subscribed to
// it, in the dispatch order of the event's start (flights.go).
//
// A delivery is the per-event value: the typed request, its encoding (kept
// up to date as plugins change the request), the flight (dispatch order,
// generation, record, the caller's options), the caller's budget shared
// among the subscribers, the merge step, and the errors collected. For each
// slot of the dispatch order, deliver runs these stages; each reads on its
// own, and each exit is observed (counted, measured, logged, recorded):
//
//  1. select (deliver): the slot's instance subscribed to the event;
//  2. budget (allot): the plugin's timeout for the event, cut to its share
//     of the caller's budget; nothing left skips it;
//  3. readiness (await): a plugin still synchronizing is waited for within
//     that time, until one event's wait for it times out (then no event
//     waits for it until it is synchronized: missed.go); a NOT_READY plugin is waited for, failed or skipped as its
//     NotReadyPolicy says (status.go);
//  4. dry run (dryRunSkips): in a dry run, plugins without dry-run support
//     are listed as not evaluated instead of called;
//  5. encode (encoding): the request's bytes for a remote plugin, within
//     its maximum message size;
//  6. call (call, rpc.go): typed from end to end;
//  7. authorize (answered → refused): the answer's grants and values
//     (admitAnswer); a refused answer is the plugin's failure;
//  8. merge (mergeAnswer, update): the answer merged into the result and
//     the request, and the change appended to the encoding;
//  9. failure policy (failed, verdict): an unavailable plugin skipped or,
//     required, failing a creating event, and evicted as its policy says; a
//     plugin's error vetoing a creating event or collected for the others.
//
// Validation (validation.go) runs after the pipeline, on the merged result.

// mergeFunc merges one plugin's answer into the event's result. changed
// reports whether the request the next plugin sees was modified; changes,
// when not nil, collects the fields the plugin changed for the record.
//
// delta, when not nil, is the change encoded as a message of the request's
// type holding only what protobuf's merging of concatenated encodings
// applies exactly (see additiveDelta): appended to the request's encoding
// before the change, it encodes the request after it. It is asked for only
// when wantDelta is set.
type mergeFunc[Rsp proto.Message] func(p *plugin, rsp Rsp, changes *[]*nriv1beta1.FieldChange, wantDelta bool) (changed bool, delta []byte, err error)

// delivery is one event's way through the pipeline.
type delivery[Req, Rsp proto.Message] struct {
	s     *Server
	ev    event[Req, Rsp]
	req   Req
	fl    *flight
	merge mergeFunc[Rsp]                // nil: the answers carry nothing to merge
	dry   *[]*nriv1beta1.PluginInstance // not nil: a dry run, collecting the plugins not evaluated

	raw   []byte // req encoded, kept up to date as plugins change it; nil: encode when needed
	last  int    // position of the last remote subscriber: deltas are worth making up to it
	share budgetShare
	errs  []*nriv1beta1.PluginError
}

// dispatch delivers an event to every subscribed plugin in order and merges
// their answers with merge (nil: nothing to merge). For a creating event the
// first veto, conflict or unavailable required plugin fails it; for other
// events errors are collected and delivery goes on.
func dispatch[Req, Rsp proto.Message](ctx context.Context, s *Server, ev event[Req, Rsp], req Req, fl *flight,
	merge mergeFunc[Rsp]) ([]*nriv1beta1.PluginError, error) {
	d := &delivery[Req, Rsp]{s: s, ev: ev, req: req, fl: fl, merge: merge}
	return d.run(ctx)
}

// dryRun is dispatch in a dry run: only plugins that declared dry-run
// support are called; the others are appended to *notEvaluated.
func dryRun[Req, Rsp proto.Message](ctx context.Context, s *Server, ev event[Req, Rsp], req Req, fl *flight,
	merge mergeFunc[Rsp], notEvaluated *[]*nriv1beta1.PluginInstance) error {
	d := &delivery[Req, Rsp]{s: s, ev: ev, req: req, fl: fl, merge: merge, dry: notEvaluated}
	_, err := d.run(ctx)
	return err
}

func (d *delivery[Req, Rsp]) run(ctx context.Context) ([]*nriv1beta1.PluginError, error) {
	if d.ev.creating && d.dry == nil {
		if err := d.s.checkRequired(d.ev.eventInfo, d.fl); err != nil {
			return nil, err
		}
	}
	d.raw, d.last = d.fl.raw, -1
	if d.merge != nil {
		d.last = lastRemote(d.fl, d.ev.mask())
	}
	d.share = newBudgetShare(d.fl, d.ev.mask())
	for i, sl := range d.fl.order {
		if err := d.deliver(ctx, i, sl); err != nil {
			return d.errs, err
		}
	}
	return d.errs, nil
}

// deliver runs the stages for the slot at position i of the dispatch
// order. An error fails the event.
func (d *delivery[Req, Rsp]) deliver(ctx context.Context, i int, sl *slot) error {
	inst := sl.instanceFor(d.ev.mask(), d.fl)
	if inst == nil {
		d.s.countFiltered(sl, d.ev.eventInfo, d.fl)
		return nil // not subscribed, or its selectors exclude the event
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	a, ok, err := d.allot(i, inst)
	if !ok {
		return err
	}
	p, err := d.await(ctx, sl, inst, &a)
	if p == nil || d.dryRunSkips(p) {
		return err
	}
	raw, ok, err := d.encoding(p)
	if !ok {
		return err
	}
	start := time.Now()
	rsp, err := call(ctx, p, d.ev.rpc, a.timeout, d.req, raw)
	took := time.Since(start)
	d.fl.markCalled(p, d.ev.eventInfo)
	pc := recordCall(d.fl.rec, p, took)
	if err != nil {
		return d.failed(ctx, p, a.cut, took, pc, err)
	}
	return d.answered(i, p, rsp, took, pc)
}

// allotment is how long a plugin may take for the event. cut: the time was
// shortened by the caller's budget or by waiting for the plugin to be
// ready, so a timeout is a skip, not the plugin's own failure (no
// eviction).
type allotment struct {
	timeout time.Duration
	cut     bool
}

// allot is the budget stage: the plugin's timeout for the event, cut to
// what the caller's budget leaves it. ok false: the budget is spent and
// the plugin is skipped (err fails the event when it is required).
func (d *delivery[Req, Rsp]) allot(i int, inst *plugin) (a allotment, ok bool, err error) {
	a.timeout = inst.timeouts.forEvent(d.ev.event)
	left, on := d.share.allowed(i)
	switch {
	case !on:
		return a, true, nil
	case left <= 0:
		d.s.observe(inst, d.ev.eventInfo, nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED, 0, recordCall(d.fl.rec, inst, 0), nil)
		if inst.required() && d.ev.creating {
			return a, false, dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE,
				[]string{inst.full}, "%s: required plugin %s was not reached within the time budget", d.ev.name, inst.full)
		}
		return a, false, nil
	case left < a.timeout:
		a.timeout, a.cut = left, true
	}
	return a, true, nil
}

// await is the readiness stage: the instance to call, waited for within
// a's time while it synchronizes (a is then cut to what is left). A nil
// plugin is not called: it unsubscribed meanwhile, or it was not ready in
// time (skipped; err fails the event when it is required).
func (d *delivery[Req, Rsp]) await(ctx context.Context, sl *slot, inst *plugin, a *allotment) (*plugin, error) {
	deadline := time.Now().Add(a.timeout)
	p, ready, waited := sl.target(ctx, d.ev.eventInfo, d.fl, deadline)
	if p != nil {
		if waited {
			a.timeout, a.cut = time.Until(deadline), true
		}
		return d.s.notReady(ctx, p, d.ev.eventInfo, d.fl, a) // its status (status.go)
	}
	if ready {
		return nil, nil // it unsubscribed meanwhile (a new instance)
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	if !waited {
		// An earlier event waited for it in vain (plugin.wait).
		return nil, d.s.skip(inst, d.ev.eventInfo, d.fl.rec, 0, status.Errorf(codes.Unavailable,
			"plugin %s is still synchronizing for %s: an earlier event waited for it in vain, and events do not wait again until it is synchronized",
			inst.full, d.ev.name))
	}
	return nil, d.s.skip(inst, d.ev.eventInfo, d.fl.rec, a.timeout, status.Errorf(codes.Unavailable,
		"plugin %s was not ready (synchronizing) within its %v for %s", inst.full, a.timeout.Round(time.Millisecond), d.ev.name))
}

// dryRunSkips is the dry-run stage: in a dry run, a plugin without dry-run
// support is listed and recorded as not evaluated instead of called.
func (d *delivery[Req, Rsp]) dryRunSkips(p *plugin) bool {
	if d.dry == nil || p.caps.GetDryRun() {
		return false
	}
	*d.dry = append(*d.dry, &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx})
	if rec := d.fl.rec; rec != nil {
		rec.Calls = append(rec.Calls, &nriv1beta1.PluginCall{Plugin: &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx},
			InstanceId: p.instanceID, Outcome: nriv1beta1.CallOutcome_CALL_OUTCOME_NOT_EVALUATED})
	}
	return true
}

// encoding is the encode stage: the bytes to send p, encoded once and kept
// up to date for every remote plugin after it (nil for an in-process
// plugin, which gets the request itself). ok false: p cannot be sent the
// request, which is over its maximum message size (skipped; err fails the
// event when it is required).
func (d *delivery[Req, Rsp]) encoding(p *plugin) (raw []byte, ok bool, err error) {
	if !p.c.takesBytes() {
		return nil, true, nil
	}
	if d.raw == nil {
		if d.raw, err = codec.Encode(d.req); err != nil {
			return nil, false, status.Errorf(codes.Internal, "encoding %s: %v", d.ev.name, err)
		}
	}
	if len(d.raw) > p.maxMsg {
		if fm, ok := d.s.opts.metrics.(FailureMetrics); ok {
			fm.Oversize(p.full, d.ev.event)
		}
		return nil, false, d.s.skip(p, d.ev.eventInfo, d.fl.rec, 0, status.Errorf(codes.ResourceExhausted,
			"%s request of %d bytes is over plugin %s's maximum message size of %d bytes", d.ev.name, len(d.raw), p.full, p.maxMsg))
	}
	return d.raw, true, nil
}

// answered runs the authorize and merge stages on p's answer. An error (a
// required plugin's refused answer, a conflict) fails the event.
func (d *delivery[Req, Rsp]) answered(i int, p *plugin, rsp Rsp, took time.Duration, pc *nriv1beta1.PluginCall) error {
	if refused := d.s.admitAnswer(p, d.ev.event, d.req, rsp); refused != nil {
		return d.refused(p, took, pc, refused)
	}
	changed, delta, err := d.mergeAnswer(i, p, rsp, pc)
	d.s.observe(p, d.ev.eventInfo, nriv1beta1.CallOutcome_CALL_OUTCOME_OK, took, pc, nil)
	if err != nil {
		return err // the answer conflicts or is refused by the merge
	}
	if changed {
		d.update(delta)
	}
	return nil
}

// refused handles an answer the authorize stage refused: nothing of it is
// merged; the plugin failed, under its failure policy.
func (d *delivery[Req, Rsp]) refused(p *plugin, took time.Duration, pc *nriv1beta1.PluginCall, refused error) error {
	d.s.observe(p, d.ev.eventInfo, nriv1beta1.CallOutcome_CALL_OUTCOME_REFUSED, took, pc, refused)
	d.s.log.Warn("audit: plugin response refused", "plugin", p.full, "identity", p.identity, "event", d.ev.name,
		"code", status.Code(refused).String(), "reason", status.Convert(refused).Message())
	if p.required() && d.ev.creating {
		return dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE,
			[]string{p.full}, "%s: required plugin %s: %s", d.ev.name, p.full, status.Convert(refused).Message())
	}
	d.failOpen(p, nriv1beta1.CallOutcome_CALL_OUTCOME_REFUSED, pc)
	return nil
}

// mergeAnswer is the merge stage.
func (d *delivery[Req, Rsp]) mergeAnswer(i int, p *plugin, rsp Rsp, pc *nriv1beta1.PluginCall) (changed bool, delta []byte, err error) {
	if d.merge == nil {
		return false, nil, nil
	}
	var changes *[]*nriv1beta1.FieldChange
	if pc != nil {
		changes = &pc.Changes
	}
	return d.merge(p, rsp, changes, d.raw != nil && i < d.last)
}

// update keeps the encoding in step with a changed request: the change's
// delta appended, or the encoding dropped (made again when next needed).
func (d *delivery[Req, Rsp]) update(delta []byte) {
	if delta == nil || d.raw == nil {
		d.raw = nil
		return
	}
	// Appending never rewrites the bytes a finished call sent: raw is
	// clipped (Encoded) or our own.
	d.raw = append(d.raw, delta...)
}

// failed is the failure-policy stage for a call that returned err. An
// unavailable plugin is skipped, or fails a creating event when it is
// required, and is evicted as its policy says (afterFailure); an error the
// plugin answered with is its verdict.
func (d *delivery[Req, Rsp]) failed(ctx context.Context, p *plugin, cut bool, took time.Duration, pc *nriv1beta1.PluginCall, err error) error {
	ev := d.ev.eventInfo
	if ctx.Err() != nil {
		d.s.observe(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_UNAVAILABLE, took, pc, err)
		return status.FromContextError(ctx.Err()).Err()
	}
	outcome, avail := classify(err)
	if !avail {
		return d.verdict(p, took, pc, err)
	}
	if cut && outcome == nriv1beta1.CallOutcome_CALL_OUTCOME_TIMEOUT {
		// Cut short by the caller's budget or the wait for it, not by its
		// own timeout: skipped, not disconnected.
		outcome = nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED
	}
	d.s.observe(p, ev, outcome, took, pc, err)
	if outcome != nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED {
		d.s.afterFailure(p, outcome, err)
	}
	if p.required() && ev.creating {
		return dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE,
			[]string{p.full}, "%s: required plugin %s is unavailable: %s", ev.name, p.full, clip(status.Convert(err).Message()))
	}
	d.failOpen(p, outcome, pc)
	return nil
}

// verdict handles an error the plugin answered with: it vetoes a creating
// event; for the others it is collected for the runtime and delivery goes
// on.
func (d *delivery[Req, Rsp]) verdict(p *plugin, took time.Duration, pc *nriv1beta1.PluginCall, err error) error {
	st := status.Convert(err)
	if d.ev.creating {
		d.s.observe(p, d.ev.eventInfo, nriv1beta1.CallOutcome_CALL_OUTCOME_VETO, took, pc, err)
		return dispatchError(st.Code(), nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_VETOED, []string{p.full},
			"plugin %s vetoed %s: %s", p.full, d.ev.name, clip(st.Message()))
	}
	d.s.observe(p, d.ev.eventInfo, nriv1beta1.CallOutcome_CALL_OUTCOME_ERROR, took, pc, err)
	d.errs = append(d.errs, &nriv1beta1.PluginError{
		Plugin:  &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx},
		Code:    int32(st.Code()),
		Message: clip(st.Message()),
	})
	return nil
}

// failOpen counts an event that went on without p, as its policy allows.
func (d *delivery[Req, Rsp]) failOpen(p *plugin, outcome nriv1beta1.CallOutcome, pc *nriv1beta1.PluginCall) {
	d.s.opts.metrics.FailedOpen(p.full, d.ev.event, outcome)
	if pc != nil {
		pc.FailedOpen = true
	}
}

// lastRemote returns the position in fl's order of the last slot whose
// plugin, as registered now, takes the event of mask over gRPC, or -1.
func lastRemote(fl *flight, mask uint32) int {
	order := fl.order
	for i := len(order) - 1; i >= 0; i-- {
		if order[i].anyInstance(func(p *plugin) bool { return fl.takes(p, mask) && p.c.takesBytes() }) {
			return i
		}
	}
	return -1
}

// event runs one event: its request, as received, is checked first
// (checkReceived); then it is in flight (flights.go) with the dispatch
// order of its start, holds the pod's lock for the whole dispatch, and is
// recorded.
func (s *Server) event(ctx context.Context, ev *eventInfo, req proto.Message, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container,
	opts []EventOption, run func(fl *flight) error) error {
	o := applyEventOptions(opts)
	if err := checkReceived(req, o); err != nil {
		return err
	}
	s.awaitHeld(ctx, o, pod, ctr)
	fl := s.flights.begin(&s.order)
	fl.opts, fl.raw, fl.pod, fl.ctr = o, o.raw, pod, ctr
	defer s.flights.end(fl)
	unlock := s.pods.lock(pod.GetId())
	defer unlock()
	fl.rec = s.records.begin(ev.event, pod, ctr)
	err := run(fl)
	if len(fl.marks) > 0 {
		// Under the pod's lock still: a catch-up it starts comes before
		// the pod's next event.
		s.landed(fl, ev, err == nil || !ev.creating)
	}
	s.records.end(fl.rec, err)
	return err
}

// checkRequired fails a creating event when a plugin the operator requires,
// or one required until it registers again (RequireUntilRegistered), is not
// registered.
func (s *Server) checkRequired(ev *eventInfo, fl *flight) error {
	req := s.requiredPlugins()
	if len(req) == 0 {
		return nil
	}
	var missing []string
	for _, name := range req {
		if !registered(fl.order, name) && s.absentSelects(name, fl) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE, missing,
		"%s: required plugins %q not present", ev.name, missing)
}

// requiredPlugins is what checkRequired and MissingRequired check: the
// operator's required plugins (validator's RequiredPlugins) and those
// required until they register again (RequireUntilRegistered).
func (s *Server) requiredPlugins() []string {
	req := s.opts.validator.RequiredPlugins
	if a := s.awaited.Load(); a != nil && len(*a) > 0 {
		req = append(slices.Clone(req), *a...)
	}
	return req
}

// registered reports whether order has the plugin name refers to ("NN-name",
// or "name" at any index).
func registered(order []*slot, name string) bool {
	return slices.ContainsFunc(order, func(sl *slot) bool { return sl.full == name || sl.full[3:] == name })
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
			if !p.retiring.Swap(true) {
				s.evicted(p, "timeout") // once, however many calls timed out
			}
			go p.shutdown(nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED, "request handling timeout")
		}
	case status.Code(err) == codes.Unavailable:
		p.close(fmt.Errorf("plugin unavailable: %s", clip(status.Convert(err).Message())))
	case !isGarbage(err) && (status.Code(err) == codes.ResourceExhausted || status.Code(err) == codes.Canceled):
		// Busy, or it gave up on this call: this event's failure under its
		// policy, nothing more. These are availability failures
		// (docs/PROTOCOL.md §8), never a reason to evict a plugin.
	default:
		if !p.retiring.Swap(true) {
			s.evicted(p, "protocol_error")
		}
		go p.shutdown(nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED, "protocol error: "+clip(status.Convert(err).Message()))
	}
}

// FailureMetrics is implemented by a Metrics that also counts plugin
// evictions and requests over a plugin's maximum message size. It is
// optional: the server uses it when its Metrics has it.
type FailureMetrics interface {
	// Evicted counts one plugin disconnected after a failed call, for
	// reason "timeout" or "protocol_error".
	Evicted(plugin, reason string)
	// Oversize counts one request of event not sent to plugin because it
	// is over the plugin's maximum message size.
	Oversize(plugin string, event nriv1beta1.Event)
}

// evicted counts p's eviction (FailureMetrics).
func (s *Server) evicted(p *plugin, reason string) {
	if fm, ok := s.opts.metrics.(FailureMetrics); ok {
		fm.Evicted(p.full, reason)
	}
}

// MissingRequired returns the required plugins, the operator's
// (validator's RequiredPlugins) and those required until they register
// again (RequireUntilRegistered), that are not registered now, as they are
// named there. nrid's metrics export them (nri_required_plugin_missing).
func (s *Server) MissingRequired() []string {
	var order []*slot
	if o := s.order.Load(); o != nil {
		order = *o
	}
	var missing []string
	for _, name := range s.requiredPlugins() {
		if !registered(order, name) && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
	}
	return missing
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
	d, order := fl.opts.budget, fl.order
	after := make([]int, len(order))
	n := 0
	for i := len(order) - 1; i >= 0; i-- {
		after[i] = n
		if order[i].instanceFor(mask, fl) != nil {
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
