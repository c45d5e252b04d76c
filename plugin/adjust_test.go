package plugin_test

import (
	"os"
	"testing"

	"github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/plugin"
)

// TestAdjustmentMatchesClassicHelpers builds the same adjustment with
// classic NRI's api.ContainerAdjustment helpers and with plugin.Adjustment,
// one helper at a time, and compares them through the wire form: the SDK
// uses exactly classic NRI's conventions (removal markers, the "" first
// argument of UpdateArgs, ...).
func TestAdjustmentMatchesClassicHelpers(t *testing.T) {
	oom := -500
	for _, tc := range []struct {
		name    string
		classic func(*api.ContainerAdjustment)
		sdk     func(*plugin.Adjustment)
	}{
		{"AddAnnotation", func(a *api.ContainerAdjustment) { a.AddAnnotation("k", "v") }, func(b *plugin.Adjustment) { b.AddAnnotation("k", "v") }},
		{"RemoveAnnotation", func(a *api.ContainerAdjustment) { a.RemoveAnnotation("k") }, func(b *plugin.Adjustment) { b.RemoveAnnotation("k") }},
		{"AddMount", func(a *api.ContainerAdjustment) {
			a.AddMount(&api.Mount{Destination: "/d", Source: "/s", Type: "bind", Options: []string{"ro"}})
		}, func(b *plugin.Adjustment) {
			b.AddMount(&nriv1beta1.Mount{Destination: "/d", Source: "/s", Type: "bind", Options: []string{"ro"}})
		}},
		{"RemoveMount", func(a *api.ContainerAdjustment) { a.RemoveMount("/d") }, func(b *plugin.Adjustment) { b.RemoveMount("/d") }},
		{"AddEnv", func(a *api.ContainerAdjustment) { a.AddEnv("A", "1") }, func(b *plugin.Adjustment) { b.AddEnv("A", "1") }},
		{"RemoveEnv", func(a *api.ContainerAdjustment) { a.RemoveEnv("A") }, func(b *plugin.Adjustment) { b.RemoveEnv("A") }},
		{"SetArgs", func(a *api.ContainerAdjustment) { a.SetArgs([]string{"/bin/x", "-v"}) }, func(b *plugin.Adjustment) { b.SetArgs([]string{"/bin/x", "-v"}) }},
		{"UpdateArgs", func(a *api.ContainerAdjustment) { a.UpdateArgs([]string{"/bin/x"}) }, func(b *plugin.Adjustment) { b.UpdateArgs([]string{"/bin/x"}) }},
		{"AddHooks", func(a *api.ContainerAdjustment) {
			a.AddHooks(&api.Hooks{CreateRuntime: []*api.Hook{{Path: "/h", Args: []string{"h"}, Timeout: api.Int(5)}}, Poststop: []*api.Hook{{Path: "/p"}}})
		}, func(b *plugin.Adjustment) {
			b.AddHooks(&nriv1beta1.Hooks{CreateRuntime: []*nriv1beta1.Hook{{Path: "/h", Args: []string{"h"}, Timeout: wrapperspb.Int64(5)}},
				Poststop: []*nriv1beta1.Hook{{Path: "/p"}}})
		}},
		{"AddRlimit", func(a *api.ContainerAdjustment) { a.AddRlimit("RLIMIT_NPROC", 10, 5) }, func(b *plugin.Adjustment) { b.AddRlimit("RLIMIT_NPROC", 10, 5) }},
		{"AddDevice", func(a *api.ContainerAdjustment) {
			a.AddDevice(&api.LinuxDevice{Path: "/dev/x", Type: "c", Major: 1, Minor: 3, FileMode: api.FileMode(os.FileMode(0o600)), Uid: api.UInt32(uint32(7))})
		}, func(b *plugin.Adjustment) {
			b.AddDevice(&nriv1beta1.LinuxDevice{Path: "/dev/x", Type: "c", Major: 1, Minor: 3, FileMode: wrapperspb.UInt32(0o600), Uid: wrapperspb.UInt32(7)})
		}},
		{"RemoveDevice", func(a *api.ContainerAdjustment) { a.RemoveDevice("/dev/x") }, func(b *plugin.Adjustment) { b.RemoveDevice("/dev/x") }},
		{"AddCDIDevice", func(a *api.ContainerAdjustment) { a.AddCDIDevice(&api.CDIDevice{Name: "v.com/c=0"}) }, func(b *plugin.Adjustment) {
			b.AddCDIDevice(&nriv1beta1.CDIDevice{Name: "v.com/c=0"})
		}},
		{"AddOrReplaceNamespace", func(a *api.ContainerAdjustment) {
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "network", Path: "/n"})
		}, func(b *plugin.Adjustment) {
			b.AddOrReplaceNamespace(&nriv1beta1.LinuxNamespace{Type: "network", Path: "/n"})
		}},
		{"RemoveNamespace", func(a *api.ContainerAdjustment) { a.RemoveNamespace(&api.LinuxNamespace{Type: "ipc"}) }, func(b *plugin.Adjustment) {
			b.RemoveNamespace(&nriv1beta1.LinuxNamespace{Type: "ipc"})
		}},
		{"AddLinuxNetDevice", func(a *api.ContainerAdjustment) { a.AddLinuxNetDevice("eth1", &api.LinuxNetDevice{Name: "net1"}) }, func(b *plugin.Adjustment) {
			b.AddLinuxNetDevice("eth1", &nriv1beta1.LinuxNetDevice{Name: "net1"})
		}},
		{"RemoveLinuxNetDevice", func(a *api.ContainerAdjustment) { a.RemoveLinuxNetDevice("eth1") }, func(b *plugin.Adjustment) { b.RemoveLinuxNetDevice("eth1") }},
		{"SetLinuxSysctl", func(a *api.ContainerAdjustment) { a.SetLinuxSysctl("net.core.somaxconn", "1024") }, func(b *plugin.Adjustment) {
			b.SetLinuxSysctl("net.core.somaxconn", "1024")
		}},
		{"SetLinuxMemoryPolicy", func(a *api.ContainerAdjustment) {
			a.SetLinuxMemoryPolicy(api.MpolMode_MPOL_BIND, "0-1", api.MpolFlag_MPOL_F_STATIC_NODES)
		}, func(b *plugin.Adjustment) {
			b.SetLinuxMemoryPolicy(nriv1beta1.MpolMode_MPOL_MODE_BIND, "0-1", nriv1beta1.MpolFlag_MPOL_FLAG_STATIC_NODES)
		}},
		{"Memory", func(a *api.ContainerAdjustment) {
			a.SetLinuxMemoryLimit(1)
			a.SetLinuxMemoryReservation(2)
			a.SetLinuxMemorySwap(3)
			a.SetLinuxMemoryKernel(4)
			a.SetLinuxMemoryKernelTCP(5)
			a.SetLinuxMemorySwappiness(6)
			a.SetLinuxMemoryDisableOomKiller()
			a.SetLinuxMemoryUseHierarchy()
		}, func(b *plugin.Adjustment) {
			b.SetLinuxMemoryLimit(1).SetLinuxMemoryReservation(2).SetLinuxMemorySwap(3).SetLinuxMemoryKernel(4).
				SetLinuxMemoryKernelTCP(5).SetLinuxMemorySwappiness(6).SetLinuxMemoryDisableOomKiller().SetLinuxMemoryUseHierarchy()
		}},
		{"CPU", func(a *api.ContainerAdjustment) {
			a.SetLinuxCPUShares(1)
			a.SetLinuxCPUQuota(2)
			a.SetLinuxCPUPeriod(3)
			a.SetLinuxCPURealtimeRuntime(4)
			a.SetLinuxCPURealtimePeriod(5)
			a.SetLinuxCPUSetCPUs("0-3")
			a.SetLinuxCPUSetMems("0")
		}, func(b *plugin.Adjustment) {
			b.SetLinuxCPUShares(1).SetLinuxCPUQuota(2).SetLinuxCPUPeriod(3).SetLinuxCPURealtimeRuntime(4).
				SetLinuxCPURealtimePeriod(5).SetLinuxCPUSetCPUs("0-3").SetLinuxCPUSetMems("0")
		}},
		{"Resources", func(a *api.ContainerAdjustment) {
			a.SetLinuxPidLimits(100)
			a.AddLinuxHugepageLimit("2MB", 1<<20)
			a.AddLinuxHugepageLimit("1GB", 1<<30)
			a.SetLinuxBlockIOClass("bio")
			a.SetLinuxRDTClass("rdt")
			a.AddLinuxUnified("memory.high", "1G")
		}, func(b *plugin.Adjustment) {
			b.SetLinuxPidLimits(100).AddLinuxHugepageLimit("2MB", 1<<20).AddLinuxHugepageLimit("1GB", 1<<30).
				SetLinuxBlockIOClass("bio").SetLinuxRDTClass("rdt").AddLinuxUnified("memory.high", "1G")
		}},
		{"Linux", func(a *api.ContainerAdjustment) {
			a.SetLinuxCgroupsPath("/kubepods/x")
			a.SetLinuxOomScoreAdj(&oom)
			a.SetLinuxIOPriority(&api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4})
			a.SetLinuxSeccompPolicy(&api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO"})
			a.SetLinuxScheduler(&api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_BATCH, Nice: 5})
		}, func(b *plugin.Adjustment) {
			b.SetLinuxCgroupsPath("/kubepods/x").SetLinuxOomScoreAdj(-500).
				SetLinuxIOPriority(&nriv1beta1.LinuxIOPriority{Class: nriv1beta1.IOPrioClass_IO_PRIO_CLASS_BE, Priority: 4}).
				SetLinuxSeccompPolicy(&nriv1beta1.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO"}).
				SetLinuxScheduler(&nriv1beta1.LinuxScheduler{Policy: nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_BATCH, Nice: 5})
		}},
		{"RDT", func(a *api.ContainerAdjustment) {
			a.RemoveLinuxRDT()
			a.SetLinuxRDTClosID("c1")
			a.SetLinuxRDTSchemata([]string{"L3:0=ff"})
			a.SetLinuxRDTEnableMonitoring(true)
		}, func(b *plugin.Adjustment) {
			b.RemoveLinuxRDT().SetLinuxRDTClosID("c1").SetLinuxRDTSchemata([]string{"L3:0=ff"}).SetLinuxRDTEnableMonitoring(true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := &api.ContainerAdjustment{}
			tc.classic(ca)
			want := convert(t, ca, &nriv1beta1.ContainerAdjustment{})
			b := plugin.NewAdjustment()
			tc.sdk(b)
			got := convert(t, b.Proto(), &nriv1beta1.ContainerAdjustment{})
			if !proto.Equal(got, want) {
				t.Errorf("\nclassic: %s\n    sdk: %s", prototext.Format(want), prototext.Format(got))
			}
		})
	}
}

// TestUpdateMatchesClassicHelpers does the same for container updates.
func TestUpdateMatchesClassicHelpers(t *testing.T) {
	cu := &api.ContainerUpdate{}
	cu.SetContainerId("c1")
	cu.SetLinuxMemoryLimit(1)
	cu.SetLinuxMemoryReservation(2)
	cu.SetLinuxMemorySwap(3)
	cu.SetLinuxMemoryKernel(4)
	cu.SetLinuxMemoryKernelTCP(5)
	cu.SetLinuxMemorySwappiness(6)
	cu.SetLinuxMemoryDisableOomKiller()
	cu.SetLinuxMemoryUseHierarchy()
	cu.SetLinuxCPUShares(7)
	cu.SetLinuxCPUQuota(8)
	cu.SetLinuxCPUPeriod(9)
	cu.SetLinuxCPURealtimeRuntime(10)
	cu.SetLinuxCPURealtimePeriod(11)
	cu.SetLinuxCPUSetCPUs("1")
	cu.SetLinuxCPUSetMems("0")
	cu.SetLinuxPidLimits(12)
	cu.AddLinuxHugepageLimit("2MB", 13)
	cu.SetLinuxBlockIOClass("b")
	cu.SetLinuxRDTClass("r")
	cu.AddLinuxUnified("cpu.weight", "100")
	cu.SetIgnoreFailure()
	want := convert(t, cu, &nriv1beta1.ContainerUpdate{})

	got := plugin.NewUpdate("c1").SetLinuxMemoryLimit(1).SetLinuxMemoryReservation(2).SetLinuxMemorySwap(3).
		SetLinuxMemoryKernel(4).SetLinuxMemoryKernelTCP(5).SetLinuxMemorySwappiness(6).SetLinuxMemoryDisableOomKiller().
		SetLinuxMemoryUseHierarchy().SetLinuxCPUShares(7).SetLinuxCPUQuota(8).SetLinuxCPUPeriod(9).
		SetLinuxCPURealtimeRuntime(10).SetLinuxCPURealtimePeriod(11).SetLinuxCPUSetCPUs("1").SetLinuxCPUSetMems("0").
		SetLinuxPidLimits(12).AddLinuxHugepageLimit("2MB", 13).SetLinuxBlockIOClass("b").SetLinuxRDTClass("r").
		AddLinuxUnified("cpu.weight", "100").SetIgnoreFailure().Proto()
	if !proto.Equal(got, want) {
		t.Errorf("\nclassic: %s\n    sdk: %s", prototext.Format(want), prototext.Format(got))
	}
}

// TestAdjustmentMarkers spells the removal-marker conventions out.
func TestAdjustmentMarkers(t *testing.T) {
	a := plugin.NewAdjustment().
		RemoveEnv("FOO").AddEnv("FOO", "bar").
		RemoveMount("/etc/tls").
		RemoveDevice("/dev/fuse").
		RemoveAnnotation("a").
		RemoveLinuxSysctl("net.ipv4.ip_forward").
		RemoveLinuxNetDevice("eth1").
		RemoveNamespace(&nriv1beta1.LinuxNamespace{Type: "network"}).
		UpdateArgs([]string{"/bin/x"}).
		Proto()
	if a.GetEnv()[0].GetKey() != "-FOO" || a.GetEnv()[1].GetKey() != "FOO" || a.GetEnv()[1].GetValue() != "bar" {
		t.Errorf("env %v: want -FOO then FOO=bar", a.GetEnv())
	}
	if a.GetMounts()[0].GetDestination() != "-/etc/tls" || a.GetLinux().GetDevices()[0].GetPath() != "-/dev/fuse" {
		t.Errorf("mount/device markers: %v %v", a.GetMounts(), a.GetLinux().GetDevices())
	}
	if _, ok := a.GetAnnotations()["-a"]; !ok {
		t.Errorf("annotations %v: want -a", a.GetAnnotations())
	}
	if _, ok := a.GetLinux().GetSysctl()["-net.ipv4.ip_forward"]; !ok {
		t.Errorf("sysctl %v", a.GetLinux().GetSysctl())
	}
	if d, ok := a.GetLinux().GetNetDevices()["-eth1"]; !ok || d == nil {
		t.Errorf("net devices %v: want -eth1 with an empty device", a.GetLinux().GetNetDevices())
	}
	if a.GetLinux().GetNamespaces()[0].GetType() != "-network" {
		t.Errorf("namespaces %v", a.GetLinux().GetNamespaces())
	}
	if len(a.GetArgs()) != 2 || a.GetArgs()[0] != "" {
		t.Errorf("args %q: want a first \"\"", a.GetArgs())
	}
	if k, ok := plugin.IsMarkedForRemoval("-x"); !ok || k != "x" {
		t.Errorf("IsMarkedForRemoval(-x) = %q %v", k, ok)
	}
	if rsp := plugin.AdjustmentOf(a).AddEnv("B", "1").Response(); len(rsp.GetAdjust().GetEnv()) != 3 {
		t.Errorf("AdjustmentOf does not add to the wrapped adjustment")
	}
	if e := plugin.Evict("c", "why"); e.GetContainerId() != "c" || e.GetReason() != "why" {
		t.Errorf("Evict = %v", e)
	}
}
