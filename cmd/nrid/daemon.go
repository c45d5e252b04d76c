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
	"google.golang.org/protobuf/reflect/protoreflect"

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
	"github.com/nri-grpc/nri-grpc/internal/handover"
	"github.com/nri-grpc/nri-grpc/internal/metrics"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/telemetry"
	"github.com/nri-grpc/nri-grpc/internal/version"
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

	health   *health.Server
	services []string // served service names, for health
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
	d.health = health.NewServer()

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
		if err := apidesc.RegisterReflection(g, withAPI{g}); err != nil {
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
	}
	return l, nil
}

// serve listens, serves until ctx is done or a listener fails, and stops
// gracefully. With --takeover it first takes the sockets and the runtime
// connection of the running nrid, if there is one (takeover.go); and it
// hands its own over when a new nrid asks.
func (d *daemon) serve(ctx context.Context) error {
	// serveCtx ends with the signal, a failed listener or a takeover.
	ctx, endServe := context.WithCancel(ctx)
	defer endServe()
	var in *inherited
	if d.takeover {
		var err error
		if in, err = d.takeOver(ctx); err != nil {
			_ = d.tracer.Shutdown(context.Background())
			return err
		}
	}
	l, err := d.listen(in)
	if err != nil {
		if in != nil {
			in.taken.Refuse(err)
		}
		_ = d.tracer.Shutdown(context.Background())
		return err
	}
	errc := make(chan error, 3) // one per listener
	go func() { errc <- serveGRPC(d.unix, l.unix) }()
	if d.tcp != nil {
		go func() { errc <- serveGRPC(d.tcp, l.tcp) }()
	}
	metricsCtx, stopMetrics := context.WithCancel(context.Background())
	metricsDone := make(chan struct{})
	if d.mx != nil {
		go func() {
			defer close(metricsDone)
			if err := d.mx.ServeListener(metricsCtx, l.metrics); err != nil {
				errc <- err
			}
		}()
	} else {
		close(metricsDone)
	}

	// The restart gate: the plugins registered before a restart get
	// restart_grace to register again before nrid attaches to the runtime
	// and reports SERVING. After a takeover the runtime stays attached and
	// its events wait for them instead (server.HoldEvents).
	var (
		ros  *roster
		gate []rosterEntry
	)
	if dir := d.cfg.Server.StateDir; dir != "" {
		if ros, err = newRoster(dir, d.log); err != nil {
			d.log.Error("restart gate disabled", "error", err)
		} else if gate, err = ros.load(); err != nil {
			d.log.Warn("restart gate: the list of registered plugins is unreadable; not waiting for any", "error", err)
			gate = nil
		}
	}
	grace := d.cfg.Server.RestartGrace.D()
	gated := len(gate) > 0 && grace > 0
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if gated || d.cfg.Runtime.Required {
		d.setHealth(healthpb.HealthCheckResponse_NOT_SERVING)
	} else {
		d.setHealth(healthpb.HealthCheckResponse_SERVING)
	}

	var sup *supervisor.Supervisor
	if d.cfg.Launch.PluginDir != "" || d.cfg.Bridge.ClassicPluginDir != "" {
		sup = supervisor.New(supervisor.WithLogger(d.log))
	}
	bridgeCtx, stopBridgeCtx := context.WithCancel(ctx)
	var bridges sync.WaitGroup
	stopBridge := func() { stopBridgeCtx(); bridges.Wait() }
	ps, err := d.startBridgePlugins(bridgeCtx, &bridges, l)
	if err == nil {
		d.rs, err = d.newBridgeRuntime()
	}
	if err != nil {
		if in != nil {
			in.taken.Refuse(err)
		}
		stopBridge()
		d.stop(sup)
		stopMetrics()
		<-metricsDone
		return err
	}

	// Taking over: the runtime connection continues here; the old nrid
	// stops once told, and its plugins register here again.
	oldGone := make(chan struct{})
	heldDone := make(chan struct{}) // the takeover's hold is over
	if in != nil {
		// Events wait for the old nrid's plugins from the first one read.
		if gated {
			d.srv.HoldEvents(rosterNames(gate), time.Now().Add(grace))
		}
		adopted, err := d.adoptRuntime(ctx, in, d.rs)
		if err != nil {
			d.srv.HoldEvents(nil, time.Time{})
			in.taken.Refuse(err)
			stopBridge()
			d.stop(sup)
			stopMetrics()
			<-metricsDone
			return fmt.Errorf("takeover: %w", err)
		}
		in.taken.Close() // descriptors not used
		gone, err := in.taken.Accept()
		if err != nil {
			d.log.Error("takeover: telling the old nrid", "error", err)
			close(oldGone)
		} else {
			go func() { <-gone; close(oldGone) }()
		}
		d.log.Info("takeover: took over from the running nrid", "runtime_connection", adopted)
		switch {
		case !adopted:
			// Nothing to hold events on: the gate as after a restart.
			d.srv.HoldEvents(nil, time.Time{})
			close(heldDone)
		case gated:
			gated = false
			go func() {
				defer close(heldDone)
				d.awaitRestart(ctx, gate, grace)
			}()
		default:
			close(heldDone)
		}
	} else {
		close(oldGone)
		close(heldDone)
	}

	// The old nrid's launched plugins stop before this one launches its own.
	launchDone := make(chan struct{})
	go func() {
		defer close(launchDone)
		select {
		case <-oldGone:
		case <-ctx.Done():
			return
		}
		d.launch(ctx, sup, ps)
	}()

	attrs := []any{"socket", d.cfg.Server.Socket, "version", version.Server(), "runtime_required", d.cfg.Runtime.Required}
	if d.tcp != nil {
		attrs = append(attrs, "tcp", l.tcp.Addr().String())
	}
	if l.metrics != nil {
		attrs = append(attrs, "metrics", l.metrics.Addr().String())
	}
	d.log.Info("serving", attrs...)

	if gated {
		d.awaitRestart(ctx, gate, grace)
	}
	keepDone := make(chan struct{})
	if ros != nil {
		// After a takeover, the roster is the old nrid's until its plugins
		// are back or the bound passed.
		go func() {
			select {
			case <-heldDone:
				ros.keep(watchCtx, d.srv, keepDone)
			case <-watchCtx.Done():
				close(keepDone)
			}
		}()
	} else {
		close(keepDone)
	}
	if d.cfg.Runtime.Required {
		go d.watchRuntime(watchCtx)
	} else {
		d.setHealth(healthpb.HealthCheckResponse_SERVING)
	}
	if d.rs != nil {
		bridges.Go(func() { _ = d.rs.Run(bridgeCtx) })
		d.log.Info("bridge runtime side enabled", "runtime_socket", d.cfg.Bridge.RuntimeSocket)
	}

	// The handover socket, for the next takeover: once the old nrid is
	// gone (its own socket file goes with it).
	var (
		hs      *handoverServer
		takenBy *net.UnixConn
	)
	hsReady := make(chan *handoverServer, 1)
	go func() {
		select {
		case <-oldGone:
		case <-ctx.Done():
			hsReady <- nil
			return
		}
		h, err := d.listenHandover(l)
		if err != nil {
			d.log.Warn("no takeover possible", "error", err)
		} else if h != nil {
			go h.serve(ctx)
		}
		hsReady <- h
	}()

	var serveErr error
	var taken <-chan *net.UnixConn
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			waiting = false
		case serveErr = <-errc:
			d.log.Error("a listener failed; stopping", "error", serveErr)
			waiting = false
		case hs = <-hsReady:
			hsReady = nil
			if hs != nil {
				taken = hs.taken
			}
		case takenBy = <-taken:
			waiting = false
		}
	}
	endServe()
	if hs != nil {
		_ = hs.lis.Close()
	}
	if takenBy != nil {
		// The new nrid serves the sockets now: they stay where they are.
		l.unix.SetUnlinkOnClose(false)
		if l.classic != nil {
			l.classic.SetUnlinkOnClose(false)
		}
	}
	stopWatch()
	<-keepDone // the roster stays the set from before the stop
	stopBridge()
	<-launchDone
	d.stop(sup)
	stopMetrics() // last: the metrics of the stop are still served
	<-metricsDone
	if takenBy != nil {
		handover.Bye(takenBy)
	}
	return serveErr
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
// NOT_SERVING, plugins get Shutdown("server stopping") (server.Shutdown),
// launched plugins are stopped, then the gRPC servers stop gracefully and
// whatever is still running at the bound is cut.
func (d *daemon) stop(sup *supervisor.Supervisor) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Server.StopTimeout.D())
	defer cancel()
	d.log.Info("stopping", "bound", d.cfg.Server.StopTimeout.D().String())
	d.health.Shutdown()
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

// withAPI advertises the nri.v1beta1 services through reflection next to
// the services the server really registered (PluginService is served by
// plugins, not by nrid, but describing it helps plugin authors).
type withAPI struct{ srv *grpc.Server }

// GetServiceInfo implements reflection.ServiceInfoProvider.
func (w withAPI) GetServiceInfo() map[string]grpc.ServiceInfo {
	out := w.srv.GetServiceInfo()
	for _, fd := range []protoreflect.FileDescriptor{
		nriv1beta1.File_nri_v1beta1_runtime_service_proto,
		nriv1beta1.File_nri_v1beta1_adaptation_service_proto,
		nriv1beta1.File_nri_v1beta1_admin_service_proto,
		nriv1beta1.File_nri_v1beta1_plugin_service_proto,
	} {
		svcs := fd.Services()
		for i := 0; i < svcs.Len(); i++ {
			sd := svcs.Get(i)
			if _, ok := out[string(sd.FullName())]; !ok {
				out[string(sd.FullName())] = grpc.ServiceInfo{Metadata: fd.Path()}
			}
		}
	}
	return out
}
