package adaptation

import "context"

// Interface is what a runtime calls on NRI: Start, Stop and the thirteen
// events. This package's *Adaptation implements it, and so does upstream's
// pkg/adaptation *Adaptation (the types are the same), so a runtime that
// holds an Interface can choose either at start (nri-grpc's addition to
// upstream's API).
type Interface interface {
	Start() error
	Stop()
	RunPodSandbox(context.Context, *RunPodSandboxRequest) error
	UpdatePodSandbox(context.Context, *UpdatePodSandboxRequest) (*UpdatePodSandboxResponse, error)
	PostUpdatePodSandbox(context.Context, *PostUpdatePodSandboxRequest) error
	StopPodSandbox(context.Context, *StopPodSandboxRequest) error
	RemovePodSandbox(context.Context, *RemovePodSandboxRequest) error
	CreateContainer(context.Context, *CreateContainerRequest) (*CreateContainerResponse, error)
	PostCreateContainer(context.Context, *PostCreateContainerRequest) error
	StartContainer(context.Context, *StartContainerRequest) error
	PostStartContainer(context.Context, *PostStartContainerRequest) error
	UpdateContainer(context.Context, *UpdateContainerRequest) (*UpdateContainerResponse, error)
	PostUpdateContainer(context.Context, *PostUpdateContainerRequest) error
	StopContainer(context.Context, *StopContainerRequest) (*StopContainerResponse, error)
	RemoveContainer(context.Context, *RemoveContainerRequest) error
}

var _ Interface = (*Adaptation)(nil)
