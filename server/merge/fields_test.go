package merge_test

import (
	"fmt"

	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// setter sets one field of an adjustment; v varies the value.
type setter func(a *nriv1beta1.ContainerAdjustment, v int)

func rdt(a *nriv1beta1.ContainerAdjustment) *nriv1beta1.LinuxRdt {
	l := lin(a)
	if l.Rdt == nil {
		l.Rdt = &nriv1beta1.LinuxRdt{}
	}
	return l.Rdt
}

// simpleFields covers every simple (non-compound) adjustable field, by its
// classic name.
var simpleFields = []struct {
	name  string
	field nriv1beta1.Field
	set   setter
}{
	{"MemLimit", nriv1beta1.Field_FIELD_MEM_LIMIT, func(a *nriv1beta1.ContainerAdjustment, v int) {
		mem(res(a)).Limit = wrapperspb.Int64(int64(v) << 20)
	}},
	{"MemReservation", nriv1beta1.Field_FIELD_MEM_RESERVATION, func(a *nriv1beta1.ContainerAdjustment, v int) {
		mem(res(a)).Reservation = wrapperspb.Int64(int64(v) << 19)
	}},
	{"MemSwapLimit", nriv1beta1.Field_FIELD_MEM_SWAP_LIMIT, func(a *nriv1beta1.ContainerAdjustment, v int) {
		mem(res(a)).Swap = wrapperspb.Int64(int64(v) << 21)
	}},
	{"MemKernelLimit", nriv1beta1.Field_FIELD_MEM_KERNEL_LIMIT, func(a *nriv1beta1.ContainerAdjustment, v int) {
		mem(res(a)).Kernel = wrapperspb.Int64(int64(v) << 18)
	}},
	{"MemTCPLimit", nriv1beta1.Field_FIELD_MEM_TCP_LIMIT, func(a *nriv1beta1.ContainerAdjustment, v int) {
		mem(res(a)).KernelTcp = wrapperspb.Int64(int64(v) << 17)
	}},
	{"MemSwappiness", nriv1beta1.Field_FIELD_MEM_SWAPPINESS, func(a *nriv1beta1.ContainerAdjustment, v int) {
		mem(res(a)).Swappiness = wrapperspb.UInt64(uint64(v * 10))
	}},
	{"MemDisableOomKiller", nriv1beta1.Field_FIELD_MEM_DISABLE_OOM_KILLER, func(a *nriv1beta1.ContainerAdjustment, v int) {
		mem(res(a)).DisableOomKiller = wrapperspb.Bool(v%2 == 1)
	}},
	{"MemUseHierarchy", nriv1beta1.Field_FIELD_MEM_USE_HIERARCHY, func(a *nriv1beta1.ContainerAdjustment, v int) {
		mem(res(a)).UseHierarchy = wrapperspb.Bool(v%2 == 0)
	}},
	{"CPUShares", nriv1beta1.Field_FIELD_CPU_SHARES, func(a *nriv1beta1.ContainerAdjustment, v int) {
		cpu(res(a)).Shares = wrapperspb.UInt64(uint64(v * 256))
	}},
	{"CPUQuota", nriv1beta1.Field_FIELD_CPU_QUOTA, func(a *nriv1beta1.ContainerAdjustment, v int) {
		cpu(res(a)).Quota = wrapperspb.Int64(int64(v * 50000))
	}},
	{"CPUPeriod", nriv1beta1.Field_FIELD_CPU_PERIOD, func(a *nriv1beta1.ContainerAdjustment, v int) {
		cpu(res(a)).Period = wrapperspb.UInt64(uint64(v * 100000))
	}},
	{"CPURealtimeRuntime", nriv1beta1.Field_FIELD_CPU_REALTIME_RUNTIME, func(a *nriv1beta1.ContainerAdjustment, v int) {
		cpu(res(a)).RealtimeRuntime = wrapperspb.Int64(int64(v * 1000))
	}},
	{"CPURealtimePeriod", nriv1beta1.Field_FIELD_CPU_REALTIME_PERIOD, func(a *nriv1beta1.ContainerAdjustment, v int) {
		cpu(res(a)).RealtimePeriod = wrapperspb.UInt64(uint64(v * 10000))
	}},
	{"CPUSetCPUs", nriv1beta1.Field_FIELD_CPU_SET_CPUS, func(a *nriv1beta1.ContainerAdjustment, v int) {
		cpu(res(a)).Cpus = fmt.Sprintf("%d-%d", v, v+1)
	}},
	{"CPUSetMems", nriv1beta1.Field_FIELD_CPU_SET_MEMS, func(a *nriv1beta1.ContainerAdjustment, v int) {
		cpu(res(a)).Mems = fmt.Sprint(v)
	}},
	{"PidsLimit", nriv1beta1.Field_FIELD_PIDS_LIMIT, func(a *nriv1beta1.ContainerAdjustment, v int) {
		res(a).Pids = &nriv1beta1.LinuxPids{Limit: int64(v * 100)}
	}},
	{"BlockioClass", nriv1beta1.Field_FIELD_BLOCKIO_CLASS, func(a *nriv1beta1.ContainerAdjustment, v int) {
		res(a).BlockioClass = wrapperspb.String(fmt.Sprint("blkio-", v))
	}},
	{"RdtClass", nriv1beta1.Field_FIELD_RDT_CLASS, func(a *nriv1beta1.ContainerAdjustment, v int) {
		res(a).RdtClass = wrapperspb.String(fmt.Sprint("rdt-", v))
	}},
	{"CgroupsPath", nriv1beta1.Field_FIELD_CGROUPS_PATH, func(a *nriv1beta1.ContainerAdjustment, v int) {
		lin(a).CgroupsPath = fmt.Sprint("/nri/cg-", v)
	}},
	{"OomScoreAdj", nriv1beta1.Field_FIELD_OOM_SCORE_ADJ, func(a *nriv1beta1.ContainerAdjustment, v int) {
		lin(a).OomScoreAdj = wrapperspb.Int64(int64(-v * 100))
	}},
	{"IoPriority", nriv1beta1.Field_FIELD_IO_PRIORITY, func(a *nriv1beta1.ContainerAdjustment, v int) {
		lin(a).IoPriority = &nriv1beta1.LinuxIOPriority{Class: nriv1beta1.IOPrioClass_IO_PRIO_CLASS_BE, Priority: int32(v)}
	}},
	{"SeccompPolicy", nriv1beta1.Field_FIELD_SECCOMP_POLICY, func(a *nriv1beta1.ContainerAdjustment, v int) {
		lin(a).SeccompPolicy = &nriv1beta1.LinuxSeccomp{
			DefaultAction: "SCMP_ACT_ERRNO",
			DefaultErrno:  wrapperspb.UInt32(uint32(v)),
			Architectures: []string{"SCMP_ARCH_X86_64"},
			Syscalls: []*nriv1beta1.LinuxSyscall{{
				Names:  []string{"read", "write"},
				Action: "SCMP_ACT_ALLOW",
				Args:   []*nriv1beta1.LinuxSeccompArg{{Index: 0, Value: uint64(v), Op: "SCMP_CMP_EQ"}},
			}},
		}
	}},
	{"LinuxSched", nriv1beta1.Field_FIELD_LINUX_SCHED, func(a *nriv1beta1.ContainerAdjustment, v int) {
		lin(a).Scheduler = &nriv1beta1.LinuxScheduler{
			Policy: nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_BATCH, Nice: int32(v),
			Flags: []nriv1beta1.LinuxSchedulerFlag{nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_RESET_ON_FORK},
		}
	}},
	{"RdtClosID", nriv1beta1.Field_FIELD_RDT_CLOS_ID, func(a *nriv1beta1.ContainerAdjustment, v int) {
		rdt(a).ClosId = wrapperspb.String(fmt.Sprint("clos-", v))
	}},
	{"RdtSchemata", nriv1beta1.Field_FIELD_RDT_SCHEMATA, func(a *nriv1beta1.ContainerAdjustment, v int) {
		rdt(a).Schemata = &nriv1beta1.OptionalRepeatedString{Value: []string{fmt.Sprintf("L3:0=%x", v)}}
	}},
	{"RdtEnableMonitoring", nriv1beta1.Field_FIELD_RDT_ENABLE_MONITORING, func(a *nriv1beta1.ContainerAdjustment, v int) {
		rdt(a).EnableMonitoring = wrapperspb.Bool(v%2 == 1)
	}},
	{"MemoryPolicy", nriv1beta1.Field_FIELD_MEMORY_POLICY, func(a *nriv1beta1.ContainerAdjustment, v int) {
		lin(a).MemoryPolicy = &nriv1beta1.LinuxMemoryPolicy{
			Mode: nriv1beta1.MpolMode_MPOL_MODE_BIND, Nodes: fmt.Sprint(v),
			Flags: []nriv1beta1.MpolFlag{nriv1beta1.MpolFlag_MPOL_FLAG_STATIC_NODES},
		}
	}},
	{"Args", nriv1beta1.Field_FIELD_ARGS, func(a *nriv1beta1.ContainerAdjustment, v int) {
		a.Args = []string{"/bin/app", fmt.Sprint("--variant=", v)}
	}},
}

// compoundFields covers every compound field, with the key used in tests
// and whether a response can list that key twice (lists, not maps).
var compoundFields = []struct {
	name  string
	field nriv1beta1.Field
	key   string
	list  bool
	set   func(a *nriv1beta1.ContainerAdjustment, key string, v int)
}{
	{"Annotations", nriv1beta1.Field_FIELD_ANNOTATIONS, "example.com/owner", false, func(a *nriv1beta1.ContainerAdjustment, k string, v int) {
		annotation(k, fmt.Sprint("value-", v))(a)
	}},
	{"Mounts", nriv1beta1.Field_FIELD_MOUNTS, "/data", true, func(a *nriv1beta1.ContainerAdjustment, k string, v int) {
		mount(k, fmt.Sprint("/srv/data-", v))(a)
	}},
	{"Env", nriv1beta1.Field_FIELD_ENV, "NRI_VARIANT", true, func(a *nriv1beta1.ContainerAdjustment, k string, v int) {
		env(k, fmt.Sprint(v))(a)
	}},
	{"Devices", nriv1beta1.Field_FIELD_DEVICES, "/dev/nri0", true, func(a *nriv1beta1.ContainerAdjustment, k string, v int) {
		device(k, int64(v))(a)
	}},
	{"CdiDevices", nriv1beta1.Field_FIELD_CDI_DEVICES, "vendor.com/gpu=0", true, func(a *nriv1beta1.ContainerAdjustment, k string, _ int) {
		cdi(k)(a)
	}},
	{"HugepageLimits", nriv1beta1.Field_FIELD_HUGEPAGE_LIMITS, "2MB", true, func(a *nriv1beta1.ContainerAdjustment, k string, v int) {
		resAdj(hugepage(k, uint64(v)<<21))(a)
	}},
	{"CgroupsUnified", nriv1beta1.Field_FIELD_CGROUPS_UNIFIED, "memory.high", false, func(a *nriv1beta1.ContainerAdjustment, k string, v int) {
		resAdj(unified(k, fmt.Sprint(v<<20)))(a)
	}},
	{"Rlimits", nriv1beta1.Field_FIELD_RLIMITS, "RLIMIT_NPROC", true, func(a *nriv1beta1.ContainerAdjustment, k string, v int) {
		rlimit(k, uint64(v*1000), uint64(v*500))(a)
	}},
	{"Namespace", nriv1beta1.Field_FIELD_NAMESPACE, "network", true, func(a *nriv1beta1.ContainerAdjustment, k string, v int) {
		namespace(k, fmt.Sprint("/var/run/netns/nri-", v))(a)
	}},
	{"Sysctl", nriv1beta1.Field_FIELD_SYSCTL, "net.core.somaxconn", false, func(a *nriv1beta1.ContainerAdjustment, k string, v int) {
		sysctl(k, fmt.Sprint(v*1024))(a)
	}},
	{"LinuxNetDevices", nriv1beta1.Field_FIELD_LINUX_NET_DEVICES, "eth1", false, func(a *nriv1beta1.ContainerAdjustment, k string, v int) {
		netDevice(k, fmt.Sprint("net", v))(a)
	}},
}

// everything sets every field, simple and compound, with variant v.
func everything(v int) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		for _, f := range simpleFields {
			f.set(a, v)
		}
		for _, f := range compoundFields {
			f.set(a, f.key, v)
		}
		hooks("/usr/libexec/nri-hook")(a)
		resAdj(deviceRule(10))(a)
	}
}
