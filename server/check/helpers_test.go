package check_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/check"
)

// tc is one case of a rules table: msg is checked with check.Response;
// field "" means msg must pass, otherwise the error's Field must be field
// exactly and its Rule must contain rule.
type tc struct {
	name  string
	msg   proto.Message
	field string
	rule  string
}

// ok and bad build table cases.
func ok(name string, msg proto.Message) tc { return tc{name: name, msg: msg} }
func bad(name string, msg proto.Message, field, rule string) tc {
	return tc{name: name, msg: msg, field: field, rule: rule}
}

func runTable(t *testing.T, cases []tc) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			expect(t, check.Response(c.msg), c.field, c.rule)
		})
	}
}

// expect asserts that err is nil (field "") or a *check.Error on field
// whose rule contains rule.
func expect(t *testing.T, err error, field, rule string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted; want %s: ...%s...", field, rule)
	}
	var ce *check.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %T %v is not a *check.Error", err, err)
	}
	if ce.Field != field {
		t.Errorf("Field = %q, want %q (rule: %s)", ce.Field, field, ce.Rule)
	}
	if !strings.Contains(ce.Rule, rule) {
		t.Errorf("Rule = %q, want it to mention %q", ce.Rule, rule)
	}
	if ce.Error() != ce.Field+": "+ce.Rule {
		t.Errorf("Error() = %q, want Field: Rule", ce.Error())
	}
	if len(ce.Error()) > 1024 {
		t.Errorf("error message is %d bytes: bad input must not be echoed whole", len(ce.Error()))
	}
}

// adj builds a CreateContainer response from adjustment setters.
func adj(fs ...func(a *nriv1beta1.ContainerAdjustment)) *nriv1beta1.CreateContainerResponse {
	a := &nriv1beta1.ContainerAdjustment{}
	for _, f := range fs {
		f(a)
	}
	return &nriv1beta1.CreateContainerResponse{Adjust: a}
}

// lin builds a response from setters of the Linux part.
func lin(f func(l *nriv1beta1.LinuxContainerAdjustment)) *nriv1beta1.CreateContainerResponse {
	l := &nriv1beta1.LinuxContainerAdjustment{}
	f(l)
	return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Linux: l}}
}

// res builds a response from setters of the adjustment's resources.
func res(f func(r *nriv1beta1.LinuxResources)) *nriv1beta1.CreateContainerResponse {
	return lin(func(l *nriv1beta1.LinuxContainerAdjustment) {
		l.Resources = &nriv1beta1.LinuxResources{}
		f(l.Resources)
	})
}

func mem(f func(m *nriv1beta1.LinuxMemory)) *nriv1beta1.CreateContainerResponse {
	return res(func(r *nriv1beta1.LinuxResources) { r.Memory = &nriv1beta1.LinuxMemory{}; f(r.Memory) })
}

func cpu(f func(c *nriv1beta1.LinuxCPU)) *nriv1beta1.CreateContainerResponse {
	return res(func(r *nriv1beta1.LinuxResources) { r.Cpu = &nriv1beta1.LinuxCPU{}; f(r.Cpu) })
}

func annotations(kv ...string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		a.Annotations = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			a.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func mounts(ms ...*nriv1beta1.Mount) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) { a.Mounts = ms }
}

func env(kv ...string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		for i := 0; i < len(kv); i += 2 {
			a.Env = append(a.Env, &nriv1beta1.KeyValue{Key: kv[i], Value: kv[i+1]})
		}
	}
}

func poststop(hs ...*nriv1beta1.Hook) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) { a.Hooks = &nriv1beta1.Hooks{Poststop: hs} }
}

func rlimits(ls ...*nriv1beta1.POSIXRlimit) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) { a.Rlimits = ls }
}

func rl(t string, hard, soft uint64) *nriv1beta1.POSIXRlimit {
	return &nriv1beta1.POSIXRlimit{Type: t, Hard: hard, Soft: soft}
}

func cdi(names ...string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) {
		for _, n := range names {
			a.CdiDevices = append(a.CdiDevices, &nriv1beta1.CDIDevice{Name: n})
		}
	}
}

func args(as ...string) func(a *nriv1beta1.ContainerAdjustment) {
	return func(a *nriv1beta1.ContainerAdjustment) { a.Args = as }
}

func devices(ds ...*nriv1beta1.LinuxDevice) *nriv1beta1.CreateContainerResponse {
	return lin(func(l *nriv1beta1.LinuxContainerAdjustment) { l.Devices = ds })
}

func dev(path, typ string, major, minor int64) *nriv1beta1.LinuxDevice {
	return &nriv1beta1.LinuxDevice{Path: path, Type: typ, Major: major, Minor: minor}
}

func devMode(typ string, mode uint32) *nriv1beta1.LinuxDevice {
	d := dev("/dev/x", typ, 1, 3)
	if typ == "p" {
		d.Major, d.Minor = 0, 0
	}
	d.FileMode = wrapperspb.UInt32(mode)
	return d
}

func sysctls(kv ...string) *nriv1beta1.CreateContainerResponse {
	return lin(func(l *nriv1beta1.LinuxContainerAdjustment) {
		l.Sysctl = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			l.Sysctl[kv[i]] = kv[i+1]
		}
	})
}

func netDevs(kv ...string) *nriv1beta1.CreateContainerResponse {
	return lin(func(l *nriv1beta1.LinuxContainerAdjustment) {
		l.NetDevices = map[string]*nriv1beta1.LinuxNetDevice{}
		for i := 0; i < len(kv); i += 2 {
			l.NetDevices[kv[i]] = &nriv1beta1.LinuxNetDevice{Name: kv[i+1]}
		}
	})
}

func unified(kv ...string) *nriv1beta1.CreateContainerResponse {
	return res(func(r *nriv1beta1.LinuxResources) {
		r.Unified = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			r.Unified[kv[i]] = kv[i+1]
		}
	})
}

func rule(typ string, major, minor *wrapperspb.Int64Value, access string) *nriv1beta1.CreateContainerResponse {
	return res(func(r *nriv1beta1.LinuxResources) {
		r.Devices = []*nriv1beta1.LinuxDeviceCgroup{{Allow: true, Type: typ, Major: major, Minor: minor, Access: access}}
	})
}

func namespaces(ns ...*nriv1beta1.LinuxNamespace) *nriv1beta1.CreateContainerResponse {
	return lin(func(l *nriv1beta1.LinuxContainerAdjustment) { l.Namespaces = ns })
}

func ns(typ, path string) *nriv1beta1.LinuxNamespace {
	return &nriv1beta1.LinuxNamespace{Type: typ, Path: path}
}

func seccomp(s *nriv1beta1.LinuxSeccomp) *nriv1beta1.CreateContainerResponse {
	return lin(func(l *nriv1beta1.LinuxContainerAdjustment) { l.SeccompPolicy = s })
}

func syscalls(action string, names []string, as ...*nriv1beta1.LinuxSeccompArg) *nriv1beta1.CreateContainerResponse {
	return seccomp(&nriv1beta1.LinuxSeccomp{
		DefaultAction: "SCMP_ACT_ERRNO",
		Syscalls:      []*nriv1beta1.LinuxSyscall{{Names: names, Action: action, Args: as}},
	})
}

func sched(s *nriv1beta1.LinuxScheduler) *nriv1beta1.CreateContainerResponse {
	return lin(func(l *nriv1beta1.LinuxContainerAdjustment) { l.Scheduler = s })
}

func mpol(mode nriv1beta1.MpolMode, nodes string, flags ...nriv1beta1.MpolFlag) *nriv1beta1.CreateContainerResponse {
	return lin(func(l *nriv1beta1.LinuxContainerAdjustment) {
		l.MemoryPolicy = &nriv1beta1.LinuxMemoryPolicy{Mode: mode, Nodes: nodes, Flags: flags}
	})
}

func rdt(r *nriv1beta1.LinuxRdt) *nriv1beta1.CreateContainerResponse {
	return lin(func(l *nriv1beta1.LinuxContainerAdjustment) { l.Rdt = r })
}

func update(id string, f func(r *nriv1beta1.LinuxResources)) *nriv1beta1.ContainerUpdate {
	r := &nriv1beta1.LinuxResources{}
	if f != nil {
		f(r)
	}
	return &nriv1beta1.ContainerUpdate{ContainerId: id, Linux: &nriv1beta1.LinuxContainerUpdate{Resources: r}}
}

func evict(id, reason string) *nriv1beta1.ContainerEviction {
	return &nriv1beta1.ContainerEviction{ContainerId: id, Reason: reason}
}

// long returns a string of n bytes.
func long(n int) string { return strings.Repeat("x", n) }

func i64(v int64) *wrapperspb.Int64Value   { return wrapperspb.Int64(v) }
func u64(v uint64) *wrapperspb.UInt64Value { return wrapperspb.UInt64(v) }
