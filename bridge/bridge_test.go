package bridge_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/nri-grpc/nri-grpc/bridge"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// wait bounds anything a test waits for: the time left before the test
// binary's deadline (internal/testwait), so a loaded machine slows a test
// down instead of failing it.
func wait() time.Duration { return testwait.Bound() }

// testLogger logs through t while the test runs.
func testLogger(t *testing.T) *slog.Logger { return testplugin.Logger(t) }

func tempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// nrid is a server with its gRPC socket and both bridge sides.
type nrid struct {
	srv       *server.Server
	sock      string
	pluginDir string
	log       *testplugin.Log
}

func startNrid(t *testing.T, opts ...server.Option) *nrid {
	t.Helper()
	dir := tempDir(t)
	pluginDir := filepath.Join(dir, "p")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(append([]server.Option{server.WithPluginSocketDir(pluginDir), server.WithDialer(transport.NewDialer()), server.WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "nri-grpc.sock")
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(peercred.Credentials{}), codec.ServerOption())
	nriv1beta1.RegisterRuntimeServiceServer(g, srv.RuntimeService())
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait())
		defer cancel()
		_ = srv.Shutdown(ctx)
		g.Stop()
	})
	return &nrid{srv: srv, sock: sock, pluginDir: pluginDir, log: testplugin.NewLog()}
}

// grpcPlugin registers a gRPC test plugin with n.
func (n *nrid) grpcPlugin(t *testing.T, idx, name string, set func(*testplugin.Plugin)) *testplugin.Plugin {
	t.Helper()
	p := &testplugin.Plugin{Name: name, Index: idx, Log: n.log, Events: lifecycleMask}
	if set != nil {
		set(p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	if _, err := p.Start(ctx, n.sock, n.pluginDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// lifecycleMask is every event but validation.
var lifecycleMask = nri.AllEvents &^ nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)

// classicRuntime is upstream pkg/adaptation: a real classic NRI runtime.
type classicRuntime struct {
	a      *adaptation.Adaptation
	socket string
	mu     sync.Mutex
	pods   []*v1alpha1.PodSandbox
	ctrs   []*v1alpha1.Container
	upd    chan []*v1alpha1.ContainerUpdate
}

func startClassicRuntime(t *testing.T, socket string, pods []*v1alpha1.PodSandbox, ctrs []*v1alpha1.Container) *classicRuntime {
	t.Helper()
	r := &classicRuntime{socket: socket, pods: pods, ctrs: ctrs, upd: make(chan []*v1alpha1.ContainerUpdate, 16)}
	dir := tempDir(t)
	sync := func(ctx context.Context, cb adaptation.SyncCB) error {
		r.mu.Lock()
		pods, ctrs := r.pods, r.ctrs
		r.mu.Unlock()
		_, err := cb(ctx, pods, ctrs)
		return err
	}
	update := func(_ context.Context, u []*v1alpha1.ContainerUpdate) ([]*v1alpha1.ContainerUpdate, error) {
		r.upd <- u
		return nil, nil
	}
	a, err := adaptation.New("classic-runtime", "v9.9.9", sync, update,
		adaptation.WithSocketPath(socket),
		adaptation.WithPluginPath(filepath.Join(dir, "plugins")),
		adaptation.WithPluginConfigPath(filepath.Join(dir, "conf")))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	r.a = a
	t.Cleanup(a.Stop)
	return r
}

// settled waits until no plugin synchronization is in progress, so every
// connected plugin is in the runtime's list.
func (r *classicRuntime) settled() { r.a.BlockPluginSync().Unblock() }

// attachBridge runs the bridge's runtime side against r for n.
func attachBridge(t *testing.T, n *nrid, socket string) *bridge.RuntimeSide {
	t.Helper()
	return runRuntimeSide(t, n.srv, bridge.WithRuntimeSocket(socket), bridge.WithRuntimeLogger(testLogger(t)),
		bridge.WithReconnectBackoff(10*time.Millisecond, 100*time.Millisecond))
}

// runRuntimeSide runs a bridge runtime side for srv with opts until the
// test ends, and returns once it is attached and synchronized.
func runRuntimeSide(t *testing.T, srv *server.Server, opts ...bridge.RuntimeOption) *bridge.RuntimeSide {
	t.Helper()
	rs, err := bridge.NewRuntimeSide(srv, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rs.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-rs.Synchronized():
	case <-time.After(wait()):
		t.Fatal("the bridge did not attach to the classic runtime")
	}
	return rs
}

// servePluginSide runs the bridge's plugin side on a fresh socket.
func servePluginSide(t *testing.T, n *nrid) string {
	t.Helper()
	sock := filepath.Join(tempDir(t), "classic.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := bridge.NewPluginSide(n.srv, bridge.WithPluginLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = ps.Serve(ctx, lis); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

// classicPlugin is an upstream pkg/stub plugin recording its events.
type classicPlugin struct {
	name   string
	log    *testplugin.Log
	create func(*v1alpha1.PodSandbox, *v1alpha1.Container) (*v1alpha1.ContainerAdjustment, []*v1alpha1.ContainerUpdate, error)
	onCtx  func(context.Context) // sees CreateContainer's context
}

func (p *classicPlugin) note(method string, req proto.Message) {
	p.log.Add(testplugin.Call{Plugin: p.name, Method: method, Req: req})
}

func (p *classicPlugin) RunPodSandbox(_ context.Context, pod *v1alpha1.PodSandbox) error {
	p.note("RunPodSandbox", pod)
	return nil
}

func (p *classicPlugin) CreateContainer(ctx context.Context, pod *v1alpha1.PodSandbox, ctr *v1alpha1.Container) (*v1alpha1.ContainerAdjustment, []*v1alpha1.ContainerUpdate, error) {
	p.note("CreateContainer", ctr)
	if p.onCtx != nil {
		p.onCtx(ctx)
	}
	if p.create != nil {
		return p.create(pod, ctr)
	}
	return nil, nil, nil
}

func (p *classicPlugin) StartContainer(_ context.Context, _ *v1alpha1.PodSandbox, ctr *v1alpha1.Container) error {
	p.note("StartContainer", ctr)
	return nil
}

func (p *classicPlugin) RemovePodSandbox(_ context.Context, pod *v1alpha1.PodSandbox) error {
	p.note("RemovePodSandbox", pod)
	return nil
}

// startStub connects a classic plugin to socket.
func startStub(t *testing.T, socket, idx string, p *classicPlugin) stub.Stub {
	t.Helper()
	st, err := stub.New(p, stub.WithPluginName(p.name[3:]), stub.WithPluginIdx(idx), stub.WithSocketPath(socket))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	if err := st.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	return st
}

func alphaPod(n int) *v1alpha1.PodSandbox {
	p := &v1alpha1.PodSandbox{}
	b, _ := fixture.Pod(n).MarshalVT()
	if err := p.UnmarshalVT(b); err != nil {
		panic(err)
	}
	return p
}

func alphaCtr(n, c int) *v1alpha1.Container {
	x := &v1alpha1.Container{}
	b, _ := fixture.Container(n, c).MarshalVT()
	if err := x.UnmarshalVT(b); err != nil {
		panic(err)
	}
	return x
}

// TestClassicRuntimeDrivesGRPCPlugin: upstream pkg/adaptation is the
// runtime, the bridge attaches as one classic plugin, a gRPC plugin behind
// nri-grpc adjusts the container.
func TestClassicRuntimeDrivesGRPCPlugin(t *testing.T) {
	n := startNrid(t)
	n.grpcPlugin(t, "10", "env", func(p *testplugin.Plugin) {
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Env:         []*nriv1beta1.KeyValue{{Key: "FROM_GRPC", Value: "1"}},
				Annotations: map[string]string{"grpc-plugin": "was-here"},
			}}, nil
		}
	})
	sock := filepath.Join(tempDir(t), "nri.sock")
	rt := startClassicRuntime(t, sock, []*v1alpha1.PodSandbox{alphaPod(1)}, []*v1alpha1.Container{alphaCtr(1, 0)})
	attachBridge(t, n, sock)
	rt.settled()
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	if err := rt.a.RunPodSandbox(ctx, &v1alpha1.RunPodSandboxRequest{Pod: alphaPod(2)}); err != nil {
		t.Fatal(err)
	}
	rsp, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(2), Container: alphaCtr(2, 0)})
	if err != nil {
		t.Fatal(err)
	}
	adj := rsp.GetAdjust()
	if adj.GetAnnotations()["grpc-plugin"] != "was-here" || len(adj.GetEnv()) != 1 || adj.GetEnv()[0].GetKey() != "FROM_GRPC" {
		t.Fatalf("classic runtime got adjustment %v", adj)
	}
	got := n.log.Strings()
	want := []string{"10-env:Configure", "10-env:Synchronize", "10-env:RunPodSandbox", "10-env:CreateContainer"}
	if len(got) < 4 || got[0] != want[0] {
		t.Fatalf("calls %v", got)
	}
	tail := got[len(got)-2:]
	if tail[0] != want[2] || tail[1] != want[3] {
		t.Fatalf("calls %v, want ... %v", got, want[2:])
	}
}

// TestClassicPluginsRunUnderServer: upstream pkg/stub plugins connect to the
// bridge's plugin side and are interleaved with gRPC plugins by index.
func TestClassicPluginsRunUnderServer(t *testing.T) {
	n := startNrid(t)
	sock := servePluginSide(t, n)
	startStub(t, sock, "05", &classicPlugin{name: "05-classic", log: n.log, create: func(*v1alpha1.PodSandbox, *v1alpha1.Container) (*v1alpha1.ContainerAdjustment, []*v1alpha1.ContainerUpdate, error) {
		a := &v1alpha1.ContainerAdjustment{}
		a.AddAnnotation("classic", "yes")
		return a, nil, nil
	}})
	n.grpcPlugin(t, "10", "grpc", nil)
	startStub(t, sock, "20", &classicPlugin{name: "20-late", log: n.log})
	waitFor(t, "three ready plugins", func() bool { return readyPlugins(n.srv) == 3 })
	n.log.Reset()
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	rsp, err := n.srv.CreateContainer(ctx, fixture.CreateContainerRequest(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if rsp.GetAdjust().GetAnnotations()["classic"] != "yes" {
		t.Fatalf("adjust %v", rsp.GetAdjust())
	}
	got := n.log.Strings("CreateContainer")
	want := []string{"05-classic:CreateContainer", "10-grpc:CreateContainer", "20-late:CreateContainer"}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("order %v, want %v", got, want)
	}
	// The gRPC plugin saw the classic plugin's change.
	for _, c := range n.log.Calls() {
		if c.Plugin == "10-grpc" && c.Req.(*nriv1beta1.CreateContainerRequest).GetContainer().GetAnnotations()["classic"] != "yes" {
			t.Fatal("the gRPC plugin did not see the classic plugin's annotation")
		}
	}
	if len(n.srv.Plugins()) != 3 {
		t.Fatalf("plugins: %v", n.srv.Plugins())
	}
	for _, p := range n.srv.Plugins() {
		if p.GetPlugin().GetName() != "grpc" && p.GetKind() != nriv1beta1.PluginKind_PLUGIN_KIND_CLASSIC {
			t.Errorf("%s kind %v", p.GetPlugin().GetName(), p.GetKind())
		}
	}
}

func readyPlugins(srv *server.Server) int {
	n := 0
	for _, p := range srv.Plugins() {
		if p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
			n++
		}
	}
	return n
}

// TestClassicPathLimitations asserts what the classic runtime's re-merge
// does to v1beta1 behaviour (DESIGN §5a, docs/bridge.md): the bridge's
// reply carries the env removal marker and the eviction, but the classic
// runtime drops both; the same reply on the gRPC path keeps them.
func TestClassicPathLimitations(t *testing.T) {
	n := startNrid(t)
	victim := fixture.Container(1, 0)
	n.grpcPlugin(t, "10", "remover", func(p *testplugin.Plugin) {
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{
				Adjust: &nriv1beta1.ContainerAdjustment{
					Env:         []*nriv1beta1.KeyValue{{Key: "-HOSTNAME"}},
					Annotations: map[string]string{"kept": "1"},
				},
				Evict: []*nriv1beta1.ContainerEviction{{ContainerId: victim.Id, Reason: "make room"}},
			}, nil
		}
	})
	ctx := context.Background()
	// gRPC path: the marker and the eviction reach the runtime.
	direct, err := n.srv.CreateContainer(ctx, fixture.CreateContainerRequest(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(direct.GetAdjust().GetEnv()) != 1 || direct.GetAdjust().GetEnv()[0].GetKey() != "-HOSTNAME" || len(direct.GetEvict()) != 1 {
		t.Fatalf("gRPC path: env %v evict %v", direct.GetAdjust().GetEnv(), direct.GetEvict())
	}
	// Classic path: the classic runtime's own merge drops both.
	sock := filepath.Join(tempDir(t), "nri.sock")
	rt := startClassicRuntime(t, sock, []*v1alpha1.PodSandbox{alphaPod(1)}, []*v1alpha1.Container{alphaCtr(1, 0)})
	attachBridge(t, n, sock)
	rt.settled()
	rsp, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(3), Container: alphaCtr(3, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if rsp.GetAdjust().GetAnnotations()["kept"] != "1" {
		t.Fatalf("classic path lost the annotation: %v", rsp.GetAdjust())
	}
	if len(rsp.GetAdjust().GetEnv()) != 0 {
		t.Fatalf("classic path: env %v — if the classic runtime now keeps env removal markers, update docs/bridge.md", rsp.GetAdjust().GetEnv())
	}
	if len(rsp.GetEvict()) != 0 {
		t.Fatalf("classic path: evictions %v — classic runtimes were documented to drop them", rsp.GetEvict())
	}
}
