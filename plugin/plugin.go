package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/version"
	"github.com/nri-grpc/nri-grpc/nri"
)

// ErrReplaced is returned by Run when the server replaced this plugin by a
// newer instance of it (Shutdown kind SHUTDOWN_KIND_REPLACED): the plugin
// does not register again. A process usually exits with status 0 then.
var ErrReplaced = errors.New("replaced by a newer instance")

// ErrNotRegistered is returned by UpdateContainers while the plugin is not
// registered.
var ErrNotRegistered = errors.New("the plugin is not registered")

// Plugin runs an NRI plugin: it serves PluginService on the plugin's
// endpoint, registers with the server and stays registered until Run's
// context ends. Create it with New.
type Plugin struct {
	impl   any
	h      handlers
	events int32 // derived subscription mask, never 0
	opts   options
	log    *slog.Logger

	name, index string
	full        string // "NN-name"
	server      target // nrid
	endpoint    target // where the plugin listens
	caps        *nriv1beta1.Capabilities
	timeouts    *nriv1beta1.Timeouts

	running   atomic.Bool
	serverUID atomic.Int64 // uid of the process behind the server socket, -1 unknown

	mu         sync.Mutex
	pending    *session // the RegisterPlugin call waiting for its first message
	current    *session // the session of the current registration
	instance   string   // current instance id, "" when none
	registered *nriv1beta1.Registered
	changed    chan struct{} // closed and replaced at every registration change
	shutdown   *nriv1beta1.ShutdownRequest
	sync       *syncPages
	status     statusReport // the last reported status (status.go)
	statusMu   sync.Mutex   // orders SetStatus reports
}

// session is one RegisterPlugin call and its connection to the server.
type session struct {
	cc       *grpc.ClientConn
	instance string
}

// syncPages collects the pages of one split synchronization.
type syncPages struct {
	instance string
	epoch    uint64
	pods     []*nriv1beta1.PodSandbox
	ctrs     []*nriv1beta1.Container
}

// New creates a plugin from impl, which implements some of the handler
// interfaces of this package (at least one event). The name and index come,
// in this order of precedence, from NRI_GRPC_PLUGIN_NAME and
// NRI_GRPC_PLUGIN_IDX, from WithName and WithIndex, or from the binary's
// name when it is "NN-name".
func New(impl any, opts ...Option) (*Plugin, error) {
	if err := checkImpl(impl); err != nil {
		return nil, err
	}
	o, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	h, mask := setup(impl)
	if mask == 0 {
		return nil, fmt.Errorf("plugin: %T implements no event handler; implement at least one of the event interfaces", impl)
	}
	p := &Plugin{
		impl:    impl,
		h:       h,
		events:  mask,
		opts:    o,
		name:    o.name,
		index:   o.index,
		full:    o.index + "-" + o.name,
		changed: make(chan struct{}),
		status:  statusReport{status: o.status, reason: o.statusReason},
	}
	p.serverUID.Store(-1)
	p.log = o.log.With("plugin", p.full)
	if err := p.setTargets(); err != nil {
		return nil, err
	}
	p.caps = capabilities(impl, h, o)
	p.timeouts = o.timeouts.proto()
	return p, nil
}

// checkImpl refuses what cannot be a plugin implementation.
func checkImpl(impl any) error {
	if impl == nil {
		return errors.New("plugin: nil implementation")
	}
	if _, ok := impl.(nriv1beta1.UnsafePluginServiceServer); ok {
		return fmt.Errorf("plugin: %T embeds the generated PluginService server, which implements every handler; "+
			"implement only the handler interfaces of package plugin", impl)
	}
	return nil
}

// resolve applies opts over the defaults, checks them, applies the
// launcher's environment (which takes precedence), and settles the name,
// the index, the logger and the plugin version.
func resolve(opts []Option) (options, error) {
	o := options{
		serverAddress: DefaultServerAddress,
		socketDir:     DefaultSocketDir,
		backoffMin:    100 * time.Millisecond,
		backoffMax:    10 * time.Second,
		updateTimeout: 10 * time.Second,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.check(); err != nil {
		return o, fmt.Errorf("plugin: %w", err)
	}
	for env, dst := range map[string]*string{
		EnvPluginName:     &o.name,
		EnvPluginIndex:    &o.index,
		EnvServerAddress:  &o.serverAddress,
		EnvPluginEndpoint: &o.endpoint,
	} {
		if v := os.Getenv(env); v != "" {
			*dst = v
		}
	}
	o.nameFromBinary(filepath.Base(os.Args[0]))
	if err := CheckName(o.name); err != nil {
		return o, fmt.Errorf("plugin: %w (set it with WithName, -name or %s)", err, EnvPluginName)
	}
	if err := CheckIndex(o.index); err != nil {
		return o, fmt.Errorf("plugin: %w (set it with WithIndex, -idx or %s)", err, EnvPluginIndex)
	}
	if o.log == nil {
		o.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.pluginVersion == "" {
		// The plugin binary's own build: its module version, or the commit
		// it was built from.
		if v := version.Main(); v.Version != "" || v.Commit != "" {
			o.pluginVersion = v.String()
		}
	}
	return o, nil
}

// nameFromBinary fills a missing name or index from the binary's name
// ("NN-name"); a binary named otherwise gives its name to a plugin with an
// index and no name.
func (o *options) nameFromBinary(base string) {
	if o.name != "" && o.index != "" {
		return
	}
	if idx, name, ok := ParseName(base); ok {
		if o.index == "" {
			o.index = idx
		}
		if o.name == "" {
			o.name = name
		}
	} else if o.name == "" && o.index != "" {
		o.name = base
	}
}

// setTargets parses nrid's address and the plugin's endpoint.
func (p *Plugin) setTargets() error {
	o := &p.opts
	var err error
	if p.server, err = parseTarget(o.serverAddress); err != nil {
		return fmt.Errorf("plugin: server address: %w", err)
	}
	if !p.server.unix && o.tlsDial == nil {
		return fmt.Errorf("plugin: server address %q is TCP and needs WithTLS", o.serverAddress)
	}
	ep := o.endpoint
	if ep == "" {
		ep = filepath.Join(o.socketDir, p.full+".sock")
	}
	if p.endpoint, err = parseTarget(ep); err != nil {
		return fmt.Errorf("plugin: endpoint: %w", err)
	}
	if p.endpoint.unix && len(p.endpoint.addr) > sockets.MaxPathLen {
		return fmt.Errorf("plugin: endpoint %q is longer than the %d bytes of a unix socket path", p.endpoint.addr, sockets.MaxPathLen)
	}
	if !p.endpoint.unix && o.tlsServe == nil {
		return fmt.Errorf("plugin: endpoint %q is TCP and needs WithTLS", ep)
	}
	return nil
}

// capabilities are what the plugin declares: from the options and from
// what impl implements.
func capabilities(impl any, h handlers, o options) *nriv1beta1.Capabilities {
	dry := o.dryRun
	if d, ok := impl.(DryRunner); ok && d.SupportsDryRun() {
		dry = true
	}
	return &nriv1beta1.Capabilities{
		MaxConcurrentCalls: o.maxConcurrent,
		DryRun:             dry,
		MaxMessageSize:     o.maxMessageSize,
		Resync:             o.resync || h.resync != nil,
	}
}

// proto is t as registered; nil for nil.
func (t *Timeouts) proto() *nriv1beta1.Timeouts {
	if t == nil {
		return nil
	}
	pt := &nriv1beta1.Timeouts{}
	if t.Request > 0 {
		pt.Request = durationpb.New(t.Request)
	}
	if t.Synchronize > 0 {
		pt.Synchronize = durationpb.New(t.Synchronize)
	}
	for _, e := range nri.MaskEvents(nri.EventMask(keys(t.Events)...)) {
		pt.Events = append(pt.Events, &nriv1beta1.EventTimeout{Event: e, Timeout: durationpb.New(t.Events[e])})
	}
	return pt
}

func keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Name returns the plugin's full name, "NN-name".
func (p *Plugin) Name() string { return p.full }

// Endpoint returns the gRPC target the plugin serves on and registers,
// for example "unix:///var/run/nri/plugins/10-foo.sock".
func (p *Plugin) Endpoint() string { return p.endpoint.String() }

// Events returns the event subscription derived from the implemented
// handler interfaces (a Configure handler may narrow it per registration).
func (p *Plugin) Events() int32 { return p.events }

// Capabilities returns the capabilities the plugin declares.
func (p *Plugin) Capabilities() *nriv1beta1.Capabilities { return p.caps }

// Logger returns the plugin's logger.
func (p *Plugin) Logger() *slog.Logger { return p.log }

// Registered returns the server's answer to the current registration, or
// nil while the plugin is not registered.
func (p *Plugin) Registered() *nriv1beta1.Registered {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.registered
}

// Selectors returns the event selectors in effect for the current
// registration (Registered.selectors: those of WithSelectors, as the server
// validated them), or nil while the plugin is not registered or when it
// receives every pod and container.
func (p *Plugin) Selectors() []*nriv1beta1.EventSelector {
	return p.Registered().GetSelectors()
}

// RegistrationChanged returns a channel that is closed at the next change
// of Registered: a registration or its end.
func (p *Plugin) RegistrationChanged() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// WaitRegistered blocks until the plugin is registered, and returns the
// registration, or ctx's error.
func (p *Plugin) WaitRegistered(ctx context.Context) (*nriv1beta1.Registered, error) {
	for {
		p.mu.Lock()
		reg, ch := p.registered, p.changed
		p.mu.Unlock()
		if reg != nil {
			return reg, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("plugin %s: waiting for registration: %w", p.full, ctx.Err())
		}
	}
}

// notifyLocked wakes RegistrationChanged waiters; p.mu is held.
func (p *Plugin) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// UpdateContainers asks the server for unsolicited updates and evictions of
// existing containers, and returns those that could not be applied. Never
// call it synchronously from a handler for a container of the pod whose
// event is being handled: the update waits for that event, which waits for
// the handler. Return the update in the handler's response instead, or send
// it after replying. Without a deadline on ctx, a 10 s one is set.
func (p *Plugin) UpdateContainers(ctx context.Context, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	p.mu.Lock()
	s, inst := p.current, p.instance
	p.mu.Unlock()
	if s == nil || inst == "" {
		return nil, nil, fmt.Errorf("plugin %s: UpdateContainers: %w", p.full, ErrNotRegistered)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opts.updateTimeout)
		defer cancel()
	}
	ctx = metadata.AppendToOutgoingContext(ctx, nri.MetadataInstanceID, inst)
	rsp, err := nriv1beta1.NewRuntimeServiceClient(s.cc).UpdateContainers(ctx, &nriv1beta1.UpdateContainersRequest{
		Update: updates,
		Evict:  evictions,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("plugin %s: UpdateContainers: %w", p.full, err)
	}
	return rsp.GetFailed(), rsp.GetFailedEvictions(), nil
}

// registerRequest is what the plugin registers with.
func (p *Plugin) registerRequest() *nriv1beta1.RegisterPluginRequest {
	return &nriv1beta1.RegisterPluginRequest{
		PluginName:    p.name,
		PluginIdx:     p.index,
		NriVersion:    "go-sdk " + version.NRI(),
		Endpoint:      p.endpoint.String(),
		Capabilities:  p.caps,
		Timeouts:      p.timeouts,
		PluginVersion: p.opts.pluginVersion,
		Selectors:     p.opts.selectors,
	}
}

// ParseName splits a "NN-name" plugin file name into its index and name.
func ParseName(s string) (idx, name string, ok bool) {
	if len(s) < 4 || s[2] != '-' || CheckIndex(s[:2]) != nil || CheckName(s[3:]) != nil {
		return "", "", false
	}
	return s[:2], s[3:], true
}

// CheckName checks a plugin name: non-empty, characters from
// [a-zA-Z0-9_.+-].
func CheckName(name string) error {
	if name == "" {
		return errors.New("plugin name is empty")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.+-", r)) {
			return fmt.Errorf("plugin name %q contains %q; allowed are [a-zA-Z0-9_.+-]", name, r)
		}
	}
	return nil
}

// CheckIndex checks a plugin index: exactly two ASCII digits.
func CheckIndex(idx string) error {
	if len(idx) != 2 || idx[0] < '0' || idx[0] > '9' || idx[1] < '0' || idx[1] > '9' {
		return fmt.Errorf("plugin index %q must be exactly two ASCII digits", idx)
	}
	return nil
}

// target is a parsed address: a unix socket path or a TCP host:port.
type target struct {
	unix bool
	addr string // socket path or host:port
}

// String renders the target as a gRPC target.
func (t target) String() string {
	if t.unix {
		return "unix://" + t.addr
	}
	return "dns:///" + t.addr
}

// parseTarget accepts "unix:///abs", "unix:abs", "/abs", "dns:///host:port"
// and "tcp://host:port".
func parseTarget(s string) (target, error) {
	switch {
	case strings.HasPrefix(s, "dns:///"):
		return target{addr: strings.TrimPrefix(s, "dns:///")}, nil
	case strings.HasPrefix(s, "tcp://"):
		return target{addr: strings.TrimPrefix(s, "tcp://")}, nil
	}
	path, err := sockets.PathOf(s)
	if err != nil {
		return target{}, err
	}
	return target{unix: true, addr: path}, nil
}
