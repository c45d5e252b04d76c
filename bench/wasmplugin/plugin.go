// Command wasmplugin is nribench's WebAssembly NRI plugin, built for upstream
// NRI's WASM ABI (github.com/containerd/nri/pkg/api) by the wasm scenario:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o 00-bench ./bench/wasmplugin
//
// It does the work of the benchmark's other plugins: subscribed to
// CreateContainer only, it answers with the annotation and the env variable
// its configuration names, each set to "1", so that K copies of the module
// merge without conflicts; every handler touches the whole request (its
// encoded size), as the process plugins do. Its configuration string is
// JSON: {"annotation": "...", "env": "..."}, both required.
//
// The logic in this file has no build constraint, so that its tests run
// natively; main_wasip1.go registers it with the WASM ABI.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/containerd/nri/pkg/api"
)

// maxKey is the longest annotation or env name accepted, in bytes.
const maxKey = 253

// config is the plugin's configuration.
type config struct {
	// Annotation is the annotation CreateContainer adds.
	Annotation string `json:"annotation"`
	// Env is the environment variable CreateContainer adds.
	Env string `json:"env"`
}

// parseConfig parses and checks a configuration string.
func parseConfig(s string) (config, error) {
	var cfg config
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return config{}, fmt.Errorf("invalid configuration: %w", err)
	}
	if dec.More() {
		return config{}, errors.New("invalid configuration: data after the JSON object")
	}
	for _, f := range []struct{ name, v string }{{"annotation", cfg.Annotation}, {"env", cfg.Env}} {
		if f.v == "" || len(f.v) > maxKey || strings.ContainsAny(f.v, "=\x00") {
			return config{}, fmt.Errorf("invalid configuration: %s must be 1 to %d bytes without '=' or NUL", f.name, maxKey)
		}
	}
	return cfg, nil
}

// plugin is the benchmark plugin. NRI calls it one request at a time.
type plugin struct {
	cfg config
	// sink accumulates the sizes of what the handlers touched, so that the
	// compiler keeps the work.
	sink int
}

var _ api.Plugin = (*plugin)(nil)

// touch adds the encoded sizes of a pod and a container to the sink.
func (p *plugin) touch(pod *api.PodSandbox, ctr *api.Container) {
	p.sink += pod.SizeVT() + ctr.SizeVT()
}

// Configure applies the configuration and subscribes to CreateContainer.
func (p *plugin) Configure(_ context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	cfg, err := parseConfig(req.GetConfig())
	if err != nil {
		return nil, err
	}
	p.cfg = cfg
	return &api.ConfigureResponse{Events: int32(api.MustParseEventMask("CreateContainer"))}, nil
}

// CreateContainer answers the configured annotation and env variable.
func (p *plugin) CreateContainer(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	adj := &api.ContainerAdjustment{}
	adj.AddAnnotation(p.cfg.Annotation, "1")
	adj.AddEnv(p.cfg.Env, "1")
	return &api.CreateContainerResponse{Adjust: adj}, nil
}

// Synchronize touches every pod and container and updates none.
func (p *plugin) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	for _, pod := range req.GetPods() {
		p.touch(pod, nil)
	}
	for _, ctr := range req.GetContainers() {
		p.touch(nil, ctr)
	}
	return &api.SynchronizeResponse{}, nil
}

// Shutdown does nothing.
func (p *plugin) Shutdown(context.Context, *api.Empty) (*api.Empty, error) { return &api.Empty{}, nil }

// RunPodSandbox touches the pod.
func (p *plugin) RunPodSandbox(_ context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	p.touch(req.GetPod(), nil)
	return &api.RunPodSandboxResponse{}, nil
}

// UpdatePodSandbox touches the pod and changes nothing.
func (p *plugin) UpdatePodSandbox(_ context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	p.touch(req.GetPod(), nil)
	return &api.UpdatePodSandboxResponse{}, nil
}

// PostUpdatePodSandbox touches the pod.
func (p *plugin) PostUpdatePodSandbox(_ context.Context, req *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	p.touch(req.GetPod(), nil)
	return &api.PostUpdatePodSandboxResponse{}, nil
}

// StopPodSandbox touches the pod.
func (p *plugin) StopPodSandbox(_ context.Context, req *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	p.touch(req.GetPod(), nil)
	return &api.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox touches the pod.
func (p *plugin) RemovePodSandbox(_ context.Context, req *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	p.touch(req.GetPod(), nil)
	return &api.RemovePodSandboxResponse{}, nil
}

// PostCreateContainer touches the pod and the container.
func (p *plugin) PostCreateContainer(_ context.Context, req *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &api.PostCreateContainerResponse{}, nil
}

// StartContainer touches the pod and the container.
func (p *plugin) StartContainer(_ context.Context, req *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &api.StartContainerResponse{}, nil
}

// PostStartContainer touches the pod and the container.
func (p *plugin) PostStartContainer(_ context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &api.PostStartContainerResponse{}, nil
}

// UpdateContainer touches the pod and the container and changes nothing.
func (p *plugin) UpdateContainer(_ context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &api.UpdateContainerResponse{}, nil
}

// PostUpdateContainer touches the pod and the container.
func (p *plugin) PostUpdateContainer(_ context.Context, req *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &api.PostUpdateContainerResponse{}, nil
}

// StopContainer touches the pod and the container and updates nothing.
func (p *plugin) StopContainer(_ context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &api.StopContainerResponse{}, nil
}

// RemoveContainer touches the pod and the container.
func (p *plugin) RemoveContainer(_ context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	p.touch(req.GetPod(), req.GetContainer())
	return &api.RemoveContainerResponse{}, nil
}

// StateChange is not subscribed to; it answers an empty response.
func (p *plugin) StateChange(context.Context, *api.StateChangeEvent) (*api.Empty, error) {
	return &api.Empty{}, nil
}

// ValidateContainerAdjustment accepts every adjustment.
func (p *plugin) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return &api.ValidateContainerAdjustmentResponse{}, nil
}
