package server

import (
	"sort"
	"sync"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// state is the server's view of the runtime's pods and containers: seeded
// from the runtime when it attaches, then kept current by the events the
// server dispatches and the updates it relays. New plugins are synchronized
// from it, at the registration cut, so what a plugin learns through
// Synchronize and what it then sees through events never overlap or leave a
// gap.
type state struct {
	mu   sync.RWMutex
	pods map[string]*nriv1beta1.PodSandbox
	ctrs map[string]*nriv1beta1.Container
}

func newState() *state {
	return &state{pods: map[string]*nriv1beta1.PodSandbox{}, ctrs: map[string]*nriv1beta1.Container{}}
}

// snapshot returns the pods and containers, sorted by id for determinism.
// The objects are shared: callers must not modify them.
func (s *state) snapshot() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.snapshotLocked()
}

func (s *state) snapshotLocked() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) {
	pods := make([]*nriv1beta1.PodSandbox, 0, len(s.pods))
	for _, p := range s.pods {
		pods = append(pods, p)
	}
	ctrs := make([]*nriv1beta1.Container, 0, len(s.ctrs))
	for _, c := range s.ctrs {
		ctrs = append(ctrs, c)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].GetId() < pods[j].GetId() })
	sort.Slice(ctrs, func(i, j int) bool { return ctrs[i].GetId() < ctrs[j].GetId() })
	return pods, ctrs
}

// replace swaps in a new snapshot and returns what vanished.
func (s *state) replace(pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) (gonePods []*nriv1beta1.PodSandbox, goneCtrs []*nriv1beta1.Container) {
	np := make(map[string]*nriv1beta1.PodSandbox, len(pods))
	for _, p := range pods {
		np[p.GetId()] = p
	}
	nc := make(map[string]*nriv1beta1.Container, len(ctrs))
	for _, c := range ctrs {
		nc[c.GetId()] = c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	oldPods, oldCtrs := s.snapshotLocked()
	for _, p := range oldPods {
		if _, ok := np[p.GetId()]; !ok {
			gonePods = append(gonePods, p)
		}
	}
	for _, c := range oldCtrs {
		if _, ok := nc[c.GetId()]; !ok {
			goneCtrs = append(goneCtrs, c)
		}
	}
	s.pods, s.ctrs = np, nc
	return gonePods, goneCtrs
}

func (s *state) setPod(p *nriv1beta1.PodSandbox) {
	s.mu.Lock()
	s.pods[p.GetId()] = p
	s.mu.Unlock()
}

func (s *state) pod(id string) *nriv1beta1.PodSandbox {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.pods[id]
}

func (s *state) deletePod(id string) {
	s.mu.Lock()
	delete(s.pods, id)
	s.mu.Unlock()
}

// recordContainer caches c as an event the server relayed left it: in at
// least the state the event implies (created, running after
// PostStartContainer, stopped after StopContainer), and never in an earlier
// state than the cache already knows. Runtimes send the container as it was
// when the event began (containerd reports a started container as created
// in StartContainer and PostStartContainer), and a plugin that registers
// later must get it in Synchronize as it is now. c itself is not modified:
// plugins may still hold it.
func (s *state) recordContainer(c *nriv1beta1.Container, implied nriv1beta1.ContainerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := c.GetState()
	if stateRank(implied) > stateRank(st) {
		st = implied
	}
	if old, ok := s.ctrs[c.GetId()]; ok && stateRank(old.GetState()) > stateRank(st) {
		st = old.GetState()
	}
	if st != c.GetState() {
		c = c.CloneVT()
		c.State = st
	}
	s.ctrs[c.GetId()] = c
}

// stateRank orders container states along a container's life; paused is a
// kind of running.
func stateRank(st nriv1beta1.ContainerState) int {
	switch st {
	case nriv1beta1.ContainerState_CONTAINER_STATE_CREATED:
		return 1
	case nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING, nriv1beta1.ContainerState_CONTAINER_STATE_PAUSED:
		return 2
	case nriv1beta1.ContainerState_CONTAINER_STATE_STOPPED:
		return 3
	}
	return 0
}

func (s *state) container(id string) *nriv1beta1.Container {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ctrs[id]
}

func (s *state) deleteContainer(id string) {
	s.mu.Lock()
	delete(s.ctrs, id)
	s.mu.Unlock()
}

// applyUpdates records applied resource updates in the cached containers.
func (s *state) applyUpdates(updates []*nriv1beta1.ContainerUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range updates {
		c, ok := s.ctrs[u.GetContainerId()]
		res := u.GetLinux().GetResources()
		if !ok || res == nil {
			continue
		}
		c = c.CloneVT()
		if c.Linux == nil {
			c.Linux = &nriv1beta1.LinuxContainer{}
		}
		c.Linux.Resources = overlayResources(c.Linux.Resources, res)
		s.ctrs[c.Id] = c
	}
}

// overlayResources returns base with every field set in upd applied.
func overlayResources(base, upd *nriv1beta1.LinuxResources) *nriv1beta1.LinuxResources {
	out := base.CloneVT()
	if out == nil {
		out = &nriv1beta1.LinuxResources{}
	}
	if m := upd.GetMemory(); m != nil {
		if out.Memory == nil {
			out.Memory = &nriv1beta1.LinuxMemory{}
		}
		o := out.Memory
		setIf(&o.Limit, m.Limit)
		setIf(&o.Reservation, m.Reservation)
		setIf(&o.Swap, m.Swap)
		setIf(&o.Kernel, m.Kernel)
		setIf(&o.KernelTcp, m.KernelTcp)
		setIf(&o.Swappiness, m.Swappiness)
		setIf(&o.DisableOomKiller, m.DisableOomKiller)
		setIf(&o.UseHierarchy, m.UseHierarchy)
	}
	if c := upd.GetCpu(); c != nil {
		if out.Cpu == nil {
			out.Cpu = &nriv1beta1.LinuxCPU{}
		}
		o := out.Cpu
		setIf(&o.Shares, c.Shares)
		setIf(&o.Quota, c.Quota)
		setIf(&o.Period, c.Period)
		setIf(&o.RealtimeRuntime, c.RealtimeRuntime)
		setIf(&o.RealtimePeriod, c.RealtimePeriod)
		if c.Cpus != "" {
			o.Cpus = c.Cpus
		}
		if c.Mems != "" {
			o.Mems = c.Mems
		}
	}
	if len(upd.HugepageLimits) > 0 {
		out.HugepageLimits = upd.CloneVT().HugepageLimits
	}
	setIf(&out.BlockioClass, upd.BlockioClass)
	setIf(&out.RdtClass, upd.RdtClass)
	for k, v := range upd.Unified {
		if out.Unified == nil {
			out.Unified = map[string]string{}
		}
		out.Unified[k] = v
	}
	if upd.Pids != nil {
		out.Pids = upd.Pids.CloneVT()
	}
	return out
}

func setIf[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}
