package adaptation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"
	validator "github.com/containerd/nri/plugins/default-validator/builtin"
	"github.com/containerd/ttrpc"

	"github.com/nri-grpc/nri-grpc/bridge"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/supervisor"
)

const (
	// DefaultPluginPath is where pre-launched plugins are looked for.
	DefaultPluginPath = "/opt/nri/plugins"
	// DefaultSocketPath is the classic socket external plugins connect to.
	DefaultSocketPath = api.DefaultSocketPath
	// DefaultPluginConfigPath holds the pre-launched plugins' configuration.
	DefaultPluginConfigPath = "/etc/nri/conf.d"
)

// SyncFn is the runtime's function that lists its pods and containers and
// hands them to cb, with whatever lock keeps them from changing meanwhile.
type SyncFn func(ctx context.Context, cb SyncCB) error

// SyncCB is what a SyncFn hands the runtime's pods and containers to; the
// updates it returns are for the runtime to apply.
type SyncCB func(ctx context.Context, pods []*PodSandbox, containers []*Container) ([]*ContainerUpdate, error)

// UpdateFn is the runtime's function that applies updates plugins ask for
// outside of an event, returning those that failed.
type UpdateFn func(ctx context.Context, updates []*ContainerUpdate) ([]*ContainerUpdate, error)

// ErrWasmDisabled is upstream's error for a runtime built without WASM
// support. nri-grpc has no WASM support: Start fails with an error that
// wraps it when the plugin path holds a WASM module.
var ErrWasmDisabled = errors.New("WASM support is disabled (at build time)")

// Adaptation is NRI inside the runtime: nri-grpc's server, its classic
// socket, its pre-launched and builtin plugins and its gRPC endpoints. A
// runtime creates one with New, calls Start once its state can be listed,
// calls the event methods for every pod and container lifecycle event, and
// Stop at its end.
type Adaptation struct {
	name, version string
	syncFn        SyncFn
	updateFn      UpdateFn

	socketPath, pluginPath, dropinPath string
	dontListen                         bool
	configFile                         string // "": NRI_GRPC_CONFIG, else nrid's defaults
	builtin                            []*builtin.BuiltinPlugin
	metrics                            Metrics
	deprecation                        DeprecationRecorder
	clientOpts                         []ttrpc.ClientOpts
	serverOpts                         []ttrpc.ServerOpt
	log                                *slog.Logger
	registrationTimeout                time.Duration
	requestTimeout                     time.Duration

	mu      sync.Mutex
	srv     *server.Server // nil before Start and after Stop: no plugins
	running *running       // what Start started
}

// running is what Start started and Stop stops.
type running struct {
	cancel   context.CancelFunc
	stopping atomic.Bool // Stop began
	wg       sync.WaitGroup
	sup      *supervisor.Supervisor
	plugins  *bridge.PluginSide // nil until Start created it
	builtins []*server.Handle
	classic  *net.UnixListener
	grpc     *endpoints // nil when external connections are disabled
}

// Option configures an Adaptation; pass options to New.
type Option func(*Adaptation) error

// WithPluginPath sets the directory of pre-launched plugins (default
// DefaultPluginPath).
func WithPluginPath(path string) Option {
	return func(r *Adaptation) error { r.pluginPath = path; return nil }
}

// WithPluginConfigPath sets the directory of the pre-launched plugins'
// configuration (default DefaultPluginConfigPath).
func WithPluginConfigPath(path string) Option {
	return func(r *Adaptation) error { r.dropinPath = path; return nil }
}

// WithSocketPath sets the classic socket external classic plugins connect
// to (default DefaultSocketPath).
func WithSocketPath(path string) Option {
	return func(r *Adaptation) error { r.socketPath = path; return nil }
}

// WithDisabledExternalConnections accepts no plugin connection from
// outside: neither the classic socket nor nri-grpc's gRPC endpoints are
// opened. Pre-launched and builtin plugins still run.
func WithDisabledExternalConnections() Option {
	return func(r *Adaptation) error { r.dontListen = true; return nil }
}

// WithTTRPCOptions adds options to the ttrpc clients and servers of classic
// plugin connections (containerd passes its tracing interceptors).
func WithTTRPCOptions(clientOpts []ttrpc.ClientOpts, serverOpts []ttrpc.ServerOpt) Option {
	return func(r *Adaptation) error {
		r.clientOpts = append(r.clientOpts, clientOpts...)
		r.serverOpts = append(r.serverOpts, serverOpts...)
		return nil
	}
}

// WithBuiltinPlugins adds plugins that run in the runtime's process.
func WithBuiltinPlugins(plugins ...*builtin.BuiltinPlugin) Option {
	return func(r *Adaptation) error { r.builtin = append(r.builtin, plugins...); return nil }
}

// WithMetrics sets the runtime's metrics sink (nil: none). nri-grpc's own
// Prometheus metrics are configured in its configuration file.
func WithMetrics(m Metrics) Option {
	return func(r *Adaptation) error {
		if m != nil {
			r.metrics = m
		}
		return nil
	}
}

// WithDefaultValidator runs upstream's default validator as the builtin
// plugin 00-default-validator when cfg enables it, as upstream does: a
// runtime's default_validator behaves as with upstream. nri-grpc's own
// default validator (the nri-grpc configuration's [validator] and required
// [[plugin]] entries) runs beside it, with nri-grpc's semantics.
func WithDefaultValidator(cfg *validator.DefaultValidatorConfig) Option {
	return func(r *Adaptation) error {
		if p := validator.GetDefaultValidator(cfg); p != nil {
			r.builtin = append([]*builtin.BuiltinPlugin{p}, r.builtin...)
		}
		return nil
	}
}

// WithDeprecationRecorder reports deprecated plugin behaviour (a classic
// plugin that only implements StateChange) to d, once per plugin and event.
func WithDeprecationRecorder(d DeprecationRecorder) Option {
	return func(r *Adaptation) error { r.deprecation = d; return nil }
}

// WithConfigFile names nri-grpc's configuration file (nrid.toml's schema):
// its gRPC endpoints, policy, TLS, tracing, metrics and server settings.
// Without it the file the NRI_GRPC_CONFIG environment variable names is
// read, and without that nrid's defaults apply. This option is nri-grpc's;
// upstream has no such option.
func WithConfigFile(path string) Option {
	return func(r *Adaptation) error { r.configFile = path; return nil }
}

// WithLogger sets the logger (default: one that writes through upstream's
// pkg/log, which runtimes point at their own log). This option is
// nri-grpc's.
func WithLogger(l *slog.Logger) Option {
	return func(r *Adaptation) error {
		if l != nil {
			r.log = l
		}
		return nil
	}
}

// EnvConfigFile is the environment variable that names nri-grpc's
// configuration file when WithConfigFile is not given.
const EnvConfigFile = "NRI_GRPC_CONFIG"

// New creates the runtime's NRI with the runtime's name and version, its
// SyncFn and UpdateFn. Nothing runs until Start. The registration and
// request timeouts are those set with SetPluginRegistrationTimeout and
// SetPluginRequestTimeout before New.
func New(name, version string, syncFn SyncFn, updateFn UpdateFn, opts ...Option) (*Adaptation, error) {
	if syncFn == nil {
		return nil, errors.New("failed to create NRI adaptation, nil SyncFn")
	}
	if updateFn == nil {
		return nil, errors.New("failed to create NRI adaptation, nil UpdateFn")
	}
	r := &Adaptation{
		name:                name,
		version:             version,
		syncFn:              syncFn,
		updateFn:            updateFn,
		pluginPath:          DefaultPluginPath,
		dropinPath:          DefaultPluginConfigPath,
		socketPath:          DefaultSocketPath,
		metrics:             noMetrics{},
		registrationTimeout: getPluginRegistrationTimeout(),
		requestTimeout:      getPluginRequestTimeout(),
	}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, fmt.Errorf("failed to apply option: %w", err)
		}
	}
	if r.log == nil {
		r.log = slog.New(newUpstreamLogHandler())
	}
	return r, nil
}

// Start starts NRI: the server gets the runtime's state from its SyncFn
// (called once, here), the builtin plugins register, the pre-launched
// plugins are started and waited for (each until it registered, failed to,
// or the registration timeout passed), then the classic socket and
// nri-grpc's gRPC endpoints open. Start fails, with nothing left running,
// if any of that fails, a builtin plugin included; a pre-launched plugin
// that fails is logged and left out, as upstream does.
func (r *Adaptation) Start() (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running != nil {
		return errors.New("NRI adaptation already started")
	}
	cfg, from, err := r.loadConfig()
	if err != nil {
		return err
	}
	if err := r.checkPluginPath(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &running{cancel: cancel}
	defer func() {
		if err != nil {
			r.stopRunning(run)
		}
	}()
	srv, ep, err := r.newServer(ctx, cfg, from)
	if err != nil {
		return err
	}
	run.grpc = ep
	// The state first: every plugin, builtin ones included, is
	// synchronized with it.
	if err := r.syncFn(ctx, func(ctx context.Context, pods []*PodSandbox, ctrs []*Container) ([]*ContainerUpdate, error) {
		return nil, r.setState(ctx, srv, pods, ctrs)
	}); err != nil {
		return fmt.Errorf("failed to synchronize NRI with the runtime's state: %w", err)
	}
	for _, b := range r.builtin {
		h, err := registerBuiltin(ctx, srv, b)
		if err != nil {
			return err
		}
		run.builtins = append(run.builtins, h)
	}
	ps, err := bridge.NewPluginSide(srv, bridge.WithPluginLogger(r.log.With("component", "classic-plugins")),
		bridge.WithRegistrationTimeout(r.registrationTimeout), bridge.WithTTRPCOptions(r.clientOpts, r.serverOpts),
		bridge.WithWasm(bridge.WasmConfig{MemoryLimit: uint64(cfg.Wasm.MemoryLimit), CacheDir: cfg.Wasm.CacheDir}), bridge.WithPluginTracerProvider(ep.n.TracerProvider()))
	if err != nil {
		return err
	}
	run.plugins = ps
	run.sup = supervisor.New(supervisor.WithLogger(r.log.With("component", "supervisor")))
	if err := ps.Launch(ctx, run.sup, r.pluginPath, r.dropinPath); err != nil {
		r.log.Warn("starting pre-launched NRI plugins", "dir", r.pluginPath, "error", err)
	}
	// As upstream, Start returns once the pre-launched plugins are in (or
	// out): a launched plugin's registration is bounded by the
	// registration timeout, and its synchronization by its own.
	wctx, wcancel := context.WithTimeout(ctx, 2*r.registrationTimeout+r.requestTimeout)
	werr := ps.WaitLaunched(wctx)
	wcancel()
	if werr != nil {
		r.log.Warn("pre-launched NRI plugins still registering", "error", werr)
	}
	if !r.dontListen {
		if run.classic, err = listenClassic(r.socketPath); err != nil {
			return err
		}
		lis := run.classic
		run.wg.Go(func() {
			// Stop closes the socket before it cancels ctx: not an error.
			if err := ps.Serve(ctx, lis); err != nil && !run.stopping.Load() {
				r.log.Error("classic plugin socket", "error", err)
			}
		})
		if err := ep.serve(ctx, &run.wg); err != nil {
			return err
		}
		ep.n.Launch(ctx, run.sup) // gRPC plugins of [launch]
	}
	r.srv, r.running = srv, run
	r.log.Info("NRI started", "classic_socket", r.classicSocket(), "grpc", ep.describe())
	return nil
}

// classicSocket is the classic socket for the log ("" when not listening).
func (r *Adaptation) classicSocket() string {
	if r.dontListen {
		return ""
	}
	return r.socketPath
}

// listenClassic opens the classic socket at path, as upstream does: an old
// socket file is removed and the directory created (mode 0700). The socket
// is accessible to its owner only; classic NRI has no other authentication.
func listenClassic(path string) (*net.UnixListener, error) {
	_ = os.Remove(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("failed to create socket %q: %w", path, err)
	}
	l, err := sockets.Listen(path, sockets.ListenOptions{Mode: 0o600, GID: -1})
	if err != nil {
		return nil, fmt.Errorf("failed to create socket %q: %w", path, err)
	}
	return l, nil
}

// Stop stops NRI: the sockets close, plugins are shut down (gRPC plugins
// get Shutdown), pre-launched plugins are stopped. Events after Stop reach
// no plugin.
func (r *Adaptation) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		return
	}
	r.stopRunning(r.running)
	r.running, r.srv = nil, nil
	r.log.Info("NRI stopped")
}

// stopTimeout bounds Stop: plugins' shutdown, launched plugins' exit and the
// gRPC endpoints' graceful stop.
const stopTimeout = 10 * time.Second

// stopRunning stops what run holds (all of it or what Start got to).
func (r *Adaptation) stopRunning(run *running) {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	run.stopping.Store(true)
	if run.classic != nil {
		_ = run.classic.Close()
	}
	if run.grpc != nil {
		run.grpc.stop(ctx) // the node: the server's Shutdown and the endpoints
	}
	for _, h := range run.builtins {
		h.Close()
	}
	if run.sup != nil {
		if err := run.sup.Stop(ctx); err != nil {
			r.log.Warn("stopping pre-launched NRI plugins", "error", err)
		}
	}
	run.cancel()
	run.wg.Wait()
	if run.plugins != nil {
		run.plugins.Wait() // the WASM plugins end with run's context
	}
}

// server returns the running server, nil before Start and after Stop.
func (r *Adaptation) server() *server.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.srv
}

// Resync reads the runtime's state again through its SyncFn and hands it
// to the server, which resynchronizes the plugins (nri-grpc's extension of
// upstream's API). A runtime calls it when its state changed other than
// through the events, for example after it rebuilt its records; events
// keep the server's state current otherwise. Events that arrive meanwhile
// are merged into the new state, never lost.
func (r *Adaptation) Resync(ctx context.Context) error {
	srv := r.server()
	if srv == nil {
		return errors.New("NRI adaptation not started")
	}
	return r.syncFn(ctx, func(ctx context.Context, pods []*PodSandbox, ctrs []*Container) ([]*ContainerUpdate, error) {
		return nil, r.setState(ctx, srv, pods, ctrs)
	})
}

// Server returns the server NRI runs on, nil before Start and after Stop:
// its Plugins, AdminService and the rest of nri-grpc's API are the
// runtime's to use (nri-grpc's extension of upstream's API).
func (r *Adaptation) Server() *server.Server { return r.server() }

// PluginSyncBlock is what BlockPluginSync returns: it holds nothing.
type PluginSyncBlock struct{}

// BlockPluginSync is upstream's means of keeping plugins from being
// synchronized while the runtime changes its state between two events. The
// server synchronizes plugins from its own record of the events it relayed,
// which changes only with those events, so there is nothing to hold back:
// the block is granted at once and holds nothing.
func (r *Adaptation) BlockPluginSync() *PluginSyncBlock { return &PluginSyncBlock{} }

// Unblock releases the block; safe to call more than once, and on nil.
func (b *PluginSyncBlock) Unblock() {}
