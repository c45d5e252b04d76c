package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// The harness of `nritest plugin`: an NRI server as nrid runs it (a real
// RuntimeService socket, nrid's Dialer), a fake runtime embedded through
// the server's Go API, and a record of every call the server made to the
// plugin and of every call's outcome.

// call is one call the server made to a gRPC plugin.
type call struct {
	Method string // short name: "CreateContainer"
	Req    proto.Message
	Rsp    proto.Message
	Err    error
	Dur    time.Duration
}

// recorder records the server's calls to plugins (a client interceptor on
// the server's connections to plugins).
type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	c := call{Method: method[strings.LastIndex(method, "/")+1:], Err: err, Dur: time.Since(start)}
	c.Req = decodeRequest(method, req)
	if cp, ok := reply.(*codec.Capture); ok {
		reply = cp.Message
	}
	if m, ok := reply.(proto.Message); ok && err == nil {
		c.Rsp = m
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return err
}

// decodeRequest returns req as a message: the server sends some requests
// already encoded (codec.Raw), decoded here by the method's input type.
func decodeRequest(method string, req any) proto.Message {
	raw, ok := req.(*codec.Raw)
	if !ok {
		m, _ := req.(proto.Message)
		return m
	}
	svc, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok || sd.Methods().ByName(protoreflect.Name(name)) == nil {
		return nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(sd.Methods().ByName(protoreflect.Name(name)).Input().FullName())
	if err != nil {
		return nil
	}
	m := mt.New().Interface()
	if proto.Unmarshal(raw.Data, m) != nil {
		return nil
	}
	return m
}

// since returns the calls of method from index from on (every method for
// method "").
func (r *recorder) since(from int, method string) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls[min(from, len(r.calls)):] {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// outcome is one call's outcome as the server measured it.
type outcome struct {
	Plugin  string
	Event   nriv1beta1.Event
	Outcome nriv1beta1.CallOutcome
	Dur     time.Duration
}

// metrics records the server's measurements (server.Metrics).
type metrics struct {
	mu       sync.Mutex
	outcomes []outcome
	synced   []int // objects per (re)synchronization
}

func (m *metrics) PluginCall(plugin string, event nriv1beta1.Event, o nriv1beta1.CallOutcome, d time.Duration) {
	m.mu.Lock()
	m.outcomes = append(m.outcomes, outcome{plugin, event, o, d})
	m.mu.Unlock()
}

func (m *metrics) Synchronized(_ string, objects, _ int, _ time.Duration) {
	m.mu.Lock()
	m.synced = append(m.synced, objects)
	m.mu.Unlock()
}

func (m *metrics) CutWait(string, time.Duration)                               {}
func (m *metrics) Plugins(int)                                                 {}
func (m *metrics) FailedOpen(string, nriv1beta1.Event, nriv1beta1.CallOutcome) {}
func (m *metrics) Deprecation(string, string)                                  {}

func (m *metrics) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.outcomes)
}

// since returns the outcomes of plugin's calls from index from on.
func (m *metrics) since(from int, plugin string) []outcome {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []outcome
	for _, o := range m.outcomes[min(from, len(m.outcomes)):] {
		if o.Plugin == plugin {
			out = append(out, o)
		}
	}
	return out
}

func (m *metrics) lastSynced() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.synced) == 0 {
		return -1
	}
	return m.synced[len(m.synced)-1]
}

// logBuffer collects the server's and the plugin's log lines (and copies
// them to a file, if asked).
type logBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	copy io.Writer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.copy != nil {
		_, _ = b.copy.Write(p)
	}
	return b.buf.Write(p)
}

// lines returns the log lines containing every one of subs, the last n.
func (b *logBuffer) lines(n int, subs ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if l != "" && !slices.ContainsFunc(subs, func(s string) bool { return !strings.Contains(l, s) }) {
			out = append(out, l)
		}
	}
	return out[max(0, len(out)-n):]
}

// fakeRuntime is the embedding runtime's side of unsolicited updates: it
// records them and applies all.
type fakeRuntime struct {
	mu      sync.Mutex
	updates int
}

func (r *fakeRuntime) UpdateContainers(_ context.Context, _ string, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	r.mu.Lock()
	r.updates += len(updates) + len(evictions)
	r.mu.Unlock()
	return nil, nil, nil
}

// serverConfig is what every server of a harness shares.
type serverConfig struct {
	dir       string // scratch directory
	pluginDir string // plugin socket directory
	sock      string // RuntimeService socket
	log       *slog.Logger
	rec       *recorder
	met       *metrics
	rt        *fakeRuntime
	pods      []*nriv1beta1.PodSandbox
	ctrs      []*nriv1beta1.Container
	maxMsg    int
	noRuntime bool // attach no runtime (the bridge's runtime side will)
}

// nriServer is one running server.
type nriServer struct {
	srv *server.Server
	g   *grpc.Server
}

// newScratch creates the scratch directory of a harness.
func newScratch() (dir, pluginDir string, err error) {
	dir, err = os.MkdirTemp("", "nritest-")
	if err != nil {
		return "", "", err
	}
	pluginDir = filepath.Join(dir, "plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		return "", "", err
	}
	return dir, pluginDir, nil
}

// start starts a server on c.sock serving RuntimeService, with the fake
// runtime attached with c's state.
func (c *serverConfig) start(ctx context.Context) (*nriServer, error) {
	opts := []server.Option{
		server.WithPluginSocketDir(c.pluginDir),
		server.WithDialer(transport.NewDialer()),
		server.WithDialOptions(grpc.WithChainUnaryInterceptor(c.rec.intercept)),
		server.WithLogger(c.log),
		server.WithRuntime("nritest", version()),
		server.WithNodeName("nritest-node"),
		server.WithMetrics(c.met),
	}
	if c.maxMsg > 0 {
		opts = append(opts, server.WithMaxMessageSize(c.maxMsg))
	}
	srv, err := server.New(opts...)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(c.sock)
	lis, err := sockets.Listen(c.sock, sockets.DefaultListenOptions)
	if err != nil {
		return nil, err
	}
	g := grpc.NewServer(grpc.Creds(peercred.Credentials{}), codec.ServerOption())
	nriv1beta1.RegisterRuntimeServiceServer(g, srv.RuntimeService())
	go func() { _ = g.Serve(lis) }()
	info := server.RuntimeInfo{Name: "nritest", Version: version()}
	if c.noRuntime {
		return &nriServer{srv: srv, g: g}, nil
	}
	if err := srv.SetRuntime(ctx, info, c.rt, c.pods, c.ctrs); err != nil {
		g.Stop()
		return nil, fmt.Errorf("attaching the fake runtime: %w", err)
	}
	return &nriServer{srv: srv, g: g}, nil
}

// stop shuts the server down (plugins get Shutdown) and stops serving.
func (s *nriServer) stop(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	s.g.Stop()
	return err
}

// waitPlugin waits until full is registered and ready, or ctx ends.
func waitPlugin(ctx context.Context, srv *server.Server, full string) (*nriv1beta1.PluginInfo, error) {
	for {
		ch := srv.PluginsChanged()
		for _, p := range srv.Plugins() {
			if p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName() == full && p.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
				return p, nil
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// syncState returns a runtime state of n pods with a container each, big
// enough (about 1 KiB an object) to need several Synchronize pages at a
// 64 KiB message size.
func syncState(n int) ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) {
	pad := strings.Repeat("x", 700)
	var pods []*nriv1beta1.PodSandbox
	var ctrs []*nriv1beta1.Container
	for i := range n {
		id := fmt.Sprintf("sync-pod-%03d", i)
		pods = append(pods, &nriv1beta1.PodSandbox{
			Id: id, Name: id, Uid: fmt.Sprintf("uid-%03d", i), Namespace: "nritest",
			Labels:      map[string]string{"app": "nritest-sync"},
			Annotations: map[string]string{"nritest.nri-grpc.io/padding": pad},
		})
		ctrs = append(ctrs, &nriv1beta1.Container{
			Id: fmt.Sprintf("sync-ctr-%03d", i), PodSandboxId: id, Name: "app",
			State:       nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING,
			Annotations: map[string]string{"nritest.nri-grpc.io/padding": pad},
			Args:        []string{"/bin/sleep", "infinity"},
		})
	}
	return pods, ctrs
}

// eventPod and eventCtr are the pod and container the lifecycle checks
// drive: shaped like a runtime's, with resources, environment and mounts.
func eventPod(id string) *nriv1beta1.PodSandbox {
	return &nriv1beta1.PodSandbox{
		Id: id, Name: id, Uid: "uid-" + id, Namespace: "nritest",
		Labels:         map[string]string{"app": "nritest"},
		Annotations:    map[string]string{},
		RuntimeHandler: "runc",
		Linux: &nriv1beta1.LinuxPodSandbox{
			CgroupParent: "/kubepods/besteffort/pod" + id,
		},
	}
}

func eventCtr(podID, id string) *nriv1beta1.Container {
	return &nriv1beta1.Container{
		Id: id, PodSandboxId: podID, Name: "app",
		State:       nriv1beta1.ContainerState_CONTAINER_STATE_CREATED,
		Labels:      map[string]string{"io.kubernetes.container.name": "app"},
		Annotations: map[string]string{},
		Args:        []string{"/bin/sh", "-c", "sleep infinity"},
		Env:         []string{"PATH=/usr/bin:/bin", "HOME=/root"},
		Mounts:      []*nriv1beta1.Mount{{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev"}}},
		Linux: &nriv1beta1.LinuxContainer{
			Resources: &nriv1beta1.LinuxResources{
				Cpu:    &nriv1beta1.LinuxCPU{Shares: u64(1024)},
				Memory: &nriv1beta1.LinuxMemory{Limit: i64(256 << 20)},
			},
			CgroupsPath: "/kubepods/besteffort/pod" + podID + "/" + id,
		},
	}
}
