package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/version"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/classicwire"
	"github.com/nri-grpc/nri-grpc/server"
)

// Defaults of the runtime side.
const (
	// DefaultRuntimeSocket is the classic runtime's NRI socket.
	DefaultRuntimeSocket = "/var/run/nri/nri.sock"
	// DefaultPluginName and DefaultPluginIndex are the identity the bridge
	// registers with at the classic runtime.
	DefaultPluginName  = "nri-grpc"
	DefaultPluginIndex = "00"
	// DefaultMargin is kept free of the runtime's request timeout, so the
	// bridge always answers before the runtime gives up on it.
	DefaultMargin = 250 * time.Millisecond
	// DefaultRequestTimeout is assumed when the runtime announces none.
	DefaultRequestTimeout = 2 * time.Second
	// DefaultRegistrationTimeout bounds registering with the runtime and
	// being configured by it.
	DefaultRegistrationTimeout = 5 * time.Second
)

// RuntimeSide attaches the server to a classic runtime as one v1alpha1
// plugin (DESIGN §5a).
type RuntimeSide struct {
	srv        *server.Server
	log        *slog.Logger
	socket     string
	name, idx  string
	margin     time.Duration
	minBackoff time.Duration
	maxBackoff time.Duration
	// noValidation keeps the bridge off the runtime's validation (a test
	// option only, export_test.go: the measurement of what the
	// subscription costs).
	noValidation bool

	mu       sync.Mutex
	conn     *classicwire.Conn
	handlers *classicHandlers // conn's
	timeout  time.Duration
	info     server.RuntimeInfo
	relay    chan relayBatch
	synced   chan struct{}
	handoff  handoff // handover.go
}

// RuntimeOption configures a RuntimeSide; pass options to NewRuntimeSide.
// An option only records its value and never fails: NewRuntimeSide applies
// the options in order (a later one overrides an earlier one; nil options
// are ignored), then validates them and returns an error that names the
// offending option. server.Option and plugin.Option have the same shape.
type RuntimeOption func(*runtimeOptions)

// runtimeOptions is what RuntimeOptions record.
type runtimeOptions struct {
	log                    *slog.Logger
	socket                 string
	name, idx              string
	margin                 time.Duration
	minBackoff, maxBackoff time.Duration
	noValidation           bool
}

// check validates the options; its errors name the option.
func (o *runtimeOptions) check() error {
	var errs []error
	if o.socket == "" {
		errs = append(errs, errors.New("WithRuntimeSocket: empty path"))
	}
	if o.name == "" || o.idx == "" {
		errs = append(errs, fmt.Errorf("WithPluginIdentity: empty name or index (%q, %q)", o.name, o.idx))
	}
	if o.margin < 0 {
		errs = append(errs, fmt.Errorf("WithMargin: %v is negative", o.margin))
	}
	if o.minBackoff <= 0 || o.maxBackoff < o.minBackoff {
		errs = append(errs, fmt.Errorf("WithReconnectBackoff: invalid bounds %v, %v", o.minBackoff, o.maxBackoff))
	}
	return errors.Join(errs...)
}

// WithRuntimeSocket sets the classic runtime's NRI socket (default
// DefaultRuntimeSocket).
func WithRuntimeSocket(path string) RuntimeOption {
	return func(o *runtimeOptions) { o.socket = path }
}

// WithPluginIdentity sets the name and index the bridge registers with
// (default DefaultPluginName, DefaultPluginIndex).
func WithPluginIdentity(name, idx string) RuntimeOption {
	return func(o *runtimeOptions) { o.name, o.idx = name, idx }
}

// WithMargin sets the part of the runtime's request timeout the bridge
// keeps free (default 250 ms; not negative).
func WithMargin(d time.Duration) RuntimeOption {
	return func(o *runtimeOptions) { o.margin = d }
}

// WithReconnectBackoff sets the bounds of the reconnection backoff (default
// 100 ms to 5 s): min must be positive and max at least min.
func WithReconnectBackoff(min, max time.Duration) RuntimeOption {
	return func(o *runtimeOptions) { o.minBackoff, o.maxBackoff = min, max }
}

// WithRuntimeLogger sets the logger (default, and for nil: slog.Default()).
func WithRuntimeLogger(l *slog.Logger) RuntimeOption {
	return func(o *runtimeOptions) { o.log = l }
}

// NewRuntimeSide creates the runtime side of the bridge for srv. It fails
// only for invalid options.
func NewRuntimeSide(srv *server.Server, opts ...RuntimeOption) (*RuntimeSide, error) {
	o := runtimeOptions{
		socket:     DefaultRuntimeSocket,
		name:       DefaultPluginName,
		idx:        DefaultPluginIndex,
		margin:     DefaultMargin,
		minBackoff: 100 * time.Millisecond,
		maxBackoff: 5 * time.Second,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	return &RuntimeSide{
		srv:          srv,
		log:          o.log,
		socket:       o.socket,
		name:         o.name,
		idx:          o.idx,
		margin:       o.margin,
		minBackoff:   o.minBackoff,
		maxBackoff:   o.maxBackoff,
		timeout:      DefaultRequestTimeout,
		noValidation: o.noValidation,
		relay:        make(chan relayBatch, 256),
		handoff:      handoff{resume: make(chan struct{}, 1)},
		synced:       make(chan struct{}, 1),
	}, nil
}

// Synchronized receives a value every time the runtime synchronized the
// bridge (at every (re)attach).
func (r *RuntimeSide) Synchronized() <-chan struct{} { return r.synced }

// Run attaches to the runtime and keeps attached until ctx is done:
// whenever the runtime's connection is lost (a runtime restart), it
// reconnects with backoff, and the runtime's new Synchronize resyncs the
// server's plugins.
func (r *RuntimeSide) Run(ctx context.Context) error {
	go r.relayLoop(ctx)
	backoff := r.minBackoff
	for {
		closed, err := r.attach(ctx)
		if err == nil {
			backoff = r.minBackoff
			r.mu.Lock()
			mine := r.conn
			r.mu.Unlock()
			select {
			case <-closed:
			case <-ctx.Done():
			}
			if mine != nil && errors.Is(mine.Err(), classicwire.ErrDetached) {
				// Handed over (Detach): another nrid has the connection
				// now. It comes back only if the takeover failed (Resume).
				select {
				case <-r.handoff.resume:
					continue
				case <-ctx.Done():
					return nil
				}
			}
			if ctx.Err() == nil {
				r.log.Warn("classic runtime connection lost; reconnecting", "socket", r.socket)
			}
			r.mu.Lock()
			if r.conn == mine {
				r.conn, r.handlers = nil, nil
			}
			r.mu.Unlock()
			if mine != nil {
				_ = mine.Close()
			}
			r.srv.DetachRuntime(r)
		} else {
			r.log.Debug("attaching to classic runtime", "socket", r.socket, "error", err)
		}
		if ctx.Err() != nil {
			return nil
		}
		wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil
		}
		backoff = min(2*backoff, r.maxBackoff)
	}
}

// attach connects to the runtime, or continues a connection handed over
// (Adopt, Resume); the channel is closed when the connection ends.
func (r *RuntimeSide) attach(ctx context.Context) (chan struct{}, error) {
	if closed := r.takeAdopted(); closed != nil {
		return closed, nil
	}
	closed := make(chan struct{})
	return closed, r.connect(ctx, closed)
}

// connect dials the runtime, registers and waits until the runtime has
// configured the bridge; closed is closed when the connection ends.
func (r *RuntimeSide) connect(ctx context.Context, closed chan struct{}) error {
	sock, err := (&net.Dialer{}).DialContext(ctx, "unix", r.socket)
	if err != nil {
		return fmt.Errorf("connecting to the classic runtime: %w", err)
	}
	h := newClassicHandlers(r)
	var once sync.Once
	c := classicwire.New(sock, h.serve,
		classicwire.WithLogger(r.log.With("component", "bridge-runtime")),
		classicwire.WithOnClose(func() { once.Do(func() { close(closed) }) }))
	// The connection is known before the runtime can synchronize the
	// bridge on it (after RegisterPlugin), for Detach.
	r.mu.Lock()
	r.conn, r.handlers = c, h
	r.mu.Unlock()
	fail := func(err error) error {
		r.mu.Lock()
		if r.conn == c {
			r.conn, r.handlers = nil, nil
		}
		r.mu.Unlock()
		_ = c.Close()
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultRegistrationTimeout)
	defer cancel()
	reg := &v1alpha1.RegisterPluginRequest{PluginName: r.name, PluginIdx: r.idx, NRIVersion: version.GetFromBuildInfo()}
	if err := c.Call(ctx, "RegisterPlugin", reg, &v1alpha1.Empty{}); err != nil {
		return fail(fmt.Errorf("registering with the classic runtime: %w", err))
	}
	var timeout time.Duration
	select {
	case timeout = <-h.configured:
	case <-c.Done():
		return fail(fmt.Errorf("classic runtime closed the connection before configuring the bridge: %w", c.Err()))
	case <-ctx.Done():
		return fail(fmt.Errorf("classic runtime did not configure the bridge: %w", ctx.Err()))
	}
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	r.mu.Lock()
	r.timeout = timeout
	r.mu.Unlock()
	r.log.Info("attached to classic runtime", "socket", r.socket, "plugin", r.idx+"-"+r.name, "request_timeout", timeout)
	return nil
}

// timeouts returns the runtime's request timeout and the bridge's budget
// for an event: the timeout minus the margin, so skipped plugins and
// failures are answered before the runtime gives up on the bridge.
func (r *RuntimeSide) timeouts() (timeout, budget time.Duration) {
	r.mu.Lock()
	t := r.timeout
	r.mu.Unlock()
	b := t - r.margin
	if b < t/2 {
		b = t / 2
	}
	return t, b
}

// relayBatch is one set of unsolicited updates on its way to the runtime.
type relayBatch struct {
	plugin string
	// req is the classic UpdateContainersRequest holding the updates,
	// encoded when they were taken (v1beta1's UpdateContainersRequest
	// without evictions: the wire is shared).
	req   rawMessage
	count int // the updates in req
}

// UpdateContainers implements server.Runtime. Updates are relayed to the
// classic runtime asynchronously: relaying synchronously could deadlock on
// the runtime's global lock, held while it waits for the bridge to answer an
// event. The classic protocol carries no evictions and loses the failed list
// on error, so neither is reported back on this path (docs/bridge.md).
func (r *RuntimeSide) UpdateContainers(_ context.Context, plugin string, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	if len(evictions) > 0 {
		r.log.Warn("classic runtimes cannot evict; evictions dropped", "plugin", plugin, "count", len(evictions))
	}
	if len(updates) == 0 {
		return nil, nil, nil
	}
	req, err := (&nriv1beta1.UpdateContainersRequest{Update: updates}).MarshalVT()
	if err != nil {
		return updates, nil, status.Errorf(codes.Internal, "bridge: encoding updates for the classic runtime: %v", err)
	}
	batch := relayBatch{plugin: plugin, req: req, count: len(updates)}
	select {
	case r.relay <- batch:
		return nil, nil, nil
	default:
		return updates, nil, status.Error(codes.ResourceExhausted, "bridge: the relay queue to the classic runtime is full")
	}
}

func (r *RuntimeSide) relayLoop(ctx context.Context) {
	for {
		select {
		case b := <-r.relay:
			r.mu.Lock()
			if r.handoff.paused {
				// The connection is being handed over: the batch goes
				// with it (Detach) or waits for its return.
				r.handoff.parked = append(r.handoff.parked, b)
				r.mu.Unlock()
				continue
			}
			c, timeout := r.conn, r.timeout
			r.mu.Unlock()
			if c == nil {
				r.log.Warn("no classic runtime attached; updates dropped", "plugin", b.plugin, "count", b.count)
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, timeout)
			rsp := &nriv1beta1.UpdateContainersResponse{}
			err := c.Call(cctx, "UpdateContainers", &b.req, rsp)
			cancel()
			if err != nil || len(rsp.GetFailed()) > 0 {
				r.log.Warn("classic runtime did not apply all updates", "plugin", b.plugin, "failed", len(rsp.GetFailed()), "error", err)
			}
		case <-ctx.Done():
			return
		}
	}
}

// classicHandlers serve the classic runtime's calls: every lifecycle event,
// relayed.
type classicHandlers struct {
	r *RuntimeSide
	// configured receives the runtime's request timeout when it configured
	// the bridge.
	configured chan time.Duration
	// syncPods and syncCtrs collect the pages of a paged Synchronize.
	// They are the encodings of each pod and container, sub-slices of
	// the pages' payloads.
	syncPods [][]byte
	syncCtrs [][]byte
	// verdicts are nri-grpc's verdicts on created containers, for the
	// runtime's validation (validate.go).
	verdicts verdicts
	// synchronized is set once the runtime synchronized the bridge on this
	// connection: only then may it be handed over.
	synchronized atomic.Bool
	// methods serve the runtime's calls (runtime_serve.go).
	methods methodTable
	// stopped is when the previous owner of an adopted connection stopped
	// reading it (classicwire.Detached.Stopped), until the first request is
	// read; received is when the request being served was received, early
	// whether before it was read (receipt). Only the connection's reader,
	// which serves one request at a time, uses them.
	stopped, received time.Time
	early             bool
}

// lifecycleEvents is every event but validation.
const lifecycleEvents = v1alpha1.EventMask(1<<13 - 1)

// subscribe notes the runtime's identity and returns the bridge's
// subscription: every lifecycle event, and validation when rejections are
// to be relayed through it (validate.go).
func (h *classicHandlers) subscribe(runtime, version, nriVersion string) v1alpha1.EventMask {
	h.r.mu.Lock()
	h.r.info = server.RuntimeInfo{Name: runtime, Version: version}
	h.r.mu.Unlock()
	return lifecycleEvents | h.validationEvents(runtime, nriVersion)
}

// setState hands the runtime's state to the server and answers at once:
// plugins are resynchronized in the background and their updates follow
// through UpdateContainers.
func (h *classicHandlers) setState(ctx context.Context, pods, ctrs [][]byte) error {
	h.r.mu.Lock()
	info := h.r.info
	h.r.mu.Unlock()
	if err := h.r.srv.SetRuntimeEncoded(ctx, info, h.r, pods, ctrs); err != nil {
		return err
	}
	h.synchronized.Store(true)
	select {
	case h.r.synced <- struct{}{}:
	default:
	}
	return nil
}

// notified logs the errors plugins returned for a notification: classic
// runtimes stop delivering to later plugins on any error, so the bridge
// never returns one for these events.
func (h *classicHandlers) notified(event string, errs []*nriv1beta1.PluginError, err error) error {
	for _, e := range errs {
		h.r.log.Info("plugin error on notification", "event", event, "plugin", e.GetPlugin().GetIndex()+"-"+e.GetPlugin().GetName(), "error", e.GetMessage())
	}
	if err != nil {
		h.r.log.Warn("notification failed", "event", event, "error", err)
	}
	return nil
}

// The bridge's replies are encoded straight from the server's v1beta1
// answers: AdaptationServiceCreateContainerResponse, …UpdateContainerResponse
// and …StopContainerResponse number the fields they share with v1alpha1's
// CreateContainerResponse, UpdateContainerResponse and StopContainerResponse
// alike (adjust 1, update 2; update 1), and the messages inside are shared
// (test/wirecompat). The other fields are left out: evictions, which
// classic runtimes cannot take (warned about), the target's final resources
// (an update of their own) and plugin errors (logged).

// createContainer answers as one plugin: the server's merged adjustment
// and one update per other container. A validator's rejection is answered
// with nothing, and given at the runtime's validation, where the runtime
// validates with the bridge (validate.go).
func (h *classicHandlers) createContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest, opts ...server.EventOption) ([]byte, error) {
	rsp, err := h.r.srv.CreateContainer(ctx, req, opts...)
	if err != nil {
		if h.verdicts.deferRejection(req.GetContainer().GetId(), err) {
			return nil, nil
		}
		return nil, err
	}
	h.evictionsDropped("CreateContainer", rsp.GetEvict())
	out, err := createReply(rsp)
	if err != nil {
		return nil, err
	}
	h.verdicts.accepted(req.GetContainer().GetId())
	return out, nil
}

// createReply encodes the classic CreateContainerResponse of rsp.
func createReply(rsp *nriv1beta1.AdaptationServiceCreateContainerResponse) ([]byte, error) {
	return marshalReply("CreateContainer", &nriv1beta1.AdaptationServiceCreateContainerResponse{Adjust: rsp.GetAdjust(), Update: rsp.GetUpdate()})
}

// updateContainer answers with the other containers' updates and, last, the
// target's final resources when plugins changed them.
func (h *classicHandlers) updateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest, opts ...server.EventOption) ([]byte, error) {
	if req.LinuxResources == nil {
		req.LinuxResources = &nriv1beta1.LinuxResources{}
	}
	requested := req.LinuxResources.CloneVT()
	rsp, err := h.r.srv.UpdateContainer(ctx, req, opts...)
	if err != nil {
		return nil, err
	}
	h.evictionsDropped("UpdateContainer", rsp.GetEvict())
	return updateReply(rsp, req.GetContainer().GetId(), requested)
}

// updateReply encodes the classic UpdateContainerResponse of rsp, an answer
// to the update of container id to the resources requested.
func updateReply(rsp *nriv1beta1.AdaptationServiceUpdateContainerResponse, id string, requested *nriv1beta1.LinuxResources) ([]byte, error) {
	updates := rsp.GetUpdate()
	if final := rsp.GetLinuxResources(); final != nil && !final.EqualVT(requested) {
		updates = append(slices.Clip(updates), &nriv1beta1.ContainerUpdate{ContainerId: id,
			Linux: &nriv1beta1.LinuxContainerUpdate{Resources: final}})
	}
	return marshalReply("UpdateContainer", &nriv1beta1.AdaptationServiceUpdateContainerResponse{Update: updates})
}

// stopContainer answers with the updates plugins asked for; a teardown
// event never fails toward the runtime.
func (h *classicHandlers) stopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest, opts ...server.EventOption) ([]byte, error) {
	rsp, err := h.r.srv.StopContainer(ctx, req, opts...)
	if err != nil {
		_ = h.notified("StopContainer", nil, err)
		return nil, nil
	}
	_ = h.notified("StopContainer", rsp.GetPluginErrors(), nil)
	h.evictionsDropped("StopContainer", rsp.GetEvict())
	return stopReply(rsp)
}

// stopReply encodes the classic StopContainerResponse of rsp.
func stopReply(rsp *nriv1beta1.AdaptationServiceStopContainerResponse) ([]byte, error) {
	return marshalReply("StopContainer", &nriv1beta1.AdaptationServiceStopContainerResponse{Update: rsp.GetUpdate()})
}

// marshalReply encodes the reply to a classic event.
func marshalReply(event string, m vtMessage) ([]byte, error) {
	b, err := m.MarshalVT()
	if err != nil {
		return nil, fmt.Errorf("bridge: encoding the %s reply: %w", event, err)
	}
	return b, nil
}

// evictionsDropped warns of the evictions an answer to a classic runtime
// leaves out.
func (h *classicHandlers) evictionsDropped(event string, evict []*nriv1beta1.ContainerEviction) {
	if len(evict) > 0 {
		h.r.log.Warn("classic runtimes cannot evict; evictions dropped", "event", event, "count", len(evict))
	}
}
