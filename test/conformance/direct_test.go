package conformance_test

import (
	"context"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// directEnv drives the server through its Go API: the runtime is embedded.
type directEnv struct {
	*base
	rt *directRuntime
}

// directRuntime is the embedding runtime's side of unsolicited updates.
type directRuntime struct{ b *base }

func (r *directRuntime) UpdateContainers(_ context.Context, plugin string, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	fu, fe := r.b.apply(plugin, updates, evictions)
	return fu, fe, nil
}

// direct is the setup of the direct path: server.Server's Go API, plugins
// registering over a real RuntimeService socket.
func direct(t conformance.T, o conformance.Options) (conformance.Env, error) {
	b, err := newBase(t, o)
	if err != nil {
		return nil, err
	}
	e := &directEnv{base: b, rt: &directRuntime{b: b}}
	e.SetState(t, nil, nil)
	return e, nil
}

func (e *directEnv) Runtime() conformance.Runtime { return serverRuntime{e.srv} }

func (e *directEnv) SetState(t conformance.T, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) {
	t.Helper()
	info := server.RuntimeInfo{Name: e.o.RuntimeName, Version: e.o.RuntimeVersion}
	if err := e.srv.SetRuntime(context.Background(), info, e.rt, pods, ctrs); err != nil {
		t.Fatal(err)
	}
}

func TestDirect(t *testing.T) { conformance.Run(t, direct) }

// serverRuntime is the server's Go API as the conformance Runtime: the
// same methods, without per-event options.
type serverRuntime struct{ s *server.Server }

func (r serverRuntime) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) error {
	return r.s.RunPodSandbox(ctx, req)
}

func (r serverRuntime) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) error {
	return r.s.UpdatePodSandbox(ctx, req)
}

func (r serverRuntime) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.PostUpdatePodSandbox(ctx, req)
}

func (r serverRuntime) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.StopPodSandbox(ctx, req)
}

func (r serverRuntime) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.RemovePodSandbox(ctx, req)
}

func (r serverRuntime) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	return r.s.CreateContainer(ctx, req)
}

func (r serverRuntime) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.PostCreateContainer(ctx, req)
}

func (r serverRuntime) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) error {
	return r.s.StartContainer(ctx, req)
}

func (r serverRuntime) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.PostStartContainer(ctx, req)
}

func (r serverRuntime) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.AdaptationServiceUpdateContainerResponse, error) {
	return r.s.UpdateContainer(ctx, req)
}

func (r serverRuntime) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.PostUpdateContainer(ctx, req)
}

func (r serverRuntime) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.AdaptationServiceStopContainerResponse, error) {
	return r.s.StopContainer(ctx, req)
}

func (r serverRuntime) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) ([]*nriv1beta1.PluginError, error) {
	return r.s.RemoveContainer(ctx, req)
}
