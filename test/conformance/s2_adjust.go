package conformance

import (
	"context"
	"slices"
	"strconv"

	"google.golang.org/grpc/codes"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Classic NRI's TestPluginContainerCreationAdjustments: single plugin and
// multiple plugins (conflicts, remove-then-add overrides), plus the
// conflicts classic's suite does not cover.

// adjustCtr is the container the single-plugin adjustment scenarios create
// (classic's).
func adjustCtr() *nriv1beta1.Container {
	c := newCtr("pod0", "ctr0")
	c.Mounts = []*nriv1beta1.Mount{{Type: "bind", Source: "/remove/test", Destination: "/remove/test/destination"}}
	c.Args = []string{"echo", "original", "argument", "list"}
	c.Linux = &nriv1beta1.LinuxContainer{
		Resources: &nriv1beta1.LinuxResources{
			Cpu: &nriv1beta1.LinuxCPU{Shares: u64(111), Quota: i64(222), Period: u64(333), RealtimeRuntime: i64(444), RealtimePeriod: u64(555)},
			Memory: &nriv1beta1.LinuxMemory{Limit: i64(11111), Reservation: i64(22222), Swap: i64(33333), Swappiness: u64(44444),
				DisableOomKiller: boolv(false), UseHierarchy: boolv(false)},
		},
		Namespaces: []*nriv1beta1.LinuxNamespace{{Type: "cgroup", Path: "/var/run/cgroupns/original"}},
	}
	return c
}

// seccompPolicy is classic's test seccomp policy (FromOCILinuxSeccomp of an
// allow-all policy with one notifying syscall).
func seccompPolicy() *nriv1beta1.LinuxSeccomp {
	return &nriv1beta1.LinuxSeccomp{
		DefaultAction: "SCMP_ACT_ALLOW",
		ListenerPath:  "/run/meshuggah-rocks.sock",
		Syscalls:      []*nriv1beta1.LinuxSyscall{{Names: []string{"sched_getaffinity"}, Action: "SCMP_ACT_NOTIFY"}},
	}
}

// adjustment returns what plugin idx-name adjusts for subject; overwrite
// removes the entry first (the override idiom). ctr is the container as the
// plugin sees it.
func adjustment(subject, idx, name string, ctr *nriv1beta1.Container, overwrite bool) *nriv1beta1.ContainerAdjustment {
	plugin := idx + "-" + name
	a := &nriv1beta1.ContainerAdjustment{}
	linux := func() *nriv1beta1.LinuxContainerAdjustment {
		if a.Linux == nil {
			a.Linux = &nriv1beta1.LinuxContainerAdjustment{}
		}
		return a.Linux
	}
	res := func() *nriv1beta1.LinuxResources {
		l := linux()
		if l.Resources == nil {
			l.Resources = &nriv1beta1.LinuxResources{}
		}
		return l.Resources
	}
	switch subject {
	case "annotation":
		a.Annotations = map[string]string{"key": plugin}
		if overwrite {
			a.Annotations["-key"] = ""
		}
	case "mount":
		if overwrite {
			a.Mounts = append(a.Mounts, &nriv1beta1.Mount{Destination: "-/mnt/test"})
		}
		a.Mounts = append(a.Mounts, &nriv1beta1.Mount{Source: "/dev/" + plugin, Destination: "/mnt/test"})
	case "remove mount":
		a.Mounts = []*nriv1beta1.Mount{{Destination: "-/remove/test/destination"}}
	case "environment":
		if overwrite {
			a.Env = append(a.Env, &nriv1beta1.KeyValue{Key: "-key"})
		}
		a.Env = append(a.Env, &nriv1beta1.KeyValue{Key: "key", Value: plugin})
	case "arguments":
		if !overwrite {
			a.Args = []string{"echo", "updated", "argument", "list"}
		} else {
			a.Args = append([]string{""}, append(slices.Clone(ctr.GetArgs()), "twice...")...)
		}
	case "hooks":
		a.Hooks = &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/bin/" + plugin}}}
	case "device":
		n, _ := strconv.ParseInt(idx, 10, 64)
		if overwrite {
			linux().Devices = append(linux().Devices, &nriv1beta1.LinuxDevice{Path: "-/dev/test"})
		}
		linux().Devices = append(linux().Devices, &nriv1beta1.LinuxDevice{Path: "/dev/test", Type: "c", Major: 313, Minor: 100 + n})
	case "namespace":
		if overwrite {
			linux().Namespaces = append(linux().Namespaces, &nriv1beta1.LinuxNamespace{Type: "-cgroup"})
		}
		linux().Namespaces = append(linux().Namespaces, &nriv1beta1.LinuxNamespace{Type: "cgroup", Path: "/var/run/cgroupns/replaced"})
	case "rlimit":
		a.Rlimits = []*nriv1beta1.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 456, Soft: 123}}
	case "CDI-device":
		a.CdiDevices = []*nriv1beta1.CDIDevice{{Name: "vendor0.com/dev=dev0"}}
	case "I/O priority":
		linux().IoPriority = &nriv1beta1.LinuxIOPriority{Class: nriv1beta1.IOPrioClass_IO_PRIO_CLASS_RT, Priority: 5}
	case "linux net device":
		linux().NetDevices = map[string]*nriv1beta1.LinuxNetDevice{"hostIf": {Name: "containerIf"}}
		if overwrite {
			linux().NetDevices["-hostIf"] = &nriv1beta1.LinuxNetDevice{}
		}
	case "linux scheduler":
		linux().Scheduler = &nriv1beta1.LinuxScheduler{
			Policy:   nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_FIFO,
			Priority: 10,
			Flags:    []nriv1beta1.LinuxSchedulerFlag{nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_RESET_ON_FORK},
		}
	case "linux sysctl":
		linux().Sysctl = map[string]string{"net.core.somaxconn": "256"}
		if overwrite {
			linux().Sysctl["-net.core.somaxconn"] = ""
		}
	case "linux memory policy":
		linux().MemoryPolicy = &nriv1beta1.LinuxMemoryPolicy{
			Mode: nriv1beta1.MpolMode_MPOL_MODE_INTERLEAVE, Nodes: "0,1",
			Flags: []nriv1beta1.MpolFlag{nriv1beta1.MpolFlag_MPOL_FLAG_STATIC_NODES},
		}
	case "resources/cpu":
		res().Cpu = &nriv1beta1.LinuxCPU{Shares: u64(123), Quota: i64(4560), Period: u64(7890), RealtimeRuntime: i64(321),
			RealtimePeriod: u64(654), Cpus: "0-1", Mems: "2-3"}
	case "resources/mem":
		res().Memory = &nriv1beta1.LinuxMemory{Limit: i64(1234000), Reservation: i64(4000), Swap: i64(34000), Kernel: i64(30000),
			KernelTcp: i64(2000), Swappiness: u64(87), DisableOomKiller: boolv(true), UseHierarchy: boolv(true)}
	case "resources/classes":
		res().RdtClass = str(plugin)
		res().BlockioClass = str(plugin)
	case "resources/hugepagelimits":
		res().HugepageLimits = []*nriv1beta1.HugepageLimit{{PageSize: "1MB", Limit: 4096}, {PageSize: "4MB", Limit: 1024}}
	case "resources/unified":
		res().Unified = map[string]string{"resource.1": "value1", "resource.2": "value2"}
	case "resources/pids":
		res().Pids = &nriv1beta1.LinuxPids{Limit: 77}
	case "cgroupspath":
		linux().CgroupsPath = "/" + plugin
	case "oom score adj":
		linux().OomScoreAdj = i64(-999)
	case "seccomp":
		linux().SeccompPolicy = seccompPolicy()
	case "rdt":
		r := &nriv1beta1.LinuxRdt{Remove: overwrite}
		r.ClosId = str(name)
		r.Schemata = &nriv1beta1.OptionalRepeatedString{Value: []string{"L3:0=ff", "MB:0=50"}}
		r.EnableMonitoring = boolv(true)
		linux().Rdt = r
	default:
		panic("unknown adjustment subject " + subject)
	}
	return a
}

// adjustingPlugin answers CreateContainer with adjustment(subject, ...).
func adjustingPlugin(subject, idx, name string, overwrite bool) Opt {
	return onCreate(func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
		return &nriv1beta1.CreateContainerResponse{Adjust: adjustment(subject, idx, name, req.GetContainer(), overwrite)}, nil
	})
}

func init() {
	const g = "ContainerCreationAdjustments"
	single := func(subject string, expected *nriv1beta1.ContainerAdjustment) func(s *S) {
		return func(s *S) {
			s.Start("00", "test", adjustingPlugin(subject, "00", "test", false))
			pod := newPod("pod0", nil)
			s.runPod(pod)
			rsp := s.mustCreate(pod, adjustCtr())
			protoEq(s, "merged adjustment", rsp.GetAdjust(), expected)
		}
	}
	lin := func(l *nriv1beta1.LinuxContainerAdjustment) *nriv1beta1.ContainerAdjustment {
		return &nriv1beta1.ContainerAdjustment{Linux: l}
	}
	res := func(r *nriv1beta1.LinuxResources) *nriv1beta1.ContainerAdjustment {
		return lin(&nriv1beta1.LinuxContainerAdjustment{Resources: r})
	}
	cases := []struct {
		name, subject string
		want          *nriv1beta1.ContainerAdjustment
	}{
		{"adjust annotations", "annotation", &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"key": "00-test"}}},
		{"adjust mounts", "mount", &nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Source: "/dev/00-test", Destination: "/mnt/test"}}}},
		{"remove a mount", "remove mount", &nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Destination: "-/remove/test/destination"}}}},
		{"adjust environment", "environment", &nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "key", Value: "00-test"}}}},
		{"adjust arguments", "arguments", &nriv1beta1.ContainerAdjustment{Args: []string{"echo", "updated", "argument", "list"}}},
		{"adjust hooks", "hooks", &nriv1beta1.ContainerAdjustment{Hooks: &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/bin/00-test"}}}}},
		{"adjust devices", "device", lin(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "/dev/test", Type: "c", Major: 313, Minor: 100}}})},
		{"adjust namespace", "namespace", lin(&nriv1beta1.LinuxContainerAdjustment{Namespaces: []*nriv1beta1.LinuxNamespace{{Type: "cgroup", Path: "/var/run/cgroupns/replaced"}}})},
		{"adjust rlimits", "rlimit", &nriv1beta1.ContainerAdjustment{Rlimits: []*nriv1beta1.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 123, Hard: 456}}}},
		{"adjust CDI Devices", "CDI-device", &nriv1beta1.ContainerAdjustment{CdiDevices: []*nriv1beta1.CDIDevice{{Name: "vendor0.com/dev=dev0"}}}},
		{"adjust I/O priority", "I/O priority", lin(&nriv1beta1.LinuxContainerAdjustment{IoPriority: &nriv1beta1.LinuxIOPriority{Class: nriv1beta1.IOPrioClass_IO_PRIO_CLASS_RT, Priority: 5}})},
		{"adjust linux net devices", "linux net device", lin(&nriv1beta1.LinuxContainerAdjustment{NetDevices: map[string]*nriv1beta1.LinuxNetDevice{"hostIf": {Name: "containerIf"}}})},
		{"adjust linux scheduler", "linux scheduler", lin(&nriv1beta1.LinuxContainerAdjustment{Scheduler: &nriv1beta1.LinuxScheduler{
			Policy: nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_FIFO, Priority: 10,
			Flags: []nriv1beta1.LinuxSchedulerFlag{nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_RESET_ON_FORK}}})},
		{"adjust linux sysctl settings", "linux sysctl", lin(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"net.core.somaxconn": "256"}})},
		{"adjust linux memory policy", "linux memory policy", lin(&nriv1beta1.LinuxContainerAdjustment{MemoryPolicy: &nriv1beta1.LinuxMemoryPolicy{
			Mode: nriv1beta1.MpolMode_MPOL_MODE_INTERLEAVE, Nodes: "0,1", Flags: []nriv1beta1.MpolFlag{nriv1beta1.MpolFlag_MPOL_FLAG_STATIC_NODES}}})},
		{"adjust CPU resources", "resources/cpu", res(&nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Shares: u64(123), Quota: i64(4560),
			Period: u64(7890), RealtimeRuntime: i64(321), RealtimePeriod: u64(654), Cpus: "0-1", Mems: "2-3"}})},
		{"adjust memory resources", "resources/mem", res(&nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: i64(1234000),
			Reservation: i64(4000), Swap: i64(34000), Kernel: i64(30000), KernelTcp: i64(2000), Swappiness: u64(87),
			DisableOomKiller: boolv(true), UseHierarchy: boolv(true)}})},
		{"adjust class-based resources", "resources/classes", res(&nriv1beta1.LinuxResources{RdtClass: str("00-test"), BlockioClass: str("00-test")})},
		{"adjust hugepage limits", "resources/hugepagelimits", res(&nriv1beta1.LinuxResources{HugepageLimits: []*nriv1beta1.HugepageLimit{
			{PageSize: "1MB", Limit: 4096}, {PageSize: "4MB", Limit: 1024}}})},
		{"adjust cgroupv2 unified resources", "resources/unified", res(&nriv1beta1.LinuxResources{Unified: map[string]string{
			"resource.1": "value1", "resource.2": "value2"}})},
		{"adjust cgroups path", "cgroupspath", lin(&nriv1beta1.LinuxContainerAdjustment{CgroupsPath: "/00-test"})},
		{"adjust seccomp policy", "seccomp", lin(&nriv1beta1.LinuxContainerAdjustment{SeccompPolicy: seccompPolicy()})},
		{"adjust RDT", "rdt", lin(&nriv1beta1.LinuxContainerAdjustment{Rdt: &nriv1beta1.LinuxRdt{ClosId: str("test"),
			Schemata: &nriv1beta1.OptionalRepeatedString{Value: []string{"L3:0=ff", "MB:0=50"}}, EnableMonitoring: boolv(true)}})},
	}
	for _, c := range cases {
		add(Upstream, g, "there is a single plugin: should be successfully collected without conflicts: "+c.name, Options{}, single(c.subject, c.want))
	}
	// Beyond classic's 23 single-plugin cases: the other adjustable fields.
	add(Gap, g, "there is a single plugin: adjust pids limit", Options{}, single("resources/pids",
		res(&nriv1beta1.LinuxResources{Pids: &nriv1beta1.LinuxPids{Limit: 77}})))
	add(Gap, g, "there is a single plugin: adjust OOM score adjustment", Options{}, single("oom score adj",
		lin(&nriv1beta1.LinuxContainerAdjustment{OomScoreAdj: i64(-999)})))

	// Multiple plugins: 10-foo (started first, as in classic) and 00-bar
	// adjust the same field; with remove, 10-foo removes before setting.
	multi := func(subject string, remove, shouldFail bool, expected *nriv1beta1.ContainerAdjustment, conflict string) func(s *S) {
		return func(s *S) {
			s.Start("10", "foo", adjustingPlugin(subject, "10", "foo", remove))
			s.Start("00", "bar", adjustingPlugin(subject, "00", "bar", false))
			pod := newPod("pod0", nil)
			s.runPod(pod)
			ctr := adjustCtr()
			ctr.Mounts = nil
			ctr.Linux.Namespaces = nil
			rsp, err := s.create(pod, ctr)
			if shouldFail {
				s.failsWith("conflicting CreateContainer", err, codes.FailedPrecondition, "DISPATCH_OUTCOME_CONFLICT",
					`plugins "10-foo" and "00-bar" both tried to set `+conflict)
				s.namesPlugins("conflict", err, "10-foo")
				if rsp != nil {
					s.Errorf("a failed creation returned a result: %v", rsp)
				}
				return
			}
			s.must("CreateContainer", err)
			protoEq(s, "merged adjustment", rsp.GetAdjust(), expected)
		}
	}
	const mp = "there are multiple plugins: should be successfully combined if there are no conflicts: "
	add(Upstream, g, mp+"adjust annotations (conflicts)", Options{}, multi("annotation", false, true, nil, "Annotations key"))
	add(Deliberate, g, mp+"adjust annotations (DESIGN 5.5: an override leaves only k, never both k and -k)", Options{},
		multi("annotation", true, false, &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"key": "10-foo"}}, ""))
	add(Upstream, g, mp+"adjust mounts (conflicts)", Options{}, multi("mount", false, true, nil, "Mounts /mnt/test"))
	add(Upstream, g, mp+"adjust mounts", Options{}, multi("mount", true, false,
		&nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Source: "/dev/10-foo", Destination: "/mnt/test"}}}, ""))
	add(Upstream, g, mp+"adjust environment (conflicts)", Options{}, multi("environment", false, true, nil, "Env key"))
	add(Upstream, g, mp+"adjust environment", Options{}, multi("environment", true, false,
		&nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "key", Value: "10-foo"}}}, ""))
	add(Upstream, g, mp+"adjust arguments (conflicts)", Options{}, multi("arguments", false, true, nil, "Args"))
	add(Upstream, g, mp+"adjust arguments", Options{}, multi("arguments", true, false,
		&nriv1beta1.ContainerAdjustment{Args: []string{"echo", "updated", "argument", "list", "twice..."}}, ""))
	add(Upstream, g, mp+"adjust hooks", Options{}, multi("hooks", false, false,
		&nriv1beta1.ContainerAdjustment{Hooks: &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/bin/00-bar"}, {Path: "/bin/10-foo"}}}}, ""))
	add(Upstream, g, mp+"adjust devices (conflicts)", Options{}, multi("device", false, true, nil, "Devices /dev/test"))
	add(Upstream, g, mp+"adjust devices", Options{}, multi("device", true, false,
		lin(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "/dev/test", Type: "c", Major: 313, Minor: 110}}}), ""))
	add(Upstream, g, mp+"adjust resources (conflicts)", Options{}, multi("resources/classes", false, true, nil, "BlockioClass"))
	add(Upstream, g, mp+"adjust I/O priority (conflicts)", Options{}, multi("I/O priority", false, true, nil, "IoPriority"))
	add(Deliberate, g, mp+"adjust linux net devices (DESIGN 5.5: an override leaves only k, never both k and -k)", Options{},
		multi("linux net device", true, false, lin(&nriv1beta1.LinuxContainerAdjustment{
			NetDevices: map[string]*nriv1beta1.LinuxNetDevice{"hostIf": {Name: "containerIf"}}}), ""))
	add(Upstream, g, mp+"adjust linux net devices (conflicts)", Options{}, multi("linux net device", false, true, nil, "LinuxNetDevices hostIf"))
	add(Upstream, g, mp+"adjust linux scheduler (conflicts)", Options{}, multi("linux scheduler", false, true, nil, "LinuxSched"))
	add(Upstream, g, mp+"adjust RDT (conflicts)", Options{}, multi("rdt", false, true, nil, "RdtClosID"))
	add(Upstream, g, mp+"adjust RDT", Options{}, multi("rdt", true, false, lin(&nriv1beta1.LinuxContainerAdjustment{Rdt: &nriv1beta1.LinuxRdt{
		ClosId: str("foo"), Schemata: &nriv1beta1.OptionalRepeatedString{Value: []string{"L3:0=ff", "MB:0=50"}}, EnableMonitoring: boolv(true)}}), ""))

	// The conflicts and overrides of the remaining fields.
	for _, c := range []struct{ subject, conflict string }{
		{"resources/cpu", "CPUShares"},
		{"resources/mem", "MemLimit"},
		{"resources/hugepagelimits", "HugepageLimits 1M"},
		{"resources/unified", "CgroupsUnified resource."},
		{"resources/pids", "PidsLimit"},
		{"cgroupspath", "CgroupsPath"},
		{"oom score adj", "OomScoreAdj"},
		{"seccomp", "SeccompPolicy"},
		{"namespace", "Namespace cgroup"},
		{"linux sysctl", "Sysctl net.core.somaxconn"},
		{"linux memory policy", "MemoryPolicy"},
		{"rlimit", "Rlimits RLIMIT_NOFILE"},
		{"CDI-device", "CdiDevices vendor0.com/dev=dev0"},
	} {
		add(Gap, g, "there are multiple plugins: "+c.subject+" (conflicts)", Options{}, multi(c.subject, false, true, nil, c.conflict))
	}
	add(Gap, g, "there are multiple plugins: linux sysctl (remove-then-add override)", Options{}, multi("linux sysctl", true, false,
		lin(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"net.core.somaxconn": "256"}}), ""))
	// docs/PROTOCOL.md §9 lists "-type" among the removal markers, and "a
	// removal always succeeds": the override idiom works for namespaces too
	// (classic NRI fails it, its namespace removal being a claim).
	add(Gap, g, "there are multiple plugins: namespace (remove-then-add override)", Options{}, multi("namespace", true, false,
		lin(&nriv1beta1.LinuxContainerAdjustment{Namespaces: []*nriv1beta1.LinuxNamespace{
			{Type: "cgroup", Path: "/var/run/cgroupns/replaced"}}}), ""))
	add(Gap, g, "a plugin setting the same entry twice conflicts with itself", Options{}, func(s *S) {
		s.Start("00", "twice", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{
				{Source: "/a", Destination: "/x"}, {Source: "/b", Destination: "/x"}}}}, nil
		}))
		pod := newPod("pod0", nil)
		s.runPod(pod)
		_, err := s.create(pod, newCtr("pod0", "ctr0"))
		s.failsWith("CreateContainer", err, codes.FailedPrecondition, "DISPATCH_OUTCOME_CONFLICT", `plugins "00-twice" and "00-twice" both tried to set Mounts /x`)
	})
	add(Gap, g, "later plugins see the changes of earlier plugins in the request", Options{}, func(s *S) {
		var seen *nriv1beta1.Container
		s.Start("00", "first", onCreate(func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Annotations: map[string]string{"first": "yes"},
				Env:         []*nriv1beta1.KeyValue{{Key: "FIRST", Value: "1"}},
				Linux:       &nriv1beta1.LinuxContainerAdjustment{Resources: &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "3"}}},
			}}, nil
		}))
		s.Start("10", "second", onCreate(func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			seen = req.GetContainer()
			return nil, nil
		}))
		pod := newPod("pod0", nil)
		s.runPod(pod)
		s.mustCreate(pod, newCtr("pod0", "ctr0"))
		if seen.GetAnnotations()["first"] != "yes" || !slices.Contains(seen.GetEnv(), "FIRST=1") ||
			seen.GetLinux().GetResources().GetCpu().GetCpus() != "3" {
			s.Fatalf("10-second saw a container without 00-first's changes: %v", seen)
		}
	})
}
