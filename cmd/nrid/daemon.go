package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/nri-grpc/nri-grpc/auth"
	"github.com/nri-grpc/nri-grpc/bridge"
	"github.com/nri-grpc/nri-grpc/cmd/nrid/internal/config"
	"github.com/nri-grpc/nri-grpc/cmd/nrid/internal/policy"
	"github.com/nri-grpc/nri-grpc/cmd/nrid/internal/tlsconf"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/interceptor"
	"github.com/nri-grpc/nri-grpc/internal/apidesc"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/internal/grpcreg"
	"github.com/nri-grpc/nri-grpc/internal/metrics"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/telemetry"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/supervisor"
	"github.com/nri-grpc/nri-grpc/transport"
)

// daemon is nrid, built from a checked configuration. Nothing listens
// until serve.
type daemon struct {
	cfg    *config.Config
	log    *slog.Logger
	srv    *server.Server
	policy *policy.Policy
	tracer *telemetry.Telemetry
	mx     *metrics.Metrics // nil without metrics_address

	health   *stoppingHealth // its Watch streams end at the stop
	services []string        // served service names, for health
	unix     *grpc.Server
	tcp      *grpc.Server // nil without tcp.address
	tlsConf  *tls.Config

	takeover bool                // --takeover: take over from a running nrid
	rs       *bridge.RuntimeSide // the bridge's runtime side, if configured
}

// newDaemon builds everything that can fail before anything listens: the
// policy, the tokens, the TLS configuration, tracing, metrics, the server
// core and the gRPC servers.
func newDaemon(ctx context.Context, cfg *config.Config, stdout, logOut io.Writer) (_ *daemon, err error) {
	d := &daemon{cfg: cfg, log: newLogger(cfg.Log, logOut)}
	if d.policy, err = cfg.CompilePolicy(); err != nil {
		return nil, err
	}
	var tokens *auth.Tokens
	if cfg.TCP.TokensFile != "" {
		if tokens, err = auth.LoadTokens(cfg.TCP.TokensFile); err != nil {
			return nil, err
		}
	}
	var pluginTLS *tls.Config
	if cfg.TCP.Address != "" {
		d.tlsConf, err = tlsconf.ServerTLS(cfg.TCP.CertFile, cfg.TCP.KeyFile, cfg.TCP.ClientCAFile, cfg.TCP.ClientAuth == "require")
		if err != nil {
			return nil, fmt.Errorf("tcp: %w", err)
		}
		// TCP plugin endpoints are dialed with the same certificate, and
		// verified against the same CA as client certificates.
		if pluginTLS, err = tlsconf.PluginClientTLS(cfg.TCP.CertFile, cfg.TCP.KeyFile, cfg.TCP.ClientCAFile); err != nil {
			return nil, fmt.Errorf("tcp: %w", err)
		}
	}
	if d.tracer, err = setupTracing(ctx, cfg.Observability, stdout, d.log); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = d.tracer.Shutdown(context.Background())
		}
	}()
	if cfg.Observability.MetricsAddress != "" {
		d.mx = newMetrics()
	}

	node := cfg.Server.NodeName
	if node == "" {
		node, _ = os.Hostname()
	}
	s := cfg.Server
	opts := []server.Option{
		server.WithLogger(d.log),
		server.WithNodeName(node),
		server.WithRuntime(cfg.Runtime.Name, cfg.Runtime.Version),
		server.WithRegistrationTimeout(s.RegistrationTimeout.D()),
		server.WithRequestTimeout(s.RequestTimeout.D()),
		server.WithMaxTimeout(s.MaxTimeout.D()),
		server.WithShutdownGrace(s.ShutdownGrace.D()),
		server.WithMaxMessageSize(s.MaxMessageSize),
		server.WithMaxConcurrentCalls(uint32(s.MaxConcurrentCalls)),
		server.WithPluginSocketDir(s.PluginSocketDir),
		server.WithValidator(cfg.ValidatorConfig(d.policy)),
		server.WithAuthorizer(d.policy),
		server.WithPluginPolicy(d.policy.PluginPolicy),
		server.WithNotReadyPolicy(notReady(s.NotReady)),
		server.WithMinResyncInterval(s.MinResyncInterval.D()),
		server.WithDialOptions(d.tracer.DialOptions()...),
	}
	if d.mx != nil {
		opts = append(opts, server.WithMetrics(d.mx))
	}
	// Unix endpoints in the plugin socket directory; TCP endpoints only
	// with [tcp] configured (WithTLS(nil) refuses them).
	opts = append(opts, server.WithDialer(transport.NewDialer(transport.WithTLS(pluginTLS))))
	if d.srv, err = server.New(opts...); err != nil {
		return nil, err
	}

	var adminOpts []server.AdminOption
	if !cfg.Observability.RedactValues {
		adminOpts = append(adminOpts, server.WithoutRedaction())
	}
	// One instance of each service, shared by both listeners: the
	// AdaptationService holds the one attached runtime.
	rs, as, admin := d.srv.RuntimeService(), d.srv.AdaptationService(), d.srv.AdminService(adminOpts...)
	d.health = newStoppingHealth(health.NewServer())

	chain := interceptor.ServerOptions(
		interceptor.WithLogger(d.log),
		interceptor.WithAuthenticator(auth.New(auth.WithTokens(tokens), auth.WithKnown(d.policy.Known))),
		interceptor.WithAccess(auth.Access(d.policy.AuthorizeCall)),
		interceptor.WithPublic(healthpb.Health_ServiceDesc.ServiceName), // health is open to everybody
		interceptor.WithRegisterRate(s.RegisterRate, s.RegisterBurst),
		interceptor.WithUnary(d.srv.SimulationGuard()),
	)
	common := []grpc.ServerOption{
		codec.ServerOption(),
		grpc.MaxRecvMsgSize(s.MaxMessageSize),
		grpc.MaxSendMsgSize(s.MaxMessageSize),
	}
	common = append(common, flowctl.ServerOptions()...)
	// Tracing's stats handler first: it sees every call, refused ones too.
	common = append(common, d.tracer.ServerOptions()...)
	common = append(common, chain...)

	newGRPC := func(extra ...grpc.ServerOption) (*grpc.Server, error) {
		g := grpc.NewServer(append(append([]grpc.ServerOption(nil), common...), extra...)...)
		// Requests that do not decode are the caller's fault: INVALID_ARGUMENT.
		reg := grpcreg.Registrar(g)
		nriv1beta1.RegisterRuntimeServiceServer(reg, rs)
		nriv1beta1.RegisterAdaptationServiceServer(reg, as)
		nriv1beta1.RegisterAdminServiceServer(reg, admin)
		healthpb.RegisterHealthServer(g, d.health)
		// Reflection lists what g serves, nothing else; describing a
		// symbol (nri.v1beta1.PluginService, which plugins serve) still
		// works for every nri.v1beta1 file.
		if err := apidesc.RegisterReflection(g, g); err != nil {
			return nil, err
		}
		return g, nil
	}
	if d.unix, err = newGRPC(grpc.Creds(peercred.Credentials{})); err != nil {
		return nil, err
	}
	if d.tlsConf != nil {
		d.tcp, err = newGRPC(grpc.Creds(tlsconf.LogHandshakeFailures(credentials.NewTLS(d.tlsConf), d.log)),
			grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}))
		if err != nil {
			return nil, err
		}
	}
	for name := range d.unix.GetServiceInfo() {
		d.services = append(d.services, name)
	}
	return d, nil
}

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Level))
	o := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// listeners are what serve opened; close undoes it.
type listeners struct {
	unix    *net.UnixListener
	tcp     net.Listener
	metrics net.Listener
	classic *net.UnixListener // the bridge's plugin side
}

func (l *listeners) close() {
	if l.unix != nil {
		_ = l.unix.Close() // removes the socket file
	}
	if l.tcp != nil {
		_ = l.tcp.Close()
	}
	if l.metrics != nil {
		_ = l.metrics.Close()
	}
	if l.classic != nil {
		_ = l.classic.Close()
	}
}

// listen prepares the directories and opens every listener, or none.
func (d *daemon) listen(in *inherited) (_ *listeners, err error) {
	s := d.cfg.Server
	l := &listeners{}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if err := prepareDir(s.PluginSocketDir, s.PluginSocketDirMode, s.PluginSocketDirGroup); err != nil {
		return nil, fmt.Errorf("plugin socket directory: %w", err)
	}
	if err := prepareDir(dirOf(s.Socket), s.SocketDirMode, ""); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	lo := sockets.ListenOptions{Mode: s.SocketMode.Perm(), GID: -1}
	if s.SocketGroup != "" {
		if lo.GID, err = config.LookupGroup(s.SocketGroup); err != nil {
			return nil, fmt.Errorf("server.socket_group: %w", err)
		}
	}
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
	if l.unix, err = unixOf("unix", s.Socket); err != nil {
		return nil, err
	}
	if l.unix == nil {
		if l.unix, err = sockets.Listen(s.Socket, lo); err != nil {
			return nil, err
		}
	}
	if d.tcp != nil {
		if l.tcp, err = in.listener("tcp", d.cfg.TCP.Address); err != nil {
			return nil, err
		}
		if l.tcp == nil {
			if l.tcp, err = net.Listen("tcp", d.cfg.TCP.Address); err != nil {
				return nil, fmt.Errorf("tcp.address: %w", err)
			}
		}
	}
	if d.mx != nil {
		if l.metrics, err = in.listener("metrics", d.cfg.Observability.MetricsAddress); err != nil {
			return nil, err
		}
		if l.metrics == nil {
			if l.metrics, err = net.Listen("tcp", d.cfg.Observability.MetricsAddress); err != nil {
				return nil, fmt.Errorf("observability.metrics_address: %w", err)
			}
		}
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
	if dir := d.cfg.Launch.PluginDir; dir != "" {
		if err := d.srv.Launch(ctx, sup, server.LaunchConfig{
			PluginDir: dir, ConfigDir: d.cfg.Launch.ConfigDir, ServerAddress: sockets.Target(d.cfg.Server.Socket),
		}); err != nil {
			d.log.Warn("launching plugins", "dir", dir, "error", err)
		}
	}
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
		bridge.WithRegistrationTimeout(d.cfg.Server.RegistrationTimeout.D()))
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

func serveGRPC(g *grpc.Server, l net.Listener) error {
	if err := g.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// stop stops gracefully within server.stop_timeout: health goes
// NOT_SERVING and its Watch streams end, plugins get Shutdown("server stopping") (server.Shutdown),
// launched plugins are stopped, then the gRPC servers stop gracefully and
// whatever is still running at the bound is cut.
func (d *daemon) stop(sup *supervisor.Supervisor) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Server.StopTimeout.D())
	defer cancel()
	d.log.Info("stopping", "bound", d.cfg.Server.StopTimeout.D().String())
	// NOT_SERVING, and the Watch streams end: the graceful stop below
	// would wait for them.
	d.health.end()
	if err := d.srv.Shutdown(ctx); err != nil {
		d.log.Warn("plugins did not all shut down in time", "error", err)
	}
	if sup != nil {
		if err := sup.Stop(ctx); err != nil {
			d.log.Warn("stopping launched plugins", "error", err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(d.unix.GracefulStop)
	if d.tcp != nil {
		wg.Go(d.tcp.GracefulStop)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		d.log.Warn("calls still running at the stop bound; cutting them")
		if d.tcp != nil {
			d.tcp.Stop()
		}
		d.unix.Stop()
		<-done
	}
	shCtx, shCancel := context.WithTimeout(context.Background(), time.Second)
	defer shCancel()
	if err := d.tracer.Shutdown(shCtx); err != nil {
		d.log.Warn("flushing traces", "error", err)
	}
	d.log.Info("stopped", "took", time.Since(start).String())
}

// setHealth sets the status of the whole server ("") and of every service.
func (d *daemon) setHealth(st healthpb.HealthCheckResponse_ServingStatus) {
	d.health.SetServingStatus("", st)
	for _, name := range d.services {
		d.health.SetServingStatus(name, st)
	}
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
		d.setHealth(healthpb.HealthCheckResponse_SERVING)
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
		d.setHealth(healthpb.HealthCheckResponse_NOT_SERVING)
		d.log.Warn("runtime detached: not serving until it attaches again")
	}
}
