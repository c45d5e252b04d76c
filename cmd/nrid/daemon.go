package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/nri-grpc/nri-grpc/bridge"
	"github.com/nri-grpc/nri-grpc/config"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/node"
	"github.com/nri-grpc/nri-grpc/policy"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/supervisor"
)

// PluginHealthPrefix prefixes the gRPC health service name of each plugin
// (node.PluginHealthPrefix).
const PluginHealthPrefix = node.PluginHealthPrefix

// daemon is nrid, built from a checked configuration: a node (package
// node: the server, its gRPC endpoints, metrics, tracing), plus what only
// nrid does: the bridge, the restart gate, the takeover and the launch
// directories. Nothing listens until serve.
type daemon struct {
	cfg    *config.Config
	log    *slog.Logger
	n      *node.Node
	srv    *server.Server
	policy *policy.Policy
	sup    *supervisor.Supervisor // nil without launch directories

	takeover bool                // --takeover: take over from a running nrid
	rs       *bridge.RuntimeSide // the bridge's runtime side, if configured
}

// newDaemon builds everything that can fail before anything listens (the
// node, node.New).
func newDaemon(ctx context.Context, cfg *config.Config, stdout, logOut io.Writer) (*daemon, error) {
	d := &daemon{cfg: cfg}
	n, err := node.New(ctx, cfg, node.WithLogOutput(logOut), node.WithStdout(stdout), node.WithServiceName("nrid"),
		node.WithStopHook(d.stopLaunched))
	if err != nil {
		return nil, err
	}
	d.n, d.log, d.srv, d.policy = n, n.Logger(), n.Server(), n.Policy()
	if cfg.Launch.PluginDir != "" || cfg.Bridge.ClassicPluginDir != "" {
		// It launches nothing until serve's launch step.
		d.sup = supervisor.New(supervisor.WithLogger(d.log))
	}
	return d, nil
}

// stopLaunched stops the launched plugins: the node's stop hook, after
// the plugins were told (server.Shutdown).
func (d *daemon) stopLaunched(ctx context.Context) {
	if d.sup == nil {
		return
	}
	if err := d.sup.Stop(ctx); err != nil {
		d.log.Warn("stopping launched plugins", "error", err)
	}
}

// listeners are what serve opened: the node's and the bridge's plugin
// side; close undoes it.
type listeners struct {
	node.Listeners
	classic *net.UnixListener // the bridge's plugin side
}

func (l *listeners) close() {
	_ = l.Close() // the node's
	if l.classic != nil {
		_ = l.classic.Close()
	}
}

// listen opens every listener, or none: the node's (node.ListenWith, with
// those a takeover handed over) and the classic plugin socket.
func (d *daemon) listen(in *inherited) (_ *listeners, err error) {
	s := d.cfg.Server
	l := &listeners{}
	defer func() {
		if err != nil {
			if in != nil && l.Unix != nil {
				l.Unix.SetUnlinkOnClose(false) // the old nrid goes on with it
			}
			l.close()
		}
	}()
	// Listeners a takeover handed over are used as they are.
	unixOf := func(name, addr string) (*net.UnixListener, error) {
		il, err := in.listener(name, addr)
		if il == nil || err != nil {
			return nil, err
		}
		ul := il.(*net.UnixListener)
		ul.SetUnlinkOnClose(true) // this nrid's now: a stop removes it
		return ul, nil
	}
	if l.Unix, err = unixOf("unix", s.Socket); err != nil {
		return nil, err
	}
	if a := d.cfg.TCP.Address; a != "" {
		if l.TCP, err = in.listener("tcp", a); err != nil {
			return nil, err
		}
	}
	if a := d.cfg.Observability.MetricsAddress; a != "" {
		if l.Metrics, err = in.listener("metrics", a); err != nil {
			return nil, err
		}
	}
	have := l.Listeners
	if l.Listeners, err = d.n.ListenWith(have); err != nil {
		l.Listeners = have
		return nil, err
	}
	if p := d.cfg.Bridge.PluginSocket; p != "" {
		if l.classic, err = unixOf("classic", p); err != nil {
			return nil, err
		}
		// Classic plugins authenticate by the socket's mode only (classic
		// NRI has no other means), as on the runtime's own socket.
		if l.classic == nil {
			if l.classic, err = sockets.Listen(p, sockets.ListenOptions{Mode: 0o600, GID: -1}); err != nil {
				return nil, fmt.Errorf("bridge.plugin_socket: %w", err)
			}
		}
		// The bridge closes it when its context ends, which may be before
		// this nrid learns that a new one took it over: nrid removes the
		// file itself once the bridge stopped (serving.removeClassicSocket).
		l.classic.SetUnlinkOnClose(false)
	}
	return l, nil
}

// rosterNames are the plugins of entries.
func rosterNames(entries []rosterEntry) []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Plugin
	}
	return names
}

// launch starts the plugins nrid launches itself (launch.plugin_dir) and
// the classic ones of bridge.classic_plugin_dir.
func (d *daemon) launch(ctx context.Context, sup *supervisor.Supervisor, ps *bridge.PluginSide) {
	d.n.Launch(ctx, sup)
	if dir := d.cfg.Bridge.ClassicPluginDir; dir != "" && ps != nil {
		if err := ps.Launch(ctx, sup, dir, d.cfg.Bridge.ClassicConfigDir); err != nil {
			d.log.Warn("launching classic plugins", "dir", dir, "error", err)
		}
	}
}

// newBridgeRuntime creates the runtime side of the ttrpc bridge, if
// configured (nil, nil otherwise); it runs after the restart gate, so that
// the runtime sees nrid (its plugin 00-nri-grpc) only once the plugins are
// back.
func (d *daemon) newBridgeRuntime() (*bridge.RuntimeSide, error) {
	b := d.cfg.Bridge
	if b.RuntimeSocket == "" {
		return nil, nil
	}
	name, idx := b.PluginName, b.PluginIndex
	if name == "" {
		name = bridge.DefaultPluginName
	}
	if idx == "" {
		idx = bridge.DefaultPluginIndex
	}
	return bridge.NewRuntimeSide(d.srv, bridge.WithRuntimeSocket(b.RuntimeSocket), bridge.WithPluginIdentity(name, idx),
		bridge.WithRuntimeLogger(d.log.With("component", "bridge-runtime")))
}

// startBridgePlugins starts the plugin side of the ttrpc bridge (the
// classic plugin socket), if configured (nil, nil otherwise), and returns
// it for launching the classic plugins of bridge.classic_plugin_dir
// (launch).
func (d *daemon) startBridgePlugins(ctx context.Context, wg *sync.WaitGroup, l *listeners) (*bridge.PluginSide, error) {
	b := d.cfg.Bridge
	if l.classic == nil && b.ClassicPluginDir == "" {
		return nil, nil
	}
	ps, err := bridge.NewPluginSide(d.srv, bridge.WithPluginLogger(d.log.With("component", "bridge-plugins")),
		bridge.WithRegistrationTimeout(d.cfg.Server.RegistrationTimeout.D()),
		bridge.WithWasm(d.wasmConfig()), bridge.WithPluginTracerProvider(d.n.TracerProvider()))
	if err != nil {
		return nil, err
	}
	if l.classic != nil {
		wg.Go(func() {
			if err := ps.Serve(ctx, l.classic); err != nil {
				d.log.Error("classic plugin socket", "error", err)
			}
		})
		d.log.Info("bridge plugin side enabled", "plugin_socket", b.PluginSocket)
	}
	return ps, nil
}

// stop stops gracefully within server.stop_timeout (node.Stop): health
// goes NOT_SERVING and its Watch streams end, plugins get Shutdown("server
// stopping"), launched plugins are stopped, then the gRPC servers stop
// gracefully and whatever is still running at the bound is cut.
func (d *daemon) stop() {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Server.StopTimeout.D())
	defer cancel()
	d.log.Info("stopping", "bound", d.cfg.Server.StopTimeout.D().String())
	d.n.Stop(ctx)
	d.log.Info("stopped", "took", time.Since(start).String())
}

// release undoes newDaemon when nothing was served (node.Stop without the
// stop's log: there is nothing to stop).
func (d *daemon) release() {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Server.StopTimeout.D())
	defer cancel()
	d.n.Stop(ctx)
}

// runtimePoll is how often a runtime's detachment is looked for: the
// server signals attachment with a channel, detachment only by replacing it.
const runtimePoll = time.Second

// watchRuntime keeps health in step with the runtime: SERVING while one is
// attached and synchronized, NOT_SERVING otherwise.
func (d *daemon) watchRuntime(ctx context.Context) {
	for {
		select {
		case <-d.srv.RuntimeAttached():
		case <-ctx.Done():
			return
		}
		d.n.SetServing(true)
		d.log.Info("runtime attached: serving")
		t := time.NewTicker(runtimePoll)
		for attached := true; attached; {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
				select {
				case <-d.srv.RuntimeAttached():
				default:
					attached = false
				}
			}
		}
		t.Stop()
		d.n.SetServing(false)
		d.log.Warn("runtime detached: not serving until it attaches again")
	}
}

// wasmConfig is the sandbox of the WASM plugins of
// bridge.classic_plugin_dir: wasm.memory_limit, and compiled modules kept
// in wasm.cache_dir or else server.state_dir/wasm-cache (when state_dir is
// set), so that a restart does not compile them again.
func (d *daemon) wasmConfig() bridge.WasmConfig {
	cfg := bridge.WasmConfig{MemoryLimit: uint64(d.cfg.Wasm.MemoryLimit), CacheDir: d.cfg.Wasm.CacheDir}
	if dir := d.cfg.Server.StateDir; dir != "" && cfg.CacheDir == "" {
		cfg.CacheDir = filepath.Join(dir, "wasm-cache")
	}
	return cfg
}
