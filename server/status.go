package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Plugin status and plugin-requested resynchronization (docs/PROTOCOL.md,
// "Plugin status and resync"):
//
//   - A plugin reports READY, NOT_READY or DEGRADED with a reason, at
//     registration (RegisterPluginRequest.status) and at any time after
//     (RuntimeService.SetPluginStatus, Handle.SetStatus).
//   - The readiness stage of dispatch (dispatch.go await, callValidator)
//     applies the plugin's NotReadyPolicy while it is NOT_READY: WAIT for
//     READY or DEGRADED within its time for the event (woken by the change,
//     never polled), FAIL (unavailable at once), or SKIP (not called, the
//     event goes on). DEGRADED is delivered like READY.
//   - RequestResync is served as a new Synchronize epoch for that plugin
//     only, behind a registration cut (flights.cut) that holds back only
//     the events the plugin subscribed to, and only within their time for
//     it; requests made while one is pending are merged into it.

// Limits and defaults of plugin status and resync requests.
const (
	// MaxStatusReasonLen bounds the reason of a status report or of a
	// resync request (bytes of UTF-8).
	MaxStatusReasonLen = 1024
	// DefaultMinResyncInterval is the least time between the starts of two
	// resynchronizations one plugin asked for (WithMinResyncInterval).
	DefaultMinResyncInterval = time.Second
	// statusLogInterval is the least time between two log lines about one
	// plugin's status or resync requests; changes in between are counted
	// and reported with the next line.
	statusLogInterval = time.Second
)

// WithNotReadyPolicy sets what a NOT_READY status means for the events of
// plugins the operator's policy (PluginPolicy.NotReady) does not configure.
// UNSPECIFIED (the default) is: WAIT for required plugins (failure policy
// fail_request, or named in the validator's required plugins) and for
// validating plugins (subscribed to ValidateContainerAdjustment, which fail
// closed anyway), SKIP for the others.
func WithNotReadyPolicy(p nriv1beta1.NotReadyPolicy) Option {
	return func(o *options) { o.notReady = p }
}

// WithMinResyncInterval sets the least time between the starts of two
// resynchronizations one plugin asks for (default 1 s; 0: none). A request
// made sooner is accepted at once and served when the interval has passed,
// merged with any others made meanwhile: a plugin looping on RequestResync
// costs nrid one Synchronize of it per interval.
func WithMinResyncInterval(d time.Duration) Option {
	return func(o *options) { o.minResyncInterval = d }
}

// checkStatusOptions validates the options of this file for New.
func checkStatusOptions(o *options) error {
	if _, ok := nriv1beta1.NotReadyPolicy_name[int32(o.notReady)]; !ok {
		return fmt.Errorf("server: WithNotReadyPolicy: %d is not a NotReadyPolicy", o.notReady)
	}
	if o.minResyncInterval < 0 {
		return fmt.Errorf("server: WithMinResyncInterval: %v is negative", o.minResyncInterval)
	}
	return nil
}

// StatusMetrics is implemented by a Metrics sink that also records plugin
// status (the server checks for it; Metrics itself is unchanged). Its
// methods must be fast and safe for concurrent use.
type StatusMetrics interface {
	// PluginStatus records the status of plugin ("NN-name"); UNSPECIFIED
	// means the plugin is gone (its status series may be dropped).
	PluginStatus(plugin string, status nriv1beta1.PluginStatus)
	// NotReadySkip records an event the plugin was not called for because
	// it was NOT_READY, and that went on without it.
	NotReadySkip(plugin string, event nriv1beta1.Event)
	// RequestedResync records a resynchronization the plugin asked for
	// (merged requests once).
	RequestedResync(plugin string)
}

// statusNow is one immutable status of a plugin.
type statusNow struct {
	status nriv1beta1.PluginStatus // READY, NOT_READY or DEGRADED
	reason string
	since  time.Time // when status (not the reason) last changed
	// released is closed when a NOT_READY plugin leaves NOT_READY (nil for
	// the other statuses): events of the WAIT policy wait on it.
	released chan struct{}
}

// statusBox is a plugin's status, the policy for its NOT_READY, its
// counters and its requested resyncs.
type statusBox struct {
	cur    atomic.Pointer[statusNow]
	policy nriv1beta1.NotReadyPolicy // effective; set before the plugin is visible

	mu         sync.Mutex // serializes changes; guards the log limiter
	lastLog    time.Time
	suppressed int

	notReadySkips, requestedResyncs atomic.Uint64

	// resync is guarded by Server.syncMu.
	resync struct {
		requested bool      // a request waits to be served
		epoch     uint64    // the epoch promised to it
		last      uint64    // the highest epoch handed out (1: registration)
		lastStart time.Time // start of the last requested resync
		starting  bool      // a goroutine is about to start one
	}
}

// now returns the plugin's status (READY before initStatus).
func (b *statusBox) now() *statusNow {
	if c := b.cur.Load(); c != nil {
		return c
	}
	return &statusNow{status: nriv1beta1.PluginStatus_PLUGIN_STATUS_READY}
}

// allowLog is the log limiter: whether a line may be logged now, and how
// many were held back since the last one. b.mu is held.
func (b *statusBox) allowLog(now time.Time) (bool, int) {
	if now.Sub(b.lastLog) < statusLogInterval {
		b.suppressed++
		return false, 0
	}
	n := b.suppressed
	b.lastLog, b.suppressed = now, 0
	return true, n
}

// normalStatus maps UNSPECIFIED to READY.
func normalStatus(st nriv1beta1.PluginStatus) nriv1beta1.PluginStatus {
	if st == nriv1beta1.PluginStatus_PLUGIN_STATUS_UNSPECIFIED {
		return nriv1beta1.PluginStatus_PLUGIN_STATUS_READY
	}
	return st
}

// validStatus reports whether st is a known PluginStatus.
func validStatus(st nriv1beta1.PluginStatus) bool {
	return st >= nriv1beta1.PluginStatus_PLUGIN_STATUS_UNSPECIFIED && st <= nriv1beta1.PluginStatus_PLUGIN_STATUS_DEGRADED
}

// checkReason checks a status or resync reason: at most MaxStatusReasonLen
// bytes of UTF-8. The error is the message of the refusal.
func checkReason(reason string) error {
	if len(reason) > MaxStatusReasonLen {
		return fmt.Errorf("%d bytes, the maximum is %d", len(reason), MaxStatusReasonLen)
	}
	if !utf8.ValidString(reason) {
		return fmt.Errorf("not valid UTF-8")
	}
	return nil
}

// checkRegistrationStatus refuses a registration whose status is out of
// range or whose status_reason is too long or not UTF-8
// (REGISTRATION_REFUSAL_INVALID_SELECTORS, as the proto says for status).
func checkRegistrationStatus(reg Registration) error {
	why := nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_SELECTORS
	if !validStatus(reg.Status) {
		return refusal(codes.InvalidArgument, why, "status", "status: %d is not a PluginStatus (0 to 3)", reg.Status)
	}
	if err := checkReason(reg.StatusReason); err != nil {
		return refusal(codes.InvalidArgument, why, "status_reason", "status_reason: %v", err)
	}
	return nil
}

// checkStatusRequest checks a SetPluginStatus request.
func checkStatusRequest(st nriv1beta1.PluginStatus, reason string) error {
	if !validStatus(st) {
		return invalid("status", "%d is not a PluginStatus (0 UNSPECIFIED, 1 READY, 2 NOT_READY, 3 DEGRADED)", st)
	}
	if err := checkReason(reason); err != nil {
		return invalid("reason", "%v", err)
	}
	return nil
}

// initStatus sets a new instance's status from its registration, and its
// epochs (the registration's Synchronize is epoch 1). It runs before the
// instance is visible to anyone.
func (s *Server) initStatus(p *plugin, reg Registration) {
	st := normalStatus(reg.Status)
	now := &statusNow{status: st, reason: reg.StatusReason, since: time.Now()}
	if st == nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY {
		now.released = make(chan struct{})
	}
	p.status.cur.Store(now)
	p.status.resync.last = 1
}

// notReadyPolicy is the effective policy for p's NOT_READY, once its
// failure policy and subscription are known: the operator's setting for
// the plugin, else the server's default, else WAIT for required and
// validating plugins and SKIP for the others.
func (s *Server) notReadyPolicy(p *plugin) nriv1beta1.NotReadyPolicy {
	if pol := s.pluginPolicy(p.identity, p.full); pol != nil && pol.NotReady != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_UNSPECIFIED {
		return pol.NotReady
	}
	if s.opts.notReady != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_UNSPECIFIED {
		return s.opts.notReady
	}
	if p.required() || p.mask&evValidate.mask() != 0 ||
		slices.ContainsFunc(s.opts.validator.RequiredPlugins, func(n string) bool { return n == p.full || n == p.name }) {
		return nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_WAIT
	}
	return nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP
}

// setStatus records a status report of p. A report that changes nothing
// is a no-op; a change of status (not only of the reason) is timestamped,
// logged (at most one line per plugin per statusLogInterval, counting the
// others), measured and wakes the events waiting for p.
func (s *Server) setStatus(p *plugin, st nriv1beta1.PluginStatus, reason string) {
	st = normalStatus(st)
	b := &p.status
	b.mu.Lock()
	cur := b.now()
	if cur.status == st && cur.reason == reason {
		b.mu.Unlock()
		return
	}
	t := time.Now()
	next := &statusNow{status: st, reason: reason, since: cur.since}
	changed := st != cur.status
	if changed {
		next.since = t
	}
	if st == nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY {
		next.released = cur.released
		if next.released == nil {
			next.released = make(chan struct{})
		}
	}
	b.cur.Store(next)
	if cur.released != nil && next.released == nil {
		close(cur.released)
	}
	logIt, held := b.allowLog(t)
	b.mu.Unlock()
	if logIt {
		level := "plugin status changed"
		if !changed {
			level = "plugin status reason changed"
		}
		s.log.Info(level, "plugin", p.full, "instance", p.instanceID, "status", statusName(st), "from", statusName(cur.status),
			"reason", reason, "not_ready_policy", policyName(b.policy), "unlogged_changes", held)
	}
	if changed {
		if sm, ok := s.opts.metrics.(StatusMetrics); ok {
			sm.PluginStatus(p.full, st)
		}
		s.statusWatch.notify()
	}
}

// statusRegistered publishes a new instance's status once it takes events.
func (s *Server) statusRegistered(p *plugin) {
	cur := p.status.now()
	if sm, ok := s.opts.metrics.(StatusMetrics); ok {
		sm.PluginStatus(p.full, cur.status)
	}
	if cur.status != nriv1beta1.PluginStatus_PLUGIN_STATUS_READY {
		s.log.Info("plugin registered with status", "plugin", p.full, "instance", p.instanceID, "status", statusName(cur.status),
			"reason", cur.reason, "not_ready_policy", policyName(p.status.policy))
	}
	s.statusWatch.notify()
}

// statusGone drops the status of a plugin that left.
func (s *Server) statusGone(full string) {
	if sm, ok := s.opts.metrics.(StatusMetrics); ok {
		sm.PluginStatus(full, nriv1beta1.PluginStatus_PLUGIN_STATUS_UNSPECIFIED)
	}
	s.statusWatch.notify()
}

func statusName(st nriv1beta1.PluginStatus) string {
	return trimEnum(normalStatus(st).String(), "PLUGIN_STATUS_")
}

func policyName(p nriv1beta1.NotReadyPolicy) string { return trimEnum(p.String(), "NOT_READY_POLICY_") }

func trimEnum(name, prefix string) string {
	if len(name) > len(prefix) && name[:len(prefix)] == prefix {
		return name[len(prefix):]
	}
	return name
}

// statusInfo adds the status fields and counters to p's PluginInfo.
func (p *plugin) statusInfo(out *nriv1beta1.PluginInfo) {
	cur := p.status.now()
	out.Status = cur.status
	out.StatusReason = cur.reason
	if !cur.since.IsZero() {
		out.StatusSince = timestamppb.New(cur.since)
	}
	out.NotReadyPolicy = p.status.policy
	if out.Counters == nil {
		out.Counters = &nriv1beta1.PluginCounters{}
	}
	out.Counters.NotReadySkips = p.status.notReadySkips.Load()
	out.Counters.RequestedResyncs = p.status.requestedResyncs.Load()
}

// StatusChanged returns a channel that is closed the next time a plugin's
// status changes, or a plugin registers or unregisters; Plugins then shows
// the new statuses. Take a new channel after each change. Changes that
// come quickly one after another may close one channel only.
func (s *Server) StatusChanged() <-chan struct{} { return s.statusWatch.wait() }

// awaitStatus is the status part of the readiness stage for a NOT_READY
// plugin (cur is its status): under WAIT it waits until the plugin leaves
// NOT_READY, at most until deadline; ok reports whether p is to be called,
// waited whether it waited. why is the reason it is not called.
func (p *plugin) awaitStatus(ctx context.Context, cur *statusNow, deadline time.Time) (ok, waited bool, why error) {
	switch p.status.policy {
	case nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP:
		return false, false, status.Errorf(codes.Unavailable, "plugin %s is NOT_READY (%s): skipped", p.full, clip(cur.reason))
	case nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_FAIL:
		return false, false, status.Errorf(codes.Unavailable, "plugin %s is NOT_READY (%s)", p.full, clip(cur.reason))
	}
	start := time.Now()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		select {
		case <-cur.released:
		case <-ctx.Done():
			return false, true, status.FromContextError(ctx.Err()).Err()
		case <-p.closed:
			return false, true, status.Errorf(codes.Unavailable, "plugin %s went away while NOT_READY", p.full)
		case <-t.C:
			return false, true, status.Errorf(codes.Unavailable, "plugin %s was still NOT_READY (%s) after %v",
				p.full, clip(p.status.now().reason), time.Since(start).Round(time.Millisecond))
		}
		if cur = p.status.now(); cur.status != nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY {
			return true, true, nil
		}
	}
}

// notReady is the status part of the readiness stage of dispatch (await):
// p when it is to be called (a cut to what is left when the event waited
// for it), or nil when its NOT_READY status says not to call it, with the
// error that fails the event (a required plugin, policy FAIL or WAIT,
// creating event).
func (s *Server) notReady(ctx context.Context, p *plugin, ev *eventInfo, fl *flight, a *allotment) (*plugin, error) {
	cur := p.status.now()
	if cur.status != nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY {
		return p, nil
	}
	start := time.Now()
	deadline := start.Add(a.timeout)
	ok, waited, why := p.awaitStatus(ctx, cur, deadline)
	if ok {
		if waited {
			a.timeout, a.cut = time.Until(deadline), true
		}
		return p, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	fl.notReady = append(fl.notReady, p.full)
	return nil, s.notCalled(p, ev, recordCall(fl.rec, p, time.Since(start)), why)
}

// notCalled records that p was not called for ev because it was NOT_READY
// (why), and applies its policy: under SKIP the event goes on; otherwise
// the call is unavailable and p's failure policy applies (a required
// plugin fails a creating event; never an eviction). Nothing is logged
// per event: the status change was.
func (s *Server) notCalled(p *plugin, ev *eventInfo, pc *nriv1beta1.PluginCall, why error) error {
	s.observe(p, ev, nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED, 0, pc, nil)
	if pc != nil {
		pc.Error = clip(status.Convert(why).Message())
	}
	if p.status.policy != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP {
		if p.required() && ev.creating {
			return dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE,
				[]string{p.full}, "%s: required plugin %s is unavailable: %s", ev.name, p.full, status.Convert(why).Message())
		}
		s.opts.metrics.FailedOpen(p.full, ev.event, nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED)
		if pc != nil {
			pc.FailedOpen = true
		}
	}
	p.status.notReadySkips.Add(1)
	if sm, ok := s.opts.metrics.(StatusMetrics); ok {
		sm.NotReadySkip(p.full, ev.event)
	}
	return nil
}

// validatorNotReady is the status part of the readiness stage for a
// validating plugin: call reports whether p is to be called (within
// deadline); if not, v is its answer (SKIP: not consulted, which does not
// reject; otherwise unavailable, and validators fail closed) and pc the
// record of the call that was not made.
func (s *Server) validatorNotReady(ctx context.Context, p *plugin, deadline time.Time, fl *flight) (call bool, v validation, pc *nriv1beta1.PluginCall) {
	cur := p.status.now()
	if cur.status != nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY {
		return true, validation{}, nil
	}
	ok, _, why := p.awaitStatus(ctx, cur, deadline)
	if ok {
		return true, validation{}, nil
	}
	if fl.rec != nil {
		pc = &nriv1beta1.PluginCall{Plugin: &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx}, InstanceId: p.instanceID}
	}
	s.observe(p, evValidate.eventInfo, nriv1beta1.CallOutcome_CALL_OUTCOME_SKIPPED, 0, pc, nil)
	if pc != nil {
		pc.Error = clip(status.Convert(why).Message())
	}
	if p.status.policy == nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_SKIP {
		p.status.notReadySkips.Add(1)
		if sm, ok := s.opts.metrics.(StatusMetrics); ok {
			sm.NotReadySkip(p.full, evValidate.event)
		}
		return false, validation{}, pc
	}
	return false, validation{err: why}, pc
}

// sitsOut reports whether p takes no part in the creation of fl because it
// is NOT_READY: this creation did not call it, or it validates and its
// policy (SKIP, FAIL) will not call it. The validators' list of plugins
// (ValidateContainerAdjustmentRequest.plugins) leaves it out, so that a
// plugin required by the operator or by the pod's annotation does not
// count as present when it did not see the container.
func sitsOut(fl *flight, p *plugin) bool {
	if slices.Contains(fl.notReady, p.full) {
		return true
	}
	if p.mask&evValidate.mask() == 0 {
		return false
	}
	return p.status.now().status == nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY &&
		p.status.policy != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_WAIT
}

// requestResync takes p's request for a resynchronization and returns the
// epoch of the Synchronize that will serve it. A request made while one is
// pending (not yet started) is merged into it. The Synchronize starts no
// sooner than the minimum interval after the last requested one began,
// behind a cut (flights.cut), unless a synchronization under way serves
// it when it ends (takeCatchUp).
func (s *Server) requestResync(p *plugin, reason string) (uint64, error) {
	if p.isClosed() || p.retiring.Load() {
		return 0, status.Error(codes.FailedPrecondition, "the plugin is not registered")
	}
	s.syncMu.Lock()
	rs := &p.status.resync
	if rs.requested {
		epoch := rs.epoch
		s.syncMu.Unlock()
		return epoch, nil
	}
	rs.last++
	rs.requested, rs.epoch = true, rs.last
	epoch := rs.epoch
	start := !p.catchUp.syncing && !rs.starting
	if start {
		rs.starting = true
	}
	delay := time.Until(rs.lastStart.Add(s.opts.minResyncInterval))
	s.syncMu.Unlock()

	p.status.requestedResyncs.Add(1)
	if sm, ok := s.opts.metrics.(StatusMetrics); ok {
		sm.RequestedResync(p.full)
	}
	p.status.mu.Lock()
	logIt, held := p.status.allowLog(time.Now())
	p.status.mu.Unlock()
	if logIt {
		s.log.Info("plugin requested a resync", "plugin", p.full, "instance", p.instanceID, "epoch", epoch,
			"reason", reason, "unlogged", held)
	}
	if start {
		go s.serveResync(p, delay)
	}
	return epoch, nil
}

// serveResync starts a requested resynchronization of p after delay: a cut
// closes p's gate for the events that begin after it (the events before
// it end first, as at registration), then catchUp sends the state.
func (s *Server) serveResync(p *plugin, delay time.Duration) {
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-p.closed:
			t.Stop()
		}
	}
	err := s.flights.cut(func(gen uint64) error {
		s.syncMu.Lock()
		defer s.syncMu.Unlock()
		rs := &p.status.resync
		rs.starting = false
		if p.isClosed() || p.retiring.Load() || p.catchUp.syncing || !rs.requested {
			// Gone, or a synchronization under way serves the request
			// when it ends.
			return errResyncServed
		}
		// The state stays READY: the plugin is registered and only its own
		// events wait; nrid's restart roster and event holds count READY
		// plugins and must not lose one that merely asked for its state.
		p.catchUp.syncing = true
		p.awaitSnapshot()
		rs.lastStart = time.Now()
		p.ready.Store(&gate{ch: make(chan struct{}), from: gen})
		return nil
	}, func() {})
	if err != nil {
		return
	}
	s.catchUp(p, catchUpWork{requested: true})
}

// deferResyncLocked reports whether p's pending resync request must wait
// for the minimum interval since the last one started; it then makes sure
// a goroutine serves it when the interval has passed. s.syncMu is held.
func (s *Server) deferResyncLocked(p *plugin) bool {
	rs := &p.status.resync
	delay := time.Until(rs.lastStart.Add(s.opts.minResyncInterval))
	if rs.lastStart.IsZero() || delay <= 0 {
		return false
	}
	if !rs.starting {
		rs.starting = true
		go s.serveResync(p, delay)
	}
	return true
}

// errResyncServed ends a requested resync's cut that has nothing to do.
var errResyncServed = status.Error(codes.Aborted, "resync served elsewhere")

// resyncPending reports whether p asked for a resync not served yet.
func (s *Server) resyncPending(p *plugin) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return p.status.resync.requested
}

// nextEpoch hands out the epoch of p's next Synchronize: the one promised
// to a pending resync request (which this Synchronize serves), else a new
// one. Epochs of a plugin only grow.
func (s *Server) nextEpoch(p *plugin) uint64 {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	rs := &p.status.resync
	if rs.requested {
		rs.requested, rs.lastStart = false, time.Now()
		return rs.epoch
	}
	rs.last++
	return rs.last
}

// SetPluginStatus records a plugin's status report (RuntimeService).
func (r *runtimeService) SetPluginStatus(ctx context.Context, req *nriv1beta1.SetPluginStatusRequest) (*nriv1beta1.SetPluginStatusResponse, error) {
	p, err := r.caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkStatusRequest(req.GetStatus(), req.GetReason()); err != nil {
		return nil, err
	}
	r.s.setStatus(p, req.GetStatus(), req.GetReason())
	return &nriv1beta1.SetPluginStatusResponse{}, nil
}

// RequestResync takes a plugin's request for its state again
// (RuntimeService).
func (r *runtimeService) RequestResync(ctx context.Context, req *nriv1beta1.RequestResyncRequest) (*nriv1beta1.RequestResyncResponse, error) {
	p, err := r.caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkReason(req.GetReason()); err != nil {
		return nil, invalid("reason", "%v", err)
	}
	epoch, err := r.s.requestResync(p, req.GetReason())
	if err != nil {
		return nil, err
	}
	return &nriv1beta1.RequestResyncResponse{Epoch: epoch}, nil
}

// SetStatus reports the status of an in-process plugin, as
// RuntimeService.SetPluginStatus does for a remote one.
func (h *Handle) SetStatus(st nriv1beta1.PluginStatus, reason string) error {
	if h.p.isClosed() {
		return status.Error(codes.FailedPrecondition, "the plugin is not registered")
	}
	if err := checkStatusRequest(st, reason); err != nil {
		return err
	}
	h.p.s.setStatus(h.p, st, reason)
	return nil
}

// RequestResync asks for an in-process plugin's state again, as
// RuntimeService.RequestResync does for a remote one, and returns the
// epoch of the Synchronize that will carry it.
func (h *Handle) RequestResync(reason string) (uint64, error) {
	if err := checkReason(reason); err != nil {
		return 0, invalid("reason", "%v", err)
	}
	return h.p.s.requestResync(h.p, reason)
}
