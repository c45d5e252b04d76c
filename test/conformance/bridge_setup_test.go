package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	classic "github.com/containerd/nri/pkg/adaptation"
	v1alpha1 "github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/stub"
	validator "github.com/containerd/nri/plugins/default-validator/builtin"
	"github.com/containerd/ttrpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	dropin "github.com/nri-grpc/nri-grpc/adaptation"
	"github.com/nri-grpc/nri-grpc/bridge"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// The classic (ttrpc) paths. Both have upstream pkg/adaptation (classic NRI)
// as the runtime and upstream pkg/stub plugins built from the scenarios'
// PluginSpecs:
//
//   - classic-direct: the stub plugins connect to the classic runtime's
//     socket; nri-grpc is not involved. It is the reference the bridged
//     path is compared with.
//   - classic-bridged: nri-grpc's server with the bridge's runtime side
//     attached to the classic runtime's socket (as the one plugin
//     00-nri-grpc) and its plugin side serving a second socket, where the
//     same stub plugins connect.
//
// Messages cross between the API versions by their bytes (v1beta1 is
// wire-compatible with v1alpha1).

// bridgeFull is the name the bridge registers with at the classic runtime.
const bridgeFull = bridge.DefaultPluginIndex + "-" + bridge.DefaultPluginName

func init() {
	// Classic NRI logs through a process-global logger; keep it quiet unless
	// asked (NRI_CONFORMANCE_LOG=1).
	nrilog.Set(nriLog{})
}

// nriLog is classic NRI's logger for the tests: silent unless
// NRI_CONFORMANCE_LOG is set.
type nriLog struct{}

var nriLogOn = os.Getenv("NRI_CONFORMANCE_LOG") != ""

func (nriLog) printf(level, format string, args ...any) {
	if nriLogOn {
		fmt.Fprintf(os.Stderr, "nri %s: %s\n", level, fmt.Sprintf(format, args...))
	}
}
func (l nriLog) Debugf(_ context.Context, f string, a ...any) { l.printf("debug", f, a...) }
func (l nriLog) Infof(_ context.Context, f string, a ...any)  { l.printf("info", f, a...) }
func (l nriLog) Warnf(_ context.Context, f string, a ...any)  { l.printf("warn", f, a...) }
func (l nriLog) Errorf(_ context.Context, f string, a ...any) { l.printf("error", f, a...) }

// conv copies in into out, a message of the other API version, through
// their shared wire format. A nil in gives the zero T (nil).
func conv[T proto.Message](in proto.Message, out T) T {
	var zero T
	if in == nil || !in.ProtoReflect().IsValid() {
		return zero
	}
	b, err := proto.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("encoding %T: %v", in, err))
	}
	if err := proto.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("decoding %T as %T: %v", in, out, err))
	}
	return out
}

func convList[T proto.Message, U proto.Message](in []T, mk func() U) []U {
	var out []U
	for _, x := range in {
		out = append(out, conv(x, mk()))
	}
	return out
}

func alphaPod(p *nriv1beta1.PodSandbox) *v1alpha1.PodSandbox { return conv(p, &v1alpha1.PodSandbox{}) }
func alphaCtr(c *nriv1beta1.Container) *v1alpha1.Container   { return conv(c, &v1alpha1.Container{}) }
func alphaRes(r *nriv1beta1.LinuxResources) *v1alpha1.LinuxResources {
	return conv(r, &v1alpha1.LinuxResources{})
}
func betaPod(p *v1alpha1.PodSandbox) *nriv1beta1.PodSandbox { return conv(p, &nriv1beta1.PodSandbox{}) }
func betaCtr(c *v1alpha1.Container) *nriv1beta1.Container   { return conv(c, &nriv1beta1.Container{}) }
func betaRes(r *v1alpha1.LinuxResources) *nriv1beta1.LinuxResources {
	return conv(r, &nriv1beta1.LinuxResources{})
}
func alphaUpdates(in []*nriv1beta1.ContainerUpdate) []*v1alpha1.ContainerUpdate {
	return convList(in, func() *v1alpha1.ContainerUpdate { return &v1alpha1.ContainerUpdate{} })
}
func betaUpdates(in []*v1alpha1.ContainerUpdate) []*nriv1beta1.ContainerUpdate {
	return convList(in, func() *nriv1beta1.ContainerUpdate { return &nriv1beta1.ContainerUpdate{} })
}

// strip clears, recursively, the singular sub-messages of m that hold
// nothing: classic NRI's merge answers with a skeleton of empty
// sub-messages (Hooks{}, Linux{Resources{Memory{}, Cpu{}}}), which its own
// test suite strips before comparing. Wrappers (google.protobuf.*Value,
// Optional*) are values, kept even when they hold a zero. It returns m, or
// nil when nothing is left.
func strip[T proto.Message](m T) T {
	var zero T
	if !m.ProtoReflect().IsValid() {
		return zero
	}
	if stripMsg(m.ProtoReflect()) {
		return zero
	}
	return m
}

func stripMsg(m protoreflect.Message) (empty bool) {
	var clear []protoreflect.FieldDescriptor
	empty = true
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() == protoreflect.MessageKind && fd.Cardinality() != protoreflect.Repeated && !isWrapper(fd.Message()) {
			if stripMsg(v.Message()) {
				clear = append(clear, fd)
				return true
			}
		}
		empty = false
		return true
	})
	for _, fd := range clear {
		m.Clear(fd)
	}
	return empty
}

func isWrapper(md protoreflect.MessageDescriptor) bool {
	return md.ParentFile().Package() == "google.protobuf" || strings.HasPrefix(string(md.Name()), "Optional")
}

// classicEnv is one classic path.
type classicEnv struct {
	o        conformance.Options
	bridged  bool
	a        *classic.Adaptation
	d        *dropin.Adaptation // classic-dropin: the drop-in is the runtime's NRI, a nil
	plugSock string             // where the stub plugins connect
	grpcDir  string             // where gRPC plugins listen (TestGRPCBridged)
	srv      *server.Server
	rs       *bridge.RuntimeSide
	px       *cutProxy
	calls    *conformance.CallLog
	applied  *conformance.AppliedLog
	rec      *runtimeRecord

	mu          sync.Mutex
	pods        []*v1alpha1.PodSandbox
	ctrs        []*v1alpha1.Container
	caller      string // the plugin whose UpdateContainers is in flight (classic-direct)
	registering string // the plugin being synchronized (classic-direct)
	// selectors the operator gives the classic plugins (classic-bridged:
	// bridge.WithClassicSelectors), by full name.
	selectors map[string][]*nriv1beta1.EventSelector

	updMu sync.Mutex // one harness-initiated UpdateContainers at a time, so the runtime's updates can be attributed
}

// classicMode is which classic path an env is.
type classicMode int

const (
	modeDirect  classicMode = iota // upstream pkg/adaptation, the plugins on its socket
	modeBridged                    // upstream pkg/adaptation, nri-grpc behind it as one plugin
	modeDropIn                     // nri-grpc's drop-in (package adaptation), the plugins on its socket
)

// grpcServed reports whether nri-grpc's server has the plugins (its
// Plugins list is the registration's truth): behind the bridge and in the
// drop-in.
func (e *classicEnv) grpcServed() bool { return e.bridged || e.d != nil }

func classicDirect(t conformance.T, o conformance.Options) (conformance.Env, error) {
	e, err := newClassicEnv(t, o, modeDirect)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func classicBridged(t conformance.T, o conformance.Options) (conformance.Env, error) {
	e, err := newClassicEnv(t, o, modeBridged)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func classicDropIn(t conformance.T, o conformance.Options) (conformance.Env, error) {
	e, err := newClassicEnv(t, o, modeDropIn)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func newClassicEnv(t conformance.T, o conformance.Options, mode classicMode) (*classicEnv, error) {
	t.Helper()
	bridged := mode == modeBridged
	switch mode {
	case modeDropIn:
		// Options upstream's API (which the drop-in has) cannot take.
		switch {
		case o.MaxTimeout != 0:
			t.Skip("classic-dropin: classic plugins cannot ask for timeouts, so the cap is nri-grpc's configuration's alone")
		case o.PluginPolicy != nil:
			t.Skip("classic-dropin: the operator's per-plugin policy is in nri-grpc's configuration file, which the scenarios do not write")
		}
	case modeDirect:
		// Options classic NRI cannot take per runtime.
		switch {
		case o.RequestTimeout != 0 || o.RegistrationTimeout != 0:
			t.Skip("classic-direct: classic NRI's timeouts are process-global (adaptation.SetPlugin*Timeout), not per runtime; scenarios run in parallel")
		case o.MaxTimeout != 0:
			t.Skip("classic-direct: classic NRI has no cap on plugin timeouts (plugins cannot ask for timeouts)")
		case o.PluginPolicy != nil:
			t.Skip("classic-direct: the operator's per-plugin policy is nri-grpc's")
		}
	}
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		if t.Failed() && logs.String() != "" {
			t.Logf("server and bridge log:\n%s", logs.String())
		}
	})
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := &classicEnv{o: o, bridged: bridged, calls: conformance.NewCallLog(), applied: conformance.NewAppliedLog(), rec: &runtimeRecord{}}

	// The classic runtime.
	rtSock := filepath.Join(dir, "nri.sock")
	syncFn := func(ctx context.Context, cb classic.SyncCB) error {
		e.mu.Lock()
		pods, ctrs, who := e.pods, e.ctrs, e.registering
		e.mu.Unlock()
		if bridged {
			who = bridgeFull
		}
		updates, err := cb(ctx, pods, ctrs)
		if len(updates) > 0 {
			e.applied.Add(conformance.Applied{Plugin: who, Update: betaUpdates(updates)})
		}
		return err
	}
	updateFn := func(_ context.Context, updates []*v1alpha1.ContainerUpdate) ([]*v1alpha1.ContainerUpdate, error) {
		e.mu.Lock()
		who := e.caller
		e.mu.Unlock()
		if bridged {
			who = bridgeFull // the one plugin the classic runtime knows
		}
		bu := betaUpdates(updates)
		e.applied.Add(conformance.Applied{Plugin: who, Update: bu})
		failed, _ := conformance.FailedUpdates(o, bu, nil)
		return alphaUpdates(failed), nil
	}
	// The classic runtime's metrics: its plugin invocations and replies, and
	// on the direct path the scenario's metrics (behind the bridge nri-grpc
	// measures its plugins).
	cm := &classicMetrics{rec: e.rec}
	if !bridged {
		cm.m = o.Metrics
	}
	aopts := []classic.Option{
		classic.WithSocketPath(rtSock),
		classic.WithPluginPath(filepath.Join(dir, "no-plugins")),
		classic.WithPluginConfigPath(filepath.Join(dir, "no-conf")),
		classic.WithMetrics(cm),
	}
	if !bridged {
		if cfg := defaultValidator(o); cfg != nil {
			aopts = append(aopts, classic.WithDefaultValidator(cfg))
		}
		if o.DisableExternalConnections {
			aopts = append(aopts, classic.WithDisabledExternalConnections())
		}
	}
	if mode == modeDropIn {
		return e.startDropIn(t, o, dir, rtSock, syncFn, updateFn, cm, logger)
	}
	a, err := classic.New(o.RuntimeName, o.RuntimeVersion, syncFn, updateFn, aopts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	e.a = a
	if !bridged {
		e.plugSock = rtSock
		return e, nil
	}

	// nri-grpc: the server, the runtime side attached to the classic runtime
	// (through a proxy that SetState cuts: a runtime restart), the plugin
	// side on its own socket.
	e.grpcDir = filepath.Join(dir, "p")
	if err := os.Mkdir(e.grpcDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// gRPC plugins, for TestGRPCBridged (status_setup_test.go).
	sopts := conformance.ServerOptions(o, e.grpcDir, logger)
	srv, err := server.New(sopts...)
	if err != nil {
		return nil, err
	}
	e.srv = srv
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), conformance.Wait)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	e.px = startCutProxy(t, filepath.Join(dir, "proxy.sock"), rtSock)
	if e.rs, err = bridge.NewRuntimeSide(srv, bridge.WithRuntimeSocket(e.px.sock), bridge.WithRuntimeLogger(logger.With("side", "runtime")),
		bridge.WithReconnectBackoff(5*time.Millisecond, 50*time.Millisecond)); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.rs.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	e.waitSynchronized(t)
	e.plugSock = filepath.Join(dir, "classic.sock")
	if !o.DisableExternalConnections {
		lis, err := net.Listen("unix", e.plugSock)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := bridge.NewPluginSide(srv, bridge.WithPluginLogger(logger.With("side", "plugin")),
			bridge.WithClassicSelectors(e.classicSelectors))
		if err != nil {
			t.Fatal(err)
		}
		pctx, pcancel := context.WithCancel(context.Background())
		pdone := make(chan struct{})
		go func() { _ = ps.Serve(pctx, lis); close(pdone) }()
		t.Cleanup(func() { pcancel(); <-pdone })
	}
	return e, nil
}

// defaultValidator maps the options' validator onto classic NRI's default
// validator (nil: disabled).
func defaultValidator(o conformance.Options) *validator.DefaultValidatorConfig {
	v := o.Validator
	cfg := &validator.DefaultValidatorConfig{
		RejectOCIHookAdjustment:               v.RejectOCIHookAdjustment,
		RejectRuntimeDefaultSeccompAdjustment: v.RejectRuntimeDefaultSeccompAdjustment,
		RejectUnconfinedSeccompAdjustment:     v.RejectUnconfinedSeccompAdjustment,
		RejectCustomSeccompAdjustment:         v.RejectCustomSeccompAdjustment,
		RejectNamespaceAdjustment:             v.RejectNamespaceAdjustment,
		RejectSysctlAdjustment:                v.RejectSysctlAdjustment,
		RequiredPlugins:                       v.RequiredPlugins,
		TolerateMissingAnnotation:             v.TolerateMissingPluginsAnnotation,
	}
	cfg.Enable = cfg.RejectOCIHookAdjustment || cfg.RejectRuntimeDefaultSeccompAdjustment || cfg.RejectUnconfinedSeccompAdjustment ||
		cfg.RejectCustomSeccompAdjustment || cfg.RejectNamespaceAdjustment || cfg.RejectSysctlAdjustment ||
		len(cfg.RequiredPlugins) > 0 || cfg.TolerateMissingAnnotation != ""
	if !cfg.Enable {
		return nil
	}
	return cfg
}

// waitSynchronized waits until the bridge was (re)synchronized by the
// classic runtime and is in its plugin list.
func (e *classicEnv) waitSynchronized(t conformance.T) {
	t.Helper()
	select {
	case <-e.rs.Synchronized():
	case <-time.After(conformance.Wait):
		t.Fatal("the bridge did not attach to the classic runtime")
	}
	e.settle()
}

// settle waits until no plugin synchronization is in progress at the
// classic runtime: every synchronized plugin is in its list.
func (e *classicEnv) settle() {
	if e.a != nil {
		e.a.BlockPluginSync().Unblock()
	}
}

func (e *classicEnv) Runtime() conformance.Runtime     { return &classicRuntime{e: e} }
func (e *classicEnv) Log() *conformance.CallLog        { return e.calls }
func (e *classicEnv) Applied() *conformance.AppliedLog { return e.applied }

// Shutdown stops NRI: nri-grpc's server on the bridged path; the classic
// runtime (which tells its plugins nothing) on the direct path.
func (e *classicEnv) Shutdown(ctx context.Context) error {
	if e.grpcServed() {
		return e.srv.Shutdown(ctx)
	}
	e.a.Stop()
	return nil
}

// PlainError: on the direct path every error is classic NRI's; behind the
// bridge, nri-grpc's dispatch errors reach the classic runtime as gRPC
// statuses (ttrpc carries them, details included) and it returns them
// unchanged, but a classic plugin learns of a refused registration only as
// a failed RegisterPlugin or a closed connection.
func (e *classicEnv) PlainError(reason string) bool {
	if !e.grpcServed() {
		return true
	}
	return reason == "" || strings.HasPrefix(reason, "REGISTRATION_REFUSAL_")
}

// SetState sets the classic runtime's pods and containers. Classic NRI
// reads them when a plugin registers. Behind the bridge it is a runtime
// restart: the bridge is reattached and resynchronized, and nri-grpc
// resynchronizes its plugins.
func (e *classicEnv) SetState(t conformance.T, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) {
	t.Helper()
	ap := convList(pods, func() *v1alpha1.PodSandbox { return &v1alpha1.PodSandbox{} })
	ac := convList(ctrs, func() *v1alpha1.Container { return &v1alpha1.Container{} })
	e.mu.Lock()
	e.pods, e.ctrs = ap, ac
	e.mu.Unlock()
	if e.d != nil {
		// The drop-in read the state at Start; a restart's new state
		// is read again (adaptation.Resync).
		ctx, cancel := context.WithTimeout(context.Background(), conformance.Wait)
		defer cancel()
		if err := e.d.Resync(ctx); err != nil {
			t.Fatalf("drop-in: Resync: %v", err)
		}
		return
	}
	if !e.bridged {
		return
	}
	select { // a stale notification
	case <-e.rs.Synchronized():
	default:
	}
	e.px.cut()
	e.waitSynchronized(t)
}

// classicSelectors are the selectors the operator gives the classic plugin
// full: those of its spec.
func (e *classicEnv) classicSelectors(full string) []*nriv1beta1.EventSelector {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.selectors[full]
}

func (e *classicEnv) StartPlugin(t conformance.T, spec *conformance.PluginSpec) conformance.Plugin {
	t.Helper()
	p, err := e.TryStartPlugin(t, spec)
	if err != nil {
		t.Fatalf("starting plugin %s: %v", spec.Full(), err)
	}
	return p
}

// TryStartPlugin starts spec as an upstream pkg/stub plugin and waits until
// the classic runtime (direct) or nri-grpc (bridged) has it registered and
// synchronized.
func (e *classicEnv) TryStartPlugin(t conformance.T, spec *conformance.PluginSpec) (conformance.Plugin, error) {
	t.Helper()
	if spec.Capabilities != nil {
		t.Skip("classic plugins cannot declare capabilities (nri-grpc's registration)")
	}
	if spec.Timeouts != nil {
		t.Skip("classic plugins cannot ask for timeouts (nri-grpc's registration)")
	}
	full := spec.Full()
	if len(spec.Selectors) > 0 {
		if !e.bridged { // the drop-in's classic plugins have no operator selectors here
			t.Skip("classic NRI has no event selectors")
		}
		e.mu.Lock()
		if e.selectors == nil {
			e.selectors = map[string][]*nriv1beta1.EventSelector{}
		}
		e.selectors[full] = spec.Selectors
		e.mu.Unlock()
	}
	p := &classicPlugin{e: e, spec: spec, full: full, closedC: make(chan struct{}), doneC: make(chan struct{}), syncC: make(chan error, 1),
		earlier: map[string]bool{}}
	if e.grpcServed() {
		for _, info := range e.srv.Plugins() {
			if info.GetPlugin().GetIndex()+"-"+info.GetPlugin().GetName() == full {
				p.earlier[info.GetInstanceId()] = true
			}
		}
	}
	opts := []stub.Option{
		stub.WithPluginName(spec.Name),
		stub.WithPluginIdx(spec.Index),
		stub.WithSocketPath(e.plugSock),
		stub.WithDialer(p.dial),
		stub.WithLogger(nriLog{}),
		stub.WithTTRPCOptions(nil, []ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(p.intercept)}),
	}
	if fp := spec.FailurePolicy; fp != nil {
		opts = append(opts, stub.WithFailurePolicy(&v1alpha1.FailurePolicy{FailRequest: fp.GetFailRequest(), KeepConnected: fp.GetKeepConnected()}))
	}
	st, err := stub.New(&stubHandlers{p: p}, opts...)
	if err != nil {
		return nil, err
	}
	p.st = st
	e.mu.Lock()
	e.registering = full
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.registering = ""
		e.mu.Unlock()
	}()

	// Start returns once the plugin is configured. It waits for Configure
	// without a timeout and holds the stub's lock meanwhile, so it runs
	// aside: a connection closed before Configure leaves it blocked (and
	// the stub is then never stopped through its lock).
	startC := make(chan error, 1)
	go func() { startC <- st.Start(context.Background()) }()
	var (
		startErr error
		returned bool
	)
	select {
	case startErr = <-startC:
		returned = true
	case <-p.closedC:
		select {
		case startErr = <-startC:
			returned = true
		case <-time.After(time.Second):
			startErr = errors.New("the connection closed before the plugin was configured")
		}
	case <-time.After(conformance.Wait):
		startErr = errors.New("the plugin was not configured in time")
	}
	if !returned {
		// Blocked in Start, holding the stub's lock: release the
		// connection only.
		t.Cleanup(p.closeConn)
		return nil, startErr
	}
	p.markReturned()
	t.Cleanup(p.Stop)
	if startErr != nil {
		return nil, startErr
	}
	if err := p.waitRegistered(); err != nil {
		return nil, err
	}
	go p.watchDone()
	return p, nil
}

// classicPlugin is a PluginSpec as an upstream pkg/stub plugin.
type classicPlugin struct {
	e    *classicEnv
	spec *conformance.PluginSpec
	full string
	st   stub.Stub

	mu        sync.Mutex
	returned  bool // Start returned: the stub's lock is free
	conn      net.Conn
	shutdowns []*nriv1beta1.ShutdownRequest
	closeOnce sync.Once
	closedC   chan struct{} // the connection closed
	doneC     chan struct{} // the registration ended
	instance  string        // bridged: the server's instance of this registration
	syncC     chan error    // the outcome of the registration's Synchronize
	synced    bool
	earlier   map[string]bool // bridged: the server's instances of the same name before this one
}

func (p *classicPlugin) startReturned() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.returned }
func (p *classicPlugin) markReturned()       { p.mu.Lock(); p.returned = true; p.mu.Unlock() }

// dial connects to the socket and watches the connection: a failed read is
// the end of the registration (the peer closed it).
func (p *classicPlugin) dial(path string) (net.Conn, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.conn = c
	p.mu.Unlock()
	return &watchedConn{Conn: c, p: p}, nil
}

func (p *classicPlugin) connClosed() { p.closeOnce.Do(func() { close(p.closedC) }) }

func (p *classicPlugin) closeConn() {
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	p.connClosed()
}

type watchedConn struct {
	net.Conn
	p *classicPlugin
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.p.connClosed()
	}
	return n, err
}

func (c *watchedConn) Close() error {
	c.p.connClosed()
	return c.Conn.Close()
}

// waitRegistered waits until the registration is complete: synchronized
// and in the classic runtime's plugin list (direct), or ready in nri-grpc
// (bridged).
func (p *classicPlugin) waitRegistered() error {
	timeout := time.After(conformance.Wait)
	if !p.e.grpcServed() {
		select {
		case err := <-p.syncC:
			if err != nil {
				select {
				case <-p.closedC:
				case <-time.After(time.Second):
				}
				return fmt.Errorf("classic NRI refused plugin %s: Synchronize failed: %w", p.full, err)
			}
		case <-p.closedC:
			return fmt.Errorf("the connection of plugin %s closed before it was synchronized", p.full)
		case <-timeout:
			return fmt.Errorf("plugin %s was not synchronized in time", p.full)
		}
		p.e.settle()
		return nil
	}
	for {
		for _, info := range p.e.srv.Plugins() {
			if info.GetPlugin().GetIndex()+"-"+info.GetPlugin().GetName() == p.full && !p.earlier[info.GetInstanceId()] &&
				info.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
				p.instance = info.GetInstanceId()
				return nil
			}
		}
		select {
		case <-p.closedC:
			var why error
			select {
			case why = <-p.syncC:
			default:
			}
			if why != nil {
				return fmt.Errorf("the bridge closed the connection of plugin %s: Synchronize failed: %w", p.full, why)
			}
			return fmt.Errorf("the bridge closed the connection of plugin %s before it was ready", p.full)
		case <-timeout:
			return fmt.Errorf("plugin %s was not ready in time", p.full)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (p *classicPlugin) Full() string { return p.full }

// InstanceID: classic NRI has no instance ids.
func (p *classicPlugin) InstanceID() string { return "" }

func (p *classicPlugin) Stop() {
	if p.startReturned() {
		p.st.Stop()
	}
	p.closeConn()
}

// Done is closed when the registration ended: the connection closed (the
// classic runtime skips a closed plugin) and, behind the bridge, the server
// no longer has the registration.
func (p *classicPlugin) Done() <-chan struct{} { return p.doneC }

// watchDone closes doneC once the registration ended.
func (p *classicPlugin) watchDone() {
	<-p.closedC
	if p.e.grpcServed() && p.instance != "" {
		deadline := time.Now().Add(conformance.Wait)
		for time.Now().Before(deadline) && slices.ContainsFunc(p.e.srv.Plugins(), func(info *nriv1beta1.PluginInfo) bool {
			return info.GetInstanceId() == p.instance
		}) {
			time.Sleep(2 * time.Millisecond)
		}
	}
	close(p.doneC)
}

func (p *classicPlugin) Shutdowns() []*nriv1beta1.ShutdownRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*nriv1beta1.ShutdownRequest(nil), p.shutdowns...)
}

// UpdateContainers requests unsolicited updates. Classic plugins cannot
// request evictions.
func (p *classicPlugin) UpdateContainers(_ context.Context, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	if len(evictions) > 0 {
		return nil, nil, errors.New("classic plugins cannot request evictions")
	}
	p.e.updMu.Lock()
	defer p.e.updMu.Unlock()
	p.e.mu.Lock()
	p.e.caller = p.full
	p.e.mu.Unlock()
	defer func() {
		p.e.mu.Lock()
		p.e.caller = ""
		p.e.mu.Unlock()
	}()
	failed, err := p.st.UpdateContainers(alphaUpdates(updates))
	return betaUpdates(failed), nil, err
}

// requestTypes gives, per Plugin method, the v1alpha1 request type on the
// wire and the v1beta1 type scenarios see.
var requestTypes = map[string]func() (proto.Message, proto.Message){
	"Configure": func() (proto.Message, proto.Message) {
		return &v1alpha1.ConfigureRequest{}, &nriv1beta1.ConfigureRequest{}
	},
	"Synchronize": func() (proto.Message, proto.Message) {
		return &v1alpha1.SynchronizeRequest{}, &nriv1beta1.SynchronizeRequest{}
	},
	"Shutdown": func() (proto.Message, proto.Message) { return &v1alpha1.Empty{}, &nriv1beta1.ShutdownRequest{} },
	"RunPodSandbox": func() (proto.Message, proto.Message) {
		return &v1alpha1.RunPodSandboxRequest{}, &nriv1beta1.RunPodSandboxRequest{}
	},
	"UpdatePodSandbox": func() (proto.Message, proto.Message) {
		return &v1alpha1.UpdatePodSandboxRequest{}, &nriv1beta1.UpdatePodSandboxRequest{}
	},
	"PostUpdatePodSandbox": func() (proto.Message, proto.Message) {
		return &v1alpha1.PostUpdatePodSandboxRequest{}, &nriv1beta1.PostUpdatePodSandboxRequest{}
	},
	"StopPodSandbox": func() (proto.Message, proto.Message) {
		return &v1alpha1.StopPodSandboxRequest{}, &nriv1beta1.StopPodSandboxRequest{}
	},
	"RemovePodSandbox": func() (proto.Message, proto.Message) {
		return &v1alpha1.RemovePodSandboxRequest{}, &nriv1beta1.RemovePodSandboxRequest{}
	},
	"CreateContainer": func() (proto.Message, proto.Message) {
		return &v1alpha1.CreateContainerRequest{}, &nriv1beta1.CreateContainerRequest{}
	},
	"PostCreateContainer": func() (proto.Message, proto.Message) {
		return &v1alpha1.PostCreateContainerRequest{}, &nriv1beta1.PostCreateContainerRequest{}
	},
	"StartContainer": func() (proto.Message, proto.Message) {
		return &v1alpha1.StartContainerRequest{}, &nriv1beta1.StartContainerRequest{}
	},
	"PostStartContainer": func() (proto.Message, proto.Message) {
		return &v1alpha1.PostStartContainerRequest{}, &nriv1beta1.PostStartContainerRequest{}
	},
	"UpdateContainer": func() (proto.Message, proto.Message) {
		return &v1alpha1.UpdateContainerRequest{}, &nriv1beta1.UpdateContainerRequest{}
	},
	"PostUpdateContainer": func() (proto.Message, proto.Message) {
		return &v1alpha1.PostUpdateContainerRequest{}, &nriv1beta1.PostUpdateContainerRequest{}
	},
	"StopContainer": func() (proto.Message, proto.Message) {
		return &v1alpha1.StopContainerRequest{}, &nriv1beta1.StopContainerRequest{}
	},
	"RemoveContainer": func() (proto.Message, proto.Message) {
		return &v1alpha1.RemoveContainerRequest{}, &nriv1beta1.RemoveContainerRequest{}
	},
	"ValidateContainerAdjustment": func() (proto.Message, proto.Message) {
		return &v1alpha1.ValidateContainerAdjustmentRequest{}, &nriv1beta1.ValidateContainerAdjustmentRequest{}
	},
}

// intercept sees every call the plugin receives, as it arrived on the
// wire: it logs the call (the request decoded as v1beta1), runs the spec's
// Handle (Configure's runs in the stub's Configure handler, so that a
// failure reaches the stub) and then the stub.
func (p *classicPlugin) intercept(ctx context.Context, unmarshal ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, method ttrpc.Method) (any, error) {
	name := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
	var req proto.Message
	if mk, ok := requestTypes[name]; ok {
		alpha, beta := mk()
		if err := unmarshal(alpha); err != nil {
			return nil, err
		}
		req = conv(alpha, beta)
		if req == nil {
			req = beta
		}
	}
	p.e.calls.Add(conformance.Call{Plugin: p.full, Method: name, Req: req})
	if name == "Shutdown" {
		p.mu.Lock()
		p.shutdowns = append(p.shutdowns, req.(*nriv1beta1.ShutdownRequest))
		p.mu.Unlock()
	}
	var (
		rsp any
		err error
	)
	if h := p.spec.Handle; h != nil && name != "Configure" {
		err = h(ctx, name, req)
	}
	if err == nil {
		rsp, err = method(ctx, unmarshal)
	}
	if name == "Synchronize" && (err != nil || !req.(*nriv1beta1.SynchronizeRequest).GetMore()) {
		p.mu.Lock()
		first := !p.synced
		p.synced = true
		p.mu.Unlock()
		if first {
			p.syncC <- err
		}
	}
	return rsp, err
}

// stubHandlers implement every stub handler; the subscription is the
// spec's mask (answered in Configure).
type stubHandlers struct{ p *classicPlugin }

func (h *stubHandlers) spec() *conformance.PluginSpec { return h.p.spec }

func (h *stubHandlers) Configure(ctx context.Context, config, runtime, version string) (v1alpha1.EventMask, error) {
	if hd := h.spec().Handle; hd != nil {
		var req proto.Message = &nriv1beta1.ConfigureRequest{}
		if calls := h.p.e.calls.Of(h.p.full, "Configure"); len(calls) > 0 {
			req = calls[len(calls)-1].Req
		}
		if err := hd(ctx, "Configure", req); err != nil {
			return 0, err
		}
	}
	return v1alpha1.EventMask(h.spec().Mask()), nil
}

func (h *stubHandlers) Synchronize(ctx context.Context, pods []*v1alpha1.PodSandbox, ctrs []*v1alpha1.Container) ([]*v1alpha1.ContainerUpdate, error) {
	f := h.spec().OnSynchronize
	if f == nil {
		return nil, nil
	}
	rsp, err := f(ctx, &nriv1beta1.SynchronizeRequest{
		Pods:       convList(pods, func() *nriv1beta1.PodSandbox { return &nriv1beta1.PodSandbox{} }),
		Containers: convList(ctrs, func() *nriv1beta1.Container { return &nriv1beta1.Container{} }),
	})
	if err != nil {
		return nil, err
	}
	return alphaUpdates(rsp.GetUpdate()), nil
}

func (h *stubHandlers) Shutdown(context.Context) {}

func (h *stubHandlers) RunPodSandbox(context.Context, *v1alpha1.PodSandbox) error { return nil }
func (h *stubHandlers) UpdatePodSandbox(context.Context, *v1alpha1.PodSandbox, *v1alpha1.LinuxResources, *v1alpha1.LinuxResources) error {
	return nil
}
func (h *stubHandlers) PostUpdatePodSandbox(context.Context, *v1alpha1.PodSandbox) error { return nil }
func (h *stubHandlers) StopPodSandbox(context.Context, *v1alpha1.PodSandbox) error       { return nil }
func (h *stubHandlers) RemovePodSandbox(context.Context, *v1alpha1.PodSandbox) error     { return nil }
func (h *stubHandlers) PostCreateContainer(context.Context, *v1alpha1.PodSandbox, *v1alpha1.Container) error {
	return nil
}
func (h *stubHandlers) StartContainer(context.Context, *v1alpha1.PodSandbox, *v1alpha1.Container) error {
	return nil
}
func (h *stubHandlers) PostStartContainer(context.Context, *v1alpha1.PodSandbox, *v1alpha1.Container) error {
	return nil
}
func (h *stubHandlers) PostUpdateContainer(context.Context, *v1alpha1.PodSandbox, *v1alpha1.Container) error {
	return nil
}
func (h *stubHandlers) RemoveContainer(context.Context, *v1alpha1.PodSandbox, *v1alpha1.Container) error {
	return nil
}

// CreateContainer: the stub's API carries an adjustment and updates (no
// evictions).
func (h *stubHandlers) CreateContainer(ctx context.Context, pod *v1alpha1.PodSandbox, ctr *v1alpha1.Container) (*v1alpha1.ContainerAdjustment, []*v1alpha1.ContainerUpdate, error) {
	f := h.spec().OnCreateContainer
	if f == nil {
		return nil, nil, nil
	}
	rsp, err := f(ctx, &nriv1beta1.CreateContainerRequest{Pod: betaPod(pod), Container: betaCtr(ctr)})
	if err != nil {
		return nil, nil, err
	}
	return conv(rsp.GetAdjust(), &v1alpha1.ContainerAdjustment{}), alphaUpdates(rsp.GetUpdate()), nil
}

func (h *stubHandlers) UpdateContainer(ctx context.Context, pod *v1alpha1.PodSandbox, ctr *v1alpha1.Container, res *v1alpha1.LinuxResources) ([]*v1alpha1.ContainerUpdate, error) {
	f := h.spec().OnUpdateContainer
	if f == nil {
		return nil, nil
	}
	rsp, err := f(ctx, &nriv1beta1.UpdateContainerRequest{Pod: betaPod(pod), Container: betaCtr(ctr), LinuxResources: betaRes(res)})
	if err != nil {
		return nil, err
	}
	return alphaUpdates(rsp.GetUpdate()), nil
}

func (h *stubHandlers) StopContainer(ctx context.Context, pod *v1alpha1.PodSandbox, ctr *v1alpha1.Container) ([]*v1alpha1.ContainerUpdate, error) {
	f := h.spec().OnStopContainer
	if f == nil {
		return nil, nil
	}
	rsp, err := f(ctx, &nriv1beta1.StopContainerRequest{Pod: betaPod(pod), Container: betaCtr(ctr)})
	if err != nil {
		return nil, err
	}
	return alphaUpdates(rsp.GetUpdate()), nil
}

// ValidateContainerAdjustment: in the stub's API a rejection is an error,
// whose text is the reason.
func (h *stubHandlers) ValidateContainerAdjustment(ctx context.Context, req *v1alpha1.ValidateContainerAdjustmentRequest) error {
	f := h.spec().OnValidate
	if f == nil {
		return nil
	}
	rsp, err := f(ctx, conv(req, &nriv1beta1.ValidateContainerAdjustmentRequest{}))
	if err != nil {
		return err
	}
	if rsp.GetReject() {
		return errors.New(rsp.GetReason())
	}
	return nil
}

// track keeps the runtime's state as a runtime does, from the events it
// ran successfully: the pods and containers it reports at synchronization.
func (e *classicEnv) track(err error, set func(pods map[string]*v1alpha1.PodSandbox, ctrs map[string]*v1alpha1.Container)) {
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	pods := map[string]*v1alpha1.PodSandbox{}
	for _, p := range e.pods {
		pods[p.GetId()] = p
	}
	ctrs := map[string]*v1alpha1.Container{}
	for _, c := range e.ctrs {
		ctrs[c.GetId()] = c
	}
	set(pods, ctrs)
	e.pods, e.ctrs = nil, nil
	for _, p := range pods {
		e.pods = append(e.pods, p)
	}
	for _, c := range ctrs {
		e.ctrs = append(e.ctrs, c)
	}
	sort.Slice(e.pods, func(i, j int) bool { return e.pods[i].GetId() < e.pods[j].GetId() })
	sort.Slice(e.ctrs, func(i, j int) bool { return e.ctrs[i].GetId() < e.ctrs[j].GetId() })
}

func (e *classicEnv) setPod(err error, p *nriv1beta1.PodSandbox) {
	e.track(err, func(pods map[string]*v1alpha1.PodSandbox, _ map[string]*v1alpha1.Container) {
		pods[p.GetId()] = alphaPod(p)
	})
}

func (e *classicEnv) setCtr(err error, c *nriv1beta1.Container) {
	e.setCtrIn(err, c, v1alpha1.ContainerState_CONTAINER_UNKNOWN)
}

// setCtrIn records c as a real runtime knows it after an event: in at least
// the state the event leaves it in (running after PostStartContainer,
// stopped after StopContainer) and never back in an earlier state, whatever
// the (stale) state the event carried. containerd lists containers so at
// synchronization.
func (e *classicEnv) setCtrIn(err error, c *nriv1beta1.Container, st v1alpha1.ContainerState) {
	e.track(err, func(_ map[string]*v1alpha1.PodSandbox, ctrs map[string]*v1alpha1.Container) {
		a := alphaCtr(c)
		rank := map[v1alpha1.ContainerState]int{v1alpha1.ContainerState_CONTAINER_CREATED: 1,
			v1alpha1.ContainerState_CONTAINER_RUNNING: 2, v1alpha1.ContainerState_CONTAINER_PAUSED: 2, v1alpha1.ContainerState_CONTAINER_STOPPED: 3}
		if rank[st] > rank[a.State] {
			a.State = st
		}
		if old, ok := ctrs[a.GetId()]; ok && rank[old.GetState()] > rank[a.State] {
			a.State = old.GetState()
		}
		ctrs[a.GetId()] = a
	})
}

// classicRuntime drives the classic runtime (upstream pkg/adaptation) with
// the entry points' v1beta1 requests and answers in the AdaptationService
// shapes. Classic results are stripped of their empty sub-messages (as
// classic's own suite does); the raw results are kept in the env's record.
type classicRuntime struct{ e *classicEnv }

func (r *classicRuntime) a() classicAPI {
	if r.e.d != nil {
		return r.e.d
	}
	return r.e.a
}

// classicAPI is what a runtime calls on pkg/adaptation: upstream's and the
// drop-in's have it, with the same types.
type classicAPI = dropin.Interface

func (r *classicRuntime) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) error {
	err := r.a().RunPodSandbox(ctx, &classic.RunPodSandboxRequest{Pod: alphaPod(req.GetPod())})
	r.e.rec.add("RunPodSandbox", nil, err)
	r.e.setPod(err, req.GetPod())
	return err
}

func (r *classicRuntime) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) error {
	rsp, err := r.a().UpdatePodSandbox(ctx, &classic.UpdatePodSandboxRequest{Pod: alphaPod(req.GetPod()),
		OverheadLinuxResources: alphaRes(req.GetOverheadLinuxResources()), LinuxResources: alphaRes(req.GetLinuxResources())})
	r.e.rec.add("UpdatePodSandbox", rsp, err)
	r.e.setPod(err, req.GetPod())
	return err
}

func (r *classicRuntime) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	err := r.a().PostUpdatePodSandbox(ctx, &classic.PostUpdatePodSandboxRequest{Pod: alphaPod(req.GetPod())})
	r.e.rec.add("PostUpdatePodSandbox", nil, err)
	r.e.setPod(err, req.GetPod())
	return nil, err
}

func (r *classicRuntime) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	err := r.a().StopPodSandbox(ctx, &classic.StopPodSandboxRequest{Pod: alphaPod(req.GetPod())})
	r.e.rec.add("StopPodSandbox", nil, err)
	r.e.setPod(err, req.GetPod())
	return nil, err
}

func (r *classicRuntime) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	err := r.a().RemovePodSandbox(ctx, &classic.RemovePodSandboxRequest{Pod: alphaPod(req.GetPod())})
	r.e.rec.add("RemovePodSandbox", nil, err)
	r.e.track(err, func(pods map[string]*v1alpha1.PodSandbox, _ map[string]*v1alpha1.Container) {
		delete(pods, req.GetPod().GetId())
	})
	return nil, err
}

func (r *classicRuntime) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	areq := &classic.CreateContainerRequest{Pod: alphaPod(req.GetPod()), Container: alphaCtr(req.GetContainer())}
	rsp, err := r.a().CreateContainer(ctx, areq)
	r.e.rec.add("CreateContainer", rsp, err)
	// The runtime creates the container as classic NRI's merge left the
	// request: adjusted.
	r.e.setCtr(err, betaCtr(areq.GetContainer()))
	if err != nil {
		return nil, err
	}
	out := &nriv1beta1.AdaptationServiceCreateContainerResponse{
		Adjust: strip(conv(rsp.GetAdjust(), &nriv1beta1.ContainerAdjustment{})),
		Evict:  convList(rsp.GetEvict(), func() *nriv1beta1.ContainerEviction { return &nriv1beta1.ContainerEviction{} }),
	}
	for _, u := range betaUpdates(rsp.GetUpdate()) {
		out.Update = append(out.Update, strip(u))
	}
	return out, nil
}

func (r *classicRuntime) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) ([]*nriv1beta1.PluginError, error) {
	err := r.a().PostCreateContainer(ctx, &classic.PostCreateContainerRequest{Pod: alphaPod(req.GetPod()), Container: alphaCtr(req.GetContainer())})
	r.e.rec.add("PostCreateContainer", nil, err)
	r.e.setCtr(err, req.GetContainer())
	return nil, err
}

func (r *classicRuntime) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) error {
	err := r.a().StartContainer(ctx, &classic.StartContainerRequest{Pod: alphaPod(req.GetPod()), Container: alphaCtr(req.GetContainer())})
	r.e.rec.add("StartContainer", nil, err)
	r.e.setCtr(err, req.GetContainer())
	return err
}

func (r *classicRuntime) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) ([]*nriv1beta1.PluginError, error) {
	err := r.a().PostStartContainer(ctx, &classic.PostStartContainerRequest{Pod: alphaPod(req.GetPod()), Container: alphaCtr(req.GetContainer())})
	r.e.rec.add("PostStartContainer", nil, err)
	r.e.setCtrIn(err, req.GetContainer(), v1alpha1.ContainerState_CONTAINER_RUNNING)
	return nil, err
}

// UpdateContainer: classic's reply has the target's update last in
// update (nil when no plugin updated it); it becomes linux_resources.
func (r *classicRuntime) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.AdaptationServiceUpdateContainerResponse, error) {
	rsp, err := r.a().UpdateContainer(ctx, &classic.UpdateContainerRequest{Pod: alphaPod(req.GetPod()), Container: alphaCtr(req.GetContainer()),
		LinuxResources: alphaRes(req.GetLinuxResources())})
	r.e.rec.add("UpdateContainer", rsp, err)
	r.e.setCtr(err, req.GetContainer())
	if err != nil {
		return nil, err
	}
	out := &nriv1beta1.AdaptationServiceUpdateContainerResponse{
		Evict: convList(rsp.GetEvict(), func() *nriv1beta1.ContainerEviction { return &nriv1beta1.ContainerEviction{} }),
	}
	if ups := rsp.GetUpdate(); len(ups) > 0 {
		if target := ups[len(ups)-1]; target != nil {
			out.LinuxResources = strip(betaRes(target.GetLinux().GetResources()))
		}
		for _, u := range betaUpdates(ups[:len(ups)-1]) {
			out.Update = append(out.Update, strip(u))
		}
	}
	return out, nil
}

func (r *classicRuntime) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) ([]*nriv1beta1.PluginError, error) {
	err := r.a().PostUpdateContainer(ctx, &classic.PostUpdateContainerRequest{Pod: alphaPod(req.GetPod()), Container: alphaCtr(req.GetContainer())})
	r.e.rec.add("PostUpdateContainer", nil, err)
	r.e.setCtr(err, req.GetContainer())
	return nil, err
}

func (r *classicRuntime) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.AdaptationServiceStopContainerResponse, error) {
	rsp, err := r.a().StopContainer(ctx, &classic.StopContainerRequest{Pod: alphaPod(req.GetPod()), Container: alphaCtr(req.GetContainer())})
	r.e.rec.add("StopContainer", rsp, err)
	r.e.setCtrIn(err, req.GetContainer(), v1alpha1.ContainerState_CONTAINER_STOPPED)
	if err != nil {
		return nil, err
	}
	out := &nriv1beta1.AdaptationServiceStopContainerResponse{}
	for _, u := range betaUpdates(rsp.GetUpdate()) {
		out.Update = append(out.Update, strip(u))
	}
	return out, nil
}

func (r *classicRuntime) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) ([]*nriv1beta1.PluginError, error) {
	err := r.a().RemoveContainer(ctx, &classic.RemoveContainerRequest{Pod: alphaPod(req.GetPod()), Container: alphaCtr(req.GetContainer())})
	r.e.rec.add("RemoveContainer", nil, err)
	r.e.track(err, func(_ map[string]*v1alpha1.PodSandbox, ctrs map[string]*v1alpha1.Container) {
		delete(ctrs, req.GetContainer().GetId())
	})
	return nil, err
}

// runtimeRecord is what the classic runtime saw: its raw results, and
// which plugins it invoked (its metrics).
type runtimeRecord struct {
	mu          sync.Mutex
	results     []runtimeResult
	invocations []string // "NN-name:Operation"
	replies     []pluginReply
}

// pluginReply is what one plugin answered the classic runtime (its
// metrics' adjustment record).
type pluginReply struct {
	Plugin, Op      string
	Adjust          *nriv1beta1.ContainerAdjustment
	Updates, Evicts int
}

// runtimeResult is one entry point's raw classic result.
type runtimeResult struct {
	Event string
	Rsp   proto.Message // nil for events without a result
	Err   error
}

func (r *runtimeRecord) add(event string, rsp proto.Message, err error) {
	if rsp != nil && !rsp.ProtoReflect().IsValid() {
		rsp = nil
	}
	if rsp != nil {
		rsp = proto.Clone(rsp)
	}
	r.mu.Lock()
	r.results = append(r.results, runtimeResult{Event: event, Rsp: rsp, Err: err})
	r.mu.Unlock()
}

func (r *runtimeRecord) snapshot() ([]runtimeResult, []string, []pluginReply) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]runtimeResult(nil), r.results...), append([]string(nil), r.invocations...), append([]pluginReply(nil), r.replies...)
}

func (r *runtimeRecord) reset() {
	r.mu.Lock()
	r.results, r.invocations, r.replies = nil, nil, nil
	r.mu.Unlock()
}

// classicMetrics records the classic runtime's plugin invocations and, on
// the direct path, passes them to the scenario's Metrics: one call per
// invocation (classic NRI records no synchronized object counts).
type classicMetrics struct {
	rec *runtimeRecord
	m   conformance.Metrics
}

var prettyEvents = func() map[string]nriv1beta1.Event {
	out := map[string]nriv1beta1.Event{}
	for e, name := range v1alpha1.EventPrettyNames {
		out[name] = nriv1beta1.Event(e)
	}
	return out
}()

func (c *classicMetrics) RecordPluginInvocation(plugin, op string, err error) {
	c.rec.mu.Lock()
	c.rec.invocations = append(c.rec.invocations, plugin+":"+op)
	c.rec.mu.Unlock()
	if ev, ok := prettyEvents[op]; ok && c.m != nil {
		outcome := nriv1beta1.CallOutcome_CALL_OUTCOME_OK
		if err != nil {
			outcome = nriv1beta1.CallOutcome_CALL_OUTCOME_ERROR
		}
		c.m.PluginCall(plugin, ev, outcome, 0)
	}
}
func (c *classicMetrics) RecordPluginLatency(string, string, time.Duration) {}

// RecordPluginAdjustments records what each plugin answered the classic
// runtime: behind the bridge, the bridge's own reply.
func (c *classicMetrics) RecordPluginAdjustments(plugin, op string, adjust *v1alpha1.ContainerAdjustment, updates, evicts int) {
	var a *nriv1beta1.ContainerAdjustment
	if adjust != nil {
		a = conv(adjust, &nriv1beta1.ContainerAdjustment{})
	}
	c.rec.mu.Lock()
	c.rec.replies = append(c.rec.replies, pluginReply{Plugin: plugin, Op: op, Adjust: a, Updates: updates, Evicts: evicts})
	c.rec.mu.Unlock()
}
func (c *classicMetrics) UpdatePluginCount(int) {}

// cutProxy forwards unix connections to the classic runtime's socket and
// can cut them all: a runtime restart, as the bridge sees it.
type cutProxy struct {
	sock    string
	lis     net.Listener
	backend string
	mu      sync.Mutex
	conns   []net.Conn
}

func startCutProxy(t conformance.T, sock, backend string) *cutProxy {
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{sock: sock, lis: lis, backend: backend}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("unix", backend)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(b, c); _ = b.Close() }()
			go func() { _, _ = io.Copy(c, b); _ = c.Close() }()
		}
	}()
	t.Cleanup(func() { _ = lis.Close(); p.cut() })
	return p
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
