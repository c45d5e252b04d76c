package conformance

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// One scenario per deliberate change of nri-grpc from classic NRI (DESIGN
// §5), named after the change. The tolerate-missing-plugins change (§5.3)
// and the override changes of §5.5 are in the Validation and
// ContainerCreationAdjustments groups.

// notify sends a notification or teardown event and returns the plugin
// errors reported with it.
func (s *S) notify(event string, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) ([]*nriv1beta1.PluginError, error) {
	rt, ctx := s.RT(), s.ctx
	p, c := clone(pod), clone(ctr)
	switch event {
	case "PostUpdatePodSandbox":
		return rt.PostUpdatePodSandbox(ctx, &nriv1beta1.PostUpdatePodSandboxRequest{Pod: p})
	case "StopPodSandbox":
		return rt.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: p})
	case "RemovePodSandbox":
		return rt.RemovePodSandbox(ctx, &nriv1beta1.RemovePodSandboxRequest{Pod: p})
	case "PostCreateContainer":
		return rt.PostCreateContainer(ctx, &nriv1beta1.PostCreateContainerRequest{Pod: p, Container: c})
	case "PostStartContainer":
		return rt.PostStartContainer(ctx, &nriv1beta1.PostStartContainerRequest{Pod: p, Container: c})
	case "PostUpdateContainer":
		return rt.PostUpdateContainer(ctx, &nriv1beta1.PostUpdateContainerRequest{Pod: p, Container: c})
	case "StopContainer":
		rsp, err := rt.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: p, Container: c})
		return rsp.GetPluginErrors(), err
	case "RemoveContainer":
		return rt.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: p, Container: c})
	}
	s.Fatalf("%s is not a notification or teardown event", event)
	return nil, nil
}

// deadlines records, per method, the time left on the calls' deadlines.
type deadlines struct {
	mu   sync.Mutex
	left map[string]time.Duration
}

func (d *deadlines) opt() Opt {
	return handle(func(ctx context.Context, method string, _ proto.Message) error {
		dl, ok := ctx.Deadline()
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.left == nil {
			d.left = map[string]time.Duration{}
		}
		if ok {
			d.left[method] = time.Until(dl)
		} else {
			d.left[method] = -1
		}
		return nil
	})
}

func (d *deadlines) of(method string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.left[method]
}

func init() {
	const g = "DeliberateChanges"

	// 5.1: verdicts versus availability failures.
	add(Deliberate, g, "DESIGN 5.1: failure policy ignore skips an unavailable plugin at every creating event", Options{}, func(s *S) {
		s.Start("10", "flaky", policy(false, true), shortTimeout(), blockOn(creatingEvents...))
		s.Start("20", "next")
		pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
		for _, ev := range creatingEvents {
			s.must(ev+" with an unavailable ignore plugin", s.send(ev, pod, ctr))
		}
		eq(s, "calls", s.Log().Strings(creatingEvents...), []string{
			"10-flaky:RunPodSandbox", "20-next:RunPodSandbox", "10-flaky:UpdatePodSandbox", "20-next:UpdatePodSandbox",
			"10-flaky:CreateContainer", "20-next:CreateContainer", "10-flaky:StartContainer", "20-next:StartContainer",
			"10-flaky:UpdateContainer", "20-next:UpdateContainer",
		})
	})
	add(Deliberate, g, "DESIGN 5.1: failure policy fail fails every creating event, RunPodSandbox included, naming the plugin", Options{}, func(s *S) {
		s.Start("10", "strict", policy(true, true), shortTimeout(), blockOn(creatingEvents...))
		s.Start("20", "next")
		pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
		for _, ev := range creatingEvents {
			err := s.send(ev, pod, ctr)
			s.failsWith(ev+" with an unavailable fail plugin", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "10-strict")
			s.namesPlugins(ev, err, "10-strict")
		}
		eq(s, "calls of later plugins", s.Log().Of("20-next", creatingEvents...), nil)
		// Teardown goes on.
		s.must("StopContainer", s.send("StopContainer", pod, ctr))
	})
	add(Deliberate, g, "DESIGN 5.1: the operator's policy overrides the plugin's failure policy",
		Options{PluginPolicy: func(full string) *server.PluginPolicy {
			if full == "10-forced" {
				yes := true
				return &server.PluginPolicy{Required: &yes, KeepConnected: &yes}
			}
			return nil
		}}, func(s *S) {
			p := s.Start("10", "forced", shortTimeout(), blockOn("CreateContainer"))
			pod := newPod("pod0", nil)
			_, err := s.create(pod, newCtr("pod0", "ctr0"))
			s.failsWith("CreateContainer", err, codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", "10-forced")
			s.must("RunPodSandbox (kept connected)", s.send("RunPodSandbox", pod, nil))
			eq(s, "RunPodSandbox calls", s.Log().Strings("RunPodSandbox"), []string{"10-forced:RunPodSandbox"})
			if len(p.Shutdowns()) != 0 {
				s.Errorf("a kept-connected plugin got Shutdown: %v", p.Shutdowns())
			}
		})
	add(Deliberate, g, "DESIGN 5.1: UNIMPLEMENTED is a protocol error, not a veto: the plugin is skipped and evicted", Options{}, func(s *S) {
		p := s.Start("10", "broken", failOn(status.Error(codes.Unimplemented, "no such method"), "CreateContainer"))
		s.Start("20", "next", adjustingPlugin("annotation", "20", "next", false))
		pod := newPod("pod0", nil)
		rsp, err := s.create(pod, newCtr("pod0", "ctr0"))
		s.must("CreateContainer with a plugin answering UNIMPLEMENTED", err)
		protoEq(s, "adjustment", rsp.GetAdjust(), &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"key": "20-next"}})
		s.waitDone(p)
		sd := p.Shutdowns()
		if len(sd) != 1 || sd[0].GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED || !strings.HasPrefix(sd[0].GetReason(), "protocol error") {
			s.Errorf("shutdowns %v, want one EVICTED for a protocol error", sd)
		}
	})
	add(Deliberate, g, "DESIGN 5.1: a plugin that went away is skipped under the ignore policy", Options{}, func(s *S) {
		gone := s.Start("10", "gone")
		s.Start("20", "next")
		gone.Stop()
		s.waitDone(gone)
		s.Log().Reset()
		s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		for _, c := range s.Log().Calls() {
			if c.Plugin != "20-next" {
				s.Errorf("unexpected call %s", c)
			}
		}
		if n := len(s.Log().Calls()); n != len(lifecycleEvents) {
			s.Errorf("20-next got %d calls, want %d", n, len(lifecycleEvents))
		}
	})

	// 5.2: teardown and notification errors never stop delivery.
	for _, ev := range []string{"PostUpdatePodSandbox", "StopPodSandbox", "RemovePodSandbox", "PostCreateContainer",
		"PostStartContainer", "PostUpdateContainer", "StopContainer", "RemoveContainer"} {
		add(Deliberate, g, "DESIGN 5.2: an error on "+ev+" does not stop delivery and is returned as information", Options{}, func(s *S) {
			s.Start("10", "failing", failOn(status.Error(codes.Internal, "boom"), ev))
			s.Start("20", "healthy")
			s.Log().Reset()
			errs, err := s.notify(ev, newPod("pod0", nil), newCtr("pod0", "ctr0"))
			s.must(ev, err)
			eq(s, "calls", s.Log().Strings(), []string{"10-failing:" + ev, "20-healthy:" + ev})
			if len(errs) != 1 || errs[0].GetPlugin().GetIndex() != "10" || errs[0].GetPlugin().GetName() != "failing" ||
				errs[0].GetCode() != int32(codes.Internal) || errs[0].GetMessage() != "boom" {
				s.Fatalf("plugin errors %v, want 10-failing's INTERNAL boom", errs)
			}
		})
	}

	// 5.4: timeouts per plugin and per event, capped, never past the caller.
	add(Deliberate, g, "DESIGN 5.4: a plugin's requested request timeout is its effective timeout, reported in Configure", Options{}, func(s *S) {
		s.Start("10", "patient", timeouts(&nriv1beta1.Timeouts{Request: durationpb.New(3 * time.Second)}))
		if got := s.configureOf("10-patient").GetRequestTimeout(); got != 3000 {
			s.Fatalf("Configure request_timeout %d ms, want 3000", got)
		}
	})
	add(Deliberate, g, "DESIGN 5.4: per-event timeouts apply to their event only", Options{}, func(s *S) {
		var d deadlines
		s.Start("10", "timed", d.opt(), timeouts(&nriv1beta1.Timeouts{
			Request: durationpb.New(time.Second),
			Events:  []*nriv1beta1.EventTimeout{{Event: nriv1beta1.Event_EVENT_CREATE_CONTAINER, Timeout: durationpb.New(30 * time.Second)}},
		}))
		pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
		s.mustCreate(pod, ctr)
		s.must("StartContainer", s.send("StartContainer", pod, ctr))
		if left := d.of("CreateContainer"); left <= 5*time.Second {
			s.Errorf("CreateContainer deadline %v away, want the requested 30s", left)
		}
		if left := d.of("StartContainer"); left <= 0 || left > time.Second {
			s.Errorf("StartContainer deadline %v away, want at most the 1s request timeout", left)
		}
	})
	add(Deliberate, g, "DESIGN 5.4: timeouts are capped by policy", Options{MaxTimeout: 1500 * time.Millisecond}, func(s *S) {
		var d deadlines
		s.Start("10", "greedy", d.opt(), timeouts(&nriv1beta1.Timeouts{Request: durationpb.New(time.Hour)}))
		if got := s.configureOf("10-greedy").GetRequestTimeout(); got != 1500 {
			s.Errorf("Configure request_timeout %d ms, want the 1500 ms cap", got)
		}
		s.must("RunPodSandbox", s.send("RunPodSandbox", newPod("pod0", nil), nil))
		if left := d.of("RunPodSandbox"); left <= 0 || left > 1500*time.Millisecond {
			s.Errorf("RunPodSandbox deadline %v away, want at most the cap", left)
		}
	})
	add(Deliberate, g, "DESIGN 5.4: no call outlives the caller's deadline", Options{}, func(s *S) {
		var d deadlines
		s.Start("10", "patient", d.opt(), timeouts(&nriv1beta1.Timeouts{Request: durationpb.New(30 * time.Second)}))
		ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
		defer cancel()
		s.must("RunPodSandbox", s.RT().RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: newPod("pod0", nil)}))
		if left := d.of("RunPodSandbox"); left <= 0 || left > 3*time.Second {
			s.Errorf("RunPodSandbox deadline %v away, want at most the caller's 3s", left)
		}
	})
	add(Deliberate, g, "DESIGN 5.4: keep_connected keeps a timed-out plugin registered", Options{}, func(s *S) {
		p := s.Start("10", "sticky", policy(false, true), shortTimeout(), blockOn("StartContainer"))
		pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
		s.must("StartContainer", s.send("StartContainer", pod, ctr))
		s.must("PostStartContainer", s.send("PostStartContainer", pod, ctr))
		eq(s, "calls", s.Log().Strings(lifecycleEvents...), []string{"10-sticky:StartContainer", "10-sticky:PostStartContainer"})
		if len(p.Shutdowns()) != 0 {
			s.Errorf("shutdowns %v", p.Shutdowns())
		}
	})
	add(Deliberate, g, "DESIGN 5.4: disconnecting for timeouts is an operator knob",
		Options{PluginPolicy: func(full string) *server.PluginPolicy {
			yes := true
			return &server.PluginPolicy{KeepConnected: &yes}
		}}, func(s *S) {
			p := s.Start("10", "slow", shortTimeout(), blockOn("StartContainer"))
			pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
			s.must("StartContainer", s.send("StartContainer", pod, ctr))
			s.must("PostStartContainer", s.send("PostStartContainer", pod, ctr))
			eq(s, "calls", s.Log().Strings(lifecycleEvents...), []string{"10-slow:StartContainer", "10-slow:PostStartContainer"})
			if len(p.Shutdowns()) != 0 {
				s.Errorf("shutdowns %v", p.Shutdowns())
			}
		})

	// 5.5: evictions, pid limits, removal markers.
	evict := func(ids ...string) []*nriv1beta1.ContainerEviction {
		var out []*nriv1beta1.ContainerEviction
		for _, id := range ids {
			out = append(out, &nriv1beta1.ContainerEviction{ContainerId: id, Reason: "evicted by " + id})
		}
		return out
	}
	add(Deliberate, g, "DESIGN 5.5: evictions from CreateContainer are passed on, one per container", Options{}, func(s *S) {
		s.Start("00", "a", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Evict: evict("ctr7", "ctr8")}, nil
		}))
		s.Start("10", "b", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Evict: []*nriv1beta1.ContainerEviction{{ContainerId: "ctr8", Reason: "second"}, evict("ctr9")[0]}}, nil
		}))
		rsp := s.mustCreate(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		eq(s, "evictions", rsp.GetEvict(), evict("ctr7", "ctr8", "ctr9"))
	})
	add(Deliberate, g, "DESIGN 5.5: evictions from UpdateContainer and StopContainer are passed on", Options{}, func(s *S) {
		s.Start("00", "a",
			onUpdate(func(context.Context, *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
				return &nriv1beta1.UpdateContainerResponse{Evict: evict("ctr7")}, nil
			}),
			onStop(func(context.Context, *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
				return &nriv1beta1.StopContainerResponse{Evict: evict("ctr8")}, nil
			}))
		pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
		urs, err := s.RT().UpdateContainer(s.ctx, &nriv1beta1.UpdateContainerRequest{Pod: clone(pod), Container: clone(ctr), LinuxResources: &nriv1beta1.LinuxResources{}})
		s.must("UpdateContainer", err)
		eq(s, "UpdateContainer evictions", urs.GetEvict(), evict("ctr7"))
		srs, err := s.RT().StopContainer(s.ctx, &nriv1beta1.StopContainerRequest{Pod: clone(pod), Container: clone(ctr)})
		s.must("StopContainer", err)
		eq(s, "StopContainer evictions", srs.GetEvict(), evict("ctr8"))
	})
	add(Deliberate, g, "DESIGN 5.5: evictions from UpdateContainers reach the runtime", Options{}, func(s *S) {
		p := s.Start("00", "a")
		pod := newPod("pod0", nil)
		s.runPod(pod)
		s.mustCreate(pod, newCtr("pod0", "ctr7"))
		_, _, err := p.UpdateContainers(s.ctx, nil, evict("ctr7"))
		s.must("UpdateContainers", err)
		got := s.Env().Applied().All()
		if len(got) != 1 {
			s.Fatalf("the runtime got %d requests, want 1", len(got))
		}
		eq(s, "applied evictions", got[0].Evict, evict("ctr7"))
	})
	add(Deliberate, g, "DESIGN 5.5: pid limits in updates are passed on", Options{}, func(s *S) {
		pids := func(n int64) *nriv1beta1.LinuxResources {
			return &nriv1beta1.LinuxResources{Pids: &nriv1beta1.LinuxPids{Limit: n}}
		}
		p := s.Start("00", "pids",
			onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{containerUpdate("ctr9", pids(77))}}, nil
			}),
			onUpdate(func(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
				return &nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{containerUpdate(req.GetContainer().GetId(), pids(88))}}, nil
			}))
		pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
		crs := s.mustCreate(pod, ctr)
		eq(s, "CreateContainer updates", crs.GetUpdate(), []*nriv1beta1.ContainerUpdate{containerUpdate("ctr9", pids(77))})
		urs, err := s.RT().UpdateContainer(s.ctx, &nriv1beta1.UpdateContainerRequest{Pod: clone(pod), Container: clone(ctr), LinuxResources: &nriv1beta1.LinuxResources{}})
		s.must("UpdateContainer", err)
		if urs.GetLinuxResources().GetPids().GetLimit() != 88 {
			s.Errorf("final resources %v, want pids 88", urs.GetLinuxResources())
		}
		_, _, err = p.UpdateContainers(s.ctx, []*nriv1beta1.ContainerUpdate{containerUpdate("ctr0", pids(99))}, nil)
		s.must("UpdateContainers", err)
		got := s.Env().Applied().All()
		if len(got) != 1 || len(got[0].Update) != 1 || got[0].Update[0].GetLinux().GetResources().GetPids().GetLimit() != 99 {
			s.Errorf("the runtime got %v, want pids 99", got)
		}
	})
	removalCtr := func() *nriv1beta1.Container {
		c := newCtr("pod0", "ctr0")
		c.Env = []string{"APP_ENV=production", "KEEP=1"}
		c.Linux = &nriv1beta1.LinuxContainer{Devices: []*nriv1beta1.LinuxDevice{{Path: "/dev/foo", Type: "c", Major: 1, Minor: 2}}}
		return c
	}
	add(Deliberate, g, "DESIGN 5.5: env and device removal markers reach the runtime", Options{}, func(s *S) {
		var next *nriv1beta1.Container
		s.Start("00", "remover", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Env:   []*nriv1beta1.KeyValue{{Key: "-APP_ENV"}},
				Linux: &nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "-/dev/foo"}}},
			}}, nil
		}))
		s.Start("10", "observer", onCreate(func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			next = req.GetContainer()
			return nil, nil
		}))
		rsp := s.mustCreate(newPod("pod0", nil), removalCtr())
		protoEq(s, "merged adjustment", rsp.GetAdjust(), &nriv1beta1.ContainerAdjustment{
			Env:   []*nriv1beta1.KeyValue{{Key: "-APP_ENV"}},
			Linux: &nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "-/dev/foo"}}},
		})
		eq(s, "env the next plugin sees", next.GetEnv(), []string{"KEEP=1"})
		if len(next.GetLinux().GetDevices()) != 0 {
			s.Errorf("devices the next plugin sees: %v", next.GetLinux().GetDevices())
		}
	})
	// A pure removal of an entry an earlier plugin set: only -k remains.
	pure := func(name string, set, remove, want *nriv1beta1.ContainerAdjustment) {
		add(Deliberate, g, "DESIGN 5.5: a removal of "+name+" an earlier plugin set leaves only the marker, never both k and -k", Options{}, func(s *S) {
			s.Start("00", "setter", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				return &nriv1beta1.CreateContainerResponse{Adjust: clone(set)}, nil
			}))
			s.Start("10", "remover", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				return &nriv1beta1.CreateContainerResponse{Adjust: clone(remove)}, nil
			}))
			rsp := s.mustCreate(newPod("pod0", nil), newCtr("pod0", "ctr0"))
			protoEq(s, "merged adjustment", rsp.GetAdjust(), want)
		})
	}
	lin := func(l *nriv1beta1.LinuxContainerAdjustment) *nriv1beta1.ContainerAdjustment {
		return &nriv1beta1.ContainerAdjustment{Linux: l}
	}
	pure("an annotation",
		&nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"k": "v"}},
		&nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"-k": ""}},
		&nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"-k": ""}})
	pure("an env variable",
		&nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "K", Value: "v"}}},
		&nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "-K"}}},
		&nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "-K"}}})
	pure("a mount",
		&nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Source: "/s", Destination: "/d"}}},
		&nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Destination: "-/d"}}},
		&nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Destination: "-/d"}}})
	pure("a device",
		lin(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "/dev/x", Type: "c", Major: 1, Minor: 1}}}),
		lin(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "-/dev/x"}}}),
		lin(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "-/dev/x"}}}))
	pure("a sysctl",
		lin(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"net.x": "1"}}),
		lin(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"-net.x": ""}}),
		lin(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"-net.x": ""}}))
	pure("a net device",
		lin(&nriv1beta1.LinuxContainerAdjustment{NetDevices: map[string]*nriv1beta1.LinuxNetDevice{"eth1": {Name: "net1"}}}),
		lin(&nriv1beta1.LinuxContainerAdjustment{NetDevices: map[string]*nriv1beta1.LinuxNetDevice{"-eth1": {}}}),
		lin(&nriv1beta1.LinuxContainerAdjustment{NetDevices: map[string]*nriv1beta1.LinuxNetDevice{"-eth1": {}}}))
	add(Deliberate, g, "DESIGN 5.5: an addition drops the marker of an earlier plugin's removal", Options{}, func(s *S) {
		s.Start("00", "remover", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Annotations: map[string]string{"-k": ""}, Env: []*nriv1beta1.KeyValue{{Key: "-K"}}}}, nil
		}))
		s.Start("10", "setter", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Annotations: map[string]string{"-k": "", "k": "v"}, Env: []*nriv1beta1.KeyValue{{Key: "-K"}, {Key: "K", Value: "v"}}}}, nil
		}))
		rsp := s.mustCreate(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		protoEq(s, "merged adjustment", rsp.GetAdjust(), &nriv1beta1.ContainerAdjustment{
			Annotations: map[string]string{"k": "v"}, Env: []*nriv1beta1.KeyValue{{Key: "K", Value: "v"}}})
	})
	add(Deliberate, g, "DESIGN 5.5: a conflicting update with ignore_failure is dropped whole and the event goes on", Options{}, func(s *S) {
		s.Start("00", "a", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{
				containerUpdate("ctr9", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Shares: u64(1)}})}}, nil
		}))
		s.Start("10", "b", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			u := containerUpdate("ctr9", &nriv1beta1.LinuxResources{
				Memory: &nriv1beta1.LinuxMemory{Limit: i64(5)}, Cpu: &nriv1beta1.LinuxCPU{Shares: u64(2)}})
			u.IgnoreFailure = true
			return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{u}}, nil
		}))
		rsp := s.mustCreate(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		eq(s, "updates", rsp.GetUpdate(), []*nriv1beta1.ContainerUpdate{
			containerUpdate("ctr9", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Shares: u64(1)}})})
	})
	add(Deliberate, g, "DESIGN 5.5: UpdateContainer returns the target's final resources even when no plugin changed them (no nil tail update)", Options{}, func(s *S) {
		s.Start("00", "bystander")
		rsp, err := s.RT().UpdateContainer(s.ctx, &nriv1beta1.UpdateContainerRequest{Pod: newPod("pod0", nil), Container: newCtr("pod0", "ctr0"),
			LinuxResources: requestedResources()})
		s.must("UpdateContainer", err)
		if len(rsp.GetUpdate()) != 0 {
			s.Errorf("updates %v, want none", rsp.GetUpdate())
		}
		protoEq(s, "final resources", rsp.GetLinuxResources(), requestedResources())
	})

	// 5.6: Shutdown with a reason, before the connection closes.
	add(Deliberate, g, "DESIGN 5.6: Shutdown on server stop, with its reason, before the registration ends", Options{}, func(s *S) {
		a := s.Start("10", "a")
		b := s.Start("20", "b")
		s.must("Shutdown", s.Env().Shutdown(s.ctx))
		for _, p := range []Plugin{a, b} {
			s.waitDone(p)
			sd := p.Shutdowns()
			if len(sd) != 1 || sd[0].GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_SERVER_STOPPING || sd[0].GetReason() != "server stopping" {
				s.Errorf("%s: shutdowns %v, want one SERVER_STOPPING \"server stopping\"", p.Full(), sd)
			}
		}
		_, err := s.TryStart("30", "late")
		s.failsWith("registering after Shutdown", err, codes.Unavailable, "REGISTRATION_REFUSAL_SHUTTING_DOWN")
	})
	add(Deliberate, g, "DESIGN 5.6: Shutdown on eviction after a timeout, with its reason", Options{}, func(s *S) {
		p := s.Start("10", "slow", shortTimeout(), blockOn("RunPodSandbox"))
		s.must("RunPodSandbox", s.send("RunPodSandbox", newPod("pod0", nil), nil))
		s.waitDone(p)
		sd := p.Shutdowns()
		if len(sd) != 1 || sd[0].GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_EVICTED || sd[0].GetReason() != "request handling timeout" {
			s.Errorf("shutdowns %v, want one EVICTED \"request handling timeout\"", sd)
		}
	})
	add(Deliberate, g, "DESIGN 5.6: instance handover: the new instance takes over and the old one gets Shutdown REPLACED", Options{}, func(s *S) {
		old := s.Start("10", "same")
		oldID := old.InstanceID()
		newer := s.Start("10", "same")
		if newer.InstanceID() == oldID || newer.InstanceID() == "" {
			s.Fatalf("instance ids: old %q, new %q", oldID, newer.InstanceID())
		}
		s.waitDone(old)
		sd := old.Shutdowns()
		if len(sd) != 1 || sd[0].GetKind() != nriv1beta1.ShutdownKind_SHUTDOWN_KIND_REPLACED || sd[0].GetReason() != "replaced by a newer instance" {
			s.Errorf("old instance's shutdowns %v, want one REPLACED", sd)
		}
		if len(newer.Shutdowns()) != 0 {
			s.Errorf("new instance's shutdowns %v", newer.Shutdowns())
		}
		s.Log().Reset()
		s.lifecycle(newPod("pod0", nil), newCtr("pod0", "ctr0"))
		calls := s.Log().Calls(lifecycleEvents...)
		if len(calls) != len(lifecycleEvents) {
			s.Errorf("%d calls, want one per event: %v", len(calls), s.Log().Strings())
		}
		for _, c := range calls {
			if c.InstanceID != newer.InstanceID() {
				s.Errorf("%s went to instance %q, not the new %q", c, c.InstanceID, newer.InstanceID())
			}
		}
	})
	add(Deliberate, g, "DESIGN 5.6: instance handover: events during the new instance's synchronization go to exactly one instance", Options{}, func(s *S) {
		release := make(chan struct{})
		old := s.Start("10", "same")
		started := make(chan struct{})
		var newer Plugin
		var startErr error
		go func() {
			defer close(started)
			newer, startErr = s.TryStart("10", "same", onSync(func(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return &nriv1beta1.SynchronizeResponse{More: req.GetMore()}, nil
			}))
		}()
		s.waitCalls("10-same:Synchronize", 2)
		done := make(chan error, 1)
		go func() { done <- s.send("RunPodSandbox", newPod("pod0", nil), nil) }()
		close(release)
		<-started
		if startErr != nil {
			s.Fatalf("new instance: %v", startErr)
		}
		if err := <-done; err != nil {
			s.Fatalf("RunPodSandbox: %v", err)
		}
		calls := s.Log().Calls("RunPodSandbox")
		sync := s.Log().Of("10-same", "Synchronize")
		inSnapshot := len(sync[len(sync)-1].Req.(*nriv1beta1.SynchronizeRequest).GetPods()) == 1
		switch {
		case inSnapshot && len(calls) == 1 && calls[0].InstanceID == old.InstanceID():
			// Dispatched before the cut, to the old instance; in the new one's snapshot.
		case !inSnapshot && len(calls) == 1 && calls[0].InstanceID == newer.InstanceID():
			// Dispatched after the cut: waited for the new instance.
		default:
			s.Errorf("pod0 in the new snapshot: %v; RunPodSandbox calls: %v (old %s, new %s)", inSnapshot, calls, old.InstanceID(), newer.InstanceID())
		}
		s.waitDone(old)
	})
	add(Deliberate, g, "DESIGN 5.6: a failed re-registration leaves the old instance in place", Options{}, func(s *S) {
		old := s.Start("10", "same")
		_, err := s.TryStart("10", "same", onSync(func(context.Context, *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
			return nil, status.Error(codes.Internal, "cannot synchronize")
		}))
		s.failsWith("re-registering", err, codes.OK, "REGISTRATION_REFUSAL_SYNCHRONIZE_FAILED")
		s.Log().Reset()
		s.must("RunPodSandbox", s.send("RunPodSandbox", newPod("pod0", nil), nil))
		calls := s.Log().Calls("RunPodSandbox")
		if len(calls) != 1 || calls[0].InstanceID != old.InstanceID() {
			s.Errorf("RunPodSandbox calls %v, want one to the old instance %s", calls, old.InstanceID())
		}
		if len(old.Shutdowns()) != 0 {
			s.Errorf("the old instance got Shutdown: %v", old.Shutdowns())
		}
	})

	// 5.7: equal indices are ordered by name.
	add(Deliberate, g, "DESIGN 5.7: equal indices run in name order", Options{}, func(s *S) {
		for _, id := range [][2]string{{"20", "test"}, {"10", "zeta"}, {"99", "foo"}, {"10", "alpha"}, {"00", "bar"}, {"10", "Mid"}} {
			s.Start(id[0], id[1], events(nriv1beta1.Event_EVENT_START_CONTAINER))
		}
		s.must("StartContainer", s.send("StartContainer", newPod("pod0", nil), newCtr("pod0", "ctr0")))
		eq(s, "order", s.Log().Strings("StartContainer"), []string{"00-bar:StartContainer", "10-Mid:StartContainer",
			"10-alpha:StartContainer", "10-zeta:StartContainer", "20-test:StartContainer", "99-foo:StartContainer"})
	})

	// 5.8: concurrency.
	add(Deliberate, g, "DESIGN 5.8: a plugin gets one call at a time unless it declared concurrent calls", Options{}, func(s *S) {
		var inflight, peak atomic.Int32
		s.Start("10", "serial", events(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX), handle(func(ctx context.Context, method string, _ proto.Message) error {
			if method != "RunPodSandbox" {
				return nil
			}
			n := inflight.Add(1)
			defer inflight.Add(-1)
			if n > peak.Load() {
				peak.Store(n)
			}
			// Give a concurrent call the chance to arrive (it must not).
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
			}
			return nil
		}))
		s.concurrently("RunPodSandbox", "pod0", "pod1")
		if p := peak.Load(); p != 1 {
			s.Errorf("%d calls were in flight at once, want 1", p)
		}
	})
	add(Deliberate, g, "DESIGN 5.8: events of different pods reach a plugin concurrently when it declared concurrent calls", Options{}, func(s *S) {
		var inflight, peak atomic.Int32
		both := make(chan struct{})
		var once sync.Once
		s.Start("10", "parallel", events(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX), caps(&nriv1beta1.Capabilities{MaxConcurrentCalls: 2}),
			timeouts(&nriv1beta1.Timeouts{Request: durationpb.New(Wait)}),
			handle(func(ctx context.Context, method string, _ proto.Message) error {
				if method != "RunPodSandbox" {
					return nil
				}
				n := inflight.Add(1)
				defer inflight.Add(-1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				if n == 2 {
					once.Do(func() { close(both) })
				}
				select {
				case <-both:
				case <-ctx.Done():
				}
				return nil
			}))
		s.concurrently("RunPodSandbox", "pod0", "pod1")
		if p := peak.Load(); p != 2 {
			s.Errorf("at most %d call(s) were in flight, want 2", p)
		}
	})
	add(Deliberate, g, "DESIGN 5.8: events of one pod keep their order", Options{}, func(s *S) {
		var runInFlight atomic.Bool
		var overlap atomic.Bool
		updateArrived := make(chan struct{}, 1)
		s.Start("10", "ordered", caps(&nriv1beta1.Capabilities{MaxConcurrentCalls: 4}),
			handle(func(ctx context.Context, method string, _ proto.Message) error {
				switch method {
				case "RunPodSandbox":
					runInFlight.Store(true)
					defer runInFlight.Store(false)
					// Hold the pod's first event a while; its next one must wait.
					select {
					case <-updateArrived:
						overlap.Store(true)
					case <-time.After(300 * time.Millisecond):
					case <-ctx.Done():
					}
				case "UpdatePodSandbox":
					if runInFlight.Load() {
						overlap.Store(true)
						updateArrived <- struct{}{}
					}
				}
				return nil
			}))
		pod := newPod("pod0", nil)
		done := make(chan error, 1)
		go func() { done <- s.send("RunPodSandbox", pod, nil) }()
		s.waitCalls("10-ordered:RunPodSandbox", 1)
		s.must("UpdatePodSandbox", s.send("UpdatePodSandbox", pod, nil))
		s.must("RunPodSandbox", <-done)
		if overlap.Load() {
			s.Error("UpdatePodSandbox reached the plugin while the pod's RunPodSandbox was in flight")
		}
		eq(s, "order", s.Log().Strings(lifecycleEvents...), []string{"10-ordered:RunPodSandbox", "10-ordered:UpdatePodSandbox"})
	})
	add(Deliberate, g, "DESIGN 5.8: the registration cut: a new plugin sees each pod exactly once, in its snapshot or as an event", Options{}, func(s *S) {
		release := make(chan struct{})
		s.Start("10", "holder", events(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX), timeouts(&nriv1beta1.Timeouts{Request: durationpb.New(Wait)}),
			handle(func(ctx context.Context, method string, _ proto.Message) error {
				if method == "RunPodSandbox" {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return nil
			}))
		done := make(chan error, 1)
		go func() { done <- s.send("RunPodSandbox", newPod("pod1", nil), nil) }()
		s.waitCalls("10-holder:RunPodSandbox", 1)
		started := make(chan error, 1)
		go func() {
			_, err := s.TryStart("20", "newcomer", events(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX))
			started <- err
		}()
		s.waitCalls("20-newcomer:Configure", 1)
		close(release)
		s.must("RunPodSandbox", <-done)
		s.must("registering 20-newcomer", <-started)
		sync := s.Log().Of("20-newcomer", "Synchronize")
		inSnapshot := 0
		for _, c := range sync {
			for _, p := range c.Req.(*nriv1beta1.SynchronizeRequest).GetPods() {
				if p.GetId() == "pod1" {
					inSnapshot++
				}
			}
		}
		asEvent := len(s.Log().Of("20-newcomer", "RunPodSandbox"))
		if inSnapshot+asEvent != 1 {
			s.Errorf("20-newcomer saw pod1 %d time(s) in its snapshot and %d as an event, want exactly once in all", inSnapshot, asEvent)
		}
	})

	// 5.9: resync.
	resyncState := func(s *S) {
		s.Env().SetState(s.T,
			[]*nriv1beta1.PodSandbox{newPod("pod0", nil), newPod("pod1", nil)},
			[]*nriv1beta1.Container{newCtr("pod0", "ctr0"), newCtr("pod0", "ctr1"), newCtr("pod1", "ctr2")})
	}
	add(Deliberate, g, "DESIGN 5.9: resync: a plugin that declared resync gets Synchronize with the next epoch", Options{}, func(s *S) {
		resyncState(s)
		s.Start("10", "resync", caps(&nriv1beta1.Capabilities{Resync: true}))
		s.Env().SetState(s.T, []*nriv1beta1.PodSandbox{newPod("pod0", nil), newPod("pod3", nil)}, []*nriv1beta1.Container{newCtr("pod0", "ctr0"), newCtr("pod3", "ctr3")})
		s.waitCalls("10-resync:Synchronize", 2)
		calls := s.Log().Of("10-resync")
		var methods []string
		for _, c := range calls {
			methods = append(methods, c.Method)
		}
		eq(s, "calls", methods, []string{"Configure", "Synchronize", "Synchronize"})
		req := calls[2].Req.(*nriv1beta1.SynchronizeRequest)
		if req.GetEpoch() != 2 || req.GetReason() == nriv1beta1.SyncReason_SYNC_REASON_REGISTRATION || req.GetMore() {
			s.Errorf("resync: epoch %d reason %v more %v, want epoch 2, a runtime reason, one page", req.GetEpoch(), req.GetReason(), req.GetMore())
		}
		var pods, ctrs []string
		for _, p := range req.GetPods() {
			pods = append(pods, p.GetId())
		}
		for _, c := range req.GetContainers() {
			ctrs = append(ctrs, c.GetId())
		}
		eq(s, "resynchronized pods", pods, []string{"pod0", "pod3"})
		eq(s, "resynchronized containers", ctrs, []string{"ctr0", "ctr3"})
		// Events go on after the resync.
		s.must("StartContainer", s.send("StartContainer", newPod("pod0", nil), newCtr("pod0", "ctr0")))
	})
	add(Deliberate, g, "DESIGN 5.9: resync: a plugin without resync gets Stop and Remove events for what vanished", Options{}, func(s *S) {
		resyncState(s)
		s.Start("20", "plain")
		s.Log().Reset()
		s.Env().SetState(s.T, []*nriv1beta1.PodSandbox{newPod("pod0", nil), newPod("pod3", nil)}, []*nriv1beta1.Container{newCtr("pod0", "ctr0"), newCtr("pod3", "ctr3")})
		s.waitCalls("20-plain:RemovePodSandbox", 1)
		// Events after the resync come after the synthesized ones.
		s.must("StartContainer", s.send("StartContainer", newPod("pod0", nil), newCtr("pod0", "ctr0")))
		var got []string
		for _, c := range s.Log().Calls() {
			id := ""
			switch r := c.Req.(type) {
			case interface{ GetContainer() *nriv1beta1.Container }:
				id = r.GetContainer().GetId()
			case interface{ GetPod() *nriv1beta1.PodSandbox }:
				id = r.GetPod().GetId()
			}
			got = append(got, c.String()+"("+id+")")
		}
		eq(s, "calls", got, []string{
			"20-plain:StopContainer(ctr1)", "20-plain:RemoveContainer(ctr1)",
			"20-plain:StopContainer(ctr2)", "20-plain:RemoveContainer(ctr2)",
			"20-plain:StopPodSandbox(pod1)", "20-plain:RemovePodSandbox(pod1)",
			"20-plain:StartContainer(ctr0)",
		})
	})
	add(Deliberate, g, "DESIGN 5.9: resync: synthesized events respect the subscription", Options{}, func(s *S) {
		resyncState(s)
		s.Start("20", "removals", events(nriv1beta1.Event_EVENT_REMOVE_CONTAINER, nriv1beta1.Event_EVENT_START_CONTAINER))
		s.Log().Reset()
		s.Env().SetState(s.T, []*nriv1beta1.PodSandbox{newPod("pod0", nil)}, []*nriv1beta1.Container{newCtr("pod0", "ctr0"), newCtr("pod0", "ctr1")})
		s.must("StartContainer", s.send("StartContainer", newPod("pod0", nil), newCtr("pod0", "ctr0")))
		eq(s, "calls", s.Log().Strings(), []string{"20-removals:RemoveContainer", "20-removals:StartContainer"})
	})

	// 5.10: dry runs go only to plugins that declared dry-run support.
	add(Deliberate, g, "DESIGN 5.10: a dry run goes only to plugins that declared dry-run support", Options{}, func(s *S) {
		dr, ok := s.Env().(DryRunner)
		if !ok {
			s.Skip("this path has no dry run")
		}
		s.Start("10", "dry", caps(&nriv1beta1.Capabilities{DryRun: true}), adjustingPlugin("annotation", "10", "dry", false))
		s.Start("20", "wet", adjustingPlugin("mount", "20", "wet", false))
		s.Log().Reset()
		rsp, err := dr.DryRun(s.ctx, &nriv1beta1.DryRunRequest{Event: nriv1beta1.Event_EVENT_CREATE_CONTAINER,
			Pod: newPod("pod0", nil), Container: newCtr("pod0", "ctr0")})
		s.must("DryRun", err)
		if rsp.GetError() != "" {
			s.Fatalf("dry run error: %s", rsp.GetError())
		}
		protoEq(s, "dry-run adjustment", rsp.GetAdjust(), &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"key": "10-dry"}})
		eq(s, "not evaluated", rsp.GetNotEvaluated(), []*nriv1beta1.PluginInstance{{Name: "wet", Index: "20"}})
		eq(s, "calls", s.Log().Strings(), []string{"10-dry:CreateContainer"})
		if !s.Log().Calls()[0].Req.(*nriv1beta1.CreateContainerRequest).GetDryRun() {
			s.Error("the dry-run request did not have dry_run set")
		}
	})
}

// concurrently sends event for each pod at the same time and waits for all.
func (s *S) concurrently(event string, pods ...string) {
	s.Helper()
	errs := make(chan error, len(pods))
	for _, id := range pods {
		go func() { errs <- s.send(event, newPod(id, nil), nil) }()
	}
	for range pods {
		s.must(event, <-errs)
	}
}
