package plugin

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// MarkForRemoval returns key with the removal marker: "-key". In an
// adjustment it asks the server to remove the entry key, whether the runtime
// or an earlier plugin set it.
func MarkForRemoval(key string) string { return "-" + key }

// IsMarkedForRemoval reports whether key carries the removal marker, and
// returns the key without it.
func IsMarkedForRemoval(key string) (string, bool) {
	if strings.HasPrefix(key, "-") {
		return key[1:], true
	}
	return key, false
}

// Adjustment builds the ContainerAdjustment a CreateContainer handler
// returns, with the removal-marker conventions of classic NRI
// (docs/PROTOCOL.md §9). The methods have the names of classic NRI's
// api.ContainerAdjustment helpers, and return the builder so calls can be
// chained. To override a value an earlier plugin set, remove it and set it
// again in the same adjustment (RemoveEnv then AddEnv, ...).
//
// The zero value is not usable; use NewAdjustment or AdjustmentOf.
type Adjustment struct {
	a *nriv1beta1.ContainerAdjustment
}

// NewAdjustment returns a builder of an empty adjustment.
func NewAdjustment() *Adjustment { return &Adjustment{a: &nriv1beta1.ContainerAdjustment{}} }

// AdjustmentOf returns a builder that adds to a. a must not be nil.
func AdjustmentOf(a *nriv1beta1.ContainerAdjustment) *Adjustment { return &Adjustment{a: a} }

// Proto returns the adjustment built so far (not a copy).
func (b *Adjustment) Proto() *nriv1beta1.ContainerAdjustment { return b.a }

// Response returns a CreateContainerResponse carrying the adjustment.
func (b *Adjustment) Response() *nriv1beta1.CreateContainerResponse {
	return &nriv1beta1.CreateContainerResponse{Adjust: b.a}
}

func (b *Adjustment) linux() *nriv1beta1.LinuxContainerAdjustment {
	if b.a.Linux == nil {
		b.a.Linux = &nriv1beta1.LinuxContainerAdjustment{}
	}
	return b.a.Linux
}

func (b *Adjustment) resources() *nriv1beta1.LinuxResources {
	l := b.linux()
	if l.Resources == nil {
		l.Resources = &nriv1beta1.LinuxResources{}
	}
	return l.Resources
}

func (b *Adjustment) memory() *nriv1beta1.LinuxMemory {
	r := b.resources()
	if r.Memory == nil {
		r.Memory = &nriv1beta1.LinuxMemory{}
	}
	return r.Memory
}

func (b *Adjustment) cpu() *nriv1beta1.LinuxCPU {
	r := b.resources()
	if r.Cpu == nil {
		r.Cpu = &nriv1beta1.LinuxCPU{}
	}
	return r.Cpu
}

func (b *Adjustment) rdt() *nriv1beta1.LinuxRdt {
	l := b.linux()
	if l.Rdt == nil {
		l.Rdt = &nriv1beta1.LinuxRdt{}
	}
	return l.Rdt
}

// AddAnnotation sets the annotation key to value.
func (b *Adjustment) AddAnnotation(key, value string) *Adjustment {
	if b.a.Annotations == nil {
		b.a.Annotations = map[string]string{}
	}
	b.a.Annotations[key] = value
	return b
}

// RemoveAnnotation removes the annotation key.
func (b *Adjustment) RemoveAnnotation(key string) *Adjustment {
	return b.AddAnnotation(MarkForRemoval(key), "")
}

// AddMount adds a mount, replacing any mount at the same destination.
func (b *Adjustment) AddMount(m *nriv1beta1.Mount) *Adjustment {
	b.a.Mounts = append(b.a.Mounts, m)
	return b
}

// RemoveMount removes the mount at destination.
func (b *Adjustment) RemoveMount(destination string) *Adjustment {
	b.a.Mounts = append(b.a.Mounts, &nriv1beta1.Mount{Destination: MarkForRemoval(destination)})
	return b
}

// AddEnv sets the environment variable key to value.
func (b *Adjustment) AddEnv(key, value string) *Adjustment {
	b.a.Env = append(b.a.Env, &nriv1beta1.KeyValue{Key: key, Value: value})
	return b
}

// RemoveEnv removes the environment variable key.
func (b *Adjustment) RemoveEnv(key string) *Adjustment {
	b.a.Env = append(b.a.Env, &nriv1beta1.KeyValue{Key: MarkForRemoval(key)})
	return b
}

// SetArgs replaces the process arguments. It conflicts with an earlier
// plugin that set them; see UpdateArgs.
func (b *Adjustment) SetArgs(args []string) *Adjustment {
	b.a.Args = slices.Clone(args)
	return b
}

// UpdateArgs replaces the process arguments, overriding those an earlier
// plugin set (the arguments are sent after an empty first element).
func (b *Adjustment) UpdateArgs(args []string) *Adjustment {
	b.a.Args = append([]string{""}, args...)
	return b
}

// AddHooks appends OCI hooks. Hooks accumulate across plugins and never
// conflict.
func (b *Adjustment) AddHooks(h *nriv1beta1.Hooks) *Adjustment {
	if h == nil {
		return b
	}
	if b.a.Hooks == nil {
		b.a.Hooks = &nriv1beta1.Hooks{}
	}
	t := b.a.Hooks
	t.Prestart = append(t.Prestart, h.GetPrestart()...)
	t.CreateRuntime = append(t.CreateRuntime, h.GetCreateRuntime()...)
	t.CreateContainer = append(t.CreateContainer, h.GetCreateContainer()...)
	t.StartContainer = append(t.StartContainer, h.GetStartContainer()...)
	t.Poststart = append(t.Poststart, h.GetPoststart()...)
	t.Poststop = append(t.Poststop, h.GetPoststop()...)
	return b
}

// AddRlimit sets the POSIX resource limit typ ("RLIMIT_NOFILE").
func (b *Adjustment) AddRlimit(typ string, hard, soft uint64) *Adjustment {
	b.a.Rlimits = append(b.a.Rlimits, &nriv1beta1.POSIXRlimit{Type: typ, Hard: hard, Soft: soft})
	return b
}

// AddDevice adds a device node, replacing any device at the same path.
func (b *Adjustment) AddDevice(d *nriv1beta1.LinuxDevice) *Adjustment {
	l := b.linux()
	l.Devices = append(l.Devices, d)
	return b
}

// RemoveDevice removes the device node at path.
func (b *Adjustment) RemoveDevice(path string) *Adjustment {
	l := b.linux()
	l.Devices = append(l.Devices, &nriv1beta1.LinuxDevice{Path: MarkForRemoval(path)})
	return b
}

// AddCDIDevice injects a CDI device ("vendor.com/class=name"). CDI devices
// cannot be removed, and two plugins injecting the same one conflict.
func (b *Adjustment) AddCDIDevice(d *nriv1beta1.CDIDevice) *Adjustment {
	b.a.CdiDevices = append(b.a.CdiDevices, d)
	return b
}

// AddOrReplaceNamespace adds a namespace, replacing any of the same type.
func (b *Adjustment) AddOrReplaceNamespace(n *nriv1beta1.LinuxNamespace) *Adjustment {
	l := b.linux()
	l.Namespaces = append(l.Namespaces, n)
	return b
}

// RemoveNamespace removes the namespace of n's type.
func (b *Adjustment) RemoveNamespace(n *nriv1beta1.LinuxNamespace) *Adjustment {
	l := b.linux()
	l.Namespaces = append(l.Namespaces, &nriv1beta1.LinuxNamespace{Type: MarkForRemoval(n.GetType())})
	return b
}

// AddLinuxNetDevice moves the host network interface hostDev into the
// container, as d.
func (b *Adjustment) AddLinuxNetDevice(hostDev string, d *nriv1beta1.LinuxNetDevice) *Adjustment {
	if d == nil {
		return b
	}
	l := b.linux()
	if l.NetDevices == nil {
		l.NetDevices = map[string]*nriv1beta1.LinuxNetDevice{}
	}
	l.NetDevices[hostDev] = d
	return b
}

// RemoveLinuxNetDevice removes the net device entry of hostDev.
func (b *Adjustment) RemoveLinuxNetDevice(hostDev string) *Adjustment {
	l := b.linux()
	if l.NetDevices == nil {
		l.NetDevices = map[string]*nriv1beta1.LinuxNetDevice{}
	}
	l.NetDevices[MarkForRemoval(hostDev)] = &nriv1beta1.LinuxNetDevice{}
	return b
}

// SetLinuxSysctl sets the namespaced sysctl key.
func (b *Adjustment) SetLinuxSysctl(key, value string) *Adjustment {
	l := b.linux()
	if l.Sysctl == nil {
		l.Sysctl = map[string]string{}
	}
	l.Sysctl[key] = value
	return b
}

// RemoveLinuxSysctl removes the sysctl key.
func (b *Adjustment) RemoveLinuxSysctl(key string) *Adjustment {
	return b.SetLinuxSysctl(MarkForRemoval(key), "")
}

// SetLinuxMemoryPolicy sets the NUMA memory policy.
func (b *Adjustment) SetLinuxMemoryPolicy(mode nriv1beta1.MpolMode, nodes string, flags ...nriv1beta1.MpolFlag) *Adjustment {
	b.linux().MemoryPolicy = &nriv1beta1.LinuxMemoryPolicy{Mode: mode, Nodes: nodes, Flags: slices.Clone(flags)}
	return b
}

// SetLinuxMemoryLimit sets the memory limit in bytes.
func (b *Adjustment) SetLinuxMemoryLimit(v int64) *Adjustment {
	b.memory().Limit = wrapperspb.Int64(v)
	return b
}

// SetLinuxMemoryReservation sets the memory soft limit in bytes.
func (b *Adjustment) SetLinuxMemoryReservation(v int64) *Adjustment {
	b.memory().Reservation = wrapperspb.Int64(v)
	return b
}

// SetLinuxMemorySwap sets the memory plus swap limit in bytes.
func (b *Adjustment) SetLinuxMemorySwap(v int64) *Adjustment {
	b.memory().Swap = wrapperspb.Int64(v)
	return b
}

// SetLinuxMemoryKernel sets the kernel memory limit (cgroup v1).
func (b *Adjustment) SetLinuxMemoryKernel(v int64) *Adjustment {
	b.memory().Kernel = wrapperspb.Int64(v)
	return b
}

// SetLinuxMemoryKernelTCP sets the kernel TCP memory limit (cgroup v1).
func (b *Adjustment) SetLinuxMemoryKernelTCP(v int64) *Adjustment {
	b.memory().KernelTcp = wrapperspb.Int64(v)
	return b
}

// SetLinuxMemorySwappiness sets the swappiness.
func (b *Adjustment) SetLinuxMemorySwappiness(v uint64) *Adjustment {
	b.memory().Swappiness = wrapperspb.UInt64(v)
	return b
}

// SetLinuxMemoryDisableOomKiller disables the OOM killer (cgroup v1).
func (b *Adjustment) SetLinuxMemoryDisableOomKiller() *Adjustment {
	b.memory().DisableOomKiller = wrapperspb.Bool(true)
	return b
}

// SetLinuxMemoryUseHierarchy enables hierarchical accounting (cgroup v1).
func (b *Adjustment) SetLinuxMemoryUseHierarchy() *Adjustment {
	b.memory().UseHierarchy = wrapperspb.Bool(true)
	return b
}

// SetLinuxCPUShares sets the CPU shares.
func (b *Adjustment) SetLinuxCPUShares(v uint64) *Adjustment {
	b.cpu().Shares = wrapperspb.UInt64(v)
	return b
}

// SetLinuxCPUQuota sets the CFS quota in microseconds.
func (b *Adjustment) SetLinuxCPUQuota(v int64) *Adjustment {
	b.cpu().Quota = wrapperspb.Int64(v)
	return b
}

// SetLinuxCPUPeriod sets the CFS period in microseconds.
func (b *Adjustment) SetLinuxCPUPeriod(v uint64) *Adjustment {
	b.cpu().Period = wrapperspb.UInt64(v)
	return b
}

// SetLinuxCPURealtimeRuntime sets the realtime runtime in microseconds.
func (b *Adjustment) SetLinuxCPURealtimeRuntime(v int64) *Adjustment {
	b.cpu().RealtimeRuntime = wrapperspb.Int64(v)
	return b
}

// SetLinuxCPURealtimePeriod sets the realtime period in microseconds.
func (b *Adjustment) SetLinuxCPURealtimePeriod(v uint64) *Adjustment {
	b.cpu().RealtimePeriod = wrapperspb.UInt64(v)
	return b
}

// SetLinuxCPUSetCPUs sets the allowed CPUs ("0-3,6").
func (b *Adjustment) SetLinuxCPUSetCPUs(v string) *Adjustment {
	b.cpu().Cpus = v
	return b
}

// SetLinuxCPUSetMems sets the allowed memory nodes.
func (b *Adjustment) SetLinuxCPUSetMems(v string) *Adjustment {
	b.cpu().Mems = v
	return b
}

// SetLinuxPidLimits sets the pids limit.
func (b *Adjustment) SetLinuxPidLimits(v int64) *Adjustment {
	b.resources().Pids = &nriv1beta1.LinuxPids{Limit: v}
	return b
}

// AddLinuxHugepageLimit sets the limit of one huge page size ("2MB").
func (b *Adjustment) AddLinuxHugepageLimit(pageSize string, v uint64) *Adjustment {
	r := b.resources()
	r.HugepageLimits = append(r.HugepageLimits, &nriv1beta1.HugepageLimit{PageSize: pageSize, Limit: v})
	return b
}

// SetLinuxBlockIOClass sets the block I/O class.
func (b *Adjustment) SetLinuxBlockIOClass(v string) *Adjustment {
	b.resources().BlockioClass = wrapperspb.String(v)
	return b
}

// SetLinuxRDTClass sets the RDT class.
func (b *Adjustment) SetLinuxRDTClass(v string) *Adjustment {
	b.resources().RdtClass = wrapperspb.String(v)
	return b
}

// AddLinuxUnified sets a cgroup v2 unified setting ("memory.high").
func (b *Adjustment) AddLinuxUnified(key, value string) *Adjustment {
	r := b.resources()
	if r.Unified == nil {
		r.Unified = map[string]string{}
	}
	r.Unified[key] = value
	return b
}

// AddLinuxDeviceCgroup appends a device cgroup rule (rules never conflict).
func (b *Adjustment) AddLinuxDeviceCgroup(rule *nriv1beta1.LinuxDeviceCgroup) *Adjustment {
	r := b.resources()
	r.Devices = append(r.Devices, rule)
	return b
}

// SetLinuxCgroupsPath sets the cgroups path.
func (b *Adjustment) SetLinuxCgroupsPath(v string) *Adjustment {
	b.linux().CgroupsPath = v
	return b
}

// SetLinuxOomScoreAdj sets the OOM score adjustment.
func (b *Adjustment) SetLinuxOomScoreAdj(v int64) *Adjustment {
	b.linux().OomScoreAdj = wrapperspb.Int64(v)
	return b
}

// SetLinuxIOPriority sets the I/O priority.
func (b *Adjustment) SetLinuxIOPriority(p *nriv1beta1.LinuxIOPriority) *Adjustment {
	b.linux().IoPriority = p
	return b
}

// SetLinuxSeccompPolicy sets the seccomp policy.
func (b *Adjustment) SetLinuxSeccompPolicy(s *nriv1beta1.LinuxSeccomp) *Adjustment {
	b.linux().SeccompPolicy = s
	return b
}

// SetLinuxScheduler sets the scheduling attributes.
func (b *Adjustment) SetLinuxScheduler(s *nriv1beta1.LinuxScheduler) *Adjustment {
	b.linux().Scheduler = s
	return b
}

// SetLinuxRDTClosID sets the RDT class of service ID.
func (b *Adjustment) SetLinuxRDTClosID(v string) *Adjustment {
	b.rdt().ClosId = wrapperspb.String(v)
	return b
}

// SetLinuxRDTSchemata sets the RDT schemata lines.
func (b *Adjustment) SetLinuxRDTSchemata(v []string) *Adjustment {
	b.rdt().Schemata = &nriv1beta1.OptionalRepeatedString{Value: slices.Clone(v)}
	return b
}

// SetLinuxRDTEnableMonitoring enables or disables RDT monitoring.
func (b *Adjustment) SetLinuxRDTEnableMonitoring(v bool) *Adjustment {
	b.rdt().EnableMonitoring = wrapperspb.Bool(v)
	return b
}

// RemoveLinuxRDT removes every RDT setting made by the runtime or earlier
// plugins before this adjustment's own RDT settings apply.
func (b *Adjustment) RemoveLinuxRDT() *Adjustment {
	b.rdt().Remove = true
	return b
}

// Update builds a ContainerUpdate: a change of the resources of an existing
// container, for the update lists of CreateContainer, UpdateContainer,
// StopContainer and Synchronize responses and for
// Plugin.UpdateContainers. The methods have the names of classic NRI's
// api.ContainerUpdate helpers.
//
// The zero value is not usable; use NewUpdate or UpdateOf.
type Update struct {
	u *nriv1beta1.ContainerUpdate
}

// NewUpdate returns a builder of an update of container id.
func NewUpdate(id string) *Update { return &Update{u: &nriv1beta1.ContainerUpdate{ContainerId: id}} }

// UpdateOf returns a builder that adds to u. u must not be nil.
func UpdateOf(u *nriv1beta1.ContainerUpdate) *Update { return &Update{u: u} }

// Proto returns the update built so far (not a copy).
func (b *Update) Proto() *nriv1beta1.ContainerUpdate { return b.u }

func (b *Update) resources() *nriv1beta1.LinuxResources {
	if b.u.Linux == nil {
		b.u.Linux = &nriv1beta1.LinuxContainerUpdate{}
	}
	if b.u.Linux.Resources == nil {
		b.u.Linux.Resources = &nriv1beta1.LinuxResources{}
	}
	return b.u.Linux.Resources
}

func (b *Update) memory() *nriv1beta1.LinuxMemory {
	r := b.resources()
	if r.Memory == nil {
		r.Memory = &nriv1beta1.LinuxMemory{}
	}
	return r.Memory
}

func (b *Update) cpu() *nriv1beta1.LinuxCPU {
	r := b.resources()
	if r.Cpu == nil {
		r.Cpu = &nriv1beta1.LinuxCPU{}
	}
	return r.Cpu
}

// SetContainerId sets the id of the container to update.
func (b *Update) SetContainerId(id string) *Update { //nolint:revive,staticcheck // classic NRI's name
	b.u.ContainerId = id
	return b
}

// SetIgnoreFailure makes a failure to apply the update (or a conflict while
// merging it) drop the update instead of failing the event.
func (b *Update) SetIgnoreFailure() *Update {
	b.u.IgnoreFailure = true
	return b
}

// SetLinuxResources sets the update's resources to r (not a copy).
func (b *Update) SetLinuxResources(r *nriv1beta1.LinuxResources) *Update {
	b.u.Linux = &nriv1beta1.LinuxContainerUpdate{Resources: r}
	return b
}

// SetLinuxMemoryLimit sets the memory limit in bytes.
func (b *Update) SetLinuxMemoryLimit(v int64) *Update {
	b.memory().Limit = wrapperspb.Int64(v)
	return b
}

// SetLinuxMemoryReservation sets the memory soft limit in bytes.
func (b *Update) SetLinuxMemoryReservation(v int64) *Update {
	b.memory().Reservation = wrapperspb.Int64(v)
	return b
}

// SetLinuxMemorySwap sets the memory plus swap limit in bytes.
func (b *Update) SetLinuxMemorySwap(v int64) *Update {
	b.memory().Swap = wrapperspb.Int64(v)
	return b
}

// SetLinuxMemoryKernel sets the kernel memory limit (cgroup v1).
func (b *Update) SetLinuxMemoryKernel(v int64) *Update {
	b.memory().Kernel = wrapperspb.Int64(v)
	return b
}

// SetLinuxMemoryKernelTCP sets the kernel TCP memory limit (cgroup v1).
func (b *Update) SetLinuxMemoryKernelTCP(v int64) *Update {
	b.memory().KernelTcp = wrapperspb.Int64(v)
	return b
}

// SetLinuxMemorySwappiness sets the swappiness.
func (b *Update) SetLinuxMemorySwappiness(v uint64) *Update {
	b.memory().Swappiness = wrapperspb.UInt64(v)
	return b
}

// SetLinuxMemoryDisableOomKiller disables the OOM killer (cgroup v1).
func (b *Update) SetLinuxMemoryDisableOomKiller() *Update {
	b.memory().DisableOomKiller = wrapperspb.Bool(true)
	return b
}

// SetLinuxMemoryUseHierarchy enables hierarchical accounting (cgroup v1).
func (b *Update) SetLinuxMemoryUseHierarchy() *Update {
	b.memory().UseHierarchy = wrapperspb.Bool(true)
	return b
}

// SetLinuxCPUShares sets the CPU shares.
func (b *Update) SetLinuxCPUShares(v uint64) *Update {
	b.cpu().Shares = wrapperspb.UInt64(v)
	return b
}

// SetLinuxCPUQuota sets the CFS quota in microseconds.
func (b *Update) SetLinuxCPUQuota(v int64) *Update {
	b.cpu().Quota = wrapperspb.Int64(v)
	return b
}

// SetLinuxCPUPeriod sets the CFS period in microseconds.
func (b *Update) SetLinuxCPUPeriod(v uint64) *Update {
	b.cpu().Period = wrapperspb.UInt64(v)
	return b
}

// SetLinuxCPURealtimeRuntime sets the realtime runtime in microseconds.
func (b *Update) SetLinuxCPURealtimeRuntime(v int64) *Update {
	b.cpu().RealtimeRuntime = wrapperspb.Int64(v)
	return b
}

// SetLinuxCPURealtimePeriod sets the realtime period in microseconds.
func (b *Update) SetLinuxCPURealtimePeriod(v uint64) *Update {
	b.cpu().RealtimePeriod = wrapperspb.UInt64(v)
	return b
}

// SetLinuxCPUSetCPUs sets the allowed CPUs.
func (b *Update) SetLinuxCPUSetCPUs(v string) *Update {
	b.cpu().Cpus = v
	return b
}

// SetLinuxCPUSetMems sets the allowed memory nodes.
func (b *Update) SetLinuxCPUSetMems(v string) *Update {
	b.cpu().Mems = v
	return b
}

// SetLinuxPidLimits sets the pids limit (passed on to the runtime; classic
// NRI dropped it).
func (b *Update) SetLinuxPidLimits(v int64) *Update {
	b.resources().Pids = &nriv1beta1.LinuxPids{Limit: v}
	return b
}

// AddLinuxHugepageLimit sets the limit of one huge page size.
func (b *Update) AddLinuxHugepageLimit(pageSize string, v uint64) *Update {
	r := b.resources()
	r.HugepageLimits = append(r.HugepageLimits, &nriv1beta1.HugepageLimit{PageSize: pageSize, Limit: v})
	return b
}

// SetLinuxBlockIOClass sets the block I/O class.
func (b *Update) SetLinuxBlockIOClass(v string) *Update {
	b.resources().BlockioClass = wrapperspb.String(v)
	return b
}

// SetLinuxRDTClass sets the RDT class.
func (b *Update) SetLinuxRDTClass(v string) *Update {
	b.resources().RdtClass = wrapperspb.String(v)
	return b
}

// AddLinuxUnified sets a cgroup v2 unified setting.
func (b *Update) AddLinuxUnified(key, value string) *Update {
	r := b.resources()
	if r.Unified == nil {
		r.Unified = map[string]string{}
	}
	r.Unified[key] = value
	return b
}

// Evict returns an eviction of container id, for the evict lists of
// responses and for Plugin.UpdateContainers.
func Evict(id, reason string) *nriv1beta1.ContainerEviction {
	return &nriv1beta1.ContainerEviction{ContainerId: id, Reason: reason}
}
