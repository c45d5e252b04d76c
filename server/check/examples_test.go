package check_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/server/check"
)

// TestRealistic checks that what real plugins send passes: the example
// plugins (examples/, clients/*/examples), the fixtures of the merge tests,
// and a container as a kubelet and containerd create it, turned into an
// adjustment.
func TestRealistic(t *testing.T) {
	for name, m := range realistic() {
		t.Run(name, func(t *testing.T) {
			if err := check.Response(m); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

func realistic() map[string]proto.Message {
	mode := uint32(0o660)
	out := map[string]proto.Message{
		// examples/device-injector: the README's and the test's annotations.
		"device-injector": plugin.NewAdjustment().
			AddDevice(&nriv1beta1.LinuxDevice{Path: "/dev/nri-null", Type: "c", Major: 1, Minor: 3, FileMode: wrapperspb.UInt32(0o666), Uid: wrapperspb.UInt32(0), Gid: wrapperspb.UInt32(0)}).
			AddDevice(&nriv1beta1.LinuxDevice{Path: "/dev/pod-wide", Type: "c", Major: 1, Minor: 5, FileMode: wrapperspb.UInt32(mode)}).
			AddDevice(&nriv1beta1.LinuxDevice{Path: "/dev/x", Type: "b", Major: 8, Minor: 1, FileMode: wrapperspb.UInt32(0o600)}).
			AddMount(&nriv1beta1.Mount{Source: "/srv/shared", Destination: "/shared", Type: "bind", Options: []string{"rbind", "ro"}}).
			AddCDIDevice(&nriv1beta1.CDIDevice{Name: "vendor.com/gpu=0"}).
			AddCDIDevice(&nriv1beta1.CDIDevice{Name: "vendor.com/gpu=1"}).
			Response(),
		// examples/ulimit-adjuster and the env-ulimit-injector of the
		// Python, TypeScript and Rust SDKs.
		"ulimit-adjuster": plugin.NewAdjustment().
			AddRlimit("RLIMIT_NOFILE", 4096, 1024).
			AddRlimit("RLIMIT_NPROC", 512, 512).
			AddRlimit("RLIMIT_MEMLOCK", 0, 0).
			Response(),
		"env-ulimit-injector": plugin.NewAdjustment().
			AddEnv("HTTP_PROXY", "http://proxy:3128").
			AddEnv("APP_MODE", "fast").
			RemoveEnv("DEBUG").
			AddEnv("CLUSTER", "prod-eu").
			AddEnv("GREETING", "hello").
			AddEnv("B", "x=y").
			RemoveEnv("C").AddEnv("C", "new").
			AddRlimit("RLIMIT_NOFILE", 4096, 1024).
			Response(),
		// The plugin SDK's builders, every one of them.
		"sdk builders": plugin.NewAdjustment().
			AddAnnotation("example.com/owner", "nri").RemoveAnnotation("example.com/old").
			RemoveMount("/old").
			UpdateArgs([]string{"/bin/app", "--flag"}).
			AddHooks(&nriv1beta1.Hooks{CreateRuntime: []*nriv1beta1.Hook{{Path: "/usr/libexec/oci/hooks.d/gpu", Args: []string{"gpu", "prestart"}, Env: []string{"PATH=/usr/bin"}, Timeout: wrapperspb.Int64(10)}}}).
			RemoveDevice("/dev/old").
			AddOrReplaceNamespace(&nriv1beta1.LinuxNamespace{Type: "network", Path: "/var/run/netns/nri"}).
			RemoveNamespace(&nriv1beta1.LinuxNamespace{Type: "ipc"}).
			AddLinuxNetDevice("eth1", &nriv1beta1.LinuxNetDevice{Name: "net1"}).
			RemoveLinuxNetDevice("eth9").
			SetLinuxSysctl("net.core.somaxconn", "1024").RemoveLinuxSysctl("net.ipv4.ip_forward").
			SetLinuxMemoryPolicy(nriv1beta1.MpolMode_MPOL_MODE_INTERLEAVE, "0-1").
			SetLinuxMemoryLimit(1<<30).SetLinuxMemoryReservation(1<<29).SetLinuxMemorySwap(2<<30).
			SetLinuxMemoryKernel(-1).SetLinuxMemoryKernelTCP(-1).SetLinuxMemorySwappiness(60).
			SetLinuxMemoryDisableOomKiller().SetLinuxMemoryUseHierarchy().
			SetLinuxCPUShares(1024).SetLinuxCPUQuota(200000).SetLinuxCPUPeriod(100000).
			SetLinuxCPURealtimeRuntime(0).SetLinuxCPURealtimePeriod(0).
			SetLinuxCPUSetCPUs("2-3").SetLinuxCPUSetMems("0").SetLinuxPidLimits(4096).
			AddLinuxHugepageLimit("2MB", 1<<30).AddLinuxHugepageLimit("1GB", 2<<30).
			SetLinuxBlockIOClass("high-prio").SetLinuxRDTClass("gold").
			AddLinuxUnified("memory.high", "1073741824").AddLinuxUnified("memory.oom.group", "1").
			AddLinuxDeviceCgroup(&nriv1beta1.LinuxDeviceCgroup{Allow: true, Type: "c", Major: wrapperspb.Int64(195), Access: "rw"}).
			SetLinuxCgroupsPath("kubepods-besteffort.slice:cri-containerd:nri").
			SetLinuxOomScoreAdj(-997).
			SetLinuxIOPriority(&nriv1beta1.LinuxIOPriority{Class: nriv1beta1.IOPrioClass_IO_PRIO_CLASS_BE, Priority: 4}).
			SetLinuxSeccompPolicy(&nriv1beta1.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO"}).
			SetLinuxScheduler(&nriv1beta1.LinuxScheduler{Policy: nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_BATCH, Nice: 5}).
			RemoveLinuxRDT().SetLinuxRDTClosID("c1").SetLinuxRDTSchemata([]string{"L3:0=ff"}).SetLinuxRDTEnableMonitoring(true).
			Response(),
		// The merge tests' fixtures (server/merge/helpers_test.go,
		// fields_test.go everything(1) and (2)).
		"merge everything(1)": mergeEverything(1),
		"merge everything(2)": mergeEverything(2),
		"merge updates": &nriv1beta1.CreateContainerResponse{
			Update: []*nriv1beta1.ContainerUpdate{
				plugin.NewUpdate(fmt.Sprintf("%064x", 0xc000011)).SetLinuxMemoryLimit(1 << 30).SetLinuxCPUShares(256).SetLinuxCPUSetCPUs("0-1").SetIgnoreFailure().Proto(),
				plugin.NewUpdate("other").SetLinuxPidLimits(100).AddLinuxHugepageLimit("2MB", 1<<21).AddLinuxUnified("memory.high", "1048576").Proto(),
			},
			Evict: []*nriv1beta1.ContainerEviction{{ContainerId: fmt.Sprintf("%064x", 0xc000012), Reason: "evicted by 10-balloons: low priority"}},
		},
		// A synchronization answer and unsolicited updates.
		"synchronize": &nriv1beta1.SynchronizeResponse{Update: []*nriv1beta1.ContainerUpdate{
			plugin.NewUpdate("ctr1").SetLinuxCPUSetCPUs("4-7").SetLinuxCPUSetMems("1").Proto(),
		}},
		"update containers": &nriv1beta1.UpdateContainersRequest{
			Update: []*nriv1beta1.ContainerUpdate{plugin.NewUpdate("ctr1").SetLinuxCPUQuota(-1).SetLinuxCPUPeriod(100000).Proto()},
			Evict:  []*nriv1beta1.ContainerEviction{{ContainerId: "ctr2"}},
		},
		"realtime scheduler": lin(func(l *nriv1beta1.LinuxContainerAdjustment) {
			l.Scheduler = &nriv1beta1.LinuxScheduler{Policy: nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_FIFO, Priority: 50,
				Flags: []nriv1beta1.LinuxSchedulerFlag{nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_RESET_ON_FORK}}
		}),
		"deadline scheduler": lin(func(l *nriv1beta1.LinuxContainerAdjustment) {
			l.Scheduler = &nriv1beta1.LinuxScheduler{Policy: nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_DEADLINE,
				Runtime: 10_000_000, Deadline: 30_000_000, Period: 100_000_000}
		}),
		"default seccomp profile": seccomp(defaultSeccomp()),
	}
	out["fixture container"] = &nriv1beta1.CreateContainerResponse{Adjust: containerAsAdjustment(fixture.Container(1, 0))}
	out["fixture pod resources"] = &nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{
		{ContainerId: fixture.Pod(1).Id, Linux: &nriv1beta1.LinuxContainerUpdate{Resources: fixture.Pod(1).GetLinux().GetPodResources()}},
	}}
	return out
}

// containerAsAdjustment turns a container, as the runtime presents it, into
// the adjustment that would set all of it: a plugin that copies values from
// the request must pass.
func containerAsAdjustment(c *nriv1beta1.Container) *nriv1beta1.ContainerAdjustment {
	a := &nriv1beta1.ContainerAdjustment{
		Annotations: c.GetAnnotations(),
		Mounts:      c.GetMounts(),
		Hooks:       c.GetHooks(),
		Rlimits:     c.GetRlimits(),
		CdiDevices:  c.GetCdiDevices(),
		Args:        c.GetArgs(),
	}
	for _, e := range c.GetEnv() {
		k, v, _ := strings.Cut(e, "=")
		a.Env = append(a.Env, &nriv1beta1.KeyValue{Key: k, Value: v})
	}
	l := c.GetLinux()
	a.Linux = &nriv1beta1.LinuxContainerAdjustment{
		Devices:       l.GetDevices(),
		Resources:     l.GetResources(),
		CgroupsPath:   l.GetCgroupsPath(),
		OomScoreAdj:   l.GetOomScoreAdj(),
		IoPriority:    l.GetIoPriority(),
		SeccompPolicy: l.GetSeccompPolicy(),
		Namespaces:    l.GetNamespaces(),
		Sysctl:        l.GetSysctl(),
		NetDevices:    l.GetNetDevices(),
		Scheduler:     l.GetScheduler(),
		Rdt:           l.GetRdt(),
	}
	return a
}

// mergeEverything mirrors server/merge/fields_test.go everything(v): every
// field set, as the merge tests do.
func mergeEverything(v int) *nriv1beta1.CreateContainerResponse {
	b := plugin.NewAdjustment().
		SetLinuxMemoryLimit(int64(v)<<20).SetLinuxMemoryReservation(int64(v)<<19).SetLinuxMemorySwap(int64(v)<<21).
		SetLinuxMemoryKernel(int64(v)<<18).SetLinuxMemoryKernelTCP(int64(v)<<17).SetLinuxMemorySwappiness(uint64(v*10)).
		SetLinuxCPUShares(uint64(v*256)).SetLinuxCPUQuota(int64(v*50000)).SetLinuxCPUPeriod(uint64(v*100000)).
		SetLinuxCPURealtimeRuntime(int64(v*1000)).SetLinuxCPURealtimePeriod(uint64(v*10000)).
		SetLinuxCPUSetCPUs(fmt.Sprintf("%d-%d", v, v+1)).SetLinuxCPUSetMems(fmt.Sprint(v)).
		SetLinuxPidLimits(int64(v*100)).SetLinuxBlockIOClass(fmt.Sprint("blkio-", v)).SetLinuxRDTClass(fmt.Sprint("rdt-", v)).
		SetLinuxCgroupsPath(fmt.Sprint("/nri/cg-", v)).SetLinuxOomScoreAdj(int64(-v*100)).
		SetLinuxIOPriority(&nriv1beta1.LinuxIOPriority{Class: nriv1beta1.IOPrioClass_IO_PRIO_CLASS_BE, Priority: int32(v)}).
		SetLinuxSeccompPolicy(&nriv1beta1.LinuxSeccomp{
			DefaultAction: "SCMP_ACT_ERRNO", DefaultErrno: wrapperspb.UInt32(uint32(v)),
			Architectures: []string{"SCMP_ARCH_X86_64"},
			Syscalls: []*nriv1beta1.LinuxSyscall{{Names: []string{"read", "write"}, Action: "SCMP_ACT_ALLOW",
				Args: []*nriv1beta1.LinuxSeccompArg{{Index: 0, Value: uint64(v), Op: "SCMP_CMP_EQ"}}}},
		}).
		SetLinuxScheduler(&nriv1beta1.LinuxScheduler{Policy: nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_BATCH, Nice: int32(v),
			Flags: []nriv1beta1.LinuxSchedulerFlag{nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_RESET_ON_FORK}}).
		SetLinuxRDTClosID(fmt.Sprint("clos-", v)).SetLinuxRDTSchemata([]string{fmt.Sprintf("L3:0=%x", v)}).SetLinuxRDTEnableMonitoring(v%2 == 1).
		SetLinuxMemoryPolicy(nriv1beta1.MpolMode_MPOL_MODE_BIND, fmt.Sprint(v), nriv1beta1.MpolFlag_MPOL_FLAG_STATIC_NODES).
		SetArgs([]string{"/bin/app", fmt.Sprint("--variant=", v)}).
		AddAnnotation("example.com/owner", fmt.Sprint("value-", v)).
		AddMount(&nriv1beta1.Mount{Destination: "/data", Type: "bind", Source: fmt.Sprint("/srv/data-", v), Options: []string{"rbind", "ro"}}).
		AddEnv("NRI_VARIANT", fmt.Sprint(v)).
		AddDevice(&nriv1beta1.LinuxDevice{Path: "/dev/nri0", Type: "c", Major: 511, Minor: int64(v), FileMode: wrapperspb.UInt32(0o660)}).
		AddCDIDevice(&nriv1beta1.CDIDevice{Name: "vendor.com/gpu=0"}).
		AddLinuxHugepageLimit("2MB", uint64(v)<<21).
		AddLinuxUnified("memory.high", fmt.Sprint(v<<20)).
		AddRlimit("RLIMIT_NPROC", uint64(v*1000), uint64(v*500)).
		AddOrReplaceNamespace(&nriv1beta1.LinuxNamespace{Type: "network", Path: fmt.Sprint("/var/run/netns/nri-", v)}).
		SetLinuxSysctl("net.core.somaxconn", fmt.Sprint(v*1024)).
		AddLinuxNetDevice("eth1", &nriv1beta1.LinuxNetDevice{Name: fmt.Sprint("net", v)}).
		AddLinuxDeviceCgroup(&nriv1beta1.LinuxDeviceCgroup{Allow: true, Type: "c", Major: wrapperspb.Int64(10), Access: "rwm"})
	h := func(kind string) []*nriv1beta1.Hook {
		return []*nriv1beta1.Hook{{Path: "/usr/libexec/nri-hook", Args: []string{"/usr/libexec/nri-hook", kind}, Timeout: wrapperspb.Int64(5)}}
	}
	b.AddHooks(&nriv1beta1.Hooks{
		Prestart: h("prestart"), CreateRuntime: h("create-runtime"), CreateContainer: h("create-container"),
		StartContainer: h("start-container"), Poststart: h("poststart"), Poststop: h("poststop"),
	})
	return b.Response()
}

// defaultSeccomp is an excerpt of containerd's RuntimeDefault profile
// (contrib/seccomp/seccomp_default.go), with the shapes it uses: several
// architectures, errno returns and masked argument comparisons.
func defaultSeccomp() *nriv1beta1.LinuxSeccomp {
	eperm := wrapperspb.UInt32(1)
	return &nriv1beta1.LinuxSeccomp{
		DefaultAction: "SCMP_ACT_ERRNO",
		DefaultErrno:  eperm,
		Architectures: []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"},
		Syscalls: []*nriv1beta1.LinuxSyscall{
			{Names: []string{"accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "capget", "capset", "chdir", "chmod"}, Action: "SCMP_ACT_ALLOW"},
			{Names: []string{"personality"}, Action: "SCMP_ACT_ALLOW", Args: []*nriv1beta1.LinuxSeccompArg{{Index: 0, Value: 0x0, Op: "SCMP_CMP_EQ"}}},
			{Names: []string{"personality"}, Action: "SCMP_ACT_ALLOW", Args: []*nriv1beta1.LinuxSeccompArg{{Index: 0, Value: 0xffffffff, Op: "SCMP_CMP_EQ"}}},
			{Names: []string{"clone"}, Action: "SCMP_ACT_ALLOW", Args: []*nriv1beta1.LinuxSeccompArg{{Index: 0, Value: 2114060288, Op: "SCMP_CMP_MASKED_EQ"}}},
			{Names: []string{"clone3"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: wrapperspb.UInt32(38)},
			{Names: []string{"socket"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: wrapperspb.UInt32(22), Args: []*nriv1beta1.LinuxSeccompArg{{Index: 0, Value: 40, Op: "SCMP_CMP_NE"}}},
		},
	}
}
