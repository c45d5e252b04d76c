package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"

	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// `nritest runtime --classic SOCKET`: a test plugin (the classic stub of
// the release nritest links) registers on a runtime's classic NRI socket
// and checks what the runtime sends: Configure (runtime name and version),
// Synchronize (a consistent state), and, while the operator or CI creates
// a pod named -pod-prefix* (-pod-timeout), the events of that pod in
// order and that the plugin's adjustment lands: its CreateContainer adds
// the environment variable NRITEST_ADJUSTED=1, which the runtime must show
// in the container it reports at PostCreateContainer and StartContainer.
// No CRI client is needed; nothing but the pods named so is adjusted.

const adjustedEnv = "NRITEST_ADJUSTED=1"

// classicProbe is the test plugin.
type classicProbe struct {
	prefix string

	mu        sync.Mutex
	runtime   string
	version   string
	pods      int
	ctrs      int
	orphans   []string
	events    []string // "Event pod/ctr" of the watched pods
	adjusted  map[string]bool
	changed   chan struct{}
	configure chan struct{}
	synced    chan struct{}
}

func newClassicProbe(prefix string) *classicProbe {
	return &classicProbe{prefix: prefix, adjusted: map[string]bool{}, changed: make(chan struct{}),
		configure: make(chan struct{}), synced: make(chan struct{})}
}

func (p *classicProbe) note(ev string, pod *api.PodSandbox, ctr *api.Container) {
	if !strings.HasPrefix(pod.GetName(), p.prefix) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	name := pod.GetName()
	if ctr != nil {
		name += "/" + ctr.GetName()
		if ev == "PostCreateContainer" || ev == "StartContainer" {
			p.adjusted[ev+" "+name] = slices.Contains(ctr.GetEnv(), adjustedEnv)
		}
	}
	p.events = append(p.events, ev+" "+name)
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *classicProbe) Configure(_ context.Context, _, runtime, version string) (api.EventMask, error) {
	p.mu.Lock()
	p.runtime, p.version = runtime, version
	p.mu.Unlock()
	close(p.configure)
	return 0, nil
}

func (p *classicProbe) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	ids := map[string]bool{}
	for _, pod := range pods {
		ids[pod.GetId()] = true
	}
	p.mu.Lock()
	p.pods += len(pods)
	p.ctrs += len(ctrs)
	for _, c := range ctrs {
		if !ids[c.GetPodSandboxId()] {
			p.orphans = append(p.orphans, c.GetId())
		}
	}
	p.mu.Unlock()
	select {
	case <-p.synced:
	default:
		close(p.synced)
	}
	return nil, nil
}

func (p *classicProbe) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.note("RunPodSandbox", pod, nil)
	return nil
}

func (p *classicProbe) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.note("CreateContainer", pod, ctr)
	if !strings.HasPrefix(pod.GetName(), p.prefix) {
		return nil, nil, nil
	}
	a := &api.ContainerAdjustment{}
	k, v, _ := strings.Cut(adjustedEnv, "=")
	a.AddEnv(k, v)
	return a, nil, nil
}

func (p *classicProbe) PostCreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.note("PostCreateContainer", pod, ctr)
	return nil
}

func (p *classicProbe) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.note("StartContainer", pod, ctr)
	return nil
}

func (p *classicProbe) PostStartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.note("PostStartContainer", pod, ctr)
	return nil
}

// runClassicRuntime is `nritest runtime --classic`.
func runClassicRuntime(ctx context.Context, o *runtimeOpts, stdout io.Writer) error {
	probe := newClassicProbe(o.podPrefix)
	r := &report{Command: "runtime", Name: "classic", Subject: "classic NRI socket " + o.classic, Started: time.Now()}
	var s stub.Stub
	check := func(name string, run func(ctx context.Context, t conformance.T)) conformance.Check {
		return conformance.Check{ScenarioInfo: conformance.ScenarioInfo{Group: "runtime", Name: name, Origin: conformance.Behaviour}, Run: run}
	}
	wait := func(t conformance.T, ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(conformance.Wait):
			t.Fatalf("%s within %v", what, conformance.Wait)
		}
	}
	checks := []conformance.Check{
		check("registers", func(ctx context.Context, t conformance.T) {
			var err error
			s, err = stub.New(probe, stub.WithSocketPath(o.classic), stub.WithPluginName("nritest"), stub.WithPluginIdx(o.idx),
				stub.WithOnClose(func() {}))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatalf("registering on %s: %v", o.classic, err)
			}
			t.Logf("registered as %s-nritest", o.idx)
		}),
		check("configure", func(_ context.Context, t conformance.T) {
			if s == nil {
				t.Skip("the plugin did not register")
			}
			wait(t, probe.configure, "no Configure")
			probe.mu.Lock()
			defer probe.mu.Unlock()
			if probe.runtime == "" || probe.version == "" {
				t.Errorf("Configure: runtime name %q, version %q; both must be set", probe.runtime, probe.version)
			}
			t.Logf("runtime %s %s", probe.runtime, probe.version)
		}),
		check("synchronize", func(_ context.Context, t conformance.T) {
			if s == nil {
				t.Skip("the plugin did not register")
			}
			wait(t, probe.synced, "no Synchronize")
			probe.mu.Lock()
			defer probe.mu.Unlock()
			if len(probe.orphans) > 0 {
				t.Errorf("containers of pods the state does not have: %v", probe.orphans)
			}
			t.Logf("%d pods, %d containers", probe.pods, probe.ctrs)
		}),
		check("pod-events", func(ctx context.Context, t conformance.T) {
			if s == nil {
				t.Skip("the plugin did not register")
			}
			if o.podWait <= 0 {
				t.Skipf("create a pod named %s* and give -pod-timeout to check its events", o.podPrefix)
			}
			probe.checkPod(ctx, t, o.podWait)
		}),
	}
	r.Report = conformance.ExecuteChecks(ctx, checks, conformance.Parallel(1), conformance.Bound(o.podWait+2*conformance.Wait))
	if s != nil {
		s.Stop()
	}
	return finish(r, o.out, stdout)
}

// podOrder is the order of a pod's first container's events.
var podOrder = []string{"RunPodSandbox", "CreateContainer", "PostCreateContainer", "StartContainer", "PostStartContainer"}

// checkPod waits for a watched pod's first container to be started and
// checks the order of its events and the adjustment.
func (p *classicProbe) checkPod(ctx context.Context, t conformance.T, bound time.Duration) {
	deadline := time.After(bound)
	for {
		p.mu.Lock()
		evs, ch := slices.Clone(p.events), p.changed
		p.mu.Unlock()
		if pod, ctr, ok := started(evs); ok {
			var got []string
			for _, e := range evs {
				name, obj, _ := strings.Cut(e, " ")
				if obj == pod || obj == pod+"/"+ctr {
					got = append(got, name)
				}
			}
			if strings.Join(got, ",") != strings.Join(podOrder, ",") {
				t.Errorf("events of %s: %v, want %v", pod, got, podOrder)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			for _, ev := range []string{"PostCreateContainer", "StartContainer"} {
				if !p.adjusted[ev+" "+pod+"/"+ctr] {
					t.Errorf("the adjustment did not land: %s of %s/%s lacks %s", ev, pod, ctr, adjustedEnv)
				}
			}
			if !t.Failed() {
				t.Logf("pod %s, container %s: events in order, adjustment landed", pod, ctr)
			}
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no pod named %s* started a container within %v (seen: %v)", p.prefix, bound, evs)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
}

// started returns the first pod and container with PostStartContainer.
func started(evs []string) (pod, ctr string, ok bool) {
	for _, e := range evs {
		if name, obj, _ := strings.Cut(e, " "); name == "PostStartContainer" {
			pod, ctr, _ = strings.Cut(obj, "/")
			return pod, ctr, true
		}
	}
	return "", "", false
}
