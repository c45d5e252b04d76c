package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
	"github.com/nri-grpc/nri-grpc/internal/version"
	"github.com/nri-grpc/nri-grpc/nri"
)

// slot holds the instances of one plugin identity ("NN-name"): the current
// one, which receives events, and possibly a newer one that is
// synchronizing and takes over once it is ready (make before break).
type slot struct {
	full     string
	mu       sync.Mutex
	current  *plugin
	pending  *plugin
	identity string // authenticated identity that owns the slot
}

func (sl *slot) plugins() []*plugin {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	var out []*plugin
	for _, p := range []*plugin{sl.current, sl.pending} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// subscribed reports whether an instance of the slot receives the events
// of mask.
func (sl *slot) subscribed(mask uint32) bool {
	return sl.anyInstance(func(p *plugin) bool { return p.mask&mask != 0 })
}

// anyInstance reports whether the current or the pending instance satisfies
// f.
func (sl *slot) anyInstance(f func(*plugin) bool) bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return (sl.current != nil && f(sl.current)) || (sl.pending != nil && f(sl.pending))
}

// instances returns the slot's current and pending instances as an event
// of generation gen sees them: a pending instance admitted by a later cut
// is not there for it (the cut waits for the event, and the instance's
// snapshot has what the event changes).
func (sl *slot) instances(gen uint64) (cur, pend *plugin) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	cur, pend = sl.current, sl.pending
	if pend != nil && pend.admitGen > gen {
		pend = nil
	}
	return cur, pend
}

// instanceFor returns the instance an event of mask in flight fl would go
// to without waiting: the pending instance if it takes the event (it
// subscribes to mask and its selectors select fl's pod or container), else
// the current one if it does; nil when neither does.
func (sl *slot) instanceFor(mask uint32, fl *flight) *plugin {
	cur, pend := sl.instances(fl.gen)
	if pend != nil && fl.takes(pend, mask) {
		return pend
	}
	if cur != nil && fl.takes(cur, mask) {
		return cur
	}
	return nil
}

// registered returns the slot's registered instance without waiting: the
// current one unless it is going (evicted, closed), else a pending one
// that has finished synchronizing.
func (sl *slot) registered() *plugin {
	sl.mu.Lock()
	cur, pend := sl.current, sl.pending
	sl.mu.Unlock()
	if cur != nil && !cur.retiring.Load() && !cur.isClosed() {
		return cur
	}
	if pend != nil {
		if done, ok := pend.ready.Load().settled(); done && ok {
			return pend
		}
	}
	return nil
}

// target returns the instance an event of mask in flight fl goes to. An
// instance that does not subscribe to mask, or whose selectors exclude the
// event's pod or container, is never waited for. A pending instance (the
// registration cut: events after the cut must reach it, as its snapshot
// does not have them) or a resynchronizing one is waited for, but only until
// deadline, which the caller derives from the plugin's own timeout for the
// event: a slow or hung registrant delays only the events it subscribed to,
// and only within its own budget. When the pending instance is not ready in
// time the current one, if subscribed and ready, gets the event.
//
// p is nil when no live instance subscribes to mask (ready true) or none
// became ready by deadline (ready false: an availability failure of that
// plugin).
// waited reports that the event had to wait (the call has less time left
// than the plugin's timeout).
func (sl *slot) target(ctx context.Context, ev *eventInfo, fl *flight, deadline time.Time) (p *plugin, ready, waited bool) {
	mask := ev.mask()
	cur, pend := sl.instances(fl.gen)
	subscribed := false
	for _, inst := range []*plugin{pend, cur} {
		if inst == nil || !fl.takes(inst, mask) {
			continue
		}
		ok, w := inst.wait(ctx, fl.gen, deadline)
		waited = waited || w
		if ok {
			return inst, true, waited
		}
		// One that is going (evicted, closed, its synchronization failed)
		// is absent, not late.
		if done, ok := inst.ready.Load().settled(); !inst.retiring.Load() && !inst.isClosed() && !(done && !ok) {
			subscribed = true
			if ctx.Err() == nil {
				fl.markSkipped(inst, ev) // it misses the event (missed.go)
			}
		}
	}
	return nil, !subscribed, waited
}

// Registration describes a plugin to register.
type Registration struct {
	// Name and Index identify the plugin ("10-name" has Index "10").
	Name, Index string
	// Identity is the authenticated identity registering it.
	Identity string
	// Kind says how the plugin is connected (AdminService).
	Kind nriv1beta1.PluginKind
	// Endpoint is the plugin's endpoint, for information.
	Endpoint string
	// Config is passed in ConfigureRequest.config.
	Config string
	// Capabilities and Timeouts are what the plugin asks for.
	Capabilities *nriv1beta1.Capabilities
	Timeouts     *nriv1beta1.Timeouts
	// NRIVersion and PluginVersion are informational.
	NRIVersion, PluginVersion string
	// Selectors restrict the plugin's events and Synchronize state to the
	// pods and containers they select (package selector); empty: all.
	Selectors []*nriv1beta1.EventSelector
	// Status and StatusReason are the status the plugin registers with
	// (UNSPECIFIED: READY), see Handle.SetStatus.
	Status       nriv1beta1.PluginStatus
	StatusReason string
	// Caller is the identity of the connection that registered, when it
	// differs from Identity (a launched plugin registers over root's
	// connection but is bound to its launch slot's identity); it may also
	// call UpdateContainers for the plugin.
	Caller string
}

// Handle is a registered plugin, as returned by RegisterInProcess.
type Handle struct{ p *plugin }

// InstanceID returns the instance id of the registration.
func (h *Handle) InstanceID() string { return h.p.instanceID }

// Done is closed when the registration ended.
func (h *Handle) Done() <-chan struct{} { return h.p.closed }

// Err returns why the registration ended (nil while it lasts).
func (h *Handle) Err() error {
	select {
	case <-h.p.closed:
		return h.p.closeErr
	default:
		return nil
	}
}

// Close unregisters the plugin without a Shutdown call (its owner saw it
// go, for example a classic plugin's connection closed).
func (h *Handle) Close() { h.p.close(errors.New("the plugin disconnected")) }

// Registered returns what the plugin was granted.
func (h *Handle) Registered() *nriv1beta1.Registered { return h.p.s.registered(h.p) }

// RegisterInProcess registers a Go implementation of PluginService (a
// builtin, a classic plugin behind the bridge, a test helper) through the
// same path as remote plugins: validation, Configure, the registration cut
// and Synchronize. It returns once the plugin is ready for events.
func (s *Server) RegisterInProcess(ctx context.Context, reg Registration, impl nriv1beta1.PluginServiceServer) (*Handle, error) {
	if reg.Kind == nriv1beta1.PluginKind_PLUGIN_KIND_UNSPECIFIED {
		reg.Kind = nriv1beta1.PluginKind_PLUGIN_KIND_IN_PROCESS
	}
	if err := checkRegistration(reg); err != nil {
		return nil, err
	}
	c := &conn{impl: impl}
	if enc, ok := impl.(EncodedPlugin); ok {
		c.enc = enc
	}
	p, err := s.register(ctx, reg, c)
	if err != nil {
		return nil, err
	}
	return &Handle{p: p}, nil
}

// register runs a registration whose request passed checkRegistration:
// Configure, cut, Synchronize, promotion. On failure the connection is
// closed and the error is a status naming the rule.
func (s *Server) register(ctx context.Context, reg Registration, c *conn) (*plugin, error) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		_ = c.close()
		return nil, refusal(codes.Unavailable, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_SHUTTING_DOWN, "", "the server is shutting down")
	}
	p := &plugin{
		s:             s,
		name:          reg.Name,
		idx:           reg.Index,
		full:          reg.Index + "-" + reg.Name,
		identity:      reg.Identity,
		caller:        reg.Caller,
		endpoint:      reg.Endpoint,
		kind:          reg.Kind,
		c:             c,
		nriVersion:    reg.NRIVersion,
		pluginVersion: reg.PluginVersion,
		registeredAt:  time.Now(),
		closed:        make(chan struct{}),
	}
	p.instanceID = fmt.Sprintf("%s-%d-%d", p.full, p.registeredAt.UnixNano(), s.instances.Add(1))
	var err error
	_, info := s.runtime()
	p.md = metadata.Pairs(nri.MetadataInstanceID, p.instanceID, nri.MetadataNodeName, s.opts.nodeName, nri.MetadataRuntimeName, info.Name)
	p.ready.Store(newGate())
	if p.sel, err = s.selectorsFor(p, reg.Selectors); err != nil {
		_ = c.close()
		return nil, err
	}
	// Synchronizing from its cut on: an attach meanwhile marks it to catch
	// up (beginResync). Set before the plugin is visible to anyone.
	p.catchUp.syncing = true
	p.awaitSnapshot()
	s.initStatus(p, reg) // status, its policy and epochs (status.go)
	p.setState(nriv1beta1.PluginState_PLUGIN_STATE_CONFIGURING)
	if err := s.grant(p, reg); err != nil {
		_ = c.close()
		return nil, err
	}
	if answered, err := s.configure(ctx, p, reg.Config); err != nil {
		if answered {
			s.refuseConfigured(p, err)
		} else {
			p.close(err)
		}
		return nil, err
	}
	p.status.policy = s.notReadyPolicy(p)
	snap, err := s.admit(p)
	if err != nil {
		s.refuseConfigured(p, err)
		return nil, err
	}
	p.setState(nriv1beta1.PluginState_PLUGIN_STATE_SYNCHRONIZING)
	p.epoch.Store(1)
	updates, evictions, err := s.synchronize(ctx, p, snap, 1, nriv1beta1.SyncReason_SYNC_REASON_REGISTRATION)
	if err != nil {
		err = refusal(codeOf(err, codes.FailedPrecondition), nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_SYNCHRONIZE_FAILED, "",
			"synchronizing plugin %s: %v", p.full, err)
		s.abandon(p)
		s.refuseConfigured(p, err)
		return nil, err
	}
	// The runtime may have attached again since the cut: catch up on each
	// new state before the instance takes events.
	for {
		w, again := s.takeCatchUp(p, func() { s.promote(p) })
		if !again {
			break
		}
		if err := s.resyncOnce(p, w); err != nil {
			err = refusal(codeOf(err, codes.FailedPrecondition), nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_SYNCHRONIZE_FAILED, "",
				"resynchronizing plugin %s: %v", p.full, err)
			s.abandon(p)
			s.refuseConfigured(p, err)
			return nil, err
		}
	}
	s.applyAsync(p, updates, evictions)
	s.log.Info("plugin registered", "plugin", p.full, "instance", p.instanceID, "identity", p.identity,
		"kind", p.kind.String(), "events", fmt.Sprintf("0x%x", p.mask), "required", p.required())
	s.knownSel.set(p.full, p.sel)
	s.arrived(p.full)
	s.pluginsChanged()
	s.statusRegistered(p)
	return p, nil
}

// refuseConfigured ends a registration that failed after the plugin
// answered Configure: the plugin is reachable, so it is told why with
// Shutdown (REGISTRATION_FAILED) before its connection closes.
func (s *Server) refuseConfigured(p *plugin, err error) {
	p.shutdown(nriv1beta1.ShutdownKind_SHUTDOWN_KIND_REGISTRATION_FAILED, status.Convert(err).Message())
}

// grant derives the capabilities and timeouts the plugin gets.
func (s *Server) grant(p *plugin, reg Registration) error {
	want := reg.Capabilities
	caps := &nriv1beta1.Capabilities{
		MaxConcurrentCalls: max(1, min(want.GetMaxConcurrentCalls(), s.opts.maxConcurrentCalls)),
		DryRun:             want.GetDryRun(),
		Resync:             want.GetResync(),
		MaxMessageSize:     uint32(s.opts.maxMessageSize),
	}
	if m := want.GetMaxMessageSize(); m != 0 {
		// checkRegistration refused anything below the minimum.
		caps.MaxMessageSize = min(m, caps.MaxMessageSize)
	}
	p.caps = caps
	p.maxMsg = int(caps.MaxMessageSize)
	p.sem = make(chan struct{}, caps.MaxConcurrentCalls)

	limit := s.opts.maxTimeout
	pol := s.pluginPolicy(p.identity, p.full)
	if pol != nil && pol.MaxTimeout > 0 {
		limit = min(limit, pol.MaxTimeout)
	}
	check := func(field string, d *time.Duration, v interface{ AsDuration() time.Duration }, present bool) error {
		if !present {
			return nil
		}
		got := v.AsDuration()
		if got <= 0 {
			return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES,
				field, "%s: %v is not a positive duration", field, got)
		}
		*d = min(got, limit)
		return nil
	}
	t := timeouts{request: min(s.opts.requestTimeout, limit)}
	want2 := reg.Timeouts
	if err := check("timeouts.request", &t.request, want2.GetRequest(), want2.GetRequest() != nil); err != nil {
		return err
	}
	t.sync = t.request
	if err := check("timeouts.synchronize", &t.sync, want2.GetSynchronize(), want2.GetSynchronize() != nil); err != nil {
		return err
	}
	for i, et := range want2.GetEvents() {
		e := et.GetEvent()
		if e <= nriv1beta1.Event_EVENT_UNSPECIFIED || e >= nriv1beta1.Event_EVENT_LAST {
			return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES,
				fmt.Sprintf("timeouts.events[%d].event", i), "timeouts.events[%d].event: %d is not an event", i, e)
		}
		if err := check(fmt.Sprintf("timeouts.events[%d].timeout", i), &t.events[e], et.GetTimeout(), et.GetTimeout() != nil); err != nil {
			return err
		}
	}
	p.timeouts = t
	return nil
}

func (s *Server) pluginPolicy(identity, full string) *PluginPolicy {
	if s.opts.policyFor == nil {
		return nil
	}
	return s.opts.policyFor(identity, full)
}

// configure calls Configure and records the subscription and policy.
// answered reports whether the plugin answered Configure (so a refusal can
// be told to it).
func (s *Server) configure(ctx context.Context, p *plugin, config string) (answered bool, err error) {
	_, info := s.runtime()
	req := &nriv1beta1.ConfigureRequest{
		Config:              config,
		RuntimeName:         info.Name,
		RuntimeVersion:      info.Version,
		RegistrationTimeout: s.opts.registrationTimeout.Milliseconds(),
		RequestTimeout:      p.timeouts.request.Milliseconds(),
		NriVersion:          version.NRI(),
		NodeName:            s.opts.nodeName,
		InstanceId:          p.instanceID,
		Capabilities:        p.caps,
		ServerVersion:       version.Server(),
		Timeouts:            p.timeouts.proto(),
	}
	cr, err := call(ctx, p, rpcConfigure, s.opts.registrationTimeout, req, nil)
	if err != nil && connUnreachable(p, err) {
		// The same refusal whatever the cause (dial.go); the cause is in
		// the dialer's log line and here.
		s.log.Warn("registration refused: could not connect to the plugin's endpoint", "plugin", p.full,
			"identity", clip(p.identity), "endpoint", clip(p.endpoint), "error", clip(err.Error()))
		return false, unreachableRefusal()
	}
	if err != nil {
		return false, refusal(codeOf(err, codes.FailedPrecondition), nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_CONFIGURE_FAILED, "",
			"configuring plugin %s: %v", p.full, err)
	}
	mask := uint32(cr.GetEvents())
	if cr.GetEvents()&^nri.AllEvents != 0 {
		return true, refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_EVENTS,
			"events", "ConfigureResponse.events: 0x%x has bits outside the 14 events (0x%x)", uint32(cr.GetEvents()), nri.AllEvents)
	}
	if mask == 0 {
		mask = uint32(nri.AllEvents)
	}
	if err := s.opts.authorizer.AuthorizeSubscription(p.identity, p.full, mask); err != nil {
		return true, refusal(codes.PermissionDenied, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_EVENTS,
			"events", "ConfigureResponse.events: %v", err)
	}
	p.mask = mask
	policy := &nriv1beta1.FailurePolicy{
		FailRequest:   cr.GetFailurePolicy().GetFailRequest(),
		KeepConnected: cr.GetFailurePolicy().GetKeepConnected(),
	}
	if pol := s.pluginPolicy(p.identity, p.full); pol != nil {
		if pol.Required != nil {
			policy.FailRequest = *pol.Required
		}
		if pol.KeepConnected != nil {
			policy.KeepConnected = *pol.KeepConnected
		}
	}
	p.policy = policy
	return true, nil
}

// admit is the registration cut (flights.cut): it inserts the plugin as
// pending, so that every event that begins afterwards and subscribes to it
// waits for it, waits for the events that began before (they do not see it,
// and their changes land in the state), and takes the snapshot the plugin
// is synchronized with. Only the registration waits for those events.
func (s *Server) admit(p *plugin) (encodedState, error) {
	var (
		old  *plugin
		snap encodedState
	)
	err := s.flights.cut(func(gen uint64) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closing {
			return refusal(codes.Unavailable, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_SHUTTING_DOWN, "", "the server is shutting down")
		}
		sl := s.slots[p.full]
		if sl != nil && sl.identity != p.identity {
			return refusal(codes.PermissionDenied, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_IDENTITY_MISMATCH, "plugin_name",
				"plugin %s is registered by identity %q; %q may not replace it", p.full, sl.identity, p.identity)
		}
		p.admitGen = gen
		if sl == nil {
			sl = &slot{full: p.full, identity: p.identity}
			s.slots[p.full] = sl
			s.reorderLocked()
		}
		sl.mu.Lock()
		old = sl.pending
		sl.pending = p
		sl.mu.Unlock()
		return nil
	}, func() {
		p.tookSnapshot()
		snap = s.state.encoded()
	})
	if err != nil {
		return encodedState{}, err
	}
	if old != nil {
		// An even newer instance wins over one still synchronizing.
		go old.shutdown(nriv1beta1.ShutdownKind_SHUTDOWN_KIND_REPLACED, "replaced by a newer instance")
	}
	return snap, nil
}

// promote makes a synchronized pending instance current and retires the
// instance it replaces.
func (s *Server) promote(p *plugin) {
	s.mu.Lock()
	sl := s.slots[p.full]
	s.mu.Unlock()
	if sl == nil {
		return
	}
	sl.mu.Lock()
	if sl.pending != p {
		sl.mu.Unlock()
		return
	}
	old := sl.current
	sl.current, sl.pending = p, nil
	p.setState(nriv1beta1.PluginState_PLUGIN_STATE_READY)
	p.ready.Load().settle(true)
	sl.mu.Unlock()
	if old != nil {
		go old.shutdown(nriv1beta1.ShutdownKind_SHUTDOWN_KIND_REPLACED, "replaced by a newer instance")
	}
	s.opts.metrics.Plugins(s.pluginCount())
}

// abandon drops a pending instance whose synchronization failed; events that
// waited for it go to the current instance, if any.
func (s *Server) abandon(p *plugin) {
	p.ready.Load().settle(false)
}

// unregister removes a closed instance from its slot.
func (s *Server) unregister(p *plugin) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slots[p.full]
	if sl == nil {
		return
	}
	sl.mu.Lock()
	if sl.current == p {
		sl.current = nil
	}
	if sl.pending == p {
		sl.pending = nil
	}
	empty := sl.current == nil && sl.pending == nil
	sl.mu.Unlock()
	if empty {
		delete(s.slots, p.full)
		s.reorderLocked()
		s.statusGone(p.full)
	}
	s.opts.metrics.Plugins(len(s.slots))
}

// reorderLocked rebuilds the dispatch order: index, then name, which is the
// order of the full names.
func (s *Server) reorderLocked() {
	order := make([]*slot, 0, len(s.slots))
	for _, sl := range s.slots {
		order = append(order, sl)
	}
	slices.SortFunc(order, func(a, b *slot) int { return strings.Compare(a.full, b.full) })
	s.order.Store(&order)
}

func (s *Server) pluginCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.slots)
}

// Plugins describes the registered plugins in dispatch order.
func (s *Server) Plugins() []*nriv1beta1.PluginInfo {
	var out []*nriv1beta1.PluginInfo
	for _, sl := range *s.order.Load() {
		for _, p := range sl.plugins() {
			out = append(out, p.info())
		}
	}
	return out
}

// registered is the first message of a registration session.
func (s *Server) registered(p *plugin) *nriv1beta1.Registered {
	_, info := s.runtime()
	return &nriv1beta1.Registered{
		InstanceId:     p.instanceID,
		ServerVersion:  version.Server(),
		Capabilities:   p.caps,
		NodeName:       s.opts.nodeName,
		RuntimeName:    info.Name,
		RuntimeVersion: info.Version,
		Timeouts:       p.timeouts.proto(),
		FailurePolicy:  p.policy,
		Identity:       p.identity,
		Events:         int32(p.mask),
		Selectors:      p.sel.Selectors(),
	}
}

// checkIdentity applies classic NRI's rules for plugin names and indices,
// with a maximum length for names. Errors quote at most a prefix of the
// value.
func checkIdentity(name, idx string) error {
	if name == "" {
		return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_NAME, "plugin_name",
			"plugin_name: must not be empty")
	}
	if len(name) > MaxPluginNameLen {
		return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_NAME, "plugin_name",
			"plugin_name: %d bytes, the maximum is %d", len(name), MaxPluginNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.+-", r)) {
			return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_NAME, "plugin_name",
				"plugin_name: %s contains %q; allowed are [a-zA-Z0-9_.+-]", untrusted.Quote(name), r)
		}
	}
	if len(idx) != 2 || idx[0] < '0' || idx[0] > '9' || idx[1] < '0' || idx[1] > '9' {
		return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_INDEX, "plugin_idx",
			"plugin_idx: %s must be exactly two ASCII digits", untrusted.Quote(idx))
	}
	return nil
}
