package adaptation_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	upstream "github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"
	validator "github.com/containerd/nri/plugins/default-validator/builtin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nri-grpc/nri-grpc/adaptation"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// Pods and containers of the tests.
func pod(n string) *api.PodSandbox {
	return &api.PodSandbox{Id: "pod-" + n, Name: "pod" + n, Uid: "uid-" + n, Namespace: "default",
		Labels: map[string]string{"app": "a" + n}, Annotations: map[string]string{"pod.note": n}}
}

func ctr(p *api.PodSandbox, n string) *api.Container {
	return &api.Container{Id: "ctr-" + n, PodSandboxId: p.Id, Name: "c" + n, State: api.ContainerState_CONTAINER_CREATED,
		Env: []string{"PATH=/bin"}, Annotations: map[string]string{"ctr.note": n},
		Linux: &api.LinuxContainer{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(512)}}}}
}

// injector adjusts what upstream's sample plugins adjust: an env var, an
// annotation, a bind mount, a device, an rlimit, CPU shares.
type injector struct {
	base
	tag string
}

func (p *injector) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	a := &api.ContainerAdjustment{}
	a.AddEnv("INJECTED_"+strings.ToUpper(p.tag), p.tag)
	a.AddAnnotation("injected."+p.tag, c.GetId())
	a.AddMount(&api.Mount{Source: "/srv/" + p.tag, Destination: "/mnt/" + p.tag, Type: "bind", Options: []string{"bind", "ro"}})
	a.AddDevice(&api.LinuxDevice{Path: "/dev/" + p.tag, Type: "c", Major: 1, Minor: 3, FileMode: api.FileMode(0o666)})
	if p.tag == "alpha" { // one plugin: a second would conflict
		a.AddRlimit("RLIMIT_NOFILE", 4096, 1024)
		a.SetLinuxCPUShares(1024)
	}
	return a, nil, nil
}

// rejecter is a validator rejecting every adjustment that sets env var key.
type rejecter struct {
	base
	key string
}

func (p *rejecter) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	for _, e := range req.GetAdjust().GetEnv() {
		if e.GetKey() == p.key {
			return errors.New("env " + p.key + " is not allowed here")
		}
	}
	return nil
}

// hooker injects an OCI hook.
type hooker struct{ base }

func (p *hooker) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	a := &api.ContainerAdjustment{}
	a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/bin/true"}}})
	return a, nil, nil
}

// TestSameAdjustmentsAsUpstream: the same classic plugins give the runtime
// the same CreateContainer answer from the drop-in as from upstream.
func TestSameAdjustmentsAsUpstream(t *testing.T) {
	got := map[impl]*api.CreateContainerResponse{}
	for _, i := range both {
		e := start(t, i, setup{}, nil)
		stubPlugin(t, e, "alpha", "10", &injector{base: newBase(), tag: "alpha"})
		stubPlugin(t, e, "beta", "20", &injector{base: newBase(), tag: "beta"})
		p := pod("1")
		ctx := context.Background()
		if err := e.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: p}); err != nil {
			t.Fatalf("%s: RunPodSandbox: %v", i, err)
		}
		rsp, err := e.CreateContainer(ctx, &api.CreateContainerRequest{Pod: p, Container: ctr(p, "1")})
		if err != nil {
			t.Fatalf("%s: CreateContainer: %v", i, err)
		}
		got[i] = rsp
	}
	if !proto.Equal(fixture.Stripped(got[upstreamImpl]), fixture.Stripped(got[dropIn])) {
		t.Fatalf("CreateContainer answers differ:\nupstream: %v\ndrop-in:  %v", got[upstreamImpl], got[dropIn])
	}
	if got[dropIn].GetAdjust().GetAnnotations()["injected.beta"] != "ctr-1" {
		t.Fatalf("no adjustment: %v", got[dropIn])
	}
}

// setter sets annotation "same" (two of them conflict).
type setter struct{ base }

func (p *setter) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	a := &api.ContainerAdjustment{}
	a.AddAnnotation("same", "x")
	return a, nil, nil
}

// vetoer fails every CreateContainer with a status of its own.
type vetoer struct{ base }

func (p *vetoer) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, status.Error(codes.PermissionDenied, "not on this node")
}

// TestErrorsReadAsUpstream: a classic validator's rejection, the default
// validator's (a knob, a required plugin), a conflict between plugins and
// a plugin's veto fail the creation with upstream's error: the same text
// and the same status code, which runtimes pass on (containerd's CRI keeps
// a status's code).
func TestErrorsReadAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup setup
		start func(t *testing.T, e *env)
	}{
		{"classic validator", setup{}, func(t *testing.T, e *env) {
			stubPlugin(t, e, "alpha", "10", &injector{base: newBase(), tag: "alpha"})
			stubPlugin(t, e, "guard", "90", &rejecter{base: newBase(), key: "INJECTED_ALPHA"})
		}},
		{"default validator", setup{validator: &validator.DefaultValidatorConfig{Enable: true, RejectOCIHookAdjustment: true}},
			func(t *testing.T, e *env) { stubPlugin(t, e, "hooks", "10", &hooker{base: newBase()}) }},
		{"default validator, required plugin", setup{validator: &validator.DefaultValidatorConfig{Enable: true, RequiredPlugins: []string{"absent"}}},
			func(t *testing.T, e *env) { stubPlugin(t, e, "alpha", "10", &injector{base: newBase(), tag: "alpha"}) }},
		{"conflict", setup{}, func(t *testing.T, e *env) {
			stubPlugin(t, e, "first", "10", &setter{base: newBase()})
			stubPlugin(t, e, "second", "20", &setter{base: newBase()})
		}},
		{"veto", setup{}, func(t *testing.T, e *env) { stubPlugin(t, e, "veto", "10", &vetoer{base: newBase()}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := map[impl]error{}
			for _, i := range both {
				e := start(t, i, tc.setup, nil)
				tc.start(t, e)
				p := pod("1")
				if err := e.RunPodSandbox(context.Background(), &api.RunPodSandboxRequest{Pod: p}); err != nil {
					t.Fatalf("%s: RunPodSandbox: %v", i, err)
				}
				_, err := e.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: p, Container: ctr(p, "1")})
				if err == nil {
					t.Fatalf("%s: the creation was not rejected", i)
				}
				errs[i] = err
			}
			u, d := errs[upstreamImpl], errs[dropIn]
			if u.Error() != d.Error() || status.Code(u) != status.Code(d) {
				t.Fatalf("the errors differ:\nupstream: %v (%v)\ndrop-in:  %v (%v)", u, status.Code(u), d, status.Code(d))
			}
		})
	}
}

// TestBuiltinPluginAsUpstream: a builtin plugin is called in process, in
// index order with the classic plugins, with the same result.
func TestBuiltinPluginAsUpstream(t *testing.T) {
	got := map[impl]*api.CreateContainerResponse{}
	for _, i := range both {
		var mu sync.Mutex
		var seen []string
		b := &builtin.BuiltinPlugin{Base: "inproc", Index: "05", Handlers: builtin.BuiltinHandlers{
			CreateContainer: func(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
				mu.Lock()
				seen = append(seen, req.GetContainer().GetId())
				mu.Unlock()
				a := &api.ContainerAdjustment{}
				a.AddAnnotation("builtin", "yes")
				return &api.CreateContainerResponse{Adjust: a}, nil
			},
		}}
		e := start(t, i, setup{builtins: []*builtin.BuiltinPlugin{b}}, nil)
		p := pod("1")
		rsp, err := e.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: p, Container: ctr(p, "1")})
		if err != nil {
			t.Fatalf("%s: %v", i, err)
		}
		mu.Lock()
		if !slices.Equal(seen, []string{"ctr-1"}) {
			t.Fatalf("%s: the builtin plugin saw %v", i, seen)
		}
		mu.Unlock()
		got[i] = rsp
	}
	if !proto.Equal(fixture.Stripped(got[upstreamImpl]), fixture.Stripped(got[dropIn])) {
		t.Fatalf("answers differ:\nupstream: %v\ndrop-in:  %v", got[upstreamImpl], got[dropIn])
	}
}

// syncRecorder records the state it is synchronized with and asks for an
// update of every container in it.
type syncRecorder struct {
	base
	mu   sync.Mutex
	pods []string
	ctrs []string
}

func (p *syncRecorder) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	p.mu.Lock()
	for _, x := range pods {
		p.pods = append(p.pods, x.GetId())
	}
	var ups []*api.ContainerUpdate
	for _, c := range ctrs {
		p.ctrs = append(p.ctrs, c.GetId())
		u := &api.ContainerUpdate{ContainerId: c.GetId()}
		u.SetLinuxCPUShares(2048)
		ups = append(ups, u)
	}
	p.mu.Unlock()
	_, _ = p.base.Synchronize(ctx, pods, ctrs)
	return ups, nil
}

// RunPodSandbox implements stub.RunPodInterface (a stub needs a handler
// besides Synchronize).
func (p *syncRecorder) RunPodSandbox(context.Context, *api.PodSandbox) error { return nil }

// TestSynchronizedWithTheRuntimesState: a plugin registering later is
// synchronized with what the runtime's SyncFn listed at Start and the
// events since, and the updates it asks for reach the runtime's UpdateFn.
func TestSynchronizedWithTheRuntimesState(t *testing.T) {
	p := pod("1")
	c := ctr(p, "1")
	c.State = api.ContainerState_CONTAINER_RUNNING
	rt := &runtime{pods: []*api.PodSandbox{p}, ctrs: []*api.Container{c}}
	e := start(t, dropIn, setup{}, rt)
	// A second pod and container, created through events after Start.
	p2 := pod("2")
	ctx := context.Background()
	if err := e.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: p2}); err != nil {
		t.Fatal(err)
	}
	c2 := ctr(p2, "2")
	if _, err := e.CreateContainer(ctx, &api.CreateContainerRequest{Pod: p2, Container: c2}); err != nil {
		t.Fatal(err)
	}
	rec := &syncRecorder{base: newBase()}
	stubPlugin(t, e, "rec", "10", rec)
	rec.mu.Lock()
	pods, ctrs := slices.Sorted(slices.Values(rec.pods)), slices.Sorted(slices.Values(rec.ctrs))
	rec.mu.Unlock()
	if !slices.Equal(pods, []string{"pod-1", "pod-2"}) || !slices.Equal(ctrs, []string{"ctr-1", "ctr-2"}) {
		t.Fatalf("synchronized with pods %v, containers %v", pods, ctrs)
	}
	// The synchronization's updates are applied through UpdateFn.
	deadline := time.After(wait())
	for {
		rt.mu.Lock()
		n := len(rt.updates)
		rt.mu.Unlock()
		if n == 2 {
			break
		}
		select {
		case <-rt.updated:
		case <-deadline:
			t.Fatalf("the runtime was asked for %d updates, want 2", n)
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, u := range rt.updates {
		if u.GetLinux().GetResources().GetCpu().GetShares().GetValue() != 2048 {
			t.Fatalf("update %v", u)
		}
	}
}

// recordingMetrics is a Metrics that records the invocations.
type recordingMetrics struct {
	mu    sync.Mutex
	calls []string
	count int
}

func (m *recordingMetrics) RecordPluginInvocation(plugin, op string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := plugin + ":" + op
	if err != nil {
		s += ":failed"
	}
	m.calls = append(m.calls, s)
}
func (m *recordingMetrics) RecordPluginLatency(string, string, time.Duration) {}
func (m *recordingMetrics) RecordPluginAdjustments(string, string, *api.ContainerAdjustment, int, int) {
}
func (m *recordingMetrics) UpdatePluginCount(n int) { m.mu.Lock(); m.count = n; m.mu.Unlock() }

// TestMetricsAsUpstream: the runtime's Metrics hear of the same plugin
// calls under the same names, and the plugin count.
func TestMetricsAsUpstream(t *testing.T) {
	got := map[impl][]string{}
	for _, i := range both {
		m := &recordingMetrics{}
		e := start(t, i, setup{metrics: m}, nil)
		stubPlugin(t, e, "alpha", "10", &injector{base: newBase(), tag: "alpha"})
		p := pod("1")
		if _, err := e.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: p, Container: ctr(p, "1")}); err != nil {
			t.Fatal(err)
		}
		m.mu.Lock()
		got[i] = slices.Clone(m.calls)
		if m.count != 1 {
			t.Errorf("%s: plugin count %d, want 1", i, m.count)
		}
		m.mu.Unlock()
	}
	if !slices.Contains(got[dropIn], "10-alpha:CreateContainer") || !slices.Contains(got[upstreamImpl], "10-alpha:CreateContainer") {
		t.Fatalf("invocations: upstream %v, drop-in %v", got[upstreamImpl], got[dropIn])
	}
}

// TestEventsBeforeStartAndAfterStop reach no plugin and fail nothing, as
// with upstream.
func TestEventsBeforeStartAndAfterStop(t *testing.T) {
	rt := &runtime{}
	a, err := adaptation.New("rt", "1", rt.dropInSyncFn, adaptation.UpdateFn(rt.updateFn))
	if err != nil {
		t.Fatal(err)
	}
	p := pod("1")
	if rsp, err := a.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: p, Container: ctr(p, "1")}); err != nil || rsp == nil {
		t.Fatalf("before Start: %v, %v", rsp, err)
	}
	a.Stop() // not started: nothing to do
	if _, err := upstream.New("rt", "1", nil, rt.updateFn); err == nil {
		t.Fatal("upstream accepted a nil SyncFn")
	}
	if _, err := adaptation.New("rt", "1", nil, adaptation.UpdateFn(rt.updateFn)); err == nil {
		t.Fatal("the drop-in accepted a nil SyncFn")
	}
}
