package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/grpcreg"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/server/validate"
	"github.com/nri-grpc/nri-grpc/transport"
)

// wait bounds anything a test waits for: the time left before the test
// binary's deadline (internal/testwait), so a loaded machine slows a test
// down instead of failing it.
func wait() time.Duration { return testwait.Bound() }

// harness is a real server on a unix socket with real plugins.
type harness struct {
	t         *testing.T
	srv       *server.Server
	sock      string
	pluginDir string
	log       *testplugin.Log
	rt        *fakeRuntime
}

// testLogger logs through t while the test runs.
func testLogger(t *testing.T) *slog.Logger { return testplugin.Logger(t) }

func newHarness(t *testing.T, opts ...server.Option) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	pluginDir := filepath.Join(dir, "p")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	all := append([]server.Option{
		server.WithPluginSocketDir(pluginDir),
		server.WithDialer(transport.NewDialer()),
		server.WithLogger(testLogger(t)),
		server.WithRuntime("test-runtime", "v0"),
		server.WithNodeName("node-1"),
	}, opts...)
	srv, err := server.New(all...)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "nri.sock")
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(transport.UnixCredentials()), codec.ServerOption())
	nriv1beta1.RegisterRuntimeServiceServer(grpcreg.Registrar(g), srv.RuntimeService())
	nriv1beta1.RegisterAdaptationServiceServer(grpcreg.Registrar(g), srv.AdaptationService())
	go func() { _ = g.Serve(lis) }()
	h := &harness{t: t, srv: srv, sock: sock, pluginDir: pluginDir, log: testplugin.NewLog(), rt: &fakeRuntime{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait())
		defer cancel()
		_ = srv.Shutdown(ctx)
		g.Stop()
		_ = os.RemoveAll(dir)
	})
	return h
}

// attach attaches the fake runtime with the given state.
func (h *harness) attach(pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) {
	h.t.Helper()
	if err := h.srv.SetRuntime(context.Background(), server.RuntimeInfo{Name: "test-runtime", Version: "v1"}, h.rt, pods, ctrs); err != nil {
		h.t.Fatal(err)
	}
}

// plugin starts and registers a test plugin sharing the harness log.
func (h *harness) plugin(idx, name string, set func(*testplugin.Plugin)) *testplugin.Plugin {
	h.t.Helper()
	p, err := h.tryPlugin(idx, name, set)
	if err != nil {
		h.t.Fatalf("registering %s-%s: %v", idx, name, err)
	}
	return p
}

func (h *harness) tryPlugin(idx, name string, set func(*testplugin.Plugin)) (*testplugin.Plugin, error) {
	p := &testplugin.Plugin{Name: name, Index: idx, Log: h.log}
	if set != nil {
		set(p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	_, err := p.Start(ctx, h.sock, h.pluginDir)
	h.t.Cleanup(p.Stop)
	return p, err
}

// ctx returns a context bounded by wait.
func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	h.t.Cleanup(cancel)
	return ctx
}

// adaptation returns an AdaptationService client.
func (h *harness) adaptation() nriv1beta1.AdaptationServiceClient {
	cc, err := grpc.NewClient("unix://"+h.sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { cc.Close() })
	return nriv1beta1.NewAdaptationServiceClient(cc)
}

// runtimeClient returns a RuntimeService client, for requests no test
// plugin would send.
func (h *harness) runtimeClient() nriv1beta1.RuntimeServiceClient {
	cc, err := grpc.NewClient("unix://"+h.sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { cc.Close() })
	return nriv1beta1.NewRuntimeServiceClient(cc)
}

// lifecycle drives a pod with one container through every event, as
// classic NRI's test suite does, and fails the test on any error.
func (h *harness) lifecycle(n int) {
	h.t.Helper()
	if err := h.runLifecycle(n); err != nil {
		h.t.Fatal(err)
	}
}

// runLifecycle is lifecycle returning the first error; safe to call from
// several goroutines.
func (h *harness) runLifecycle(n int) (first error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	pod := fixture.Pod(n)
	ctr := fixture.Container(n, 0)
	must := func(what string, err error) {
		if err != nil && first == nil {
			first = fmt.Errorf("%s: %w", what, err)
		}
	}
	must("RunPodSandbox", h.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}))
	must("UpdatePodSandbox", h.srv.UpdatePodSandbox(ctx, &nriv1beta1.UpdatePodSandboxRequest{Pod: pod}))
	_, err := h.srv.PostUpdatePodSandbox(ctx, &nriv1beta1.PostUpdatePodSandboxRequest{Pod: pod})
	must("PostUpdatePodSandbox", err)
	_, err = h.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr})
	must("CreateContainer", err)
	_, err = h.srv.PostCreateContainer(ctx, &nriv1beta1.PostCreateContainerRequest{Pod: pod, Container: ctr})
	must("PostCreateContainer", err)
	must("StartContainer", h.srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: pod, Container: ctr}))
	_, err = h.srv.PostStartContainer(ctx, &nriv1beta1.PostStartContainerRequest{Pod: pod, Container: ctr})
	must("PostStartContainer", err)
	_, err = h.srv.UpdateContainer(ctx, &nriv1beta1.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: &nriv1beta1.LinuxResources{}})
	must("UpdateContainer", err)
	_, err = h.srv.PostUpdateContainer(ctx, &nriv1beta1.PostUpdateContainerRequest{Pod: pod, Container: ctr})
	must("PostUpdateContainer", err)
	_, err = h.srv.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: pod, Container: ctr})
	must("StopContainer", err)
	_, err = h.srv.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: ctr})
	must("RemoveContainer", err)
	_, err = h.srv.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: pod})
	must("StopPodSandbox", err)
	_, err = h.srv.RemovePodSandbox(ctx, &nriv1beta1.RemovePodSandboxRequest{Pod: pod})
	must("RemovePodSandbox", err)
	return first
}

// lifecycleEvents are the methods lifecycle calls, in order.
var lifecycleEvents = []string{
	"RunPodSandbox", "UpdatePodSandbox", "PostUpdatePodSandbox", "CreateContainer", "PostCreateContainer",
	"StartContainer", "PostStartContainer", "UpdateContainer", "PostUpdateContainer", "StopContainer",
	"RemoveContainer", "StopPodSandbox", "RemovePodSandbox",
}

// withValidation is lifecycleEvents as a plugin subscribed to everything
// sees them: validation follows CreateContainer.
var withValidation = append(append(append([]string{}, lifecycleEvents[:4]...), "ValidateContainerAdjustment"), lifecycleEvents[4:]...)

// fakeRuntime records unsolicited updates.
type fakeRuntime struct {
	mu      sync.Mutex
	updates []*nriv1beta1.ContainerUpdate
	evicts  []*nriv1beta1.ContainerEviction
	fail    map[string]bool
	applied chan struct{}
}

func (r *fakeRuntime) UpdateContainers(_ context.Context, _ string, u []*nriv1beta1.ContainerUpdate, e []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u...)
	r.evicts = append(r.evicts, e...)
	var failed []*nriv1beta1.ContainerUpdate
	for _, x := range u {
		if r.fail[x.GetContainerId()] {
			failed = append(failed, x)
		}
	}
	if r.applied != nil {
		select {
		case r.applied <- struct{}{}:
		default:
		}
	}
	return failed, nil, nil
}

func (r *fakeRuntime) got() ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*nriv1beta1.ContainerUpdate(nil), r.updates...), append([]*nriv1beta1.ContainerEviction(nil), r.evicts...)
}

// only subscribes a test plugin to the given events.
func only(events ...nriv1beta1.Event) func(*testplugin.Plugin) {
	return func(p *testplugin.Plugin) { p.Events = nri.EventMask(events...) }
}

func eq[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// runtimeClient returns a RuntimeService client.
func runtimeClient(h *harness) nriv1beta1.RuntimeServiceClient {
	cc, err := grpc.NewClient("unix://"+h.sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { cc.Close() })
	return nriv1beta1.NewRuntimeServiceClient(cc)
}

// registerRaw opens a registration session by hand and returns its first
// message or error.
func registerRaw(h *harness, req *nriv1beta1.RegisterPluginRequest) (*nriv1beta1.RegisterPluginResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	stream, err := runtimeClient(h).RegisterPlugin(ctx, req)
	if err != nil {
		return nil, err
	}
	return stream.Recv()
}

func withInstance(ctx context.Context, id string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, nri.MetadataInstanceID, id)
}

func validateRequired(names ...string) validate.Config {
	return validate.Config{RequiredPlugins: names}
}
