package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	api "github.com/containerd/nri/pkg/api"
	"github.com/containerd/ttrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// Side names, as reported.
const (
	sideClassic = "classic"
	sideGRPC    = "nri-grpc"
	sideAS      = "nri-grpc via AdaptationService"
	sideDirect  = "classic → classic plugin"
	sideBridge  = "classic → nrid → gRPC plugin"
)

// pluginMask is a subscription mask in the layout both protocols share.
func pluginMask(events ...nriv1beta1.Event) uint32 { return uint32(nri.EventMask(events...)) }

var (
	maskCreate    = pluginMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
	maskLifecycle = pluginMask(
		nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX,
		nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER,
		nriv1beta1.Event_EVENT_START_CONTAINER, nriv1beta1.Event_EVENT_POST_START_CONTAINER,
		nriv1beta1.Event_EVENT_UPDATE_CONTAINER, nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER,
		nriv1beta1.Event_EVENT_STOP_CONTAINER, nriv1beta1.Event_EVENT_REMOVE_CONTAINER)
)

// longTimeout is the request and registration timeout on both sides: long
// enough that a noisy machine never turns a slow call into a failure.
const longTimeout = 60 * time.Second

func init() {
	adaptation.SetPluginRequestTimeout(longTimeout)
	adaptation.SetPluginRegistrationTimeout(longTimeout)
}

// env is where one setup of one side lives.
type env struct {
	cfg     *Config
	dir     string
	profile string // prefix of CPU profile paths, "" for none
}

func newEnv(cfg *Config, tag string) (*env, error) {
	dir, err := os.MkdirTemp("", "nb-")
	if err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, dir: dir}
	if cfg.CPUProfileDir != "" {
		e.profile = filepath.Join(cfg.CPUProfileDir, sanitize(tag))
	}
	return e, nil
}

func (e *env) close() { _ = os.RemoveAll(e.dir) }

// profArgs returns the -cpuprofile flag for a role process, if profiling.
func (e *env) profArgs(role string) []string {
	if e.profile == "" {
		return nil
	}
	return []string{"-cpuprofile", e.profile + "." + role + ".pprof"}
}

// heapProfile returns a role's heap profile path, if profiling.
func (e *env) heapProfile(role string) string {
	if e.profile == "" {
		return ""
	}
	return e.profile + "." + role + ".heap.pprof"
}

// windowProfile returns the driver's CPU profile path for a window.
func (e *env) windowProfile(window string) string {
	if e.profile == "" {
		return ""
	}
	return e.profile + "." + sanitize(window) + ".driver.pprof"
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		case r == '=':
			return '-'
		}
		return '_'
	}, s)
}

// classicRT is upstream pkg/adaptation in the driver, with classic plugin
// processes.
type classicRT struct {
	e         *env
	a         *adaptation.Adaptation
	sock      string
	pods      []*api.PodSandbox
	ctrs      []*api.Container
	syncBytes atomic.Int64
	plugins   procs
}

// newClassicRT starts a classic runtime whose state is pods and ctrs.
// countSync counts the Synchronize bytes it encodes.
func newClassicRT(e *env, pods []*api.PodSandbox, ctrs []*api.Container, countSync bool) (*classicRT, error) {
	r := &classicRT{e: e, sock: filepath.Join(e.dir, "nri.sock"), pods: pods, ctrs: ctrs}
	syncFn := func(ctx context.Context, cb adaptation.SyncCB) error {
		_, err := cb(ctx, r.pods, r.ctrs)
		return err
	}
	updateFn := func(context.Context, []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) { return nil, nil }
	opts := []adaptation.Option{
		adaptation.WithSocketPath(r.sock),
		adaptation.WithPluginPath(filepath.Join(e.dir, "no-plugins")),
		adaptation.WithPluginConfigPath(filepath.Join(e.dir, "no-conf")),
	}
	if countSync {
		// Every Synchronize payload the runtime marshals, including the
		// oversized first attempt it builds and then splits.
		count := func(ctx context.Context, req *ttrpc.Request, rsp *ttrpc.Response, info *ttrpc.UnaryClientInfo, invoke ttrpc.Invoker) error {
			if strings.HasSuffix(info.FullMethod, "/Synchronize") {
				r.syncBytes.Add(int64(len(req.Payload)))
			}
			return invoke(ctx, req, rsp)
		}
		opts = append(opts, adaptation.WithTTRPCOptions([]ttrpc.ClientOpts{ttrpc.WithUnaryClientInterceptor(count)}, nil))
	}
	a, err := adaptation.New("bench-runtime", "v1.0.0", syncFn, updateFn, opts...)
	if err != nil {
		return nil, err
	}
	if err := a.Start(); err != nil {
		return nil, err
	}
	r.a = a
	return r, nil
}

// startPlugin starts a classic plugin process that waits for go.
func (r *classicRT) startPlugin(i int, events uint32) (*proc, error) {
	return startClassicPlugin(r.e, r.sock, i, events, &r.plugins)
}

// startClassicPlugin starts classic plugin i for the runtime socket sock,
// waiting for go, and adds it to into.
func startClassicPlugin(e *env, sock string, i int, events uint32, into *procs) (*proc, error) {
	idx := fmt.Sprintf("%02d", 10+i)
	args := append([]string{"-socket", sock, "-name", "bench", "-idx", idx, "-events", fmt.Sprint(events)},
		e.profArgs(fmt.Sprintf("classic-plugin-%d", i))...)
	p, err := startProc("classic plugin "+idx, roleClassicPlugin, e.cfg.Verbose, args...)
	if err != nil {
		return nil, err
	}
	*into = append(*into, p)
	return p, nil
}

// connect lets a started plugin connect and waits until the runtime
// dispatches to it.
func (r *classicRT) connect(p *proc) error {
	if err := p.send("go"); err != nil {
		return err
	}
	if _, err := p.expect("synced"); err != nil {
		return err
	}
	r.settled()
	return nil
}

// settled waits until no plugin synchronization is in progress: a plugin
// that reported its synchronization is then in the dispatch list.
func (r *classicRT) settled() { r.a.BlockPluginSync().Unblock() }

// addPlugins connects k classic plugins, one after the other.
func (r *classicRT) addPlugins(k int, events uint32) error {
	for i := 0; i < k; i++ {
		p, err := r.startPlugin(i, events)
		if err != nil {
			return err
		}
		if err := r.connect(p); err != nil {
			return err
		}
	}
	return nil
}

func (r *classicRT) close() {
	r.plugins.stop()
	if r.a != nil {
		r.a.Stop()
	}
}

// grpcRT is the nri-grpc server embedded in the driver, serving
// RuntimeService and AdaptationService on a unix socket, with gRPC plugin
// processes.
type grpcRT struct {
	e         *env
	srv       *server.Server
	g         *grpc.Server
	sock      string
	pluginDir string
	syncBytes *syncCounter
	plugins   procs
	asConn    *grpc.ClientConn
}

// newGRPCRT starts a server attached to a runtime whose state is pods and
// ctrs. countSync counts the Synchronize bytes it encodes.
func newGRPCRT(e *env, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container, countSync bool) (*grpcRT, error) {
	r := &grpcRT{e: e, sock: filepath.Join(e.dir, "nri-grpc.sock"), pluginDir: filepath.Join(e.dir, "p")}
	if err := os.Mkdir(r.pluginDir, 0o755); err != nil {
		return nil, err
	}
	opts := []server.Option{
		server.WithPluginSocketDir(r.pluginDir),
		server.WithDialer(transport.NewDialer()),
		server.WithLogger(discardLogger()),
		server.WithRuntime("bench-runtime", "v1.0.0"),
		server.WithNodeName("bench-node"),
		server.WithRequestTimeout(longTimeout),
		server.WithRegistrationTimeout(longTimeout),
	}
	if countSync {
		r.syncBytes = &syncCounter{}
		opts = append(opts, server.WithDialOptions(grpc.WithStatsHandler(r.syncBytes)))
	}
	srv, err := server.New(opts...)
	if err != nil {
		return nil, err
	}
	r.srv = srv
	if err := srv.SetRuntime(context.Background(), server.RuntimeInfo{Name: "bench-runtime", Version: "v1.0.0"}, nopRuntime{}, pods, ctrs); err != nil {
		return nil, err
	}
	lis, err := sockets.Listen(r.sock, sockets.DefaultListenOptions)
	if err != nil {
		return nil, err
	}
	r.g = grpc.NewServer(append(flowctl.ServerOptions(), grpc.Creds(peercred.Credentials{}), codec.ServerOption())...)
	nriv1beta1.RegisterRuntimeServiceServer(r.g, srv.RuntimeService())
	nriv1beta1.RegisterAdaptationServiceServer(r.g, srv.AdaptationService())
	go func() { _ = r.g.Serve(lis) }()
	return r, nil
}

// startPlugin starts a gRPC plugin process that waits for go.
func (r *grpcRT) startPlugin(i int, events uint32) (*proc, error) {
	return startGRPCPlugin(r.e, r.sock, r.pluginDir, i, events, &r.plugins)
}

func startGRPCPlugin(e *env, sock, dir string, i int, events uint32, into *procs) (*proc, error) {
	idx := fmt.Sprintf("%02d", 10+i)
	args := append([]string{"-server", sock, "-dir", dir, "-name", "bench", "-idx", idx, "-events", fmt.Sprint(events)},
		e.profArgs(fmt.Sprintf("grpc-plugin-%d", i))...)
	p, err := startProc("gRPC plugin "+idx, roleGRPCPlugin, e.cfg.Verbose, args...)
	if err != nil {
		return nil, err
	}
	*into = append(*into, p)
	return p, nil
}

// connect lets a started plugin register and waits until the server
// answered the registration, which it does once the plugin is synchronized
// and receives events.
func connectGRPC(p *proc) error {
	if err := p.send("go"); err != nil {
		return err
	}
	_, err := p.expect("registered")
	return err
}

// addPlugins registers k gRPC plugins, one after the other.
func (r *grpcRT) addPlugins(k int, events uint32) error {
	for i := 0; i < k; i++ {
		p, err := r.startPlugin(i, events)
		if err != nil {
			return err
		}
		if err := connectGRPC(p); err != nil {
			return err
		}
	}
	return nil
}

// adaptation returns an AdaptationService client: the driver as a runtime
// that does not embed the server.
func (r *grpcRT) adaptation() (nriv1beta1.AdaptationServiceClient, error) {
	if r.asConn == nil {
		cc, err := grpc.NewClient("unix://"+r.sock, append(flowctl.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())...)
		if err != nil {
			return nil, err
		}
		r.asConn = cc
	}
	return nriv1beta1.NewAdaptationServiceClient(r.asConn), nil
}

func (r *grpcRT) close() {
	if r.asConn != nil {
		_ = r.asConn.Close()
	}
	if r.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = r.srv.Shutdown(ctx)
		cancel()
	}
	r.plugins.stop()
	if r.g != nil {
		r.g.Stop()
	}
}

// nopRuntime accepts unsolicited updates and does nothing.
type nopRuntime struct{}

func (nopRuntime) UpdateContainers(context.Context, string, []*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	return nil, nil, nil
}

// syncCounter is a gRPC stats handler counting the payload bytes of
// Synchronize messages the server sends.
type syncCounter struct{ n atomic.Int64 }

type syncKey struct{}

func (h *syncCounter) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if strings.HasSuffix(info.FullMethodName, "/Synchronize") {
		return context.WithValue(ctx, syncKey{}, true)
	}
	return ctx
}

func (h *syncCounter) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if out, ok := s.(*stats.OutPayload); ok && ctx.Value(syncKey{}) != nil {
		h.n.Add(int64(out.Length))
	}
}

func (h *syncCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (h *syncCounter) HandleConn(context.Context, stats.ConnStats)                       {}
