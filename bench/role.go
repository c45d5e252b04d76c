package bench

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	nrilog "github.com/containerd/nri/pkg/log"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/nri-grpc/nri-grpc/bridge"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// roleEnv names the role of a re-executed benchmark process.
const roleEnv = "NRIBENCH_ROLE"

// Roles a benchmark process can be re-executed in.
const (
	roleGRPCPlugin    = "grpc-plugin"
	roleClassicPlugin = "classic-plugin"
	roleNrid          = "nrid"
	roleRuntime       = "runtime"
)

// RoleMain runs the process as a benchmark role (a plugin, nrid) when it was
// started as one, and then exits; otherwise it returns at once. Call it first
// in main and in TestMain.
func RoleMain() {
	role := os.Getenv(roleEnv)
	if role == "" {
		return
	}
	if err := runRole(role, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "nribench %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runRole(role string, args []string) error {
	// Classic NRI logs through logrus by default; a role's stdout is the
	// control channel and its stderr is for errors only.
	nrilog.Set(quietNRILog{})
	switch role {
	case roleGRPCPlugin:
		return runGRPCPlugin(args)
	case roleClassicPlugin:
		return runClassicPlugin(args)
	case roleNrid:
		return runNrid(args)
	case roleRuntime:
		return runRuntime(args)
	}
	return fmt.Errorf("unknown role %q", role)
}

// ctl is a role's side of the control channel: lines on stdin (commands)
// and stdout (answers and events).
//
// A role prints "ready" once it is set up and waits for "go"; it then
// connects, and reports "registered", "synced <objects>" or "attached" as
// those happen. At any time it answers "cpu" with "cpu <µs of user+system
// CPU>" and "rss" with "rss <VmRSS kB> <VmHWM kB> <heap in use bytes> <live
// heap bytes after a collection>"; it
// exits on "quit" or at the end of stdin.
type ctl struct {
	mu   sync.Mutex
	out  *bufio.Writer
	gone chan struct{} // "go" received
	quit chan struct{} // "quit" received or stdin closed
	// profile is the CPU profile path, started at "go".
	profile string
	prof    *os.File
	// handlers are a role's own commands, by their first word; each runs on
	// the reading goroutine with the command's other words.
	handlers map[string]func(c *ctl, args []string)
}

func newCtl(profile string) *ctl { return newCtlWith(profile, nil) }

// newCtlWith is newCtl with a role's own commands.
func newCtlWith(profile string, handlers map[string]func(c *ctl, args []string)) *ctl {
	c := &ctl{out: bufio.NewWriter(os.Stdout), gone: make(chan struct{}), quit: make(chan struct{}), profile: profile, handlers: handlers}
	go c.read()
	return c
}

func (c *ctl) read() {
	defer close(c.quit)
	in := bufio.NewScanner(os.Stdin)
	started := false
	for in.Scan() {
		switch strings.TrimSpace(in.Text()) {
		case "go":
			if !started {
				started = true
				close(c.gone)
			}
		case "cpu":
			c.say("cpu %d", selfCPU().Microseconds())
		case "rss":
			// As it is, then the live heap: what a collection keeps.
			rss, hwm := procStatus(os.Getpid())
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			inuse := ms.HeapInuse
			runtime.GC()
			runtime.ReadMemStats(&ms)
			c.say("rss %d %d %d %d", rss, hwm, inuse, ms.HeapAlloc)
		case "quit":
			return
		default:
			if f := strings.Fields(in.Text()); len(f) > 0 && c.handlers[f[0]] != nil {
				c.handlers[f[0]](c, f[1:])
			}
		}
	}
}

func (c *ctl) say(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.out, format+"\n", args...)
	_ = c.out.Flush() // fails only when the driver is gone: then stdin ends too, and so do we
}

// waitGo says "ready", waits for "go" and starts the CPU profile.
func (c *ctl) waitGo() error {
	c.say("ready")
	select {
	case <-c.gone:
	case <-c.quit:
		return errors.New("control channel closed before go")
	}
	if c.profile != "" {
		f, err := os.Create(c.profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		c.prof = f
	}
	return nil
}

// serve waits for "quit" or the end of stdin, then stops the profile.
func (c *ctl) serve() {
	<-c.quit
	c.stopProfile()
}

func (c *ctl) stopProfile() {
	if c.prof != nil {
		pprof.StopCPUProfile()
		if err := c.prof.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "nribench: CPU profile:", err)
		}
		c.prof = nil
	}
}

// selfCPU returns the user+system CPU time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatus returns VmRSS and VmHWM of a process in kB.
func procStatus(pid int) (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var v int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &v); err == nil {
			rss = v
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &v); err == nil {
			hwm = v
		}
	}
	return rss, hwm
}

// quietNRILog drops classic NRI's informational logging in every process.
type quietNRILog struct{}

func (quietNRILog) Debugf(context.Context, string, ...interface{}) {}
func (quietNRILog) Infof(context.Context, string, ...interface{})  {}
func (quietNRILog) Warnf(ctx context.Context, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "nri warning: "+format+"\n", args...)
}
func (quietNRILog) Errorf(ctx context.Context, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "nri error: "+format+"\n", args...)
}

// discardLogger is a slog logger that drops everything below errors.
func discardLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// pluginFlags are the flags both plugin roles take.
type pluginFlags struct {
	name, idx string
	events    uint
	profile   string
}

func (f *pluginFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.name, "name", "bench", "plugin name")
	fs.StringVar(&f.idx, "idx", "10", "plugin index")
	fs.UintVar(&f.events, "events", 0, "subscription mask (classic NRI layout: 1<<(event-1))")
	fs.StringVar(&f.profile, "cpuprofile", "", "write a CPU profile from go to quit")
}

// adjustKey is the annotation and env variable a plugin adds: its own, so K
// plugins never conflict.
func adjustKey(idx string) (annotation, env string) {
	return "bench.nri-grpc.io/plugin-" + idx, "BENCH_PLUGIN_" + idx
}

// runGRPCPlugin is a gRPC plugin: the generated PluginService served with
// the project's codec on its own socket, registered through RuntimeService.
func runGRPCPlugin(args []string) error {
	var f pluginFlags
	fs := flag.NewFlagSet(roleGRPCPlugin, flag.ContinueOnError)
	f.register(fs)
	serverSock := fs.String("server", "", "the server's RuntimeService socket")
	dir := fs.String("dir", "", "the server's plugin socket directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c := newCtl(f.profile)
	sock := filepath.Join(*dir, f.idx+"-"+f.name+".sock")
	_ = os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	p := &grpcPlugin{ctl: c, events: int32(f.events)}
	p.annotation, p.env = adjustKey(f.idx)
	g := grpc.NewServer(append(flowctl.ServerOptions(), codec.ServerOption())...)
	nriv1beta1.RegisterPluginServiceServer(g, p)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()

	if err := c.waitGo(); err != nil {
		return err
	}
	cc, err := grpc.NewClient("unix://"+*serverSock, append(flowctl.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())...)
	if err != nil {
		return err
	}
	defer cc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := nriv1beta1.NewRuntimeServiceClient(cc).RegisterPlugin(ctx, &nriv1beta1.RegisterPluginRequest{
		PluginName: f.name,
		PluginIdx:  f.idx,
		NriVersion: "nribench",
		Endpoint:   "unix://" + sock,
		// Up to 16 calls at once, as the concurrent scenarios need; generous
		// timeouts, as on the classic side, so a noisy machine never turns
		// into failures.
		Capabilities: &nriv1beta1.Capabilities{MaxConcurrentCalls: 16},
		Timeouts:     &nriv1beta1.Timeouts{Request: durationpb.New(30 * time.Second), Synchronize: durationpb.New(60 * time.Second)},
	})
	if err != nil {
		return err
	}
	rsp, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("registration: %w", err)
	}
	if rsp.GetRegistered() == nil {
		return fmt.Errorf("registration: unexpected answer %v", rsp)
	}
	c.say("registered")
	go func() {
		for {
			if _, err := stream.Recv(); err != nil {
				return
			}
		}
	}()
	c.serve()
	return nil
}

// grpcPlugin implements PluginService. Every handler touches the whole
// request (the codec already decoded all of it).
type grpcPlugin struct {
	nriv1beta1.UnimplementedPluginServiceServer
	ctl             *ctl
	events          int32
	annotation, env string
	synced          atomic.Int64
	sink            atomic.Int64
}

func (p *grpcPlugin) touch(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) {
	p.sink.Add(int64(pod.SizeVT() + ctr.SizeVT()))
}

func (p *grpcPlugin) Configure(context.Context, *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	return &nriv1beta1.ConfigureResponse{Events: p.events}, nil
}

func (p *grpcPlugin) Synchronize(_ context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	n := 0
	for _, pod := range req.GetPods() {
		n += pod.SizeVT()
	}
	for _, c := range req.GetContainers() {
		n += c.SizeVT()
	}
	p.sink.Add(int64(n))
	total := p.synced.Add(int64(len(req.GetPods()) + len(req.GetContainers())))
	if !req.GetMore() {
		p.ctl.say("synced %d", total)
		p.synced.Store(0)
	}
	return &nriv1beta1.SynchronizeResponse{More: req.GetMore()}, nil
}

func (p *grpcPlugin) Shutdown(context.Context, *nriv1beta1.ShutdownRequest) (*nriv1beta1.ShutdownResponse, error) {
	return &nriv1beta1.ShutdownResponse{}, nil
}

func (p *grpcPlugin) RunPodSandbox(_ context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	p.touch(req.GetPod(), nil)
	return &nriv1beta1.RunPodSandboxResponse{}, nil
}

func (p *grpcPlugin) UpdatePodSandbox(_ context.Context, req *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error) {
	p.touch(req.GetPod(), nil)
	return &nriv1beta1.UpdatePodSandboxResponse{}, nil
}

func (p *grpcPlugin) PostUpdatePodSandbox(_ context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error) {
	p.touch(req.GetPod(), nil)
	return &nriv1beta1.PostUpdatePodSandboxResponse{}, nil
}

func (p *grpcPlugin) StopPodSandbox(_ context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error) {
	p.touch(req.GetPod(), nil)
	return &nriv1beta1.StopPodSandboxResponse{}, nil
}

func (p *grpcPlugin) RemovePodSandbox(_ context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error) {
	p.touch(req.GetPod(), nil)
	return &nriv1beta1.RemovePodSandboxResponse{}, nil
}

func (p *grpcPlugin) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
		Annotations: map[string]string{p.annotation: "1"},
		Env:         []*nriv1beta1.KeyValue{{Key: p.env, Value: "1"}},
	}}, nil
}

func (p *grpcPlugin) PostCreateContainer(_ context.Context, req *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &nriv1beta1.PostCreateContainerResponse{}, nil
}

func (p *grpcPlugin) StartContainer(_ context.Context, req *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &nriv1beta1.StartContainerResponse{}, nil
}

func (p *grpcPlugin) PostStartContainer(_ context.Context, req *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &nriv1beta1.PostStartContainerResponse{}, nil
}

func (p *grpcPlugin) UpdateContainer(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &nriv1beta1.UpdateContainerResponse{}, nil
}

func (p *grpcPlugin) PostUpdateContainer(_ context.Context, req *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &nriv1beta1.PostUpdateContainerResponse{}, nil
}

func (p *grpcPlugin) StopContainer(_ context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &nriv1beta1.StopContainerResponse{}, nil
}

func (p *grpcPlugin) RemoveContainer(_ context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &nriv1beta1.RemoveContainerResponse{}, nil
}

// runNrid is what nrid is with the bridge's runtime side: the server, its
// RuntimeService and AdaptationService on a unix socket, attached to a
// classic runtime's NRI socket as one classic plugin. (cmd/nrid does not
// wire the server yet; this role is the same composition.)
func runNrid(args []string) error {
	fs := flag.NewFlagSet(roleNrid, flag.ContinueOnError)
	runtimeSock := fs.String("runtime-socket", "", "the classic runtime's NRI socket")
	sock := fs.String("socket", "", "the socket to serve RuntimeService on")
	dir := fs.String("dir", "", "the plugin socket directory")
	profile := fs.String("cpuprofile", "", "write a CPU profile from go to quit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c := newCtl(*profile)
	srv, err := server.New(
		server.WithPluginSocketDir(*dir),
		server.WithDialer(transport.NewDialer()),
		server.WithLogger(discardLogger()),
		server.WithNodeName("bench-node"),
	)
	if err != nil {
		return err
	}
	lis, err := sockets.Listen(*sock, sockets.DefaultListenOptions)
	if err != nil {
		return err
	}
	g := grpc.NewServer(append(flowctl.ServerOptions(), grpc.Creds(peercred.Credentials{}), codec.ServerOption())...)
	nriv1beta1.RegisterRuntimeServiceServer(g, srv.RuntimeService())
	nriv1beta1.RegisterAdaptationServiceServer(g, srv.AdaptationService())
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()

	if err := c.waitGo(); err != nil {
		return err
	}
	rs, err := bridge.NewRuntimeSide(srv, bridge.WithRuntimeSocket(*runtimeSock), bridge.WithRuntimeLogger(discardLogger()),
		bridge.WithReconnectBackoff(10*time.Millisecond, 100*time.Millisecond))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rs.Run(ctx); close(done) }()
	select {
	case <-rs.Synchronized():
		c.say("attached")
	case <-time.After(2 * time.Minute):
		cancel()
		return errors.New("the bridge did not attach to the classic runtime")
	}
	c.serve()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = srv.Shutdown(sctx)
	scancel()
	cancel()
	<-done
	return nil
}
