package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// The executor protocol (docs/CONFORMANCE.md). Besides the variables every
// SDK reads to find nrid (NRI_GRPC_SERVER_ADDRESS, NRI_GRPC_PLUGIN_NAME,
// NRI_GRPC_PLUGIN_IDX, NRI_GRPC_PLUGIN_ENDPOINT), an executor gets these.
const (
	// EnvDriver is the unix socket path where the harness serves
	// nri.v1beta1.PluginService: the driver the executor forwards every
	// call it receives to.
	EnvDriver = "NRI_CONFORMANCE_DRIVER"
	// EnvRegistration is the protobuf JSON of a RegisterPluginRequest
	// (plugin_name, plugin_idx, capabilities, timeouts, selectors, status,
	// status_reason) the executor
	// registers with, through its SDK's public API.
	EnvRegistration = "NRI_CONFORMANCE_REGISTRATION"
	// ReplyPrefix starts the executor's answers to the harness's commands
	// (docs/CONFORMANCE.md, "Commands"): one line on its standard output,
	// "nri-conformance-reply\t<id>\tok\t<epoch>" or
	// "nri-conformance-reply\t<id>\terror\t<message>".
	ReplyPrefix = "nri-conformance-reply\t"
)

// ExecutorOption configures ExecutorSetup.
type ExecutorOption func(*executorOptions)

type executorOptions struct {
	env []string
}

// WithExecutorEnv adds "KEY=value" entries to the environment of every
// executor process (on top of the harness's own environment).
func WithExecutorEnv(kv ...string) ExecutorOption {
	return func(o *executorOptions) { o.env = append(o.env, kv...) }
}

// ExecutorSetup returns the Setup of the SDK path: an nrid-equivalent
// server (server.Server serving RuntimeService on a unix socket, as nrid
// does) and plugins that are executor processes, started with argv, built
// with one SDK. Each plugin's behaviour stays the scenario's: the harness
// serves the PluginSpec as the driver, and the executor answers every call
// it gets with the driver's answer (docs/CONFORMANCE.md).
//
// A plugin has one registration, as on the other paths: once its first
// registration ended (or was refused), the SDK's attempts to register again
// are held until the process ends, so they never reach the server.
func ExecutorSetup(argv []string, opts ...ExecutorOption) (Setup, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("conformance: ExecutorSetup: empty command")
	}
	var o executorOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	for _, kv := range o.env {
		if !strings.Contains(kv, "=") {
			return nil, fmt.Errorf("conformance: WithExecutorEnv: %q is not KEY=value", kv)
		}
	}
	argv = append([]string(nil), argv...)
	return func(t T, opt Options) (Env, error) {
		e, err := newExecEnv(t, opt, argv, o)
		if err != nil {
			return nil, err
		}
		return e, nil
	}, nil
}

// execEnv is an env whose plugins are executor processes.
type execEnv struct {
	o         Options
	argv      []string
	xo        executorOptions
	srv       *server.Server
	sock      string
	dir       string
	pluginDir string
	calls     *CallLog
	applied   *AppliedLog
	logs      *lineBuffer

	mu      sync.Mutex
	seq     int
	plugins map[string]*execPlugin // by endpoint path
}

func newExecEnv(t T, o Options, argv []string, xo executorOptions) (*execEnv, error) {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-x-")
	if err != nil {
		t.Fatal(err)
	}
	e := &execEnv{
		o: o, argv: argv, xo: xo, dir: dir, pluginDir: filepath.Join(dir, "p"),
		calls: NewCallLog(), applied: NewAppliedLog(), logs: &lineBuffer{},
		plugins: map[string]*execPlugin{},
	}
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		if t.Failed() {
			t.Logf("server log:\n%s", e.logs.String())
		}
	})
	if err := os.Mkdir(e.pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(ServerOptions(e.o, e.pluginDir, slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))...)
	if err != nil {
		return nil, err
	}
	e.srv = srv
	e.sock = filepath.Join(dir, "nri.sock")
	lis, err := sockets.Listen(e.sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(peercred.Credentials{}), codec.ServerOption(), grpc.ChainStreamInterceptor(e.interceptRegistration))
	if !o.DisableExternalConnections {
		nriv1beta1.RegisterRuntimeServiceServer(g, srv.RuntimeService())
	}
	nriv1beta1.RegisterAdaptationServiceServer(g, srv.AdaptationService())
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Wait)
		defer cancel()
		_ = srv.Shutdown(ctx)
		g.Stop()
	})
	e.SetState(t, nil, nil)
	return e, nil
}

// ServerOptions are the options of a server set up as o says: plugin
// sockets in pluginDir, plugins dialed over unix sockets, log to logger,
// the runtime and node of the scenarios, and o's validator, timeouts,
// plugin policy and metrics.
func ServerOptions(o Options, pluginDir string, logger *slog.Logger) []server.Option {
	opts := []server.Option{
		server.WithPluginSocketDir(pluginDir),
		server.WithDialer(transport.NewDialer()),
		server.WithLogger(logger),
		server.WithRuntime(o.RuntimeName, o.RuntimeVersion),
		server.WithNodeName("conformance-node"),
		server.WithValidator(o.Validator),
	}
	if o.RequestTimeout != 0 {
		opts = append(opts, server.WithRequestTimeout(o.RequestTimeout))
	}
	if o.RegistrationTimeout != 0 {
		opts = append(opts, server.WithRegistrationTimeout(o.RegistrationTimeout))
	}
	if o.MaxTimeout != 0 {
		opts = append(opts, server.WithMaxTimeout(o.MaxTimeout))
	}
	if o.PluginPolicy != nil {
		opts = append(opts, server.WithPluginPolicy(func(_, full string) *server.PluginPolicy { return o.PluginPolicy(full) }))
	}
	if o.Metrics != nil {
		opts = append(opts, server.WithMetrics(serverMetrics{o.Metrics}))
	}
	return opts
}

func (e *execEnv) Runtime() Runtime                   { return ServerRuntime(e.srv) }
func (e *execEnv) Log() *CallLog                      { return e.calls }
func (e *execEnv) Applied() *AppliedLog               { return e.applied }
func (e *execEnv) Shutdown(ctx context.Context) error { return e.srv.Shutdown(ctx) }

// DryRun evaluates a dry run (AdminService.DryRun).
func (e *execEnv) DryRun(ctx context.Context, req *nriv1beta1.DryRunRequest) (*nriv1beta1.DryRunResponse, error) {
	return e.srv.DryRun(ctx, req)
}

func (e *execEnv) SetState(t T, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) {
	t.Helper()
	info := server.RuntimeInfo{Name: e.o.RuntimeName, Version: e.o.RuntimeVersion}
	if err := e.srv.SetRuntime(context.Background(), info, execRuntime{e}, pods, ctrs); err != nil {
		t.Fatal(err)
	}
}

// execRuntime is the embedding runtime's side of unsolicited updates.
type execRuntime struct{ e *execEnv }

func (r execRuntime) UpdateContainers(_ context.Context, plugin string, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	r.e.applied.Add(Applied{Plugin: plugin, Update: updates, Evict: evictions})
	fu, fe := FailedUpdates(r.e.o, updates, evictions)
	return fu, fe, nil
}

func (e *execEnv) StartPlugin(t T, spec *PluginSpec) Plugin {
	t.Helper()
	p, err := e.TryStartPlugin(t, spec)
	if err != nil {
		t.Fatalf("starting plugin %s: %v", spec.Full(), err)
	}
	return p
}

// TryStartPlugin serves spec as a driver, launches an executor and waits
// until the server answered its first registration.
func (e *execEnv) TryStartPlugin(t T, spec *PluginSpec) (Plugin, error) {
	e.mu.Lock()
	e.seq++
	seq := e.seq
	e.mu.Unlock()
	full := spec.Full()
	p := &execPlugin{
		env: e, full: full,
		endpoint:   filepath.Join(e.pluginDir, fmt.Sprintf("%s-%d.sock", full, seq)),
		driverSock: filepath.Join(e.dir, fmt.Sprintf("d%d.sock", seq)),
		registered: make(chan struct{}),
		refused:    make(chan struct{}),
		done:       make(chan struct{}),
		exited:     make(chan struct{}),
	}
	p.tp = e.driver(spec)
	if err := p.serveDriver(); err != nil {
		t.Fatalf("serving the driver of %s: %v", full, err)
	}
	t.Cleanup(p.stopDriver)
	reg, err := protojson.Marshal(&nriv1beta1.RegisterPluginRequest{
		PluginName: spec.Name, PluginIdx: spec.Index, Capabilities: spec.Capabilities, Timeouts: spec.Timeouts,
		Selectors: spec.Selectors, Status: spec.Status, StatusReason: spec.StatusReason,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.plugins[p.endpoint] = p
	e.mu.Unlock()
	if err := p.launch(t, string(reg)); err != nil {
		t.Fatalf("launching the executor of %s: %v", full, err)
	}
	t.Cleanup(p.Stop)
	// Starting a process (a Node.js or Python interpreter, with parallel
	// scenarios starting theirs) is what a loaded machine stretches most;
	// nothing asserted depends on how long it takes.
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	select {
	case <-p.registered:
		return p, nil
	case <-p.refused:
		return nil, p.refusal
	case <-p.exited:
		// The process may have exited right after the server's answer.
		select {
		case <-p.registered:
			return p, nil
		case <-p.refused:
			return nil, p.refusal
		default:
		}
		return nil, fmt.Errorf("the executor of %s exited before the server answered its registration: %v", full, p.waitErr)
	case <-ctx.Done():
		return nil, fmt.Errorf("the executor of %s did not register within %v", full, startWait)
	}
}

// driver returns the scenario's plugin as a testplugin (never started: its
// Service is served on the driver socket) logging into the env's log.
func (e *execEnv) driver(spec *PluginSpec) *testplugin.Plugin {
	return NewTestPlugin(spec, e.calls)
}

// interceptRegistration watches RegisterPlugin: it ties a registration to
// the executor that asked (by its endpoint), reports the server's first
// answer and the end of the session, and holds any later registration of
// the same executor until its caller goes away.
func (e *execEnv) interceptRegistration(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.FullMethod != nriv1beta1.RuntimeService_RegisterPlugin_FullMethodName {
		return handler(srv, ss)
	}
	w := &regStream{ServerStream: ss, e: e}
	err := handler(srv, w)
	if w.p != nil {
		w.p.sessionEnded(err)
	}
	return err
}

// regStream is a RegisterPlugin stream seen by the harness.
type regStream struct {
	grpc.ServerStream
	e    *execEnv
	p    *execPlugin // the executor whose first registration this is
	sent bool
}

func (s *regStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	req, ok := m.(*nriv1beta1.RegisterPluginRequest)
	if !ok {
		return nil
	}
	ep := strings.TrimPrefix(req.GetEndpoint(), "unix://")
	s.e.mu.Lock()
	p := s.e.plugins[ep]
	first := p != nil && !p.claimed
	if first {
		p.claimed = true
	}
	s.e.mu.Unlock()
	switch {
	case p == nil:
		return nil
	case first:
		s.p = p
		return nil
	}
	// A registration again: the scenario's plugin had its registration.
	<-s.Context().Done()
	return status.Error(codes.Unavailable, "conformance harness: this executor already had its registration")
}

func (s *regStream) SendMsg(m any) error {
	if s.p != nil && !s.sent {
		if rsp, ok := m.(*nriv1beta1.RegisterPluginResponse); ok && rsp.GetRegistered() != nil {
			s.sent = true
			err := s.ServerStream.SendMsg(m)
			s.p.markRegistered(rsp.GetRegistered().GetInstanceId())
			return err
		}
	}
	return s.ServerStream.SendMsg(m)
}

// execPlugin is a plugin run by an executor process.
type execPlugin struct {
	env        *execEnv
	full       string
	endpoint   string
	driverSock string
	tp         *testplugin.Plugin
	driverSrv  *grpc.Server

	claimed bool // under env.mu: its first registration arrived

	mu         sync.Mutex
	isReg      bool
	instanceID string
	refusal    error
	end        error
	registered chan struct{} // closed on Registered
	refused    chan struct{} // closed when the first registration failed
	done       chan struct{} // closed when the registration ended

	cmd     *exec.Cmd
	stdin   io.WriteCloser // the executor's commands
	cmdMu   sync.Mutex     // guards stdin, cmdSeq, pending
	cmdSeq  int
	pending map[string]chan cmdReply
	waitErr error         // set before exited is closed
	exited  chan struct{} // closed when the process exited
	stop    sync.Once
}

func (p *execPlugin) serveDriver() error {
	lis, err := net.Listen("unix", p.driverSock)
	if err != nil {
		return err
	}
	p.driverSrv = grpc.NewServer(append([]grpc.ServerOption{codec.ServerOption()}, flowctl.ServerOptions()...)...)
	nriv1beta1.RegisterPluginServiceServer(p.driverSrv, p.tp.Service())
	go func() { _ = p.driverSrv.Serve(lis) }()
	return nil
}

func (p *execPlugin) stopDriver() { p.driverSrv.Stop() }

func (p *execPlugin) launch(t T, registration string) error {
	e := p.env
	cmd := exec.Command(e.argv[0], e.argv[1:]...) //nolint:gosec // the executor is the caller's command
	cmd.Env = append(os.Environ(),
		"NRI_GRPC_SERVER_ADDRESS="+e.sock,
		"NRI_GRPC_PLUGIN_NAME="+p.tp.Name,
		"NRI_GRPC_PLUGIN_IDX="+p.tp.Index,
		"NRI_GRPC_PLUGIN_ENDPOINT="+p.endpoint,
		EnvDriver+"="+p.driverSock,
		EnvRegistration+"="+registration,
	)
	cmd.Env = append(cmd.Env, e.xo.env...)
	out := newTestWriter(t, p.full)
	out.reply = p.reply
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = Wait
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	p.pending = map[string]chan cmdReply{}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd, p.stdin = cmd, stdin
	go func() {
		p.waitErr = cmd.Wait()
		out.flush()
		close(p.exited)
	}()
	return nil
}

// cmdReply is an executor's answer to a command.
type cmdReply struct {
	ok    bool
	value string // the epoch, or the error message
}

// reply takes an answer line off the executor's output; false for any
// other line.
func (p *execPlugin) reply(line string) bool {
	rest, ok := strings.CutPrefix(line, ReplyPrefix)
	if !ok {
		return false
	}
	f := strings.SplitN(rest, "\t", 3)
	if len(f) != 3 || (f[1] != "ok" && f[1] != "error") {
		return false
	}
	p.cmdMu.Lock()
	ch := p.pending[f[0]]
	delete(p.pending, f[0])
	p.cmdMu.Unlock()
	if ch != nil {
		ch <- cmdReply{ok: f[1] == "ok", value: f[2]}
	}
	return true
}

// command sends the executor one command line (fields joined by tabs) and
// waits for its answer: the executor makes the call through its SDK.
func (p *execPlugin) command(ctx context.Context, fields ...string) (string, error) {
	for _, f := range fields {
		if strings.ContainsAny(f, "\t\n") {
			return "", fmt.Errorf("conformance harness: command field %q has a tab or newline", f)
		}
	}
	ch := make(chan cmdReply, 1)
	p.cmdMu.Lock()
	p.cmdSeq++
	id := fmt.Sprint(p.cmdSeq)
	p.pending[id] = ch
	_, err := io.WriteString(p.stdin, id+"\t"+strings.Join(fields, "\t")+"\n")
	p.cmdMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("sending %s to the executor of %s: %w", fields[0], p.full, err)
	}
	select {
	case r := <-ch:
		if !r.ok {
			return "", fmt.Errorf("the executor of %s: %s: %s", p.full, fields[0], r.value)
		}
		return r.value, nil
	case <-p.exited:
		return "", fmt.Errorf("the executor of %s exited before answering %s", p.full, fields[0])
	case <-ctx.Done():
		return "", fmt.Errorf("the executor of %s did not answer %s: %w", p.full, fields[0], ctx.Err())
	}
}

func (p *execPlugin) markRegistered(id string) {
	p.mu.Lock()
	p.isReg, p.instanceID = true, id
	p.mu.Unlock()
	close(p.registered)
}

func (p *execPlugin) sessionEnded(err error) {
	p.mu.Lock()
	reg := p.isReg
	if reg {
		p.end = err
	} else {
		if err == nil {
			err = status.Error(codes.Unknown, "the registration ended without an answer")
		}
		p.refusal = err
	}
	p.mu.Unlock()
	if reg {
		close(p.done)
	} else {
		close(p.refused)
	}
}

func (p *execPlugin) Full() string { return p.full }

// InstanceID returns the instance id of the plugin's latest Configure, as
// the driver saw it.
func (p *execPlugin) InstanceID() string {
	if id := p.tp.InstanceID(); id != "" {
		return id
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.instanceID
}

// Stop sends SIGTERM to the executor and waits for it to exit (killing it
// after Wait).
func (p *execPlugin) Stop() {
	p.stop.Do(func() {
		if p.cmd == nil {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(Wait):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
}

func (p *execPlugin) Done() <-chan struct{} { return p.done }

func (p *execPlugin) Shutdowns() []*nriv1beta1.ShutdownRequest { return p.tp.Shutdowns() }

// runtimeService calls f with a RuntimeService client on the server's
// socket and an outgoing context carrying the instance id the driver
// learned: the plugin's own call, made by the harness on its behalf.
func (p *execPlugin) runtimeService(ctx context.Context, f func(context.Context, nriv1beta1.RuntimeServiceClient) error) error {
	cc, err := grpc.NewClient("unix://"+p.env.sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
	if err != nil {
		return err
	}
	defer cc.Close()
	ctx = metadata.AppendToOutgoingContext(ctx, nri.MetadataInstanceID, p.InstanceID())
	return f(ctx, nriv1beta1.NewRuntimeServiceClient(cc))
}

// UpdateContainers calls RuntimeService.UpdateContainers over the server's
// socket with the instance id the driver learned.
func (p *execPlugin) UpdateContainers(ctx context.Context, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	var rsp *nriv1beta1.UpdateContainersResponse
	err := p.runtimeService(ctx, func(ctx context.Context, c nriv1beta1.RuntimeServiceClient) error {
		var err error
		rsp, err = c.UpdateContainers(ctx, &nriv1beta1.UpdateContainersRequest{Update: updates, Evict: evictions})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return rsp.GetFailed(), rsp.GetFailedEvictions(), nil
}

// The executors' plugins report their status and ask for resyncs
// (StatusReporter) through their SDKs: the harness sends the executor a
// command, which calls its SDK's own API (docs/CONFORMANCE.md).
var _ StatusReporter = (*execPlugin)(nil)

// SetStatus makes the executor report st through its SDK (Go
// plugin.SetStatus, Python set_status, ...).
func (p *execPlugin) SetStatus(ctx context.Context, st nriv1beta1.PluginStatus, reason string) error {
	_, err := p.command(ctx, "set_status", st.String(), reason)
	return err
}

// RequestResync makes the executor ask for a resync through its SDK and
// returns the epoch the SDK got.
func (p *execPlugin) RequestResync(ctx context.Context, reason string) (uint64, error) {
	v, err := p.command(ctx, "request_resync", reason)
	if err != nil {
		return 0, err
	}
	epoch, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the executor of %s answered request_resync with epoch %q", p.full, v)
	}
	return epoch, nil
}

// testWriter hands an executor's output to t.Log line by line while the
// test runs.
type testWriter struct {
	mu     sync.Mutex
	t      T
	prefix string
	buf    []byte
	done   bool
	reply  func(line string) bool // takes the executor's answers off the log
}

func newTestWriter(t T, prefix string) *testWriter {
	w := &testWriter{t: t, prefix: prefix}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return w
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(b), nil
}

func (w *testWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
}

func (w *testWriter) emit(line string) {
	if w.reply != nil && w.reply(line) {
		return
	}
	if !w.done {
		w.t.Logf("[%s] %s", w.prefix, line)
	}
}

// lineBuffer collects the server's log lines.
type lineBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serverMetrics adapts the scenarios' Metrics to the server's.
type serverMetrics struct{ Metrics }

func (serverMetrics) CutWait(string, time.Duration)                               {}
func (serverMetrics) Plugins(int)                                                 {}
func (serverMetrics) FailedOpen(string, nriv1beta1.Event, nriv1beta1.CallOutcome) {}
func (serverMetrics) Deprecation(string, string)                                  {}
