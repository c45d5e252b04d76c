package conformance

import (
	"context"

	"google.golang.org/grpc/codes"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Classic NRI's TestPluginContainerUpdatesDuringCreation,
// TestSolicitedContainerUpdatesByPlugins and
// TestUnsolicitedContainerUpdateRequests.

// resourceUpdate returns the resources plugin sets for subject.
func resourceUpdate(subject, plugin string) *nriv1beta1.LinuxResources {
	switch subject {
	case "resources/cpu":
		return &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Shares: u64(123), Quota: i64(4560), Period: u64(7890),
			RealtimeRuntime: i64(321), RealtimePeriod: u64(654), Cpus: "0-1", Mems: "2-3"}}
	case "resources/memory":
		return &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: i64(1234000), Reservation: i64(4000), Swap: i64(34000),
			Kernel: i64(30000), KernelTcp: i64(2000), Swappiness: u64(87), DisableOomKiller: boolv(true), UseHierarchy: boolv(true)}}
	case "resources/classes":
		return &nriv1beta1.LinuxResources{RdtClass: str(plugin), BlockioClass: str(plugin)}
	case "resources/hugepagelimits":
		return &nriv1beta1.LinuxResources{HugepageLimits: []*nriv1beta1.HugepageLimit{{PageSize: "1MB", Limit: 4096}, {PageSize: "4MB", Limit: 1024}}}
	case "resources/unified":
		return &nriv1beta1.LinuxResources{Unified: map[string]string{"resource.1": "value1", "resource.2": "value2"}}
	}
	panic("unknown update subject " + subject)
}

func containerUpdate(id string, res *nriv1beta1.LinuxResources) *nriv1beta1.ContainerUpdate {
	return &nriv1beta1.ContainerUpdate{ContainerId: id, Linux: &nriv1beta1.LinuxContainerUpdate{Resources: res}}
}

// requestedResources are the resources classic's solicited-update scenarios
// ask for.
func requestedResources() *nriv1beta1.LinuxResources {
	return &nriv1beta1.LinuxResources{
		Cpu: &nriv1beta1.LinuxCPU{Shares: u64(999), Quota: i64(888), Period: u64(777), RealtimeRuntime: i64(666),
			RealtimePeriod: u64(555), Cpus: "444", Mems: "333"},
		Memory: &nriv1beta1.LinuxMemory{Limit: i64(9999), Reservation: i64(8888), Swap: i64(7777), Kernel: i64(6666),
			KernelTcp: i64(5555), Swappiness: u64(444), DisableOomKiller: boolv(false), UseHierarchy: boolv(false)},
	}
}

// overlay returns the requested resources with what plugin set for subject.
func overlay(subject, plugin string) *nriv1beta1.LinuxResources {
	r := requestedResources()
	u := resourceUpdate(subject, plugin)
	if u.Cpu != nil {
		r.Cpu = u.Cpu
	}
	if u.Memory != nil {
		r.Memory = u.Memory
	}
	r.RdtClass, r.BlockioClass = u.RdtClass, u.BlockioClass
	r.HugepageLimits, r.Unified = u.HugepageLimits, u.Unified
	return r
}

var updateSubjects = []struct{ name, subject string }{
	{"update CPU resources", "resources/cpu"},
	{"update memory resources", "resources/memory"},
	{"update class-based resources", "resources/classes"},
	{"update hugepage limits", "resources/hugepagelimits"},
	{"update cgroupv2 unified resources", "resources/unified"},
}

func init() {
	const g = "ContainerUpdatesDuringCreation"
	// Creating ctr1 (pod1), plugins named by which update ctr0 (pod0).
	during := func(subject string, starts [][2]string, which string) func(s *S) {
		return func(s *S) {
			for _, id := range starts {
				full := id[0] + "-" + id[1]
				s.Start(id[0], id[1], onCreate(func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
					if req.GetContainer().GetName() != "ctr1" || (which != "both" && which != full) {
						return nil, nil
					}
					return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{containerUpdate("ctr0", resourceUpdate(subject, full))}}, nil
				}))
			}
			pod0, pod1 := newPod("pod0", nil), newPod("pod1", nil)
			s.runPod(pod0)
			s.mustCreate(pod0, newCtr("pod0", "ctr0"))
			s.runPod(pod1)
			rsp, err := s.create(pod1, newCtr("pod1", "ctr1"))
			if which == "both" {
				s.failsWith("conflicting updates of ctr0", err, codes.FailedPrecondition, "DISPATCH_OUTCOME_CONFLICT", `plugins "10-foo" and "00-bar" both tried to set`)
				return
			}
			s.must("CreateContainer ctr1", err)
			if len(rsp.GetUpdate()) != 1 {
				s.Fatalf("got %d updates, want exactly one for ctr0: %v", len(rsp.GetUpdate()), rsp.GetUpdate())
			}
			protoEq(s, "update of ctr0", rsp.GetUpdate()[0], containerUpdate("ctr0", resourceUpdate(subject, which)))
		}
	}
	for _, c := range updateSubjects {
		add(Upstream, g, "there is a single plugin: should be successfully collected without conflicts: "+c.name, Options{},
			during(c.subject, [][2]string{{"00", "test"}}, "00-test"))
	}
	for _, c := range updateSubjects {
		multi := [][2]string{{"10", "foo"}, {"00", "bar"}}
		add(Upstream, g, "there are multiple plugins: should fail with conflicts: "+c.name+" (both)", Options{}, during(c.subject, multi, "both"))
		add(Upstream, g, "there are multiple plugins: successfully collected otherwise: "+c.name+" (10-foo)", Options{}, during(c.subject, multi, "10-foo"))
	}
	add(Gap, g, "updating the container being created fails the creation, naming the plugin", Options{}, func(s *S) {
		s.Start("10", "selfish", onCreate(func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{
				containerUpdate(req.GetContainer().GetId(), resourceUpdate("resources/cpu", ""))}}, nil
		}))
		pod := newPod("pod0", nil)
		s.runPod(pod)
		_, err := s.create(pod, newCtr("pod0", "ctr0"))
		s.failsWith("CreateContainer", err, codes.OK, "DISPATCH_OUTCOME_CONFLICT", `plugin "10-selfish" asked update of "ctr0" during creation`)
	})

	// Solicited updates: UpdateContainer of ctr0. nri-grpc returns the
	// target's final resources in linux_resources (always set) and only the
	// updates of other containers in update; classic appended the target's
	// resources as the last element of update.
	const sg = "SolicitedContainerUpdatesByPlugins"
	solicited := func(subject string, starts [][2]string, which string) func(s *S) {
		return func(s *S) {
			for _, id := range starts {
				full := id[0] + "-" + id[1]
				s.Start(id[0], id[1], onUpdate(func(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
					if req.GetContainer().GetName() != "ctr0" || (which != "both" && which != full) {
						return nil, nil
					}
					return &nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{
						containerUpdate(req.GetContainer().GetId(), resourceUpdate(subject, full))}}, nil
				}))
			}
			pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
			s.runPod(pod)
			s.mustCreate(pod, ctr)
			rsp, err := s.RT().UpdateContainer(s.ctx, &nriv1beta1.UpdateContainerRequest{Pod: clone(pod), Container: clone(ctr),
				LinuxResources: requestedResources()})
			if which == "both" {
				s.failsWith("conflicting updates of ctr0", err, codes.FailedPrecondition, "DISPATCH_OUTCOME_CONFLICT", `plugins "10-foo" and "00-bar" both tried to set`)
				return
			}
			s.must("UpdateContainer", err)
			if len(rsp.GetUpdate()) != 0 {
				s.Errorf("updates of other containers: %v, want none", rsp.GetUpdate())
			}
			protoEq(s, "final resources of ctr0", rsp.GetLinuxResources(), overlay(subject, which))
		}
	}
	for _, c := range updateSubjects {
		add(Upstream, sg, "there is a single plugin: should be successfully collected without conflicts: "+c.name, Options{},
			solicited(c.subject, [][2]string{{"00", "test"}}, "00-test"))
	}
	for _, c := range updateSubjects {
		multi := [][2]string{{"10", "foo"}, {"00", "bar"}}
		add(Upstream, sg, "there are multiple plugins: should fail with conflicts: "+c.name+" (both)", Options{}, solicited(c.subject, multi, "both"))
		add(Upstream, sg, "there are multiple plugins: successfully collected otherwise: "+c.name+" (10-foo)", Options{}, solicited(c.subject, multi, "10-foo"))
	}
	add(Gap, sg, "later plugins see the target's resources as changed by earlier plugins", Options{}, func(s *S) {
		var seen *nriv1beta1.LinuxResources
		s.Start("00", "first", onUpdate(func(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
			return &nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{
				containerUpdate(req.GetContainer().GetId(), &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "7"}})}}, nil
		}))
		s.Start("10", "second", onUpdate(func(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
			seen = req.GetLinuxResources()
			return nil, nil
		}))
		pod, ctr := newPod("pod0", nil), newCtr("pod0", "ctr0")
		rsp, err := s.RT().UpdateContainer(s.ctx, &nriv1beta1.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: requestedResources()})
		s.must("UpdateContainer", err)
		if seen.GetCpu().GetCpus() != "7" || seen.GetMemory().GetLimit().GetValue() != 9999 {
			s.Errorf("10-second saw %v, want the request with 00-first's cpus", seen)
		}
		if rsp.GetLinuxResources().GetCpu().GetCpus() != "7" {
			s.Errorf("final resources %v", rsp.GetLinuxResources())
		}
	})
	add(Gap, sg, "updates of other containers come with the target's final resources", Options{}, func(s *S) {
		s.Start("00", "rebalancer", onUpdate(func(context.Context, *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
			return &nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{
				containerUpdate("ctr9", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "1"}})}}, nil
		}))
		rsp, err := s.RT().UpdateContainer(s.ctx, &nriv1beta1.UpdateContainerRequest{Pod: newPod("pod0", nil), Container: newCtr("pod0", "ctr0"),
			LinuxResources: requestedResources()})
		s.must("UpdateContainer", err)
		eq(s, "updates", rsp.GetUpdate(), []*nriv1beta1.ContainerUpdate{containerUpdate("ctr9", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "1"}})})
		protoEq(s, "final resources of ctr0", rsp.GetLinuxResources(), requestedResources())
	})

	const ug = "UnsolicitedContainerUpdateRequests"
	// Upstream's scenario updates "pod0", an id its fake runtime accepts;
	// nri-grpc fails updates of containers it does not know without asking
	// the runtime (PROTOCOL §13), so the update names a created container.
	rdt := []*nriv1beta1.ContainerUpdate{containerUpdate("ctr0", &nriv1beta1.LinuxResources{RdtClass: str("test")})}
	add(Upstream, ug, "there are plugins: should fail gracefully without unstarted plugins", Options{}, func(s *S) {
		p := s.Start("00", "test")
		p.Stop()
		if _, _, err := p.UpdateContainers(s.ctx, rdt, nil); err == nil {
			s.Fatal("UpdateContainers of a stopped plugin succeeded")
		}
		if n := len(s.Env().Applied().All()); n != 0 {
			s.Fatalf("the runtime was asked to apply %d requests", n)
		}
	})
	add(Upstream, ug, "there are plugins: should be delivered, without crash/panic", Options{}, func(s *S) {
		p := s.Start("00", "test")
		pod := newPod("pod0", nil)
		s.runPod(pod)
		s.mustCreate(pod, newCtr("pod0", "ctr0"))
		failed, failedEv, err := p.UpdateContainers(s.ctx, rdt, nil)
		if err != nil || failed != nil || failedEv != nil {
			s.Fatalf("UpdateContainers: failed %v %v, err %v", failed, failedEv, err)
		}
		got := s.Env().Applied().All()
		if len(got) != 1 || got[0].Plugin != "00-test" || len(got[0].Update) != 1 {
			s.Fatalf("the runtime got %v", got)
		}
		protoEq(s, "applied update", got[0].Update[0], rdt[0])
	})
	add(Gap, ug, "a replaced instance's unsolicited updates are refused", Options{}, func(s *S) {
		old := s.Start("10", "same")
		s.Start("10", "same")
		s.waitDone(old)
		_, _, err := old.UpdateContainers(s.ctx, rdt, nil)
		s.failsWith("UpdateContainers of the replaced instance", err, codes.FailedPrecondition, "")
		if n := len(s.Env().Applied().All()); n != 0 {
			s.Fatalf("the runtime was asked to apply %d requests", n)
		}
	})
	add(Deliberate, ug, "PROTOCOL 13: updates of a container nrid does not know fail without reaching the runtime (classic asked the runtime, which fails them)",
		Options{}, func(s *S) {
			p := s.Start("00", "test")
			pod := newPod("pod0", nil)
			s.runPod(pod)
			s.mustCreate(pod, newCtr("pod0", "ctr0"))
			upd := []*nriv1beta1.ContainerUpdate{
				containerUpdate("ctr0", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "0"}}),
				containerUpdate("ctr-unknown", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "1"}}),
			}
			failed, _, err := p.UpdateContainers(s.ctx, upd, nil)
			s.must("UpdateContainers", err)
			eq(s, "failed updates", failed, upd[1:])
			// Behind the bridge the classic runtime applies updates
			// asynchronously.
			s.must("waiting for the runtime", s.Env().Applied().Wait(s.ctx, func(a []Applied) bool { return len(a) > 0 }))
			got := s.Env().Applied().All()
			if len(got) != 1 || len(got[0].Update) != 1 {
				s.Fatalf("the runtime got %v, want the known container's update only", got)
			}
			protoEq(s, "applied update", got[0].Update[0], upd[0])
		})
	add(Deliberate, ug, "PROTOCOL 13: failures come back in the failed lists with an OK status (classic lost them in an error)",
		Options{FailUpdates: []string{"ctr1"}}, func(s *S) {
			p := s.Start("00", "test")
			pod := newPod("pod0", nil)
			s.runPod(pod)
			s.mustCreate(pod, newCtr("pod0", "ctr0"))
			s.mustCreate(pod, newCtr("pod0", "ctr1"))
			upd := []*nriv1beta1.ContainerUpdate{
				containerUpdate("ctr0", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "0"}}),
				containerUpdate("ctr1", &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "1"}}),
			}
			ev := []*nriv1beta1.ContainerEviction{{ContainerId: "ctr1", Reason: "too hot"}}
			failed, failedEv, err := p.UpdateContainers(s.ctx, upd, ev)
			s.must("UpdateContainers", err)
			eq(s, "failed updates", failed, upd[1:])
			eq(s, "failed evictions", failedEv, ev)
		})
}
