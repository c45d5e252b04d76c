package conformance

import (
	"context"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// AdaptationRuntime returns the Runtime of a remote runtime: each entry
// point is the AdaptationService call of the server c is connected to.
// The runtime's state and unsolicited updates go over an Attach stream,
// which the caller keeps.
func AdaptationRuntime(c nriv1beta1.AdaptationServiceClient) Runtime { return &adaptationRuntime{c: c} }

// adaptationRuntime maps the entry points onto AdaptationService calls.
type adaptationRuntime struct {
	c nriv1beta1.AdaptationServiceClient
}

func (r *adaptationRuntime) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) error {
	_, err := r.c.RunPodSandbox(ctx, &nriv1beta1.AdaptationServiceRunPodSandboxRequest{Pod: req.GetPod()})
	return err
}

func (r *adaptationRuntime) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) error {
	_, err := r.c.UpdatePodSandbox(ctx, &nriv1beta1.AdaptationServiceUpdatePodSandboxRequest{
		Pod: req.GetPod(), OverheadLinuxResources: req.GetOverheadLinuxResources(), LinuxResources: req.GetLinuxResources(),
	})
	return err
}

func (r *adaptationRuntime) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.PostUpdatePodSandbox(ctx, &nriv1beta1.AdaptationServicePostUpdatePodSandboxRequest{Pod: req.GetPod()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.StopPodSandbox(ctx, &nriv1beta1.AdaptationServiceStopPodSandboxRequest{Pod: req.GetPod()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.RemovePodSandbox(ctx, &nriv1beta1.AdaptationServiceRemovePodSandboxRequest{Pod: req.GetPod()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	return r.c.CreateContainer(ctx, &nriv1beta1.AdaptationServiceCreateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
}

func (r *adaptationRuntime) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.PostCreateContainer(ctx, &nriv1beta1.AdaptationServicePostCreateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) error {
	_, err := r.c.StartContainer(ctx, &nriv1beta1.AdaptationServiceStartContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
	return err
}

func (r *adaptationRuntime) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.PostStartContainer(ctx, &nriv1beta1.AdaptationServicePostStartContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.AdaptationServiceUpdateContainerResponse, error) {
	return r.c.UpdateContainer(ctx, &nriv1beta1.AdaptationServiceUpdateContainerRequest{
		Pod: req.GetPod(), Container: req.GetContainer(), LinuxResources: req.GetLinuxResources(),
	})
}

func (r *adaptationRuntime) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.PostUpdateContainer(ctx, &nriv1beta1.AdaptationServicePostUpdateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
	return rsp.GetPluginErrors(), err
}

func (r *adaptationRuntime) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.AdaptationServiceStopContainerResponse, error) {
	return r.c.StopContainer(ctx, &nriv1beta1.AdaptationServiceStopContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
}

func (r *adaptationRuntime) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) ([]*nriv1beta1.PluginError, error) {
	rsp, err := r.c.RemoveContainer(ctx, &nriv1beta1.AdaptationServiceRemoveContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()})
	return rsp.GetPluginErrors(), err
}
