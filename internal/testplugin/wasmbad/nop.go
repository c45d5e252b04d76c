package main

import (
	"context"

	"github.com/containerd/nri/pkg/api"
)

// nop answers every request of api.Plugin but Configure and CreateContainer
// with an empty response; bad embeds it.
type nop struct{}

// Synchronize answers an empty response.
func (nop) Synchronize(context.Context, *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{}, nil
}

// Shutdown answers an empty response.
func (nop) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	return &api.Empty{}, nil
}

// RunPodSandbox answers an empty response.
func (nop) RunPodSandbox(context.Context, *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return &api.RunPodSandboxResponse{}, nil
}

// UpdatePodSandbox answers an empty response.
func (nop) UpdatePodSandbox(context.Context, *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	return &api.UpdatePodSandboxResponse{}, nil
}

// PostUpdatePodSandbox answers an empty response.
func (nop) PostUpdatePodSandbox(context.Context, *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return &api.PostUpdatePodSandboxResponse{}, nil
}

// StopPodSandbox answers an empty response.
func (nop) StopPodSandbox(context.Context, *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return &api.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox answers an empty response.
func (nop) RemovePodSandbox(context.Context, *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return &api.RemovePodSandboxResponse{}, nil
}

// PostCreateContainer answers an empty response.
func (nop) PostCreateContainer(context.Context, *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return &api.PostCreateContainerResponse{}, nil
}

// StartContainer answers an empty response.
func (nop) StartContainer(context.Context, *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return &api.StartContainerResponse{}, nil
}

// PostStartContainer answers an empty response.
func (nop) PostStartContainer(context.Context, *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return &api.PostStartContainerResponse{}, nil
}

// UpdateContainer answers an empty response.
func (nop) UpdateContainer(context.Context, *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return &api.UpdateContainerResponse{}, nil
}

// PostUpdateContainer answers an empty response.
func (nop) PostUpdateContainer(context.Context, *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return &api.PostUpdateContainerResponse{}, nil
}

// StopContainer answers an empty response.
func (nop) StopContainer(context.Context, *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return &api.StopContainerResponse{}, nil
}

// RemoveContainer answers an empty response.
func (nop) RemoveContainer(context.Context, *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return &api.RemoveContainerResponse{}, nil
}

// StateChange answers an empty response.
func (nop) StateChange(context.Context, *api.StateChangeEvent) (*api.Empty, error) {
	return &api.Empty{}, nil
}

// ValidateContainerAdjustment answers an empty response.
func (nop) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return &api.ValidateContainerAdjustmentResponse{}, nil
}
