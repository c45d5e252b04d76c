// Package plugintest runs Go plugins against a real, in-process NRI server
// over real unix sockets, for plugin authors' tests:
//
//	func TestInjector(t *testing.T) {
//		env := plugintest.New(t)
//		env.Start(t, &injector{}, plugin.WithName("injector"), plugin.WithIndex("10"))
//		pod, ctr := plugintest.Pod(0), plugintest.Container(0, 0)
//		env.RunPodSandbox(t, pod)
//		got := env.CreateContainer(t, pod, ctr) // the merged, validated result
//		...
//	}
//
// The server (server.Server with its RuntimeService and AdaptationService)
// listens on a socket in a fresh temporary directory; plugins listen in its
// "p" subdirectory, the server's plugin socket directory. Events are sent
// through a real AdaptationService gRPC client, so a test sees exactly what
// a runtime would. Everything is torn down by t.Cleanup.
package plugintest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/internal/grpcreg"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// Wait bounds everything the helpers wait for: registrations, events,
// shutdowns. It is generous on purpose; tests never depend on it being
// reached.
const Wait = 30 * time.Second

// RuntimeName is the runtime name the test server reports.
const RuntimeName = "plugintest"

// Option configures an Env.
type Option func(*config)

type config struct {
	serverOpts []server.Option
	pods       []*nriv1beta1.PodSandbox
	ctrs       []*nriv1beta1.Container
	log        *slog.Logger
}

// WithServerOptions adds options of the server (timeouts, validator,
// authorizer, ...). They apply to every server the Env starts, restarts
// included.
func WithServerOptions(opts ...server.Option) Option {
	return func(c *config) { c.serverOpts = append(c.serverOpts, opts...) }
}

// WithState sets the pods and containers the runtime already has when the
// server starts; plugins receive them in Synchronize.
func WithState(pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) Option {
	return func(c *config) { c.pods, c.ctrs = pods, ctrs }
}

// WithLogger sets the logger of the server and of the plugins started by
// Start (default: the test log, at level Info).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// Env is a running NRI server with a fake runtime.
type Env struct {
	// Dir is the temporary directory of the sockets.
	Dir string
	// Socket is the path of the server's socket.
	Socket string
	// PluginDir is the server's plugin socket directory.
	PluginDir string
	// Runtime is the fake runtime: it records the updates and evictions
	// plugins ask for outside of events.
	Runtime *Runtime

	cfg config
	log *slog.Logger

	mu     sync.Mutex
	srv    *server.Server
	gs     *grpc.Server
	cc     *grpc.ClientConn
	pods   map[string]*nriv1beta1.PodSandbox
	ctrs   map[string]*nriv1beta1.Container
	order  []string // container ids in creation order
	podOrd []string
}

// New starts a server on a unix socket in a new temporary directory and
// attaches the fake runtime with the state of WithState.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{
		Dir:       dir,
		Socket:    filepath.Join(dir, "nri.sock"),
		PluginDir: filepath.Join(dir, "p"),
		Runtime:   newRuntime(),
		cfg:       cfg,
		pods:      map[string]*nriv1beta1.PodSandbox{},
		ctrs:      map[string]*nriv1beta1.Container{},
	}
	if err := os.Mkdir(e.PluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.log = cfg.log
	if e.log == nil {
		e.log = TestLogger(t, slog.LevelInfo)
	}
	for _, p := range cfg.pods {
		e.trackPod(p)
	}
	for _, c := range cfg.ctrs {
		e.trackContainer(c)
	}
	if err := e.startServer(); err != nil {
		_ = os.RemoveAll(dir)
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("unix://"+e.Socket, append(flowctl.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())...)
	if err != nil {
		t.Fatal(err)
	}
	e.cc = cc
	t.Cleanup(func() {
		_ = cc.Close()
		e.stopServer()
		_ = os.RemoveAll(dir)
	})
	return e
}

// startServer creates a server, attaches the runtime with the tracked
// state, and serves it on the socket.
func (e *Env) startServer() error {
	opts := append([]server.Option{
		server.WithPluginSocketDir(e.PluginDir),
		server.WithDialer(transport.NewDialer()),
		server.WithLogger(e.log.With("component", "server")),
		server.WithRuntime(RuntimeName, "v0"),
		server.WithNodeName("plugintest-node"),
	}, e.cfg.serverOpts...)
	srv, err := server.New(opts...)
	if err != nil {
		return err
	}
	pods, ctrs := e.State()
	// Attach before serving: plugins then synchronize with the real state.
	if err := srv.SetRuntime(context.Background(), server.RuntimeInfo{Name: RuntimeName, Version: "v1"}, e.Runtime, pods, ctrs); err != nil {
		return err
	}
	lis, err := sockets.Listen(e.Socket, sockets.DefaultListenOptions)
	if err != nil {
		return err
	}
	gs := grpc.NewServer(append(flowctl.ServerOptions(), grpc.Creds(peercred.Credentials{}), codec.ServerOption())...)
	nriv1beta1.RegisterRuntimeServiceServer(grpcreg.Registrar(gs), srv.RuntimeService())
	nriv1beta1.RegisterAdaptationServiceServer(grpcreg.Registrar(gs), srv.AdaptationService())
	go func() { _ = gs.Serve(lis) }()
	e.mu.Lock()
	e.srv, e.gs = srv, gs
	e.mu.Unlock()
	return nil
}

// stopServer shuts the server down (plugins get Shutdown with kind
// SERVER_STOPPING) and stops serving.
func (e *Env) stopServer() {
	e.mu.Lock()
	srv, gs := e.srv, e.gs
	e.srv, e.gs = nil, nil
	e.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	_ = srv.Shutdown(ctx)
	gs.Stop()
}

// Server returns the current server (Restart replaces it).
func (e *Env) Server() *server.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.srv
}

// ServerAddress returns the server's gRPC target, "unix://<Socket>".
func (e *Env) ServerAddress() string { return "unix://" + e.Socket }

// Client returns an AdaptationService client connected to the server.
func (e *Env) Client() nriv1beta1.AdaptationServiceClient {
	return nriv1beta1.NewAdaptationServiceClient(e.cc)
}

// Restart stops the server, as nrid's shutdown does (every plugin gets
// Shutdown with kind SERVER_STOPPING), and starts a new one on the same
// socket with the same options and the runtime state the Env tracked.
// Running plugins register again by themselves.
func (e *Env) Restart(t testing.TB) {
	t.Helper()
	e.stopServer()
	if err := e.startServer(); err != nil {
		t.Fatalf("restarting the server: %v", err)
	}
}

// Resync attaches the runtime again with the tracked state, as a restarted
// runtime does: plugins with the resync capability get Synchronize with the
// next epoch, the others synthesized teardown events for what vanished.
func (e *Env) Resync(t testing.TB) {
	t.Helper()
	pods, ctrs := e.State()
	e.SetState(t, pods, ctrs)
}

// SetState replaces the runtime's state, as a runtime that restarted with
// these pods and containers: what is missing from them vanished.
func (e *Env) SetState(t testing.TB, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) {
	t.Helper()
	e.mu.Lock()
	e.pods, e.ctrs, e.order, e.podOrd = map[string]*nriv1beta1.PodSandbox{}, map[string]*nriv1beta1.Container{}, nil, nil
	e.mu.Unlock()
	for _, p := range pods {
		e.trackPod(p)
	}
	for _, c := range ctrs {
		e.trackContainer(c)
	}
	if err := e.Server().SetRuntime(context.Background(), server.RuntimeInfo{Name: RuntimeName, Version: "v1"}, e.Runtime, pods, ctrs); err != nil {
		t.Fatalf("SetRuntime: %v", err)
	}
}

// State returns the pods and containers the runtime has, as the Env
// tracked them from the events it sent.
func (e *Env) State() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var pods []*nriv1beta1.PodSandbox
	for _, id := range e.podOrd {
		pods = append(pods, e.pods[id])
	}
	var ctrs []*nriv1beta1.Container
	for _, id := range e.order {
		ctrs = append(ctrs, e.ctrs[id])
	}
	return pods, ctrs
}

func (e *Env) trackPod(p *nriv1beta1.PodSandbox) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.pods[p.GetId()]; !ok {
		e.podOrd = append(e.podOrd, p.GetId())
	}
	e.pods[p.GetId()] = p
}

func (e *Env) untrackPod(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pods, id)
	e.podOrd = remove(e.podOrd, id)
}

func (e *Env) trackContainer(c *nriv1beta1.Container) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.ctrs[c.GetId()]; !ok {
		e.order = append(e.order, c.GetId())
	}
	e.ctrs[c.GetId()] = c
}

func (e *Env) untrackContainer(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.ctrs, id)
	e.order = remove(e.order, id)
}

func remove(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// Instance is a plugin started by Start or Launch.
type Instance struct {
	*plugin.Plugin
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	seen   atomic.Bool // the test read err
}

// Done is closed when the plugin's Run returned.
func (i *Instance) Done() <-chan struct{} { return i.done }

// Err returns what Run returned, once Done is closed.
func (i *Instance) Err() error {
	select {
	case <-i.done:
		i.seen.Store(true)
		return i.err
	default:
		return nil
	}
}

// Stop cancels the plugin's Run and waits for it to return.
func (i *Instance) Stop(t testing.TB) {
	t.Helper()
	i.cancel()
	select {
	case <-i.done:
	case <-time.After(Wait):
		t.Errorf("plugin %s did not stop within %v", i.Name(), Wait)
	}
}

// WaitRegistered waits until the plugin is registered under an instance id
// other than notInstance ("" accepts any), and returns the registration.
func (i *Instance) WaitRegistered(t testing.TB, notInstance string) *nriv1beta1.Registered {
	t.Helper()
	deadline := time.NewTimer(Wait)
	defer deadline.Stop()
	for {
		ch := i.RegistrationChanged()
		if reg := i.Registered(); reg != nil && reg.GetInstanceId() != notInstance {
			return reg
		}
		select {
		case <-ch:
		case <-i.done:
			t.Fatalf("plugin %s stopped while waiting for its registration: %v", i.Name(), i.err)
		case <-deadline.C:
			t.Fatalf("plugin %s did not register within %v", i.Name(), Wait)
		}
	}
}

// Options returns the plugin options Start puts before the caller's: the
// Env's logger, server address and plugin socket directory, and a default
// name (from impl's type) and index ("10").
func (e *Env) Options(impl any) []plugin.Option {
	return []plugin.Option{
		plugin.WithName(defaultName(impl)),
		plugin.WithIndex("10"),
		plugin.WithLogger(e.log),
		plugin.WithServerAddress(e.ServerAddress()),
		plugin.WithSocketDir(e.PluginDir),
		plugin.WithBackoff(20*time.Millisecond, time.Second),
	}
}

// defaultName derives a plugin name from impl's type name.
func defaultName(impl any) string {
	t := reflect.TypeOf(impl)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := "plugin"
	if t != nil && t.Name() != "" {
		name = strings.ToLower(t.Name())
	}
	if plugin.CheckName(name) != nil {
		name = "plugin"
	}
	return name
}

// Launch creates the plugin and runs it in the background, without waiting
// for its registration. opts come after Options(impl), so they override
// them. The plugin is stopped by t.Cleanup; a Run error other than
// plugin.ErrReplaced fails the test then, unless the test read it with Err.
func (e *Env) Launch(t testing.TB, impl any, opts ...plugin.Option) *Instance {
	t.Helper()
	p, err := plugin.New(impl, append(e.Options(impl), opts...)...)
	if err != nil {
		t.Fatalf("plugin.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inst := &Instance{Plugin: p, cancel: cancel, done: make(chan struct{})}
	go func() {
		inst.err = p.Run(ctx)
		close(inst.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-inst.done:
			if inst.err != nil && !errors.Is(inst.err, plugin.ErrReplaced) && !inst.seen.Load() {
				t.Errorf("plugin %s: Run: %v", p.Name(), inst.err)
			}
		case <-time.After(Wait):
			t.Errorf("plugin %s did not stop within %v", p.Name(), Wait)
		}
	})
	return inst
}

// Start is Launch, then waits until the plugin is registered.
func (e *Env) Start(t testing.TB, impl any, opts ...plugin.Option) *Instance {
	t.Helper()
	inst := e.Launch(t, impl, opts...)
	inst.WaitRegistered(t, "")
	return inst
}

// ctx returns a context bounded by Wait.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), Wait)
	t.Cleanup(cancel)
	return c
}

// TryRunPodSandbox sends RunPodSandbox and returns the server's error.
func (e *Env) TryRunPodSandbox(t testing.TB, pod *nriv1beta1.PodSandbox) error {
	t.Helper()
	_, err := e.Client().RunPodSandbox(ctx(t), &nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: pod})
	if err == nil {
		e.trackPod(pod)
	}
	return err
}

// RunPodSandbox sends RunPodSandbox and fails the test on an error.
func (e *Env) RunPodSandbox(t testing.TB, pod *nriv1beta1.PodSandbox) {
	t.Helper()
	if err := e.TryRunPodSandbox(t, pod); err != nil {
		t.Fatalf("RunPodSandbox %s: %v", pod.GetName(), err)
	}
}

// TryUpdatePodSandbox sends UpdatePodSandbox and returns the server's error.
func (e *Env) TryUpdatePodSandbox(t testing.TB, pod *nriv1beta1.PodSandbox, overhead, resources *nriv1beta1.LinuxResources) error {
	t.Helper()
	_, err := e.Client().UpdatePodSandbox(ctx(t), &nriv1beta1.AdaptationServiceUpdatePodSandboxRequest{
		Pod: pod, OverheadLinuxResources: overhead, LinuxResources: resources,
	})
	return err
}

// PostUpdatePodSandbox sends PostUpdatePodSandbox and returns the errors
// plugins reported.
func (e *Env) PostUpdatePodSandbox(t testing.TB, pod *nriv1beta1.PodSandbox) []*nriv1beta1.PluginError {
	t.Helper()
	rsp, err := e.Client().PostUpdatePodSandbox(ctx(t), &nriv1beta1.AdaptationServicePostUpdatePodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatalf("PostUpdatePodSandbox %s: %v", pod.GetName(), err)
	}
	return rsp.GetPluginErrors()
}

// StopPodSandbox sends StopPodSandbox and returns the errors plugins
// reported.
func (e *Env) StopPodSandbox(t testing.TB, pod *nriv1beta1.PodSandbox) []*nriv1beta1.PluginError {
	t.Helper()
	rsp, err := e.Client().StopPodSandbox(ctx(t), &nriv1beta1.AdaptationServiceStopPodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatalf("StopPodSandbox %s: %v", pod.GetName(), err)
	}
	return rsp.GetPluginErrors()
}

// RemovePodSandbox sends RemovePodSandbox and returns the errors plugins
// reported.
func (e *Env) RemovePodSandbox(t testing.TB, pod *nriv1beta1.PodSandbox) []*nriv1beta1.PluginError {
	t.Helper()
	rsp, err := e.Client().RemovePodSandbox(ctx(t), &nriv1beta1.AdaptationServiceRemovePodSandboxRequest{Pod: pod})
	if err != nil {
		t.Fatalf("RemovePodSandbox %s: %v", pod.GetName(), err)
	}
	e.untrackPod(pod.GetId())
	return rsp.GetPluginErrors()
}

// TryCreateContainer sends CreateContainer and returns the merged result
// or the server's error (a veto, a conflict, a rejection, ...).
func (e *Env) TryCreateContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	t.Helper()
	rsp, err := e.Client().CreateContainer(ctx(t), &nriv1beta1.AdaptationServiceCreateContainerRequest{Pod: pod, Container: ctr})
	if err == nil {
		e.trackContainer(ctr)
	}
	return rsp, err
}

// CreateContainer sends CreateContainer and returns the merged result; an
// error fails the test.
func (e *Env) CreateContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) *nriv1beta1.AdaptationServiceCreateContainerResponse {
	t.Helper()
	rsp, err := e.TryCreateContainer(t, pod, ctr)
	if err != nil {
		t.Fatalf("CreateContainer %s/%s: %v", pod.GetName(), ctr.GetName(), err)
	}
	return rsp
}

// PostCreateContainer sends PostCreateContainer and returns the errors
// plugins reported.
func (e *Env) PostCreateContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) []*nriv1beta1.PluginError {
	t.Helper()
	rsp, err := e.Client().PostCreateContainer(ctx(t), &nriv1beta1.AdaptationServicePostCreateContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatalf("PostCreateContainer %s/%s: %v", pod.GetName(), ctr.GetName(), err)
	}
	return rsp.GetPluginErrors()
}

// TryStartContainer sends StartContainer and returns the server's error.
func (e *Env) TryStartContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) error {
	t.Helper()
	_, err := e.Client().StartContainer(ctx(t), &nriv1beta1.AdaptationServiceStartContainerRequest{Pod: pod, Container: ctr})
	return err
}

// StartContainer sends StartContainer; an error fails the test.
func (e *Env) StartContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) {
	t.Helper()
	if err := e.TryStartContainer(t, pod, ctr); err != nil {
		t.Fatalf("StartContainer %s/%s: %v", pod.GetName(), ctr.GetName(), err)
	}
}

// PostStartContainer sends PostStartContainer and returns the errors
// plugins reported.
func (e *Env) PostStartContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) []*nriv1beta1.PluginError {
	t.Helper()
	rsp, err := e.Client().PostStartContainer(ctx(t), &nriv1beta1.AdaptationServicePostStartContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatalf("PostStartContainer %s/%s: %v", pod.GetName(), ctr.GetName(), err)
	}
	return rsp.GetPluginErrors()
}

// TryUpdateContainer sends UpdateContainer and returns the result or the
// server's error.
func (e *Env) TryUpdateContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container,
	res *nriv1beta1.LinuxResources) (*nriv1beta1.AdaptationServiceUpdateContainerResponse, error) {
	t.Helper()
	return e.Client().UpdateContainer(ctx(t), &nriv1beta1.AdaptationServiceUpdateContainerRequest{
		Pod: pod, Container: ctr, LinuxResources: res,
	})
}

// UpdateContainer sends UpdateContainer and returns the result; an error
// fails the test.
func (e *Env) UpdateContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container,
	res *nriv1beta1.LinuxResources) *nriv1beta1.AdaptationServiceUpdateContainerResponse {
	t.Helper()
	rsp, err := e.TryUpdateContainer(t, pod, ctr, res)
	if err != nil {
		t.Fatalf("UpdateContainer %s/%s: %v", pod.GetName(), ctr.GetName(), err)
	}
	return rsp
}

// PostUpdateContainer sends PostUpdateContainer and returns the errors
// plugins reported.
func (e *Env) PostUpdateContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) []*nriv1beta1.PluginError {
	t.Helper()
	rsp, err := e.Client().PostUpdateContainer(ctx(t), &nriv1beta1.AdaptationServicePostUpdateContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatalf("PostUpdateContainer %s/%s: %v", pod.GetName(), ctr.GetName(), err)
	}
	return rsp.GetPluginErrors()
}

// StopContainer sends StopContainer and returns the result (updates of
// other containers, plugin errors).
func (e *Env) StopContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) *nriv1beta1.AdaptationServiceStopContainerResponse {
	t.Helper()
	rsp, err := e.Client().StopContainer(ctx(t), &nriv1beta1.AdaptationServiceStopContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatalf("StopContainer %s/%s: %v", pod.GetName(), ctr.GetName(), err)
	}
	return rsp
}

// RemoveContainer sends RemoveContainer and returns the errors plugins
// reported.
func (e *Env) RemoveContainer(t testing.TB, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) []*nriv1beta1.PluginError {
	t.Helper()
	rsp, err := e.Client().RemoveContainer(ctx(t), &nriv1beta1.AdaptationServiceRemoveContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatalf("RemoveContainer %s/%s: %v", pod.GetName(), ctr.GetName(), err)
	}
	e.untrackContainer(ctr.GetId())
	return rsp.GetPluginErrors()
}

// Lifecycle drives n pods (Pod(i)), each with one container
// (Container(i, 0)), through every event, in the order a runtime sends
// them, and returns the merged CreateContainer result of each container.
// Any error fails the test.
func (e *Env) Lifecycle(t testing.TB, n int) []*nriv1beta1.AdaptationServiceCreateContainerResponse {
	t.Helper()
	var out []*nriv1beta1.AdaptationServiceCreateContainerResponse
	for i := range n {
		pod, ctr := Pod(i), Container(i, 0)
		e.RunPodSandbox(t, pod)
		out = append(out, e.CreateContainer(t, pod, ctr))
		e.PostCreateContainer(t, pod, ctr)
		e.StartContainer(t, pod, ctr)
		e.PostStartContainer(t, pod, ctr)
		e.UpdateContainer(t, pod, ctr, ctr.GetLinux().GetResources())
		e.PostUpdateContainer(t, pod, ctr)
		if err := e.TryUpdatePodSandbox(t, pod, nil, pod.GetLinux().GetPodResources()); err != nil {
			t.Fatalf("UpdatePodSandbox %s: %v", pod.GetName(), err)
		}
		e.PostUpdatePodSandbox(t, pod)
		e.StopContainer(t, pod, ctr)
		e.RemoveContainer(t, pod, ctr)
		e.StopPodSandbox(t, pod)
		e.RemovePodSandbox(t, pod)
	}
	return out
}

// Records starts watching the server's dispatch records (one per event,
// with every plugin call and the fields each plugin changed) and returns
// them in order. Watching stops at t.Cleanup or at a Restart.
func (e *Env) Records(t testing.TB) <-chan *nriv1beta1.DispatchRecord {
	ch := make(chan *nriv1beta1.DispatchRecord, 1024)
	var closed atomic.Bool
	stop := e.Server().Watch(1024, func(r *nriv1beta1.DispatchRecord) {
		if !closed.Load() {
			select {
			case ch <- r:
			default:
			}
		}
	})
	t.Cleanup(func() { closed.Store(true); stop() })
	return ch
}

// Pod returns pod number n of a realistic, Kubernetes-like workload.
func Pod(n int) *nriv1beta1.PodSandbox { return fixture.Pod(n) }

// Container returns container c of Pod(n), as a runtime presents it for
// CreateContainer: realistic mounts, environment, resources, namespaces.
func Container(n, c int) *nriv1beta1.Container { return fixture.Container(n, c) }

// Runtime is the fake runtime behind an Env: it applies nothing, records
// the updates and evictions plugins ask for outside of events (at
// Synchronize, or with Plugin.UpdateContainers) and reports none failed.
type Runtime struct {
	mu        sync.Mutex
	updates   []*nriv1beta1.ContainerUpdate
	evictions []*nriv1beta1.ContainerEviction
	changed   chan struct{}
}

func newRuntime() *Runtime { return &Runtime{changed: make(chan struct{})} }

// UpdateContainers implements server.Runtime.
func (r *Runtime) UpdateContainers(_ context.Context, _ string, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	r.mu.Lock()
	r.updates = append(r.updates, updates...)
	r.evictions = append(r.evictions, evictions...)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	return nil, nil, nil
}

// Updates returns the updates received so far.
func (r *Runtime) Updates() []*nriv1beta1.ContainerUpdate {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*nriv1beta1.ContainerUpdate(nil), r.updates...)
}

// Evictions returns the evictions received so far.
func (r *Runtime) Evictions() []*nriv1beta1.ContainerEviction {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*nriv1beta1.ContainerEviction(nil), r.evictions...)
}

// WaitUpdates waits until at least n updates were received and returns
// them.
func (r *Runtime) WaitUpdates(t testing.TB, n int) []*nriv1beta1.ContainerUpdate {
	t.Helper()
	deadline := time.NewTimer(Wait)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		got, ch := len(r.updates), r.changed
		r.mu.Unlock()
		if got >= n {
			return r.Updates()
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("got %d container updates within %v, want %d", got, Wait, n)
		}
	}
}

// TestLogger returns a logger that writes to t's log at level and goes
// quiet once the test is over (goroutines may outlive it briefly).
func TestLogger(t testing.TB, level slog.Level) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(b), "\n"))
	}
	return len(b), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// String describes the Env, for test logs.
func (e *Env) String() string { return fmt.Sprintf("plugintest.Env(%s)", e.Socket) }
