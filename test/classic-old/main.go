// Command classic-old is an NRI plugin built against github.com/containerd/nri
// v0.11.0, a release from before the dedicated lifecycle RPCs of v0.12.0: a
// classic runtime (or nri-grpc's bridge) reaches its RunPodSandbox,
// StartContainer and the other notifications only through the legacy
// StateChange RPC. The bridge tests launch it the classic way and read the
// events it saw from the file named by its configuration.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

type plugin struct {
	mu  sync.Mutex
	out *os.File
}

func (p *plugin) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out != nil {
		fmt.Fprintf(p.out, format+"\n", args...)
	}
}

func (p *plugin) Configure(_ context.Context, config, runtime, version string) (api.EventMask, error) {
	path := strings.TrimSpace(config)
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, err
		}
		p.mu.Lock()
		p.out = f
		p.mu.Unlock()
	}
	p.note("Configure %s %s", runtime, version)
	return 0, nil
}

func (p *plugin) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	p.note("Synchronize %d %d", len(pods), len(ctrs))
	return nil, nil
}

func (p *plugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.note("RunPodSandbox %s", pod.GetId())
	return nil
}

func (p *plugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.note("StopPodSandbox %s", pod.GetId())
	return nil
}

func (p *plugin) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.note("RemovePodSandbox %s", pod.GetId())
	return nil
}

func (p *plugin) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.note("CreateContainer %s", ctr.GetId())
	adjust := &api.ContainerAdjustment{}
	adjust.AddAnnotation("classic-old", "v0.11.0")
	adjust.AddEnv("CLASSIC_OLD", "1")
	return adjust, nil, nil
}

func (p *plugin) PostCreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.note("PostCreateContainer %s", ctr.GetId())
	return nil
}

func (p *plugin) StartContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.note("StartContainer %s", ctr.GetId())
	return nil
}

func (p *plugin) StopContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	p.note("StopContainer %s", ctr.GetId())
	return nil, nil
}

func (p *plugin) RemoveContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.note("RemoveContainer %s", ctr.GetId())
	return nil
}

func main() {
	s, err := stub.New(&plugin{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := s.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
