package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

const dir = "/run/test/plugins"

func mustNew(t *testing.T, rules []Rule, plugins ...PluginRule) *Policy {
	t.Helper()
	p, err := New(rules, Options{Owners: []uint32{0, 4242}, PluginSocketDir: dir, Plugins: plugins,
		Groups: func(uid uint32) ([]uint32, error) {
			if uid == 1000 {
				return []uint32{1000, 27}, nil
			}
			return nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func unixID(uid uint32) server.Identity {
	return server.Identity{Name: "uid:" + itoa(uid), UID: uid, Unix: true}
}

func itoa(n uint32) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func reg(idx, name, endpoint string) *nriv1beta1.RegisterPluginRequest {
	return &nriv1beta1.RegisterPluginRequest{PluginIdx: idx, PluginName: name, Endpoint: endpoint}
}

func reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

func TestOwnersMayDoEverything(t *testing.T) {
	p := mustNew(t, nil)
	ctx := context.Background()
	for _, id := range []server.Identity{unixID(0), unixID(4242)} {
		if err := p.AuthorizeRegistration(ctx, id, reg("99", "anything", "unix://"+dir+"/x.sock")); err != nil {
			t.Errorf("%s: %v", id.Name, err)
		}
		if err := p.AuthorizeSubscription(id.Name, "99-anything", allEvents); err != nil {
			t.Errorf("%s: %v", id.Name, err)
		}
		if err := p.AuthorizeResponse(id.Name, "99-anything", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nil, everything()); err != nil {
			t.Errorf("%s: %v", id.Name, err)
		}
		for _, m := range []string{"/nri.v1beta1.AdminService/ListPlugins", "/nri.v1beta1.AdaptationService/CreateContainer",
			"/nri.v1beta1.RuntimeService/RegisterPlugin"} {
			if err := p.AuthorizeCall(id, m); err != nil {
				t.Errorf("%s %s: %v", id.Name, m, err)
			}
		}
	}
}

func TestNobodyElseMayDoAnything(t *testing.T) {
	p := mustNew(t, nil)
	ctx := context.Background()
	for _, id := range []server.Identity{unixID(1000), {Name: "cert:ops"}, {Name: "token:ci"}} {
		err := p.AuthorizeRegistration(ctx, id, reg("10", "foo", "unix://"+dir+"/x.sock"))
		if status.Code(err) != codes.PermissionDenied || reason(err) != "REGISTRATION_REFUSAL_NOT_PERMITTED" {
			t.Errorf("%s: registration: %v", id.Name, err)
		}
		for _, m := range []string{"/nri.v1beta1.AdminService/ListPlugins", "/nri.v1beta1.AdaptationService/CreateContainer",
			"/nri.v1beta1.RuntimeService/RegisterPlugin", "/some.Other/Method"} {
			if err := p.AuthorizeCall(id, m); status.Code(err) != codes.PermissionDenied {
				t.Errorf("%s %s: %v", id.Name, m, err)
			}
		}
		for _, m := range []string{"/grpc.health.v1.Health/Check", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"} {
			if err := p.AuthorizeCall(id, m); err != nil {
				t.Errorf("%s %s: %v", id.Name, m, err)
			}
		}
		if p.Known(id.Name) {
			t.Errorf("%s is known", id.Name)
		}
	}
}

func TestRegistrationScope(t *testing.T) {
	p := mustNew(t, []Rule{
		{Identity: "uid:1000", Plugins: []string{"foo", "20-bar"}, Indices: []string{"10-19", "20"}},
		{Identity: "gid:27", Plugins: []string{"grp"}},
		{Identity: "cert:*", Plugins: []string{"remote"}, Endpoints: []string{"tcp"}, TCPHosts: []string{"policy.example"}},
		{Identity: "token:ci", Plugins: []string{"*"}, Endpoints: []string{"unix", "tcp"}, TCPHosts: []string{"10.0.0.0/8"}},
	})
	ctx := context.Background()
	sock := "unix://" + dir + "/p.sock"
	for _, c := range []struct {
		id             server.Identity
		idx, name, ep  string
		ok             bool
		why, wantField string
	}{
		{unixID(1000), "10", "foo", sock, true, "", ""},
		{unixID(1000), "19", "foo", sock, true, "", ""},
		{unixID(1000), "20", "foo", sock, true, "", ""},
		{unixID(1000), "21", "foo", sock, false, "REGISTRATION_REFUSAL_NOT_PERMITTED", "plugin_name"},
		{unixID(1000), "20", "bar", sock, true, "", ""},
		{unixID(1000), "10", "bar", sock, false, "REGISTRATION_REFUSAL_NOT_PERMITTED", "plugin_name"},
		{unixID(1000), "10", "grp", sock, true, "", ""}, // through gid:27
		{unixID(1001), "10", "grp", sock, false, "REGISTRATION_REFUSAL_NOT_PERMITTED", "plugin_name"},
		{unixID(1000), "10", "foo", "tcp://10.0.0.1:5000", false, "REGISTRATION_REFUSAL_INVALID_ENDPOINT", "endpoint"},
		{unixID(1000), "10", "foo", "unix:///tmp/elsewhere.sock", false, "REGISTRATION_REFUSAL_INVALID_ENDPOINT", "endpoint"},
		{unixID(1000), "10", "foo", "unix://" + dir + "/../escape.sock", false, "REGISTRATION_REFUSAL_INVALID_ENDPOINT", "endpoint"},
		{server.Identity{Name: "cert:node"}, "50", "remote", "dns:///policy.example:443", true, "", ""},
		{server.Identity{Name: "cert:node"}, "50", "remote", sock, false, "REGISTRATION_REFUSAL_INVALID_ENDPOINT", "endpoint"},
		{server.Identity{Name: "token:ci"}, "77", "whatever", sock, true, "", ""},
		{server.Identity{Name: "token:cd"}, "77", "whatever", sock, false, "REGISTRATION_REFUSAL_NOT_PERMITTED", "plugin_name"},
	} {
		err := p.AuthorizeRegistration(ctx, c.id, reg(c.idx, c.name, c.ep))
		if c.ok {
			if err != nil {
				t.Errorf("%s %s-%s %s: %v", c.id.Name, c.idx, c.name, c.ep, err)
			}
			continue
		}
		if status.Code(err) != codes.PermissionDenied || reason(err) != c.why || !strings.HasPrefix(status.Convert(err).Message(), c.wantField+":") {
			t.Errorf("%s %s-%s %s: got %v (%s), want %s on %s", c.id.Name, c.idx, c.name, c.ep, err, reason(err), c.why, c.wantField)
		}
	}
	if !p.Known("uid:1000") || !p.Known("cert:anyone") || p.Known("token:cd") {
		t.Error("Known")
	}
	if err := p.AuthorizeCall(unixID(1000), "/nri.v1beta1.RuntimeService/RegisterPlugin"); err != nil {
		t.Error(err)
	}
	if err := p.AuthorizeCall(unixID(1000), "/nri.v1beta1.AdminService/ListPlugins"); status.Code(err) != codes.PermissionDenied {
		t.Error(err)
	}
}

func TestLaunchIdentities(t *testing.T) {
	ctx := context.Background()
	sock := "unix://" + dir + "/10-foo.sock"
	launched := server.Identity{Name: "launch:10-foo", UID: 0, Unix: true}

	p := mustNew(t, nil)
	if err := p.AuthorizeRegistration(ctx, launched, reg("10", "foo", sock)); err != nil {
		t.Fatalf("a launched plugin no rule mentions: %v", err)
	}
	if err := p.AuthorizeResponse(launched.Name, "10-foo", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nil, everything()); err != nil {
		t.Errorf("default launch grants: %v", err)
	}
	if err := p.AuthorizeCall(launched, "/nri.v1beta1.AdminService/ListPlugins"); err == nil {
		t.Error("a launch identity got admin by default")
	}
	if err := p.AuthorizeRegistration(ctx, launched, reg("11", "foo", sock)); reason(err) != "REGISTRATION_REFUSAL_NOT_PERMITTED" {
		t.Errorf("another slot: %v", err)
	}
	// A stranger who created the slot's socket.
	stranger := server.Identity{Name: "launch:10-foo", UID: 1000, Unix: true}
	if err := p.AuthorizeRegistration(ctx, stranger, reg("10", "foo", sock)); reason(err) != "REGISTRATION_REFUSAL_NOT_PERMITTED" ||
		!strings.Contains(err.Error(), "launch slot") {
		t.Errorf("uid 1000 in a launch slot: %v", err)
	}

	// A rule naming the launch identity replaces the default.
	p = mustNew(t, []Rule{{Identity: "launch:10-foo", Plugins: []string{"10-foo"}, Events: []string{"create_container"}, Adjust: true}})
	if err := p.AuthorizeRegistration(ctx, launched, reg("10", "foo", sock)); err != nil {
		t.Fatal(err)
	}
	if err := p.AuthorizeResponse(launched.Name, "10-foo", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nil, everything()); err == nil {
		t.Error("the rule did not restrict the launched plugin")
	}
	if err := p.AuthorizeSubscription(launched.Name, "10-foo", allEvents); err == nil {
		t.Error("the rule did not restrict the events")
	}
	if _, err := New([]Rule{{Identity: "launch:10-foo", Plugins: []string{"bar"}}}, Options{}); err == nil {
		t.Error("a launch rule granting another plugin was accepted")
	}
}

func TestSubscription(t *testing.T) {
	p := mustNew(t, []Rule{
		{Identity: "uid:1000", Plugins: []string{"foo"}, Events: []string{"create_container", "UpdateContainer"}},
		{Identity: "uid:1000", Plugins: []string{"10-foo"}, Events: []string{"EVENT_STOP_CONTAINER"}},
	})
	want := uint32(nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_UPDATE_CONTAINER, nriv1beta1.Event_EVENT_STOP_CONTAINER))
	if err := p.AuthorizeSubscription("uid:1000", "10-foo", want); err != nil {
		t.Fatal(err)
	}
	err := p.AuthorizeSubscription("uid:1000", "20-foo", want)
	if err == nil || !strings.Contains(err.Error(), "stop_container") || strings.Contains(err.Error(), "events create_container") {
		t.Fatalf("got %v", err)
	}
}

// everything returns a CreateContainerResponse that sets every field.
func everything() *nriv1beta1.CreateContainerResponse {
	return &nriv1beta1.CreateContainerResponse{
		Adjust: &nriv1beta1.ContainerAdjustment{
			Annotations: map[string]string{"a": "b"},
			Mounts:      []*nriv1beta1.Mount{{Destination: "/m"}},
			Env:         []*nriv1beta1.KeyValue{{Key: "K", Value: "V"}},
			Hooks:       &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/bin/true"}}},
			Rlimits:     []*nriv1beta1.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1, Soft: 1}},
			CdiDevices:  []*nriv1beta1.CDIDevice{{Name: "vendor.com/dev=1"}},
			Args:        []string{"", "sh"},
			Linux: &nriv1beta1.LinuxContainerAdjustment{
				Devices:       []*nriv1beta1.LinuxDevice{{Path: "/dev/x"}},
				Resources:     &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "0"}},
				CgroupsPath:   "/x",
				OomScoreAdj:   wrapperspb.Int64(0),
				IoPriority:    &nriv1beta1.LinuxIOPriority{},
				SeccompPolicy: &nriv1beta1.LinuxSeccomp{},
				Namespaces:    []*nriv1beta1.LinuxNamespace{{Type: "network"}},
				Sysctl:        map[string]string{"net.core.somaxconn": "1024"},
				NetDevices:    map[string]*nriv1beta1.LinuxNetDevice{"eth1": {}},
				Scheduler:     &nriv1beta1.LinuxScheduler{},
				Rdt:           &nriv1beta1.LinuxRdt{},
				MemoryPolicy:  &nriv1beta1.LinuxMemoryPolicy{},
			},
		},
		Update: []*nriv1beta1.ContainerUpdate{{ContainerId: "other"}},
		Evict:  []*nriv1beta1.ContainerEviction{{ContainerId: "victim"}},
	}
}

// TestEveryAdjustmentFieldIsClassified fails when the protocol gains an
// adjustment field the policy does not know: it would need every grant.
func TestEveryAdjustmentFieldIsClassified(t *testing.T) {
	for _, m := range []proto.Message{&nriv1beta1.ContainerAdjustment{}, &nriv1beta1.LinuxContainerAdjustment{}} {
		fields := m.ProtoReflect().Descriptor().Fields()
		for i := 0; i < fields.Len(); i++ {
			if _, ok := grantOfField[fields.Get(i).FullName()]; !ok {
				t.Errorf("%s is not classified in grantOfField", fields.Get(i).FullName())
			}
		}
	}
	// And everything() really sets every field, so the next test covers all.
	check := func(m protoreflect.Message) {
		fields := m.Descriptor().Fields()
		for i := 0; i < fields.Len(); i++ {
			if !m.Has(fields.Get(i)) {
				t.Errorf("everything() does not set %s", fields.Get(i).FullName())
			}
		}
	}
	check(everything().GetAdjust().ProtoReflect())
	check(everything().GetAdjust().GetLinux().ProtoReflect())
}

func TestResponseGrants(t *testing.T) {
	// Each case: a response that sets one thing, the field the refusal names
	// and the grant it needs.
	only := func(f func(a *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment)) *nriv1beta1.CreateContainerResponse {
		a := &nriv1beta1.ContainerAdjustment{}
		l := &nriv1beta1.LinuxContainerAdjustment{}
		f(a, l)
		if proto.Size(l) > 0 || l.OomScoreAdj != nil || l.IoPriority != nil || l.SeccompPolicy != nil || l.Scheduler != nil ||
			l.Rdt != nil || l.MemoryPolicy != nil {
			a.Linux = l
		}
		return &nriv1beta1.CreateContainerResponse{Adjust: a}
	}
	full := everything()
	cases := []struct {
		rsp   *nriv1beta1.CreateContainerResponse
		field string
		grant Grant
	}{
		{only(func(a *nriv1beta1.ContainerAdjustment, _ *nriv1beta1.LinuxContainerAdjustment) {
			a.Hooks = full.Adjust.Hooks
		}), "adjust.hooks", GrantOCIHooks},
		{only(func(a *nriv1beta1.ContainerAdjustment, _ *nriv1beta1.LinuxContainerAdjustment) {
			a.Mounts = full.Adjust.Mounts
		}), "adjust.mounts", GrantMounts},
		{only(func(a *nriv1beta1.ContainerAdjustment, _ *nriv1beta1.LinuxContainerAdjustment) {
			a.CdiDevices = full.Adjust.CdiDevices
		}), "adjust.cdi_devices", GrantDevices},
		{only(func(_ *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment) {
			l.Devices = full.Adjust.Linux.Devices
		}), "adjust.linux.devices", GrantDevices},
		{only(func(_ *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment) {
			l.NetDevices = full.Adjust.Linux.NetDevices
		}), "adjust.linux.net_devices", GrantDevices},
		{only(func(_ *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment) {
			l.Namespaces = full.Adjust.Linux.Namespaces
		}), "adjust.linux.namespaces", GrantNamespaces},
		{only(func(_ *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment) {
			l.SeccompPolicy = &nriv1beta1.LinuxSeccomp{}
		}), "adjust.linux.seccomp_policy", GrantSeccomp},
		{only(func(a *nriv1beta1.ContainerAdjustment, _ *nriv1beta1.LinuxContainerAdjustment) {
			a.Env = full.Adjust.Env
		}), "adjust.env", GrantAdjust},
		{only(func(a *nriv1beta1.ContainerAdjustment, _ *nriv1beta1.LinuxContainerAdjustment) {
			a.Args = full.Adjust.Args
		}), "adjust.args", GrantArgs},
		{only(func(_ *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment) {
			l.CgroupsPath = full.Adjust.Linux.CgroupsPath
		}), "adjust.linux.cgroups_path", GrantCgroupsPath},
		{only(func(_ *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment) {
			l.OomScoreAdj = wrapperspb.Int64(0)
		}), "adjust.linux.oom_score_adj", GrantAdjust},
		{only(func(_ *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment) {
			l.Resources = full.Adjust.Linux.Resources
		}), "adjust.linux.resources", GrantAdjust},
		{only(func(_ *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment) {
			l.Sysctl = full.Adjust.Linux.Sysctl
		}), `adjust.linux.sysctl["net.core.somaxconn"]`, GrantAdjust},
		{only(func(_ *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment) {
			l.Sysctl = map[string]string{"kernel.core_pattern": "|/usr/local/bin/x"}
		}), `adjust.linux.sysctl["kernel.core_pattern"]`, GrantHostSysctls},
		{only(func(_ *nriv1beta1.ContainerAdjustment, l *nriv1beta1.LinuxContainerAdjustment) {
			l.Resources = &nriv1beta1.LinuxResources{Devices: []*nriv1beta1.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}}
		}), "adjust.linux.resources.devices", GrantDevices}, // needs adjust as well, see below
		{&nriv1beta1.CreateContainerResponse{Update: full.Update}, "update[0]", GrantUpdateOthers},
		{&nriv1beta1.CreateContainerResponse{Evict: full.Evict}, "evict[0]", GrantEvictOthers},
	}
	for _, c := range cases {
		// Without the grant: refused, naming the field and the grant.
		p := mustNew(t, []Rule{{Identity: "uid:1000", Plugins: []string{"foo"}, Events: []string{"all"},
			Adjust: c.grant != GrantAdjust, OCIHooks: true, Mounts: true, Devices: true, Namespaces: true, Seccomp: true,
			UpdateOthers: true, EvictOthers: true, HostSysctls: true, CgroupsPath: true, Args: true}})
		// Take the needed grant away.
		for _, r := range p.rules {
			r.grants &^= c.grant
		}
		err := p.AuthorizeResponse("uid:1000", "10-foo", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nil, c.rsp)
		var d *Denied
		if !errors.As(err, &d) || d.Field != c.field || d.Grant != c.grant {
			t.Errorf("%s: got %v, want a refusal of %s for lack of %s", c.field, err, c.field, c.grant)
			continue
		}
		want := c.field + `: identity "uid:1000" lacks the ` + c.grant.String() + " grant"
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("message %q, want prefix %q", err.Error(), want)
		}
		// With only that grant: allowed.
		p = mustNew(t, []Rule{{Identity: "uid:1000", Plugins: []string{"foo"}}})
		for _, r := range p.rules {
			r.grants |= c.grant
			if c.field == "adjust.linux.resources.devices" {
				r.grants |= GrantAdjust
			}
		}
		if err := p.AuthorizeResponse("uid:1000", "10-foo", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nil, c.rsp); err != nil {
			t.Errorf("%s with %s: %v", c.field, c.grant, err)
		}
	}
}

// TestSysctlGrantsPerKey: namespaced sysctls need adjust, every other one
// host_sysctls, key by key, removals ("-key") as well; the refused key
// reported is the first in sorted order.
func TestSysctlGrantsPerKey(t *testing.T) {
	rsp := func(kv ...string) *nriv1beta1.CreateContainerResponse {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
			Linux: &nriv1beta1.LinuxContainerAdjustment{Sysctl: m}}}
	}
	cases := []struct {
		name  string
		rule  Rule
		rsp   *nriv1beta1.CreateContainerResponse
		field string // "" allowed
		grant Grant
	}{
		{"namespaced with adjust", Rule{Adjust: true},
			rsp("net.ipv4.ip_forward", "1", "kernel.shmmax", "1", "fs.mqueue.msg_max", "10", "kernel.hostname", "x", "net/core/somaxconn", "9"), "", 0},
		{"host key with adjust only", Rule{Adjust: true},
			rsp("net.ipv4.ip_forward", "1", "kernel.core_pattern", "|/x"), `adjust.linux.sysctl["kernel.core_pattern"]`, GrantHostSysctls},
		{"host key removal with adjust only", Rule{Adjust: true},
			rsp("-vm.swappiness", ""), `adjust.linux.sysctl["-vm.swappiness"]`, GrantHostSysctls},
		{"first refused key in sorted order", Rule{Adjust: true},
			rsp("vm.overcommit_memory", "1", "kernel.core_pattern", "|/x", "kernel.shmmax", "1"), `adjust.linux.sysctl["kernel.core_pattern"]`, GrantHostSysctls},
		{"host keys with host_sysctls", Rule{HostSysctls: true},
			rsp("kernel.core_pattern", "core", "vm.swappiness", "10"), "", 0},
		{"namespaced key with host_sysctls only", Rule{HostSysctls: true},
			rsp("kernel.core_pattern", "core", "net.core.somaxconn", "1024"), `adjust.linux.sysctl["net.core.somaxconn"]`, GrantAdjust},
		{"both grants", Rule{Adjust: true, HostSysctls: true},
			rsp("kernel.core_pattern", "core", "net.core.somaxconn", "1024"), "", 0},
	}
	for _, c := range cases {
		c.rule.Identity, c.rule.Plugins = "uid:1000", []string{"foo"}
		p := mustNew(t, []Rule{c.rule})
		err := p.AuthorizeResponse("uid:1000", "10-foo", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nil, c.rsp)
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var d *Denied
		if !errors.As(err, &d) || d.Field != c.field || d.Grant != c.grant {
			t.Errorf("%s: got %v, want a refusal of %s for lack of %s", c.name, err, c.field, c.grant)
		}
	}
}

func TestResponseExactMessage(t *testing.T) {
	p := mustNew(t, []Rule{{Identity: "uid:1000", Plugins: []string{"foo"}, Adjust: true}})
	rsp := &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
		Env:   []*nriv1beta1.KeyValue{{Key: "K", Value: "V"}},
		Hooks: &nriv1beta1.Hooks{Poststop: []*nriv1beta1.Hook{{Path: "/bin/true"}}},
	}}
	err := p.AuthorizeResponse("uid:1000", "10-foo", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nil, rsp)
	if err == nil || err.Error() != `adjust.hooks: identity "uid:1000" lacks the oci_hooks grant` {
		t.Fatalf("got %v", err)
	}
	// Empty container messages change nothing and need nothing.
	empty := &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
		Hooks: &nriv1beta1.Hooks{}, Linux: &nriv1beta1.LinuxContainerAdjustment{Resources: &nriv1beta1.LinuxResources{}},
	}}
	p = mustNew(t, []Rule{{Identity: "uid:1000", Plugins: []string{"foo"}}})
	if err := p.AuthorizeResponse("uid:1000", "10-foo", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nil, empty); err != nil {
		t.Fatal(err)
	}
	// Updates anywhere need update_others, evictions evict_others.
	for _, r := range []proto.Message{
		&nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{{ContainerId: "c"}}},
		&nriv1beta1.StopContainerResponse{Update: []*nriv1beta1.ContainerUpdate{{ContainerId: "c"}}},
		&nriv1beta1.SynchronizeResponse{Update: []*nriv1beta1.ContainerUpdate{{ContainerId: "c"}}},
		&nriv1beta1.UpdateContainersRequest{Update: []*nriv1beta1.ContainerUpdate{{ContainerId: "c"}}},
	} {
		err := p.AuthorizeResponse("uid:1000", "10-foo", nriv1beta1.Event_EVENT_UPDATE_CONTAINER, nil, r)
		if err == nil || !strings.HasPrefix(err.Error(), `update[0]: identity "uid:1000" lacks the update_others grant`) {
			t.Errorf("%T: %v", r, err)
		}
	}
	err = p.AuthorizeUpdates("uid:1000", "10-foo", nil, []*nriv1beta1.ContainerEviction{{ContainerId: "v"}})
	if err == nil || !strings.HasPrefix(err.Error(), `evict[0]: identity "uid:1000" lacks the evict_others grant`) {
		t.Errorf("evictions: %v", err)
	}
}

func TestPluginPolicy(t *testing.T) {
	yes, no := true, false
	p := mustNew(t, []Rule{
		{Identity: "uid:1000", Plugins: []string{"foo", "bar", "baz"}, MaxTimeout: "3s"},
		{Identity: "uid:1001", Plugins: []string{"foo"}, MayFail: true},
	},
		PluginRule{Name: "foo", KeepConnected: &yes, MaxTimeout: "5s"},
		PluginRule{Name: "10-foo", Required: &yes, MaxTimeout: "1s"},
		PluginRule{Name: "bar", Required: &no},
	)
	check := func(identity, full string, required, keep *bool, max time.Duration) {
		t.Helper()
		got := p.PluginPolicy(identity, full)
		if got == nil {
			got = &server.PluginPolicy{}
		}
		eq := func(a, b *bool) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
		if !eq(got.Required, required) || !eq(got.KeepConnected, keep) || got.MaxTimeout != max {
			t.Errorf("%s %s: got required=%v keep=%v max=%v", identity, full, ptr(got.Required), ptr(got.KeepConnected), got.MaxTimeout)
		}
	}
	check("uid:1000", "10-foo", &yes, nil, time.Second) // the NN-name entry wins; the operator may require
	check("uid:1000", "20-foo", &no, &yes, 3*time.Second)
	check("uid:1001", "20-foo", nil, &yes, 5*time.Second) // may_fail: the plugin's choice
	check("uid:1000", "20-bar", &no, nil, 3*time.Second)
	check("uid:0", "20-baz", nil, nil, 0)
	if got := p.RequiredPlugins(); len(got) != 1 || got[0] != "10-foo" {
		t.Errorf("required %v", got)
	}
}

func ptr(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

func TestRuleErrors(t *testing.T) {
	for _, c := range []struct {
		rules   []Rule
		plugins []PluginRule
		key     string
	}{
		{[]Rule{{}}, nil, "policy[0].identity"},
		{[]Rule{{Identity: "uid:x"}}, nil, "policy[0].identity"},
		{[]Rule{{Identity: "pid:1"}}, nil, "policy[0].identity"},
		{[]Rule{{Identity: "uid:1"}, {Identity: "uid:2", Plugins: []string{"ok", "bad name"}}}, nil, "policy[1].plugins[1]"},
		{[]Rule{{Identity: "uid:1", Plugins: []string{"a"}, Indices: []string{"5"}}}, nil, "policy[0].indices[0]"},
		{[]Rule{{Identity: "uid:1", Plugins: []string{"a"}, Indices: []string{"20-10"}}}, nil, "policy[0].indices[0]"},
		{[]Rule{{Identity: "uid:1", Events: []string{"all", "create_pod"}}}, nil, "policy[0].events[1]"},
		{[]Rule{{Identity: "uid:1", MaxTimeout: "soon"}}, nil, "policy[0].max_timeout"},
		{[]Rule{{Identity: "uid:1", Endpoints: []string{"vsock"}}}, nil, "policy[0].endpoints[0]"},
		{[]Rule{{Identity: "uid:1", Indices: []string{"10"}}}, nil, "policy[0].indices"},
		{nil, []PluginRule{{Name: "10-a"}, {Name: "10-a"}}, "plugin[1].name"},
		{nil, []PluginRule{{Name: "*"}}, "plugin[0].name"},
		{nil, []PluginRule{{Name: "a", MaxTimeout: "-1s"}}, "plugin[0].max_timeout"},
		{nil, []PluginRule{{Name: "a", Selectors: []SelectorRule{{}, {PodLabels: "app in ()"}}}}, "plugin[0].selectors[1].pod_labels"},
		{nil, []PluginRule{{Name: "a", Selectors: []SelectorRule{{Namespaces: []string{"\xff"}}}}}, "plugin[0].selectors[0].namespaces[0]"},
	} {
		_, err := New(c.rules, Options{Plugins: c.plugins})
		var re *RuleError
		if !errors.As(err, &re) || re.Key != c.key {
			t.Errorf("%+v %+v: got %v, want an error on %s", c.rules, c.plugins, err, c.key)
		}
	}
}

// TestPluginSelectors: [[plugin]] selectors reach the server's plugin
// policy, and those of "NN-name" entries are remembered for absent plugins.
func TestPluginSelectors(t *testing.T) {
	p := mustNew(t, nil,
		PluginRule{Name: "10-sys", Selectors: []SelectorRule{{Namespaces: []string{"kube-system"}, PodLabels: "app"}}},
		PluginRule{Name: "any", Selectors: []SelectorRule{{ContainerNames: []string{"c*"}}}},
	)
	if got := p.PluginPolicy("uid:0", "10-sys").Selectors; len(got) != 1 || got[0].GetNamespaces()[0] != "kube-system" || got[0].GetPodLabels() != "app" {
		t.Errorf("10-sys: %v", got)
	}
	if got := p.PluginPolicy("uid:0", "30-any").Selectors; len(got) != 1 || got[0].GetContainerNames()[0] != "c*" {
		t.Errorf("30-any: %v", got)
	}
	if got := p.Selectors(); len(got) != 1 || got["10-sys"] == nil {
		t.Errorf("remembered %v, want 10-sys only", got)
	}
}
