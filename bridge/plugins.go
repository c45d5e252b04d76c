package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/net/multiplex"
	"github.com/containerd/ttrpc"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/supervisor"
)

// classicMaxMessage is what the server may send a classic plugin in one
// message: ttrpc's 4 MiB limit less room for the ttrpc envelope.
const classicMaxMessage = 4<<20 - 64<<10

// PluginSide runs classic v1alpha1 plugins under the server: each classic
// plugin connection becomes one in-process plugin of the server, with its
// own name and index, interleaved with gRPC plugins by index.
type PluginSide struct {
	srv       *server.Server
	log       *slog.Logger
	regWait   time.Duration
	selectors func(full string) []*nriv1beta1.EventSelector // nil: none
	ttrpcOpts ttrpcOptions

	wasmCfg WasmConfig
	tracer  trace.Tracer // spans of WASM plugin calls

	mu       sync.Mutex
	conns    map[*classicConn]struct{}
	launched []*launchSlot // every slot Launch started, for WaitLaunched
	wasm     wasmEngineRef // of the WASM plugins, once Launch found one
	// wasmRuns are the goroutines of WASM plugins and of their engine
	// (Wait).
	wasmRuns sync.WaitGroup
}

// ttrpcOptions are extra options of the ttrpc clients and servers of
// classic plugin connections (WithTTRPCOptions).
type ttrpcOptions struct {
	client []ttrpc.ClientOpts
	server []ttrpc.ServerOpt
}

// PluginOption configures a PluginSide; pass options to NewPluginSide. It
// has the shape of RuntimeOption: it only records its value, and
// NewPluginSide validates.
type PluginOption func(*pluginOptions)

// pluginOptions is what PluginOptions record.
type pluginOptions struct {
	log       *slog.Logger
	regWait   time.Duration
	selectors func(full string) []*nriv1beta1.EventSelector
	ttrpc     ttrpcOptions
	wasm      WasmConfig
	tracer    trace.TracerProvider
}

// WithPluginTracerProvider sets the tracer provider of the spans of WASM
// plugin calls, which cross no connection that could carry them (default:
// none). Classic plugins over ttrpc get the caller's trace in their
// metadata instead.
func WithPluginTracerProvider(tp trace.TracerProvider) PluginOption {
	return func(o *pluginOptions) { o.tracer = tp }
}

// WasmConfig sets the sandbox of the WASM plugins Launch finds (package
// wasm). Zero values keep the defaults.
type WasmConfig struct {
	// MemoryLimit is each module's memory limit in bytes
	// (wasm.DefaultMemoryLimit).
	MemoryLimit uint64
	// CacheDir keeps compiled modules across restarts (default: memory).
	CacheDir string
}

// WithWasm sets the sandbox of WASM plugins.
func WithWasm(cfg WasmConfig) PluginOption {
	return func(o *pluginOptions) { o.wasm = cfg }
}

// WithTTRPCOptions adds options to the ttrpc client that calls each classic
// plugin and to the ttrpc server that serves its Runtime service (for
// example a runtime's tracing interceptors, as pkg/adaptation's option of
// the same name does).
func WithTTRPCOptions(client []ttrpc.ClientOpts, server []ttrpc.ServerOpt) PluginOption {
	return func(o *pluginOptions) {
		o.ttrpc.client = append(o.ttrpc.client, client...)
		o.ttrpc.server = append(o.ttrpc.server, server...)
	}
}

// WithClassicSelectors gives classic plugins, which cannot declare event
// selectors, the selectors of selectors(full) ("NN-name"; nil or empty:
// everything): the server then sends such a plugin only the events and the
// Synchronize state of what they select, as for a gRPC plugin that
// registered with them. Invalid selectors refuse the plugin's
// registration (logged). nrid sets it from [[plugin]] selectors.
func WithClassicSelectors(selectors func(full string) []*nriv1beta1.EventSelector) PluginOption {
	return func(o *pluginOptions) { o.selectors = selectors }
}

// WithPluginLogger sets the logger (default, and for nil: slog.Default()).
func WithPluginLogger(l *slog.Logger) PluginOption {
	return func(o *pluginOptions) { o.log = l }
}

// WithRegistrationTimeout bounds how long a connected classic plugin may
// take to call RegisterPlugin (default 5 s; positive).
func WithRegistrationTimeout(d time.Duration) PluginOption {
	return func(o *pluginOptions) { o.regWait = d }
}

// NewPluginSide creates the plugin side of the bridge for srv. It fails
// only for invalid options.
func NewPluginSide(srv *server.Server, opts ...PluginOption) (*PluginSide, error) {
	o := pluginOptions{regWait: 5 * time.Second}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.regWait <= 0 {
		return nil, fmt.Errorf("bridge: WithRegistrationTimeout: %v is not positive", o.regWait)
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	if o.wasm.MemoryLimit > 1<<32 {
		return nil, fmt.Errorf("bridge: WithWasm: a memory limit of %d bytes is over 4 GiB", o.wasm.MemoryLimit)
	}
	if o.tracer == nil {
		o.tracer = tracenoop.NewTracerProvider()
	}
	return &PluginSide{srv: srv, log: o.log, regWait: o.regWait, selectors: o.selectors, ttrpcOpts: o.ttrpc, wasmCfg: o.wasm,
		tracer: o.tracer.Tracer("github.com/nri-grpc/nri-grpc/bridge"),
		conns:  map[*classicConn]struct{}{}}, nil
}

// Serve accepts classic plugins on lis (a unix socket, where unmodified
// classic plugins dial /var/run/nri/nri.sock) until ctx is done.
func (ps *PluginSide) Serve(ctx context.Context, lis net.Listener) error {
	go func() {
		<-ctx.Done()
		_ = lis.Close()
	}()
	for {
		c, err := lis.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		identity := "unknown"
		if info, err := peercred.Of(c); err == nil {
			identity = info.String()
		}
		go ps.handle(ctx, c, identity, nil)
	}
}

// launchSlot is the identity of a classic plugin the bridge launched: its
// name and index come from its file name, not from its registration.
type launchSlot struct {
	name, idx string
	config    []byte
	// settled is closed when the plugin's first connection registered or
	// failed to (WaitLaunched).
	settled    chan struct{}
	settleOnce sync.Once
}

// settle marks the end of the slot's first registration.
func (s *launchSlot) settle() { s.settleOnce.Do(func() { close(s.settled) }) }

// WaitLaunched waits until every classic plugin Launch started has
// registered, failed to register (refused, timed out, or exited), or could
// not be started, or until ctx is done. A runtime embedding the server
// calls it at its start, as classic NRI returns from its start only once
// its pre-launched plugins registered.
func (ps *PluginSide) WaitLaunched(ctx context.Context) error {
	ps.mu.Lock()
	slots := slices.Clone(ps.launched)
	ps.mu.Unlock()
	for _, s := range slots {
		select {
		case <-s.settled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Wait waits until the goroutines that Launch started for WASM plugins (and
// their engine, which closes their compiled code) ended, which they do once
// Launch's context is done or the server's Shutdown began. A runtime
// embedding the server calls it after cancelling that context, so that
// nothing of its plugins runs after its own Stop returned.
func (ps *PluginSide) Wait() { ps.wasmRuns.Wait() }

// Launch starts the classic plugins of dir the classic way (a socketpair on
// fd 3, and only NRI_PLUGIN_NAME, NRI_PLUGIN_IDX and NRI_PLUGIN_SOCKET=3 in
// the environment) under sup, which restarts them with backoff when they
// exit. Files that are not valid plugins are reported and skipped.
func (ps *PluginSide) Launch(ctx context.Context, sup *supervisor.Supervisor, dir, confDir string) error {
	plugins, errs := supervisor.Discover(dir, confDir)
	for _, p := range plugins {
		slot := &launchSlot{name: p.Name, idx: p.Index, config: p.Config, settled: make(chan struct{})}
		ps.mu.Lock()
		ps.launched = append(ps.launched, slot)
		ps.mu.Unlock()
		if IsWasm(p.Path) {
			if err := ps.launchWasm(ctx, p, slot); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		var local *os.File
		_, err := sup.Start(ctx, supervisor.Spec{
			Name:  p.Name,
			Index: p.Index,
			Path:  p.Path,
			Env:   []string{"NRI_PLUGIN_NAME=" + p.Name, "NRI_PLUGIN_IDX=" + p.Index, "NRI_PLUGIN_SOCKET=3"},
			Prepare: func() ([]*os.File, func(), error) {
				fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					return nil, nil, fmt.Errorf("socketpair: %w", err)
				}
				local = os.NewFile(uintptr(fds[0]), "nri-bridge-"+p.FullName())
				peer := os.NewFile(uintptr(fds[1]), "nri-plugin-"+p.FullName())
				return []*os.File{peer}, nil, nil
			},
			OnStart: func(pctx context.Context, _ supervisor.Started) {
				f := local
				local = nil
				c, err := net.FileConn(f)
				_ = f.Close()
				if err != nil {
					ps.log.Error("classic plugin connection", "plugin", p.FullName(), "error", err)
					return
				}
				go ps.handle(pctx, c, "launch:"+p.FullName(), slot)
			},
		})
		if err != nil {
			slot.settle()
			errs = append(errs, fmt.Errorf("launching classic plugin %s: %w", p.FullName(), err))
		}
	}
	return errors.Join(errs...)
}

// classicConn is one connected classic plugin.
type classicConn struct {
	nriv1beta1.UnimplementedPluginServiceServer
	ps       *PluginSide
	tr       transport
	identity string
	slot     *launchSlot
	full     string

	regC   chan *v1alpha1.RegisterPluginRequest
	handle atomic.Pointer[server.Handle] // set once registered
	// synced is closed once the plugin answered the last page of its first
	// Synchronize, settled once its registration succeeded or failed.
	synced, settled      chan struct{}
	syncOnce, settleOnce sync.Once

	mu          sync.Mutex
	stateChange bool // the plugin only implements StateChange for the 9 notification events
}

// handle runs one classic plugin connection: the multiplexed trunk carries
// the plugin's Plugin service (conn 1, we are the ttrpc client) and our
// Runtime service (conn 2, we serve it).
func (ps *PluginSide) handle(ctx context.Context, c net.Conn, identity string, slot *launchSlot) {
	if slot != nil {
		defer slot.settle() // however the connection ends
	}
	mux := multiplex.Multiplex(c, multiplex.WithBlockedRead())
	defer func() { _ = mux.Close() }() // the connection is over: nothing to do about a failed close
	pconn, err := mux.Open(multiplex.PluginServiceConn)
	if err != nil {
		ps.log.Error("classic plugin: opening the plugin connection", "error", err)
		return
	}
	closed := make(chan struct{})
	var once sync.Once
	copts := append(slices.Clone(ps.ttrpcOpts.client), ttrpc.WithOnClose(func() { once.Do(func() { close(closed) }) }))
	client := ttrpc.NewClient(pconn, copts...)
	defer func() { _ = client.Close() }()
	lis, err := mux.Listen(multiplex.RuntimeServiceConn)
	if err != nil {
		ps.log.Error("classic plugin: listening for the runtime connection", "error", err)
		return
	}
	tsrv, err := ttrpc.NewServer(ps.ttrpcOpts.server...)
	if err != nil {
		ps.log.Error("classic plugin: ttrpc server", "error", err)
		return
	}
	defer func() { _ = tsrv.Close() }()
	cc := &classicConn{ps: ps, tr: ttrpcTransport{client: client}, identity: identity, slot: slot,
		regC: make(chan *v1alpha1.RegisterPluginRequest, 1), synced: make(chan struct{}), settled: make(chan struct{})}
	defer cc.settle()
	cc.serveRuntime(tsrv)
	go func() { _ = tsrv.Serve(ctx, lis) }()
	mux.(interface{ Unblock() }).Unblock()

	var reg *v1alpha1.RegisterPluginRequest
	select {
	case reg = <-cc.regC:
	case <-closed:
		return
	case <-ctx.Done():
		return
	case <-time.After(ps.regWait):
		ps.log.Warn("classic plugin did not register in time", "identity", identity, "timeout", ps.regWait)
		return
	}
	name, idx, config := reg.GetPluginName(), reg.GetPluginIdx(), ""
	kind := nriv1beta1.PluginKind_PLUGIN_KIND_CLASSIC
	if slot != nil {
		// Pre-launched: the file name decides, as in classic NRI.
		name, idx, config = slot.name, slot.idx, string(slot.config)
	}
	cc.full = idx + "-" + name
	var sels []*nriv1beta1.EventSelector
	if ps.selectors != nil {
		sels = ps.selectors(cc.full)
	}
	h, err := ps.srv.RegisterInProcess(ctx, server.Registration{
		Selectors:    sels,
		Name:         name,
		Index:        idx,
		Identity:     identity,
		Kind:         kind,
		Endpoint:     "classic",
		Config:       config,
		Capabilities: &nriv1beta1.Capabilities{MaxMessageSize: classicMaxMessage},
		NRIVersion:   reg.GetNRIVersion(),
	}, cc)
	if err != nil {
		ps.log.Warn("classic plugin registration failed", "plugin", cc.full, "identity", identity, "error", err)
		return
	}
	cc.handle.Store(h)
	cc.settle()
	ps.mu.Lock()
	ps.conns[cc] = struct{}{}
	ps.mu.Unlock()
	defer func() {
		ps.mu.Lock()
		delete(ps.conns, cc)
		ps.mu.Unlock()
	}()
	select {
	case <-closed:
		h.Close()
	case <-h.Done():
	case <-ctx.Done():
		h.Close()
	}
}

// RegisterPlugin implements the classic Runtime service: it answers at once
// and the registration proceeds (Configure, Synchronize) through the server.
func (cc *classicConn) RegisterPlugin(_ context.Context, req *v1alpha1.RegisterPluginRequest) (*v1alpha1.Empty, error) {
	if cc.slot == nil {
		if err := v1alpha1.CheckPluginName(req.GetPluginName()); err != nil {
			return nil, fmt.Errorf("invalid plugin name: %w", err)
		}
		if err := v1alpha1.CheckPluginIndex(req.GetPluginIdx()); err != nil {
			return nil, fmt.Errorf("invalid plugin index: %w", err)
		}
	}
	select {
	case cc.regC <- req:
	default:
		return nil, status.Error(codes.AlreadyExists, "plugin already registered on this connection")
	}
	return &v1alpha1.Empty{}, nil
}

// settle marks the end of the registration, however it ended.
func (cc *classicConn) settle() {
	cc.settleOnce.Do(func() {
		close(cc.settled)
		if cc.slot != nil {
			cc.slot.settle()
		}
	})
}

// updateContainers serves a classic plugin's unsolicited updates and
// evictions; it returns the updates that failed.
func (cc *classicConn) updateContainers(ctx context.Context, req *nriv1beta1.UpdateContainersRequest) ([]*nriv1beta1.ContainerUpdate, error) {
	// Updates are accepted once the plugin's Synchronize returned; waiting
	// before that could deadlock a plugin that sends updates from inside
	// its Synchronize handler, so they are refused.
	h := cc.handle.Load()
	if h == nil {
		select {
		case <-cc.synced:
		default:
			return nil, status.Error(codes.FailedPrecondition, "the plugin is not registered yet: send updates after Synchronize returned")
		}
		// Its Synchronize returned and its registration is completing (a
		// classic runtime takes updates from then on): wait for it, within
		// the call's deadline.
		select {
		case <-cc.settled:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		if h = cc.handle.Load(); h == nil {
			return nil, status.Error(codes.FailedPrecondition, "the plugin's registration failed")
		}
	}
	failed, _, err := h.UpdateContainers(ctx, req.GetUpdate(), req.GetEvict())
	return failed, err
}
