// Package server is the NRI core of nri-grpc: plugin registration,
// synchronization, ordered dispatch, merging, validation and failure policy,
// with a runtime-facing Go API (the entry points of classic NRI's
// pkg/adaptation) that a runtime can embed, and the same API served over
// gRPC.
//
// Where things are:
//   - registry.go: registration sessions, instance handover, unregistering
//   - sync.go: Synchronize paging, the registration cut, resync
//   - dispatch.go: calling plugins in order, timeouts, failure policy, records
//   - api.go: the runtime-facing entry points (RunPodSandbox ...)
//   - merge/: merging plugin results with field ownership
//   - validate/: the default validator and required plugins
//   - runtime_service.go, adaptation_service.go: the gRPC services
//
// Options (Option, AdminOption, EventOption) only record values; New
// validates them and names the offending option in its error, as
// plugin.New and the bridge's constructors do. Event masks, metadata keys
// and the reading of dispatch failures (nri.OutcomeOf, nri.PluginsOf) are in
// package nri, shared with the plugin SDK.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

// Server is an NRI server. Create it with New; a runtime calls its entry
// points for every pod and container lifecycle event.
type Server struct {
	opts options
	log  *slog.Logger

	// flights orders events against registration cuts (flights.go).
	flights flights
	// attachMu makes runtime attaches take effect one at a time (attach.go).
	attachMu sync.Mutex
	pods     podLocks
	// syncMu guards every plugin's catchUp: whether it is synchronizing and
	// what attaches and missed events it must still catch up on. Taken
	// before mu.
	syncMu sync.Mutex

	state     *state
	validator *validate.Validator

	mu       sync.Mutex
	slots    map[string]*slot
	order    atomic.Pointer[[]*slot] // dispatch order, rebuilt on change
	rt       Runtime
	rtInfo   RuntimeInfo
	attached chan struct{} // closed while a runtime is attached
	changed  changeWatch   // a plugin registered or unregistered

	awaited  atomic.Pointer[[]string] // required until they register (RequireUntilRegistered)
	held     atomic.Pointer[hold]     // plugins events wait for (HoldEvents)
	holding  atomic.Int32             // events waiting for them
	epoch    uint64                   // state epoch: bumped by every runtime (re)attach
	closing  bool
	launched map[string]launchSlot // pre-launched plugins by endpoint path

	instances atomic.Uint64
	records   recorder
	stopping  chan struct{} // closed when Shutdown starts

	deprecations deprecations
	knownSel     knownSelectors // plugins' selectors, also while absent (selectors.go)
	statusWatch  changeWatch    // plugin status changes (status.go)
}

// RuntimeInfo identifies the runtime behind the server.
type RuntimeInfo struct {
	// Name of the runtime, for example "containerd".
	Name string
	// Version of the runtime.
	Version string
}

// Runtime is what the server needs from the container runtime besides the
// events: a way to apply updates and evictions that plugins request outside
// of an event (at synchronization, or through UpdateContainers).
type Runtime interface {
	// UpdateContainers applies updates and evictions and reports what
	// failed. plugin is the full name of the plugin that asked.
	UpdateContainers(ctx context.Context, plugin string, updates []*nriv1beta1.ContainerUpdate,
		evictions []*nriv1beta1.ContainerEviction) (failed []*nriv1beta1.ContainerUpdate, failedEvictions []*nriv1beta1.ContainerEviction, err error)
}

// New creates a server.
func New(opts ...Option) (*Server, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.requestTimeout <= 0 {
		return nil, fmt.Errorf("server: WithRequestTimeout: %v is not positive", o.requestTimeout)
	}
	if o.registrationTimeout <= 0 {
		return nil, fmt.Errorf("server: WithRegistrationTimeout: %v is not positive", o.registrationTimeout)
	}
	if o.maxMessageSize < 64<<10 {
		return nil, fmt.Errorf("server: WithMaxMessageSize: %d is below 64 KiB", o.maxMessageSize)
	}
	if o.log == nil {
		o.log = defaultOptions().log
	}
	if o.metrics == nil {
		o.metrics = noMetrics{}
	}
	if err := checkStatusOptions(&o); err != nil {
		return nil, err
	}
	if o.authorizer == nil {
		o.authorizer = OwnerAuthorizer(uint32(os.Getuid()))
	}
	v, err := validate.New(o.validator)
	if err != nil {
		return nil, fmt.Errorf("server: default validator: %w", err)
	}
	s := &Server{
		opts:      o,
		log:       o.log,
		state:     newState(),
		validator: v,
		slots:     map[string]*slot{},
		attached:  make(chan struct{}),
		stopping:  make(chan struct{}),
		rtInfo:    RuntimeInfo{Name: o.runtimeName, Version: o.runtimeVersion},
	}
	s.flights.init()
	empty := []*slot{}
	s.order.Store(&empty)
	return s, nil
}

// SetRuntime attaches the runtime and its current pods and containers. The
// call replaces the server's state (a runtime start or restart, a
// reattached bridge) and resynchronizes every registered plugin (DESIGN
// §5.9). rt may be nil when nothing can apply unsolicited updates. The
// objects are encoded once, here; the server keeps their encodings, not
// the objects.
func (s *Server) SetRuntime(ctx context.Context, info RuntimeInfo, rt Runtime, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) error {
	pe, ce := encodeAll(pods, ctrs)
	return s.attach(ctx, info, rt, pe, ce, nil)
}

// SetRuntimeEncoded is SetRuntime for a caller that holds the pods' and
// containers' protobuf encodings (nri.v1beta1.PodSandbox and Container, or
// v1alpha1's, which share the wire format), such as the pages of a classic
// runtime's Synchronize: the server keeps the slices as they are, without
// decoding them, and the caller must never modify them afterwards. Every
// entry is checked first (well-formed wire format, a non-empty id, valid
// UTF-8 and bounded ids and names, at most the server's maximum message
// size); a malformed one fails the call with INVALID_ARGUMENT naming it,
// and the state is left as it was.
func (s *Server) SetRuntimeEncoded(ctx context.Context, info RuntimeInfo, rt Runtime, pods, ctrs [][]byte) error {
	pe, ce, err := s.checkEncoded(pods, ctrs)
	if err != nil {
		return err
	}
	return s.attach(ctx, info, rt, pe, ce, nil)
}

// checkEncoded indexes and checks the encodings a runtime attached with.
func (s *Server) checkEncoded(pods, ctrs [][]byte) ([]podEntry, []ctrEntry, error) {
	bad := func(what string, i int, err error) error {
		return status.Errorf(codes.InvalidArgument, "%s[%d]: %v", what, i, err)
	}
	pe := make([]podEntry, len(pods))
	for i, raw := range pods {
		e, err := indexPod(raw)
		if err == nil {
			err = checkWhole(raw, s.opts.maxMessageSize, podDesc)
		}
		if err == nil {
			err = checkEntry(e.id)
		}
		if err != nil {
			return nil, nil, bad("pods", i, err)
		}
		pe[i] = e
	}
	ce := make([]ctrEntry, len(ctrs))
	for i, raw := range ctrs {
		e, err := indexContainer(raw)
		if err == nil {
			err = checkWhole(raw, s.opts.maxMessageSize, ctrDesc)
		}
		if err == nil {
			err = checkEntry(e.id, e.pod, e.name)
		}
		if err != nil {
			return nil, nil, bad("containers", i, err)
		}
		ce[i] = e
	}
	return pe, ce, nil
}

// The descriptors checkWhole checks a runtime's entries against.
var (
	podDesc = (&nriv1beta1.PodSandbox{}).ProtoReflect().Descriptor()
	ctrDesc = (&nriv1beta1.Container{}).ProtoReflect().Descriptor()
)

// checkWhole checks that raw is at most limit bytes and a well-formed
// encoding of md (checkWire): an entry whose nested messages are malformed
// would make every plugin's Synchronize fail.
func checkWhole(raw []byte, limit int, md protoreflect.MessageDescriptor) error {
	if len(raw) > limit {
		return fmt.Errorf("%d bytes, over the maximum message size of %d", len(raw), limit)
	}
	return checkWire(raw, md, 0)
}

// DetachRuntime records that the runtime went away; the server keeps its
// state and plugins until the runtime attaches again.
func (s *Server) DetachRuntime(rt Runtime) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rt != rt {
		return
	}
	s.rt = nil
	select {
	case <-s.attached:
		s.attached = make(chan struct{})
	default:
	}
}

// RequireUntilRegistered makes the plugins of names ("NN-name") required
// until each of them registers: while one is absent, creating events fail
// naming it, as for the operator's required plugins. Once it registers, its
// own failure policy applies again. nrid uses it after a restart for the
// plugins that were required before it and did not come back within the
// restart gate's bound: their own failure policy ended with their
// registration, and a restart must not let containers through without
// them. A later call replaces the list.
func (s *Server) RequireUntilRegistered(names []string) {
	l := slices.Clone(names)
	s.awaited.Store(&l)
}

// arrived drops full from the plugins required until they register.
func (s *Server) arrived(full string) {
	for {
		cur := s.awaited.Load()
		if cur == nil || !slices.Contains(*cur, full) {
			return
		}
		next := slices.DeleteFunc(slices.Clone(*cur), func(n string) bool { return n == full })
		if s.awaited.CompareAndSwap(cur, &next) {
			return
		}
	}
}

// PluginsChanged returns a channel that is closed the next time a plugin
// registers (is ready for events), is ready for events again after a
// resynchronization, or unregisters; Plugins then lists the new set. Take
// a new channel after each change.
func (s *Server) PluginsChanged() <-chan struct{} { return s.changed.wait() }

// pluginsChanged wakes the waiters of PluginsChanged.
func (s *Server) pluginsChanged() { s.changed.notify() }

// changeWatch wakes its waiters at the next change: wait returns a channel
// that notify closes (and replaces).
type changeWatch struct {
	mu sync.Mutex
	ch chan struct{}
}

func (w *changeWatch) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *changeWatch) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// RuntimeAttached returns a channel that is closed while a runtime is
// attached.
func (s *Server) RuntimeAttached() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attached
}

func (s *Server) runtime() (Runtime, RuntimeInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rt, s.rtInfo
}

// Shutdown stops the server: it refuses new registrations, sends every
// plugin Shutdown with the reason "server stopping", and closes their
// connections. It returns when every plugin is closed or ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closing {
		close(s.stopping)
	}
	s.closing = true
	var all []*plugin
	for _, sl := range s.slots {
		all = append(all, sl.plugins()...)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.shutdown(nriv1beta1.ShutdownKind_SHUTDOWN_KIND_SERVER_STOPPING, "server stopping")
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stopping returns a channel that is closed when Shutdown starts: long
// calls (WatchEvents streams) end with it.
func (s *Server) Stopping() <-chan struct{} { return s.stopping }

// podLocks serializes the events of one pod, so they keep their order
// while events of different pods run concurrently.
type podLocks struct {
	mu    sync.Mutex
	locks map[string]*podLock
}

type podLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks pod id and returns the unlock function.
func (l *podLocks) lock(id string) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*podLock{}
	}
	pl := l.locks[id]
	if pl == nil {
		pl = &podLock{}
		l.locks[id] = pl
	}
	pl.refs++
	l.mu.Unlock()
	pl.mu.Lock()
	return func() {
		pl.mu.Unlock()
		l.mu.Lock()
		if pl.refs--; pl.refs == 0 {
			delete(l.locks, id)
		}
		l.mu.Unlock()
	}
}
