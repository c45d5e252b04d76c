package bench

import (
	"context"
	"flag"
	"sync/atomic"
	"time"

	api "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

// runClassicPlugin is a classic plugin: upstream pkg/stub over ttrpc,
// connected to a classic runtime's socket.
func runClassicPlugin(args []string) error {
	var f pluginFlags
	fs := flag.NewFlagSet(roleClassicPlugin, flag.ContinueOnError)
	f.register(fs)
	sock := fs.String("socket", "", "the classic runtime's NRI socket")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c := newCtl(f.profile)
	p := &classicPlugin{ctl: c, events: api.EventMask(f.events)}
	p.annotation, p.env = adjustKey(f.idx)
	closed := make(chan struct{})
	st, err := stub.New(p,
		stub.WithPluginName(f.name),
		stub.WithPluginIdx(f.idx),
		stub.WithSocketPath(*sock),
		stub.WithLogger(quietNRILog{}),
		stub.WithOnClose(func() { close(closed) }),
	)
	if err != nil {
		return err
	}
	if err := c.waitGo(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = st.Start(ctx)
	cancel()
	if err != nil {
		return err
	}
	c.say("registered")
	c.serve()
	st.Stop()
	return nil
}

// classicPlugin handles every lifecycle event; Configure subscribes it to
// the scenario's. Every handler touches the whole request (ttrpc already
// decoded all of it).
type classicPlugin struct {
	ctl             *ctl
	events          api.EventMask
	annotation, env string
	sink            atomic.Int64
}

func (p *classicPlugin) touch(pod *api.PodSandbox, ctr *api.Container) {
	p.sink.Add(int64(pod.SizeVT() + ctr.SizeVT()))
}

func (p *classicPlugin) Configure(context.Context, string, string, string) (api.EventMask, error) {
	return p.events, nil
}

func (p *classicPlugin) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	n := 0
	for _, pod := range pods {
		n += pod.SizeVT()
	}
	for _, c := range ctrs {
		n += c.SizeVT()
	}
	p.sink.Add(int64(n))
	p.ctl.say("synced %d", len(pods)+len(ctrs))
	return nil, nil
}

func (p *classicPlugin) Shutdown(context.Context) {}

func (p *classicPlugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.touch(pod, nil)
	return nil
}

func (p *classicPlugin) UpdatePodSandbox(_ context.Context, pod *api.PodSandbox, _, _ *api.LinuxResources) error {
	p.touch(pod, nil)
	return nil
}

func (p *classicPlugin) PostUpdatePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.touch(pod, nil)
	return nil
}

func (p *classicPlugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.touch(pod, nil)
	return nil
}

func (p *classicPlugin) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.touch(pod, nil)
	return nil
}

func (p *classicPlugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.touch(pod, ctr)
	adj := &api.ContainerAdjustment{}
	adj.AddAnnotation(p.annotation, "1")
	adj.AddEnv(p.env, "1")
	return adj, nil, nil
}

func (p *classicPlugin) PostCreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.touch(pod, ctr)
	return nil
}

func (p *classicPlugin) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.touch(pod, ctr)
	return nil
}

func (p *classicPlugin) PostStartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.touch(pod, ctr)
	return nil
}

func (p *classicPlugin) UpdateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	p.touch(pod, ctr)
	return nil, nil
}

func (p *classicPlugin) PostUpdateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.touch(pod, ctr)
	return nil
}

func (p *classicPlugin) StopContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	p.touch(pod, ctr)
	return nil, nil
}

func (p *classicPlugin) RemoveContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.touch(pod, ctr)
	return nil
}
