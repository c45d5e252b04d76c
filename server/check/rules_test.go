package check_test

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/check"
)

// Every rule has at least one refused and one accepted case, boundary
// values on both sides where the rule has bounds: the table fails if a
// rule is removed or made stricter.

func TestAnnotations(t *testing.T) {
	const f = "adjust.annotations"
	runTable(t, []tc{
		ok("plain", adj(annotations("example.com/k", "v", "k2", ""))),
		ok("removal", adj(annotations("-example.com/k", ""))),
		ok("removal value unchecked", adj(annotations("-k", "\x00"))),
		bad("empty key", adj(annotations("", "v")), f+`[""]`, "must not be empty"),
		bad("empty removal", adj(annotations("-", "")), f+`["-"]`, "names no key"),
		bad("key NUL", adj(annotations("a\x00b", "v")), f+`["a\x00b"]`, "NUL"),
		bad("value NUL", adj(annotations("k", "a\x00")), f+`["k"]`, "NUL"),
		ok("key at bound", adj(annotations(long(check.MaxKeyLen), ""))),
		bad("key too long", adj(annotations(long(check.MaxKeyLen+1), "")), f+`["`+long(64)+`"... (4097 bytes)]`, "longer than 4096"),
		ok("value at bound", adj(annotations("k", long(check.MaxValueLen)))),
		bad("value too long", adj(annotations("k", long(check.MaxValueLen+1))), f+`["k"]`, "longer than 262144"),
	})
}

func TestMounts(t *testing.T) {
	m := func(dest, typ, src string, opts ...string) func(a *nriv1beta1.ContainerAdjustment) {
		return mounts(&nriv1beta1.Mount{Destination: dest, Type: typ, Source: src, Options: opts})
	}
	runTable(t, []tc{
		ok("bind", adj(m("/data", "bind", "/srv/data", "rbind", "ro"))),
		ok("relative source", adj(m("/data", "bind", "data", "rbind"))),
		ok("tmpfs", adj(m("/tmp", "tmpfs", "tmpfs", "nosuid", "size=64m"))),
		ok("removal", adj(m("-/data", "\x00", "\x00"))),
		bad("relative destination", adj(m("data", "bind", "/srv")), "adjust.mounts[0].destination", "not an absolute path"),
		bad("relative removal", adj(m("-data", "", "")), "adjust.mounts[0].destination", "not an absolute path"),
		bad("empty removal", adj(m("-", "", "")), "adjust.mounts[0].destination", "not an absolute path"),
		bad("destination NUL", adj(m("/a\x00", "bind", "/a")), "adjust.mounts[0].destination", "NUL"),
		ok("destination at PATH_MAX", adj(m("/"+long(check.MaxPathLen-1), "bind", "/a"))),
		bad("destination over PATH_MAX", adj(m("/"+long(check.MaxPathLen), "bind", "/a")), "adjust.mounts[0].destination", "PATH_MAX"),
		bad("type NUL", adj(m("/a", "bind\x00", "/a")), "adjust.mounts[0].type", "NUL"),
		ok("type at NAME_MAX", adj(m("/a", long(check.MaxNameLen), "/a"))),
		bad("type over NAME_MAX", adj(m("/a", long(check.MaxNameLen+1), "/a")), "adjust.mounts[0].type", "NAME_MAX"),
		bad("source NUL", adj(m("/a", "bind", "/a\x00")), "adjust.mounts[0].source", "NUL"),
		bad("option NUL", adj(m("/a", "bind", "/a", "ro", "x\x00")), "adjust.mounts[0].options[1]", "NUL"),
		bad("second mount", adj(mounts(&nriv1beta1.Mount{Destination: "/a"}, &nriv1beta1.Mount{Destination: "b"})), "adjust.mounts[1].destination", "absolute"),
	})
}

func TestEnv(t *testing.T) {
	runTable(t, []tc{
		ok("plain", adj(env("HTTP_PROXY", "http://proxy:3128", "B", "x=y", "EMPTY", ""))),
		ok("removal", adj(env("-DEBUG", "\x00"))),
		bad("empty name", adj(env("", "v")), "adjust.env[0].key", "must not be empty"),
		bad("empty removal", adj(env("A", "1", "-", "")), "adjust.env[1].key", "must not be empty"),
		bad("equals in name", adj(env("A=B", "v")), "adjust.env[0].key", `holds "="`),
		bad("equals in removal", adj(env("-A=B", "")), "adjust.env[0].key", `holds "="`),
		bad("name NUL", adj(env("A\x00", "v")), "adjust.env[0].key", "NUL"),
		bad("value NUL", adj(env("A", "v\x00")), "adjust.env[0].value", "NUL"),
		ok("entry at MAX_ARG_STRLEN", adj(env("A", long(check.MaxArgLen-2)))),
		bad("entry over MAX_ARG_STRLEN", adj(env("A", long(check.MaxArgLen-1))), "adjust.env[0].value", "MAX_ARG_STRLEN"),
	})
}

func TestHooks(t *testing.T) {
	h := func(path string, timeout *wrapperspb.Int64Value, args ...string) *nriv1beta1.Hook {
		return &nriv1beta1.Hook{Path: path, Args: args, Timeout: timeout}
	}
	const maxTimeout = math.MaxInt64 / 1_000_000_000
	runTable(t, []tc{
		ok("plain", adj(poststop(h("/usr/libexec/hook", nil, "hook", "poststop")))),
		ok("timeout 1", adj(poststop(h("/h", i64(1))))),
		ok("timeout max", adj(poststop(h("/h", i64(maxTimeout))))),
		bad("timeout 0", adj(poststop(h("/h", i64(0)))), "adjust.hooks.poststop[0].timeout", "greater than zero"),
		bad("timeout negative", adj(poststop(h("/h", i64(-1)))), "adjust.hooks.poststop[0].timeout", "greater than zero"),
		bad("timeout overflows", adj(poststop(h("/h", i64(maxTimeout+1)))), "adjust.hooks.poststop[0].timeout", "time.Second"),
		bad("relative path", adj(poststop(h("/h", nil), h("hook", nil))), "adjust.hooks.poststop[1].path", "must be absolute"),
		bad("empty path", adj(poststop(h("", nil))), "adjust.hooks.poststop[0].path", "must be absolute"),
		bad("arg NUL", adj(poststop(h("/h", nil, "a", "b\x00"))), "adjust.hooks.poststop[0].args[1]", "NUL"),
		bad("env NUL", adj(poststop(&nriv1beta1.Hook{Path: "/h", Env: []string{"A=\x00"}})), "adjust.hooks.poststop[0].env[0]", "NUL"),
		bad("create_runtime", adj(func(a *nriv1beta1.ContainerAdjustment) {
			a.Hooks = &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{h("/a", nil)}, CreateRuntime: []*nriv1beta1.Hook{h("b", nil)}}
		}), "adjust.hooks.create_runtime[0].path", "absolute"),
	})
}

func TestRlimits(t *testing.T) {
	types := []string{"RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_LOCKS",
		"RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_RSS",
		"RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK"}
	var all []*nriv1beta1.POSIXRlimit
	for _, typ := range types {
		all = append(all, rl(typ, 10, 10))
	}
	runTable(t, []tc{
		ok("every type, soft = hard", adj(rlimits(all...))),
		ok("soft below hard", adj(rlimits(rl("RLIMIT_NOFILE", 4096, 1024)))),
		ok("unlimited", adj(rlimits(rl("RLIMIT_CORE", math.MaxUint64, math.MaxUint64)))),
		bad("unknown type", adj(rlimits(rl("RLIMIT_BOGUS", 1, 1))), "adjust.rlimits[0].type", "not a Linux rlimit type"),
		bad("lower case", adj(rlimits(rl("rlimit_nofile", 1, 1))), "adjust.rlimits[0].type", "not a Linux rlimit type"),
		bad("soft above hard", adj(rlimits(rl("RLIMIT_NOFILE", 1024, 1025))), "adjust.rlimits[0].soft", "above the hard limit"),
		bad("duplicate", adj(rlimits(rl("RLIMIT_NOFILE", 1, 1), rl("RLIMIT_CORE", 0, 0), rl("RLIMIT_NOFILE", 2, 2))), "adjust.rlimits[2].type", "already set by rlimits[0]"),
	})
}

func TestCDIDevices(t *testing.T) {
	const f = "adjust.cdi_devices[0].name"
	runTable(t, []tc{
		ok("vendor.com/gpu=0", adj(cdi("vendor.com/gpu=0", "nvidia.com/gpu=all", "v/c=a:b", "a/b=c", "x-y_z.io/c-l_a.ss=d_e-f.g:h"))),
		bad("unqualified", adj(cdi("gpu0")), f, "fully qualified CDI device name"),
		bad("no name", adj(cdi("vendor.com/gpu=")), f, "fully qualified"),
		bad("no class", adj(cdi("vendor.com=0")), f, "fully qualified"),
		bad("a path", adj(cdi("/dev/gpu0")), f, "fully qualified"),
		bad("vendor starts with digit", adj(cdi("1vendor.com/gpu=0")), f, "fully qualified"),
		bad("vendor ends with dot", adj(cdi("vendor./gpu=0")), f, "fully qualified"),
		bad("class with slash", adj(cdi("vendor.com/gp/u=0")), f, "fully qualified"),
		bad("class with colon", adj(cdi("vendor.com/g:u=0")), f, "fully qualified"),
		bad("name ends with colon", adj(cdi("vendor.com/gpu=0:")), f, "fully qualified"),
		bad("name with equals", adj(cdi("vendor.com/gpu=0=1")), f, "fully qualified"),
		bad("name with slash", adj(cdi("vendor.com/gpu=0/1")), f, "fully qualified"),
		bad("second", adj(cdi("a/b=c", "")), "adjust.cdi_devices[1].name", "fully qualified"),
	})
}

func TestArgs(t *testing.T) {
	runTable(t, []tc{
		ok("set", adj(args("/bin/sh", "-c", "true"))),
		ok("empty later argument", adj(args("/bin/app", ""))),
		ok("replacement", adj(args("", "/bin/sh"))),
		ok("at MAX_ARG_STRLEN", adj(args("/bin/echo", long(check.MaxArgLen)))),
		bad("replacement of nothing", adj(args("")), "adjust.args", "at least one argument"),
		bad("replacement with empty program", adj(args("", "", "x")), "adjust.args[1]", "must not be empty"),
		bad("NUL", adj(args("/bin/sh", "a\x00")), "adjust.args[1]", "NUL"),
		bad("over MAX_ARG_STRLEN", adj(args("/bin/echo", long(check.MaxArgLen+1))), "adjust.args[1]", "MAX_ARG_STRLEN"),
	})
}

func TestLinuxDevices(t *testing.T) {
	const f = "adjust.linux.devices[0]."
	runTable(t, []tc{
		ok("char", devices(dev("/dev/fuse", "c", 10, 229))),
		ok("block unbuffered fifo", devices(dev("/dev/sda", "b", 8, 0), dev("/dev/u", "u", 4, 64), dev("/dev/fifo", "p", 0, 0))),
		ok("outside /dev", devices(dev("/opt/dev/x", "c", 1, 3))),
		ok("removal", devices(dev("-/dev/x", "bogus", -1, -1))),
		ok("bounds", devices(dev("/dev/x", "c", 4095, 1048575), dev("/dev/y", "c", 0, 0))),
		bad("relative path", devices(dev("dev/x", "c", 1, 3)), f+"path", "not an absolute path"),
		bad("relative removal", devices(dev("-dev/x", "c", 1, 3)), f+"path", "not an absolute path"),
		bad("path NUL", devices(dev("/dev/x\x00", "c", 1, 3)), f+"path", "NUL"),
		bad("type", devices(dev("/dev/x", "x", 1, 3)), f+"type", "c, b, u or p"),
		bad("type empty", devices(dev("/dev/x", "", 1, 3)), f+"type", "c, b, u or p"),
		bad("major negative", devices(dev("/dev/x", "c", -1, 3)), f+"major", "outside 0..4095"),
		bad("major too big", devices(dev("/dev/x", "c", 4096, 3)), f+"major", "outside 0..4095"),
		bad("minor negative", devices(dev("/dev/x", "c", 1, -1)), f+"minor", "outside 0..1048575"),
		bad("minor too big", devices(dev("/dev/x", "b", 1, 1048576)), f+"minor", "outside 0..1048575"),
		bad("fifo major", devices(dev("/dev/p", "p", 1, 0)), f+"major", "FIFO"),
		bad("fifo minor", devices(dev("/dev/p", "p", 0, 1)), f+"minor", "FIFO"),
		ok("mode 07777", devices(devMode("c", 0o7777))),
		ok("mode 0", devices(devMode("c", 0))),
		ok("mode with own type c", devices(devMode("c", 0o020666))),
		ok("mode with own type u", devices(devMode("u", 0o020666))),
		ok("mode with own type b", devices(devMode("b", 0o060660))),
		ok("mode with own type p", devices(devMode("p", 0o010600))),
		bad("mode with other type", devices(devMode("c", 0o060666)), f+"file_mode", "beyond the permission bits"),
		bad("mode S_IFREG", devices(devMode("b", 0o100644)), f+"file_mode", "beyond the permission bits"),
		bad("mode Go os.FileMode bits", devices(devMode("c", 1<<26|1<<21|0o666)), f+"file_mode", "beyond the permission bits"),
		bad("second device", devices(dev("/dev/a", "c", 1, 3), dev("/dev/b", "c", 1, -3)), "adjust.linux.devices[1].minor", "outside"),
	})
}

func TestCgroupsPath(t *testing.T) {
	p := func(s string) *nriv1beta1.CreateContainerResponse {
		return lin(func(l *nriv1beta1.LinuxContainerAdjustment) { l.CgroupsPath = s })
	}
	const f = "adjust.linux.cgroups_path"
	runTable(t, []tc{
		ok("systemd", p("kubepods-burstable-pod1.slice:cri-containerd:0123abcd")),
		ok("cgroupfs absolute", p("/kubepods/burstable/pod1/0123")),
		ok("relative", p("nri/ctr-1")),
		ok("dots in names", p("/a..b/..c/d..")),
		bad("escape", p("../../../evil"), f, `".." element`),
		bad("inner dotdot", p("/kubepods/../evil"), f, `".." element`),
		bad("trailing dotdot", p("/kubepods/.."), f, `".." element`),
		bad("NUL", p("/a\x00"), f, "NUL"),
		ok("at PATH_MAX", p(long(check.MaxPathLen))),
		bad("over PATH_MAX", p(long(check.MaxPathLen+1)), f, "PATH_MAX"),
	})
}

func TestOOMScoreAdj(t *testing.T) {
	o := func(v int64) *nriv1beta1.CreateContainerResponse {
		return lin(func(l *nriv1beta1.LinuxContainerAdjustment) { l.OomScoreAdj = i64(v) })
	}
	const f = "adjust.linux.oom_score_adj"
	runTable(t, []tc{
		ok("min", o(-1000)),
		ok("max", o(1000)),
		ok("zero", o(0)),
		bad("below", o(-1001), f, "outside -1000..1000"),
		bad("above", o(1001), f, "OOM_SCORE_ADJ_MAX"),
		bad("far below", o(-100000), f, "-100000 is outside -1000..1000 (the kernel's OOM_SCORE_ADJ_MIN..OOM_SCORE_ADJ_MAX)"),
	})
}

func TestIOPriority(t *testing.T) {
	io := func(c nriv1beta1.IOPrioClass, p int32) *nriv1beta1.CreateContainerResponse {
		return lin(func(l *nriv1beta1.LinuxContainerAdjustment) {
			l.IoPriority = &nriv1beta1.LinuxIOPriority{Class: c, Priority: p}
		})
	}
	const f = "adjust.linux.io_priority."
	runTable(t, []tc{
		ok("RT 0", io(nriv1beta1.IOPrioClass_IO_PRIO_CLASS_RT, 0)),
		ok("BE 7", io(nriv1beta1.IOPrioClass_IO_PRIO_CLASS_BE, 7)),
		ok("IDLE", io(nriv1beta1.IOPrioClass_IO_PRIO_CLASS_IDLE, 4)),
		bad("unknown class", io(9999, 0), f+"class", "9999 is not an IOPrioClass value"),
		bad("class NONE", io(nriv1beta1.IOPrioClass_IO_PRIO_CLASS_NONE, 0), f+"class", "IO_PRIO_CLASS_NONE"),
		bad("priority 8", io(nriv1beta1.IOPrioClass_IO_PRIO_CLASS_BE, 8), f+"priority", "outside 0..7"),
		bad("priority -1", io(nriv1beta1.IOPrioClass_IO_PRIO_CLASS_BE, -1), f+"priority", "IOPRIO_NR_LEVELS"),
	})
}

func TestSeccomp(t *testing.T) {
	const f = "adjust.linux.seccomp_policy."
	arg := func(i uint32, op string) *nriv1beta1.LinuxSeccompArg {
		return &nriv1beta1.LinuxSeccompArg{Index: i, Value: 1, Op: op}
	}
	full := &nriv1beta1.LinuxSeccomp{
		DefaultAction: "SCMP_ACT_ERRNO", DefaultErrno: wrapperspb.UInt32(1),
		Architectures: []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_SHEB"},
		Flags:         []string{"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"},
		ListenerPath:  "/run/seccomp-agent.sock", ListenerMetadata: "opaque",
		Syscalls: []*nriv1beta1.LinuxSyscall{
			{Names: []string{"read", "write"}, Action: "SCMP_ACT_ALLOW"},
			{Names: []string{"personality"}, Action: "SCMP_ACT_ALLOW", Args: []*nriv1beta1.LinuxSeccompArg{arg(0, "SCMP_CMP_EQ"), arg(5, "SCMP_CMP_MASKED_EQ")}},
		},
	}
	var acts []*nriv1beta1.LinuxSyscall
	for _, a := range []string{"SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP", "SCMP_ACT_ERRNO", "SCMP_ACT_TRACE", "SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_NOTIFY"} {
		acts = append(acts, &nriv1beta1.LinuxSyscall{Names: []string{"x"}, Action: a})
	}
	var ops []*nriv1beta1.LinuxSeccompArg
	for _, o := range []string{"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"} {
		ops = append(ops, arg(1, o))
	}
	runTable(t, []tc{
		ok("full", seccomp(full)),
		ok("every action and operator", seccomp(&nriv1beta1.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW", Syscalls: append(acts, &nriv1beta1.LinuxSyscall{Names: []string{"y"}, Action: "SCMP_ACT_LOG", Args: ops})})),
		ok("empty policy", seccomp(&nriv1beta1.LinuxSeccomp{})),
		bad("empty default with rules", seccomp(&nriv1beta1.LinuxSeccomp{Syscalls: []*nriv1beta1.LinuxSyscall{{Names: []string{"read"}, Action: "SCMP_ACT_ALLOW"}}}), f+"default_action", "must be set"),
		bad("unknown default", seccomp(&nriv1beta1.LinuxSeccomp{DefaultAction: "SCMP_ACT_BOGUS"}), f+"default_action", "not a seccomp action"),
		bad("unknown arch", seccomp(&nriv1beta1.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW", Architectures: []string{"SCMP_ARCH_X86_64", "x86_64"}}), f+"architectures[1]", "not a seccomp architecture"),
		bad("unknown flag", seccomp(&nriv1beta1.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW", Flags: []string{"SECCOMP_FILTER_FLAG_BOGUS"}}), f+"flags[0]", "not a seccomp flag"),
		bad("relative listener", seccomp(&nriv1beta1.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW", ListenerPath: "agent.sock"}), f+"listener_path", "not an absolute path"),
		bad("metadata NUL", seccomp(&nriv1beta1.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW", ListenerMetadata: "\x00"}), f+"listener_metadata", "NUL"),
		bad("no names", syscalls("SCMP_ACT_ALLOW", nil), f+"syscalls[0].names", "at least one"),
		bad("empty name", syscalls("SCMP_ACT_ALLOW", []string{"read", ""}), f+"syscalls[0].names[1]", "must not be empty"),
		bad("name NUL", syscalls("SCMP_ACT_ALLOW", []string{"re\x00ad"}), f+"syscalls[0].names[0]", "NUL"),
		bad("unknown action", syscalls("allow", []string{"read"}), f+"syscalls[0].action", "not a seccomp action"),
		bad("arg index 6", syscalls("SCMP_ACT_ALLOW", []string{"read"}, arg(5, "SCMP_CMP_EQ"), arg(6, "SCMP_CMP_EQ")), f+"syscalls[0].args[1].index", "outside 0..5"),
		bad("unknown op", syscalls("SCMP_ACT_ALLOW", []string{"read"}, arg(0, "==")), f+"syscalls[0].args[0].op", "not a seccomp operator"),
	})
}

func TestNamespaces(t *testing.T) {
	const f = "adjust.linux.namespaces[0]."
	runTable(t, []tc{
		ok("every type", namespaces(ns("pid", ""), ns("network", "/var/run/netns/cni-1"), ns("mount", ""), ns("ipc", "/proc/1/ns/ipc"),
			ns("uts", ""), ns("user", ""), ns("cgroup", ""), ns("time", ""))),
		ok("removal", namespaces(ns("-network", "garbage"))),
		bad("unknown type", namespaces(ns("net", "")), f+"type", "not a namespace type"),
		bad("unknown removal", namespaces(ns("-bogus", "")), f+"type", "not a namespace type"),
		bad("empty type", namespaces(ns("", "")), f+"type", "not a namespace type"),
		bad("relative path", namespaces(ns("network", "netns/x")), f+"path", "must be absolute"),
		bad("path NUL", namespaces(ns("network", "/x\x00")), f+"path", "NUL"),
	})
}

func TestSysctl(t *testing.T) {
	const f = "adjust.linux.sysctl"
	runTable(t, []tc{
		ok("namespaced", sysctls("net.ipv4.ip_forward", "1", "kernel.shmmax", "68719476736", "net/ipv4/conf/eth0.100/rp_filter", "0")),
		ok("host", sysctls("kernel.core_pattern", "core", "vm.swappiness", "10")),
		ok("removal", sysctls("-net.core.somaxconn", "\x00")),
		ok("value at bound", sysctls("net.core.somaxconn", long(check.MaxValueLen))),
		bad("value too long", sysctls("net.core.somaxconn", long(check.MaxValueLen+1)), f+`["net.core.somaxconn"]`, "longer than 262144"),
		bad("empty key", sysctls("", "1"), f+`[""]`, "must not be empty"),
		bad("empty removal", sysctls("-", ""), f+`["-"]`, "must not be empty"),
		bad("escape", sysctls("net/../kernel/core_pattern", "|/evil"), f+`["net/../kernel/core_pattern"]`, "empty element"),
		bad("escape in dot form", sysctls("net.//.kernel.core_pattern", "|/evil"), f+`["net.//.kernel.core_pattern"]`, "empty element"),
		bad("double dot", sysctls("net..ipv4", "1"), f+`["net..ipv4"]`, "empty element"),
		bad("leading dot", sysctls(".net.ipv4", "1"), f+`[".net.ipv4"]`, "empty element"),
		bad("leading slash", sysctls("/net/ipv4", "1"), f+`["/net/ipv4"]`, "empty element"),
		bad("trailing dot", sysctls("net.ipv4.", "1"), f+`["net.ipv4."]`, "empty element"),
		bad("removal escape", sysctls("-../x", ""), f+`["-../x"]`, "empty element"),
		bad("key NUL", sysctls("net.a\x00", "1"), f+`["net.a\x00"]`, "NUL"),
		bad("value NUL", sysctls("net.a", "1\x00"), f+`["net.a"]`, "NUL"),
	})
}

func TestNetDevices(t *testing.T) {
	const f = "adjust.linux.net_devices"
	runTable(t, []tc{
		ok("renamed", netDevs("eth1", "net1", "enp0s31f6", "", "ib0", "eth%d")),
		ok("removal", netDevs("-eth1", "")),
		ok("removal value unchecked", netDevs("-eth1", "a/b")),
		ok("15 bytes", netDevs(long(15), long(15))),
		bad("host 16 bytes", netDevs(long(16), ""), f+`["xxxxxxxxxxxxxxxx"]`, "longer than 15 bytes"),
		bad("name 16 bytes", netDevs("eth1", long(16)), f+`["eth1"].name`, "IFNAMSIZ"),
		bad("empty host", netDevs("", "x"), f+`[""]`, "must not be empty"),
		bad("empty removal", netDevs("-", ""), f+`["-"]`, "must not be empty"),
		bad("host slash", netDevs("a/b", ""), f+`["a/b"]`, "dev_valid_name"),
		bad("host colon", netDevs("eth0:1", ""), f+`["eth0:1"]`, "dev_valid_name"),
		bad("host space", netDevs("eth 0", ""), f+`["eth 0"]`, "white space"),
		bad("host tab", netDevs("eth\t0", ""), f+`["eth\t0"]`, "white space"),
		bad("host dot", netDevs(".", ""), f+`["."]`, `"." and ".."`),
		bad("name dotdot", netDevs("eth0", ".."), f+`["eth0"].name`, `"." and ".."`),
		bad("name NUL", netDevs("eth0", "a\x00"), f+`["eth0"].name`, "NUL"),
	})
}

func TestScheduler(t *testing.T) {
	const f = "adjust.linux.scheduler."
	type P = nriv1beta1.LinuxSchedulerPolicy
	const (
		none  P = nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_NONE
		other P = nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_OTHER
		fifo  P = nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_FIFO
		rr    P = nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_RR
		batch P = nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_BATCH
		iso   P = nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_ISO
		idle  P = nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_IDLE
		dl    P = nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_DEADLINE
	)
	s := func(p P, nice, prio int32, flags ...nriv1beta1.LinuxSchedulerFlag) *nriv1beta1.LinuxScheduler {
		return &nriv1beta1.LinuxScheduler{Policy: p, Nice: nice, Priority: prio, Flags: flags}
	}
	d := func(runtime, deadline, period uint64) *nriv1beta1.LinuxScheduler {
		return &nriv1beta1.LinuxScheduler{Policy: dl, Runtime: runtime, Deadline: deadline, Period: period}
	}
	keepParams := nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_KEEP_PARAMS
	keepPolicy := nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_KEEP_POLICY
	runTable(t, []tc{
		ok("none ignores the rest", sched(&nriv1beta1.LinuxScheduler{Policy: none, Nice: 1000, Priority: -5, Runtime: 1})),
		ok("other nice bounds", sched(s(other, -20, 0))),
		ok("batch nice 19", sched(s(batch, 19, 0, nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_RESET_ON_FORK))),
		ok("idle iso", sched(s(idle, 0, 0))),
		ok("iso", sched(s(iso, 0, 0))),
		ok("fifo 1", sched(s(fifo, 0, 1))),
		ok("rr 99", sched(s(rr, 0, 99))),
		ok("fifo nice unchecked", sched(s(fifo, 100, 50))),
		ok("fifo keep params", sched(s(fifo, 0, 0, keepParams))),
		ok("rr keep policy", sched(s(rr, 0, 200, keepPolicy))),
		ok("every flag", sched(s(other, 0, 0, 0, 1, 2, 3, 4, 5, 6))),
		bad("unknown policy", sched(s(99, 0, 0)), f+"policy", "not a LinuxSchedulerPolicy value"),
		bad("nice -21", sched(s(other, -21, 0)), f+"nice", "outside -20..19"),
		bad("nice 20", sched(s(batch, 20, 0)), f+"nice", "outside -20..19"),
		bad("other priority", sched(s(other, 0, 1)), f+"priority", "SCHED_FIFO and SCHED_RR only"),
		bad("other priority keep", sched(s(other, 0, 1, keepParams)), f+"priority", "SCHED_FIFO and SCHED_RR only"),
		bad("fifo 0", sched(s(fifo, 0, 0)), f+"priority", "outside 1..99"),
		bad("rr 100", sched(s(rr, 0, 100)), f+"priority", "outside 1..99"),
		bad("unknown flag", sched(s(other, 0, 0, 1, 7)), f+"flags[1]", "not a LinuxSchedulerFlag value"),
		bad("runtime without deadline policy", sched(&nriv1beta1.LinuxScheduler{Policy: other, Runtime: 1}), f+"runtime", "SCHED_DEADLINE only"),
		bad("period without deadline policy", sched(&nriv1beta1.LinuxScheduler{Policy: fifo, Priority: 1, Period: 1}), f+"period", "SCHED_DEADLINE only"),
		ok("deadline minimal", sched(d(1024, 1024, 0))),
		ok("deadline ordered", sched(d(1000000, 2000000, 3000000))),
		ok("deadline period = deadline", sched(d(1024, 2048, 2048))),
		ok("deadline keep params", sched(&nriv1beta1.LinuxScheduler{Policy: dl, Flags: []nriv1beta1.LinuxSchedulerFlag{keepParams}})),
		bad("deadline priority", sched(&nriv1beta1.LinuxScheduler{Policy: dl, Priority: 1, Runtime: 1024, Deadline: 1024}), f+"priority", "SCHED_FIFO and SCHED_RR only"),
		bad("runtime 1023", sched(d(1023, 2048, 0)), f+"runtime", "below 1024 ns"),
		bad("deadline 0", sched(d(1024, 0, 0)), f+"deadline", "must not be 0"),
		bad("deadline below runtime", sched(d(2048, 2047, 0)), f+"deadline", "below the runtime"),
		bad("deadline 2^63", sched(d(1024, 1<<63, 0)), f+"deadline", "2^63"),
		bad("period below deadline", sched(d(1024, 4096, 4095)), f+"period", "below the deadline"),
		bad("period 2^63", sched(d(1024, 4096, 1<<63)), f+"period", "2^63"),
	})
}

func TestRdt(t *testing.T) {
	const f = "adjust.linux.rdt."
	r := func(clos *wrapperspb.StringValue, lines ...string) *nriv1beta1.CreateContainerResponse {
		x := &nriv1beta1.LinuxRdt{ClosId: clos, EnableMonitoring: wrapperspb.Bool(true)}
		if lines != nil {
			x.Schemata = &nriv1beta1.OptionalRepeatedString{Value: lines}
		}
		return rdt(x)
	}
	runTable(t, []tc{
		ok("class", r(wrapperspb.String("gold"), "L3:0=ff;1=ff", "MB:0=50")),
		ok("root", r(wrapperspb.String("/"))),
		ok("empty", r(wrapperspb.String(""))),
		ok("remove", rdt(&nriv1beta1.LinuxRdt{Remove: true})),
		bad("slash", r(wrapperspb.String("a/b")), f+"clos_id", "not a resctrl group name"),
		bad("trailing slash", r(wrapperspb.String("a/")), f+"clos_id", "not a resctrl group name"),
		bad("dot", r(wrapperspb.String(".")), f+"clos_id", "not a resctrl group name"),
		bad("dotdot", r(wrapperspb.String("..")), f+"clos_id", "not a resctrl group name"),
		ok("at NAME_MAX", r(wrapperspb.String(long(check.MaxNameLen)))),
		bad("over NAME_MAX", r(wrapperspb.String(long(check.MaxNameLen+1))), f+"clos_id", "NAME_MAX"),
		bad("newline", r(nil, "L3:0=ff", "L3:0=ff\nMB:0=10"), f+"schemata.value[1]", "line break"),
		bad("NUL", r(nil, "L3:0=ff\x00"), f+"schemata.value[0]", "NUL"),
	})
}

func TestMemoryPolicy(t *testing.T) {
	const f = "adjust.linux.memory_policy."
	const (
		def   = nriv1beta1.MpolMode_MPOL_MODE_DEFAULT
		pref  = nriv1beta1.MpolMode_MPOL_MODE_PREFERRED
		bind  = nriv1beta1.MpolMode_MPOL_MODE_BIND
		inter = nriv1beta1.MpolMode_MPOL_MODE_INTERLEAVE
		local = nriv1beta1.MpolMode_MPOL_MODE_LOCAL
		many  = nriv1beta1.MpolMode_MPOL_MODE_PREFERRED_MANY
		wint  = nriv1beta1.MpolMode_MPOL_MODE_WEIGHTED_INTERLEAVE

		static   = nriv1beta1.MpolFlag_MPOL_FLAG_STATIC_NODES
		relative = nriv1beta1.MpolFlag_MPOL_FLAG_RELATIVE_NODES
		balance  = nriv1beta1.MpolFlag_MPOL_FLAG_NUMA_BALANCING
	)
	runTable(t, []tc{
		ok("default", mpol(def, "")),
		ok("local", mpol(local, "")),
		ok("preferred none", mpol(pref, "")),
		ok("preferred one", mpol(pref, "1", relative)),
		ok("bind", mpol(bind, "0-3,7", static, balance)),
		ok("interleave", mpol(inter, "0,1")),
		ok("preferred many balance", mpol(many, "0-1", balance)),
		ok("weighted interleave", mpol(wint, "1023")),
		ok("spaces and empty elements", mpol(bind, " 0 , ,1-2,")),
		bad("space inside a range", mpol(bind, "1- 2"), f+"nodes", "not a node list"),
		bad("unknown mode", mpol(99, ""), f+"mode", "not an MpolMode value"),
		bad("default with nodes", mpol(def, "0"), f+"nodes", "must be empty"),
		bad("local with nodes", mpol(local, "1"), f+"nodes", "must be empty"),
		bad("bind without nodes", mpol(bind, ""), f+"nodes", "at least one node"),
		bad("weighted without nodes", mpol(wint, ""), f+"nodes", "at least one node"),
		bad("node 1024", mpol(bind, "1024"), f+"nodes", "not a node list"),
		bad("reversed range", mpol(bind, "3-1"), f+"nodes", "not a node list"),
		bad("not a number", mpol(bind, "a"), f+"nodes", "not a node list"),
		bad("open range", mpol(bind, "1-"), f+"nodes", "not a node list"),
		bad("open range from 0", mpol(bind, "0-"), f+"nodes", "not a node list"),
		bad("range without start", mpol(bind, "-1"), f+"nodes", "not a node list"),
		bad("only commas", mpol(pref, ",,"), f+"nodes", "names no node"),
		bad("static and relative", mpol(bind, "0", static, relative), f+"flags[1]", "exclude each other"),
		bad("balancing with interleave", mpol(inter, "0", balance), f+"flags[0]", "MPOL_BIND and MPOL_PREFERRED_MANY"),
		bad("unknown flag", mpol(bind, "0", 5), f+"flags[0]", "not an MpolFlag value"),
	})
}

func TestMemory(t *testing.T) {
	const f = "adjust.linux.resources.memory."
	runTable(t, []tc{
		ok("sizes", mem(func(m *nriv1beta1.LinuxMemory) {
			m.Limit, m.Reservation, m.Swap = i64(1<<30), i64(1<<29), i64(2<<30)
			m.DisableOomKiller, m.UseHierarchy = wrapperspb.Bool(true), wrapperspb.Bool(false)
		})),
		ok("unlimited and unset", mem(func(m *nriv1beta1.LinuxMemory) { m.Limit, m.Reservation, m.Swap = i64(-1), i64(0), i64(-1) })),
		ok("kernel unchecked", mem(func(m *nriv1beta1.LinuxMemory) { m.Kernel, m.KernelTcp = i64(-12345), i64(-2) })),
		bad("limit", mem(func(m *nriv1beta1.LinuxMemory) { m.Limit = i64(-12345) }), f+"limit", "neither -1 (unlimited) nor a size"),
		bad("limit -2", mem(func(m *nriv1beta1.LinuxMemory) { m.Limit = i64(-2) }), f+"limit", "-2 is neither"),
		bad("reservation", mem(func(m *nriv1beta1.LinuxMemory) { m.Reservation = i64(-2) }), f+"reservation", "neither -1"),
		bad("swap", mem(func(m *nriv1beta1.LinuxMemory) { m.Swap = i64(math.MinInt64) }), f+"swap", "neither -1"),
		ok("swappiness 0", mem(func(m *nriv1beta1.LinuxMemory) { m.Swappiness = u64(0) })),
		ok("swappiness 100", mem(func(m *nriv1beta1.LinuxMemory) { m.Swappiness = u64(100) })),
		ok("swappiness -1 unset", mem(func(m *nriv1beta1.LinuxMemory) { m.Swappiness = u64(math.MaxUint64) })),
		bad("swappiness 101", mem(func(m *nriv1beta1.LinuxMemory) { m.Swappiness = u64(101) }), f+"swappiness", "outside 0..100"),
	})
}

func TestCPU(t *testing.T) {
	const f = "adjust.linux.resources.cpu."
	q := func(v int64) *nriv1beta1.CreateContainerResponse {
		return cpu(func(c *nriv1beta1.LinuxCPU) { c.Quota = i64(v) })
	}
	p := func(v uint64) *nriv1beta1.CreateContainerResponse {
		return cpu(func(c *nriv1beta1.LinuxCPU) { c.Period = u64(v) })
	}
	cpus := func(s string) *nriv1beta1.CreateContainerResponse {
		return cpu(func(c *nriv1beta1.LinuxCPU) { c.Cpus = s })
	}
	const maxRT = math.MaxUint64 / 1000
	runTable(t, []tc{
		ok("kubelet", cpu(func(c *nriv1beta1.LinuxCPU) {
			c.Shares, c.Quota, c.Period, c.Cpus, c.Mems = u64(512), i64(100000), u64(100000), "0-3,6", "0"
		})),
		ok("shares unchecked", cpu(func(c *nriv1beta1.LinuxCPU) { c.Shares = u64(math.MaxUint64) })),
		ok("quota unlimited", q(-1)),
		ok("quota any negative", q(-5)),
		ok("quota unset", q(0)),
		ok("quota 1 ms", q(1000)),
		ok("quota MAX_BW", q(1<<44-1)),
		bad("quota 999", q(999), f+"quota", "outside 1000..17592186044415"),
		bad("quota above MAX_BW", q(1<<44), f+"quota", "MAX_BW"),
		ok("period unset", p(0)),
		ok("period 1 ms", p(1000)),
		ok("period 1 s", p(1000000)),
		bad("period 999", p(999), f+"period", "outside 1000..1000000"),
		bad("period 1000001", p(1000001), f+"period", "1 ms to 1 s"),
		ok("realtime", cpu(func(c *nriv1beta1.LinuxCPU) { c.RealtimeRuntime, c.RealtimePeriod = i64(950000), u64(1000000) })),
		ok("realtime unlimited", cpu(func(c *nriv1beta1.LinuxCPU) { c.RealtimeRuntime = i64(-1) })),
		ok("realtime bounds", cpu(func(c *nriv1beta1.LinuxCPU) { c.RealtimeRuntime, c.RealtimePeriod = i64(maxRT), u64(maxRT) })),
		bad("realtime runtime overflow", cpu(func(c *nriv1beta1.LinuxCPU) { c.RealtimeRuntime = i64(maxRT + 1) }), f+"realtime_runtime", "overflows"),
		bad("realtime period overflow", cpu(func(c *nriv1beta1.LinuxCPU) { c.RealtimePeriod = u64(maxRT + 1) }), f+"realtime_period", "overflows"),
		ok("cpus list", cpus("0-3,5,7-9")),
		ok("cpus single", cpus("0")),
		ok("cpus stride", cpus("0-15:2/4")),
		ok("cpus N and all", cpus("0-N,all")),
		ok("cpus separators", cpus(",0, 1\n")),
		ok("cpus max number", cpus("4294967295")),
		bad("cpus reversed", cpus("3-1"), f+"cpus", "not a cpuset list"),
		bad("cpus letters", cpus("a"), f+"cpus", "not a cpuset list"),
		bad("cpus negative", cpus("-1"), f+"cpus", "not a cpuset list"),
		bad("cpus open range", cpus("1-"), f+"cpus", "not a cpuset list"),
		bad("cpus open range from 0", cpus("0-"), f+"cpus", "not a cpuset list"),
		bad("cpus stride without used", cpus("0-3:/2"), f+"cpus", "not a cpuset list"),
		bad("cpus double dash", cpus("0--1"), f+"cpus", "not a cpuset list"),
		bad("cpus group 0", cpus("0-3:1/0"), f+"cpus", "not a cpuset list"),
		bad("cpus used above group", cpus("0-3:3/2"), f+"cpus", "not a cpuset list"),
		bad("cpus stride without group", cpus("0-3:1"), f+"cpus", "not a cpuset list"),
		bad("cpus too big", cpus("4294967296"), f+"cpus", "not a cpuset list"),
		bad("cpus trailing junk", cpus("0-3x"), f+"cpus", "not a cpuset list"),
		bad("mems", cpu(func(c *nriv1beta1.LinuxCPU) { c.Mems = "0;1" }), f+"mems", "not a cpuset list"),
	})
}

func TestHugepages(t *testing.T) {
	h := func(sizes ...string) *nriv1beta1.CreateContainerResponse {
		return res(func(r *nriv1beta1.LinuxResources) {
			for _, s := range sizes {
				r.HugepageLimits = append(r.HugepageLimits, &nriv1beta1.HugepageLimit{PageSize: s, Limit: 1 << 30})
			}
		})
	}
	const f = "adjust.linux.resources.hugepage_limits[0].page_size"
	runTable(t, []tc{
		ok("sizes", h("2MB", "1GB", "64KB", "16GB", "512MB", "32MB", "1TB")),
		bad("lower case", h("2mb"), f, "not a huge page size"),
		bad("no unit", h("2097152"), f, "not a huge page size"),
		bad("leading zero", h("02MB"), f, "not a huge page size"),
		bad("empty", h(""), f, "not a huge page size"),
		bad("path", h("../../x/2MB"), f, "not a huge page size"),
		bad("bytes unit", h("2B"), f, "not a huge page size"),
		bad("second", h("2MB", "1 GB"), "adjust.linux.resources.hugepage_limits[1].page_size", "not a huge page size"),
	})
}

func TestClasses(t *testing.T) {
	c := func(blockio, rdt *wrapperspb.StringValue) *nriv1beta1.CreateContainerResponse {
		return res(func(r *nriv1beta1.LinuxResources) { r.BlockioClass, r.RdtClass = blockio, rdt })
	}
	const f = "adjust.linux.resources."
	runTable(t, []tc{
		ok("names", c(wrapperspb.String("high-prio"), wrapperspb.String("gold"))),
		ok("goresctrl root class", c(nil, wrapperspb.String("system/default"))),
		ok("empty", c(wrapperspb.String(""), wrapperspb.String(""))),
		ok("at NAME_MAX", c(wrapperspb.String(long(check.MaxNameLen)), wrapperspb.String(long(check.MaxNameLen)))),
		bad("blockio NUL", c(wrapperspb.String("a\x00"), nil), f+"blockio_class", "NUL"),
		bad("blockio over NAME_MAX", c(wrapperspb.String(long(check.MaxNameLen+1)), nil), f+"blockio_class", "NAME_MAX"),
		bad("rdt dotdot", c(nil, wrapperspb.String("..")), f+"rdt_class", "not an RDT class name"),
		bad("rdt NUL", c(nil, wrapperspb.String("\x00")), f+"rdt_class", "NUL"),
		bad("rdt over NAME_MAX", c(nil, wrapperspb.String(long(check.MaxNameLen+1))), f+"rdt_class", "NAME_MAX"),
	})
}

func TestUnified(t *testing.T) {
	const f = "adjust.linux.resources.unified"
	runTable(t, []tc{
		ok("files", unified("memory.high", "max", "io.max", "8:0 rbps=1048576\n8:16 wbps=1048576", "cgroup.freeze", "0", "io.bfq.weight", "100")),
		bad("slash", unified("memory/../../x.max", "1"), f+`["memory/../../x.max"]`, `holds "/"`),
		bad("no controller", unified("max", "1"), f+`["max"]`, "<controller>.<file>"),
		bad("leading dot", unified(".max", "1"), f+`[".max"]`, "<controller>.<file>"),
		bad("trailing dot", unified("memory.", "1"), f+`["memory."]`, "<controller>.<file>"),
		bad("dotdot", unified("..", "1"), f+`[".."]`, "<controller>.<file>"),
		bad("empty", unified("", "1"), f+`[""]`, "<controller>.<file>"),
		bad("key NUL", unified("memory.max\x00", "1"), f+`["memory.max\x00"]`, "NUL"),
		bad("value NUL", unified("memory.max", "1\x00"), f+`["memory.max"]`, "NUL"),
		bad("key over NAME_MAX", unified("a."+long(check.MaxNameLen), "1"), f+`["a.`+long(62)+`"... (257 bytes)]`, "NAME_MAX"),
	})
}

func TestDeviceRules(t *testing.T) {
	const f = "adjust.linux.resources.devices[0]."
	runTable(t, []tc{
		ok("char rule", rule("c", i64(10), i64(229), "rwm")),
		ok("all", rule("a", nil, nil, "rwm")),
		ok("empty type", rule("", nil, nil, "r")),
		ok("block", rule("b", i64(8), nil, "mr")),
		ok("runc wildcard", rule("c", i64(-1), i64(-1), "rw")),
		ok("max", rule("c", i64(math.MaxUint32), i64(0), "w")),
		bad("type p", rule("p", nil, nil, "rwm"), f+"type", "not a device cgroup type"),
		bad("type u", rule("u", nil, nil, "rwm"), f+"type", "a, c or b"),
		bad("major -2", rule("c", i64(-2), nil, "r"), f+"major", "outside -1..4294967295"),
		bad("minor -2", rule("c", nil, i64(-2), "r"), f+"minor", "outside -1..4294967295"),
		bad("major too big", rule("c", i64(math.MaxUint32+1), nil, "r"), f+"major", "outside -1..4294967295"),
		bad("empty access", rule("c", nil, nil, ""), f+"access", "must not be empty"),
		bad("bad access", rule("c", nil, nil, "rwx"), f+"access", "other than r, w and m"),
	})
}

func TestPids(t *testing.T) {
	runTable(t, []tc{
		ok("any limit", res(func(r *nriv1beta1.LinuxResources) { r.Pids = &nriv1beta1.LinuxPids{Limit: -5} })),
		ok("zero", res(func(r *nriv1beta1.LinuxResources) { r.Pids = &nriv1beta1.LinuxPids{} })),
	})
}

func TestUpdatesAndEvictions(t *testing.T) {
	id := "0123456789abcdef"
	lim := func(v int64) func(r *nriv1beta1.LinuxResources) {
		return func(r *nriv1beta1.LinuxResources) { r.Memory = &nriv1beta1.LinuxMemory{Limit: i64(v)} }
	}
	create := func(us []*nriv1beta1.ContainerUpdate, es ...*nriv1beta1.ContainerEviction) *nriv1beta1.CreateContainerResponse {
		return &nriv1beta1.CreateContainerResponse{Update: us, Evict: es}
	}
	us := func(u ...*nriv1beta1.ContainerUpdate) []*nriv1beta1.ContainerUpdate { return u }
	runTable(t, []tc{
		ok("update", create(us(update(id, lim(1<<30)), update("ctr-1.a_b", nil)))),
		ok("id at bound", create(us(update(long(check.MaxContainerIDLen), nil)))),
		bad("id too long", create(us(update(long(check.MaxContainerIDLen+1), nil))), "update[0].container_id", "longer than 256"),
		bad("empty id", create(us(update(id, nil), update("", nil))), "update[1].container_id", "must not be empty"),
		bad("id with space", create(us(update("a b", nil))), "update[0].container_id", "not printable ASCII"),
		bad("id with NUL", create(us(update("a\x00", nil))), "update[0].container_id", "not printable ASCII"),
		bad("id non-ASCII", create(us(update("é", nil))), "update[0].container_id", "not printable ASCII"),
		bad("memory limit", create(us(update(id, lim(-12345)))), "update[0].linux.resources.memory.limit", "-12345 is neither"),
		bad("update without linux", create(us(&nriv1beta1.ContainerUpdate{})), "update[0].container_id", "must not be empty"),
		ok("evict", create(nil, evict(id, "out of memory"), evict(id, long(check.MaxReasonLen)))),
		bad("evict empty id", create(nil, evict(id, ""), evict("", "x")), "evict[1].container_id", "must not be empty"),
		bad("evict reason too long", create(nil, evict(id, long(check.MaxReasonLen+1))), "evict[0].reason", "longer than 4096"),
		bad("update before evict", create(us(update("", nil)), evict("", "")), "update[0].container_id", "must not be empty"),
		bad("adjust before update", &nriv1beta1.CreateContainerResponse{
			Adjust: &nriv1beta1.ContainerAdjustment{Args: []string{""}},
			Update: us(update("", nil)),
		}, "adjust.args", "at least one argument"),
		bad("update response", &nriv1beta1.UpdateContainerResponse{Update: us(update(id, lim(-2)))}, "update[0].linux.resources.memory.limit", "neither"),
		bad("update response evict", &nriv1beta1.UpdateContainerResponse{Evict: []*nriv1beta1.ContainerEviction{evict("", "")}}, "evict[0].container_id", "empty"),
		bad("stop response", &nriv1beta1.StopContainerResponse{Update: us(update(id, func(r *nriv1beta1.LinuxResources) { r.Unified = map[string]string{"x": ""} }))}, `update[0].linux.resources.unified["x"]`, "<controller>.<file>"),
		bad("stop response evict", &nriv1beta1.StopContainerResponse{Evict: []*nriv1beta1.ContainerEviction{evict(" ", "")}}, "evict[0].container_id", "printable"),
		bad("synchronize response", &nriv1beta1.SynchronizeResponse{Update: us(update(id, lim(-3)))}, "update[0].linux.resources.memory.limit", "neither"),
		bad("synchronize response evict", &nriv1beta1.SynchronizeResponse{Evict: []*nriv1beta1.ContainerEviction{evict("", "")}}, "evict[0].container_id", "empty"),
		bad("update containers", &nriv1beta1.UpdateContainersRequest{Update: us(update(id, lim(-4)))}, "update[0].linux.resources.memory.limit", "neither"),
		bad("update containers evict", &nriv1beta1.UpdateContainersRequest{Evict: []*nriv1beta1.ContainerEviction{evict("", "")}}, "evict[0].container_id", "empty"),
		ok("other message", &nriv1beta1.ConfigureResponse{}),
		ok("nil response parts", &nriv1beta1.CreateContainerResponse{}),
		ok("nil elements", &nriv1beta1.UpdateContainersRequest{Update: us(nil), Evict: []*nriv1beta1.ContainerEviction{nil}}),
	})
}

// TestBounds covers the length bound of every string not covered above:
// accepted at the bound, refused one byte over.
func TestBounds(t *testing.T) {
	abs := func(n int) string { return "/" + long(n-1) }
	mnt := func(src string, opt string) *nriv1beta1.CreateContainerResponse {
		return adj(mounts(&nriv1beta1.Mount{Destination: "/m", Type: "bind", Source: src, Options: []string{opt}}))
	}
	hook := func(path, arg, env string) *nriv1beta1.CreateContainerResponse {
		return adj(poststop(&nriv1beta1.Hook{Path: path, Args: []string{arg}, Env: []string{env}}))
	}
	sc := func(listener, meta, name string) *nriv1beta1.CreateContainerResponse {
		return seccomp(&nriv1beta1.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO", ListenerPath: listener, ListenerMetadata: meta,
			Syscalls: []*nriv1beta1.LinuxSyscall{{Names: []string{name}, Action: "SCMP_ACT_ALLOW"}}})
	}
	schemata := func(line string) *nriv1beta1.CreateContainerResponse {
		return rdt(&nriv1beta1.LinuxRdt{Schemata: &nriv1beta1.OptionalRepeatedString{Value: []string{line}}})
	}
	list := func(cpus, nodes string) *nriv1beta1.CreateContainerResponse {
		r := cpu(func(c *nriv1beta1.LinuxCPU) { c.Cpus = cpus })
		r.Adjust.Linux.MemoryPolicy = &nriv1beta1.LinuxMemoryPolicy{Mode: nriv1beta1.MpolMode_MPOL_MODE_PREFERRED, Nodes: nodes}
		return r
	}
	// Lists of the longest length that are still lists.
	cpuList := "0" + strings.Repeat(",0", (check.MaxKeyLen-1)/2)
	runTable(t, []tc{
		ok("mount source and option", mnt(abs(check.MaxPathLen), long(check.MaxKeyLen))),
		bad("mount source over bound", mnt(abs(check.MaxPathLen+1), ""), "adjust.mounts[0].source", "PATH_MAX"),
		bad("mount option over bound", mnt("/s", long(check.MaxKeyLen+1)), "adjust.mounts[0].options[0]", "MaxKeyLen"),
		ok("env name", adj(env(long(check.MaxArgLen-1), ""))),
		bad("env name over bound", adj(env(long(check.MaxArgLen+1), "")), "adjust.env[0].key", "MAX_ARG_STRLEN"),
		ok("hook", hook(abs(check.MaxPathLen), long(check.MaxArgLen), long(check.MaxArgLen))),
		bad("hook path over bound", hook(abs(check.MaxPathLen+1), "", ""), "adjust.hooks.poststop[0].path", "PATH_MAX"),
		bad("hook arg over bound", hook("/h", long(check.MaxArgLen+1), ""), "adjust.hooks.poststop[0].args[0]", "MAX_ARG_STRLEN"),
		bad("hook env over bound", hook("/h", "", long(check.MaxArgLen+1)), "adjust.hooks.poststop[0].env[0]", "MAX_ARG_STRLEN"),
		ok("cdi", adj(cdi("v/c="+long(check.MaxKeyLen-4)))),
		bad("cdi over bound", adj(cdi("v/c="+long(check.MaxKeyLen-3))), "adjust.cdi_devices[0].name", "MaxKeyLen"),
		ok("device path", devices(dev(abs(check.MaxPathLen), "c", 1, 3))),
		bad("device path over bound", devices(dev(abs(check.MaxPathLen+1), "c", 1, 3)), "adjust.linux.devices[0].path", "PATH_MAX"),
		ok("seccomp", sc(abs(check.MaxPathLen), long(check.MaxValueLen), long(check.MaxNameLen))),
		bad("listener path over bound", sc(abs(check.MaxPathLen+1), "", "x"), "adjust.linux.seccomp_policy.listener_path", "PATH_MAX"),
		bad("listener metadata over bound", sc("", long(check.MaxValueLen+1), "x"), "adjust.linux.seccomp_policy.listener_metadata", "MaxValueLen"),
		bad("syscall name over bound", sc("", "", long(check.MaxNameLen+1)), "adjust.linux.seccomp_policy.syscalls[0].names[0]", "NAME_MAX"),
		ok("namespace path", namespaces(ns("network", abs(check.MaxPathLen)))),
		bad("namespace path over bound", namespaces(ns("network", abs(check.MaxPathLen+1))), "adjust.linux.namespaces[0].path", "PATH_MAX"),
		ok("sysctl key", sysctls(long(check.MaxKeyLen), "")),
		bad("sysctl key over bound", sysctls(long(check.MaxKeyLen+1), ""), `adjust.linux.sysctl["`+long(64)+`"... (4097 bytes)]`, "MaxKeyLen"),
		ok("schemata line", schemata(long(check.MaxValueLen))),
		bad("schemata line over bound", schemata(long(check.MaxValueLen+1)), "adjust.linux.rdt.schemata.value[0]", "MaxValueLen"),
		ok("lists", list(cpuList, "1"+strings.Repeat(" ", check.MaxKeyLen-1))),
		bad("cpus over bound", list(cpuList+",0", ""), "adjust.linux.resources.cpu.cpus", "MaxKeyLen"),
		bad("nodes over bound", list("0", "1"+strings.Repeat(" ", check.MaxKeyLen)), "adjust.linux.memory_policy.nodes", "MaxKeyLen"),
		ok("unified value", unified("memory.high", long(check.MaxValueLen))),
		bad("unified value over bound", unified("memory.high", long(check.MaxValueLen+1)), `adjust.linux.resources.unified["memory.high"]`, "MaxValueLen"),
		ok("access", rule("c", nil, nil, strings.Repeat("r", check.MaxKeyLen))),
		bad("access over bound", rule("c", nil, nil, strings.Repeat("r", check.MaxKeyLen+1)), "adjust.linux.resources.devices[0].access", "MaxKeyLen"),
	})
}
