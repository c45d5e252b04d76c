package merge_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/server/merge"
)

// run applies responses in order on a fresh fixture request and returns the
// Create, the request and the first error.
func run(t *testing.T, plugins ...plug[createRsp]) (*merge.Create, *nriv1beta1.CreateContainerRequest, error) {
	t.Helper()
	req := &nriv1beta1.CreateContainerRequest{Pod: testPod.CloneVT(), Container: baseContainer()}
	c := merge.NewCreate(req)
	for _, p := range plugins {
		if _, err := c.Apply(p.name, p.rsp, nil); err != nil {
			return c, req, err
		}
	}
	return c, req, nil
}

func mustRun(t *testing.T, plugins ...plug[createRsp]) (*merge.Create, *nriv1beta1.CreateContainerRequest) {
	t.Helper()
	c, req, err := run(t, plugins...)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return c, req
}

func owner(t *testing.T, c *merge.Create, id string, field nriv1beta1.Field, key string) string {
	t.Helper()
	fo := c.Owners().GetOwners()[id]
	if key == "" {
		return fo.GetSimple()[int32(field)]
	}
	return fo.GetCompound()[int32(field)].GetOwners()[key]
}

func TestClassicFieldNames(t *testing.T) {
	for f := range nriv1beta1.Field_name {
		if got, want := merge.ClassicFieldName(nriv1beta1.Field(f)), api.Field(f).String(); got != want {
			t.Errorf("ClassicFieldName(%d) = %q, classic %q", f, got, want)
		}
	}
}

// The reply of a single plugin is exactly what it asked for.
func TestSinglePluginReplyEqualsAdjustment(t *testing.T) {
	rsps := map[string]createRsp{
		"fixture":    fixture.CreateContainerResponse(),
		"everything": adj(everything(1)),
		"realistic":  realisticResponse(),
	}
	for name, rsp := range rsps {
		t.Run(name, func(t *testing.T) {
			want := rsp.Adjust.CloneVT()
			c, _ := mustRun(t, cp("00-a", rsp))
			res := c.Result()
			if !proto.Equal(res.Adjust, want) {
				t.Errorf("reply differs from the adjustment:\n got %v\nwant %v", res.Adjust, want)
			}
			if !proto.Equal(rsp.Adjust, want) {
				t.Errorf("Apply modified the response")
			}
			if len(rsp.Update) > 0 && (len(res.Update) != 1 || !proto.Equal(res.Update[0], rsp.Update[0])) {
				t.Errorf("updates = %v, want %v", res.Update, rsp.Update)
			}
		})
	}
}

func TestConflictErrors(t *testing.T) {
	for _, f := range simpleFields {
		_, _, err := run(t,
			cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, 1) })),
			cp("10-b", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, 2) })))
		want := `plugins "10-b" and "00-a" both tried to set ` + f.name + " " // classic's trailing space
		var ce *merge.ConflictError
		if err == nil || err.Error() != want || !errors.As(err, &ce) {
			t.Errorf("%s: error = %v, want %q", f.name, err, want)
			continue
		}
		if ce.Field != f.field || ce.Key != "" || ce.Plugin != "10-b" || ce.Other != "00-a" {
			t.Errorf("%s: ConflictError = %+v", f.name, ce)
		}
	}
	for _, f := range compoundFields {
		_, _, err := run(t,
			cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, f.key, 1) })),
			cp("10-b", adj(func(a *nriv1beta1.ContainerAdjustment) { f.set(a, f.key, 2) })))
		want := `plugins "10-b" and "00-a" both tried to set ` + f.name + " " + f.key
		var ce *merge.ConflictError
		if err == nil || err.Error() != want || !errors.As(err, &ce) || ce.Field != f.field || ce.Key != f.key {
			t.Errorf("%s: error = %v (%+v), want %q", f.name, err, ce, want)
		}
	}
}

func TestSamePluginClaimingTwiceConflicts(t *testing.T) {
	_, _, err := run(t, cp("00-a", adj(mount("/x", "/a"), mount("/x", "/b"))))
	if want := `plugins "00-a" and "00-a" both tried to set Mounts /x`; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestClaimAfterOwnRemoval(t *testing.T) {
	// Remove-then-add is allowed over the plugin's own removal marker; a
	// different plugin's removal marker blocks, and is reported as owner.
	c, _ := mustRun(t,
		cp("00-a", adj(mount("/x", "/a"))),
		cp("10-b", adj(removeMount("/x"), mount("/x", "/b"))))
	if got := owner(t, c, ctrID, nriv1beta1.Field_FIELD_MOUNTS, "/x"); got != "10-b" {
		t.Errorf("owner = %q, want 10-b", got)
	}
	_, _, err := run(t,
		cp("00-a", adj(mount("/x", "/a"))),
		cp("10-b", adj(removeMount("/x"))),
		cp("20-c", adj(mount("/x", "/c"))))
	if want := `plugins "20-c" and "10-b" both tried to set Mounts /x`; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestHooksAccumulate(t *testing.T) {
	c, req := mustRun(t,
		cp("00-a", adj(hooks("/bin/a"))),
		cp("10-b", adj(hooks("/bin/b"))))
	h := c.Result().Adjust.Hooks
	for _, list := range [][]*nriv1beta1.Hook{h.Prestart, h.CreateRuntime, h.CreateContainer, h.StartContainer, h.Poststart, h.Poststop} {
		if len(list) != 2 || list[0].Path != "/bin/a" || list[1].Path != "/bin/b" {
			t.Errorf("hooks = %v", list)
		}
	}
	if len(req.Container.Hooks.Poststop) != 2 {
		t.Errorf("request hooks = %v", req.Container.Hooks)
	}
	if got := owner(t, c, ctrID, nriv1beta1.Field_FIELD_OCI_HOOKS, ""); got != "00-a,10-b" {
		t.Errorf("hooks owner = %q, want 00-a,10-b", got)
	}
}

func TestArgsOverride(t *testing.T) {
	c, req := mustRun(t,
		cp("00-a", adj(args("/bin/a", "-x"))),
		cp("10-b", adj(args("", "/bin/b"))))
	if got := c.Result().Adjust.Args; !slices.Equal(got, []string{"/bin/b"}) {
		t.Errorf("reply args = %q", got)
	}
	if !slices.Equal(req.Container.Args, []string{"/bin/b"}) {
		t.Errorf("request args = %q", req.Container.Args)
	}
	if got := owner(t, c, ctrID, nriv1beta1.Field_FIELD_ARGS, ""); got != "10-b" {
		t.Errorf("args owner = %q", got)
	}
	_, _, err := run(t, cp("00-a", adj(args("/bin/a"))), cp("10-b", adj(args("/bin/b"))))
	if want := `plugins "10-b" and "00-a" both tried to set Args `; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

// hasKeyAndMarker reports which keys appear both as k and -k in the reply.
func keysWithMarker(a *nriv1beta1.ContainerAdjustment) []string {
	var keys []string
	check := func(kind string, ks []string) {
		for _, k := range ks {
			if strings.HasPrefix(k, "-") && slices.Contains(ks, k[1:]) {
				keys = append(keys, kind+":"+k[1:])
			}
		}
	}
	var ks []string
	for k := range a.GetAnnotations() {
		ks = append(ks, k)
	}
	check("annotation", ks)
	ks = nil
	for k := range a.GetLinux().GetSysctl() {
		ks = append(ks, k)
	}
	check("sysctl", ks)
	ks = nil
	for k := range a.GetLinux().GetNetDevices() {
		ks = append(ks, k)
	}
	check("netdev", ks)
	ks = nil
	for _, m := range a.GetMounts() {
		ks = append(ks, m.Destination)
	}
	check("mount", ks)
	ks = nil
	for _, e := range a.GetEnv() {
		ks = append(ks, e.Key)
	}
	check("env", ks)
	ks = nil
	for _, d := range a.GetLinux().GetDevices() {
		ks = append(ks, d.Path)
	}
	check("device", ks)
	ks = nil
	for _, n := range a.GetLinux().GetNamespaces() {
		ks = append(ks, n.Type)
	}
	check("namespace", ks)
	return keys
}

// Deliberate change 1.
func TestEnvRemovalMarkerReachesRuntime(t *testing.T) {
	// A variable of the runtime's own spec.
	c, req := mustRun(t, cp("00-a", adj(removeEnv(rtEnv))))
	if got := c.Result().Adjust.GetEnv(); len(got) != 1 || got[0].Key != "-"+rtEnv {
		t.Errorf("reply env = %v, want [-%s]", got, rtEnv)
	}
	for _, e := range req.Container.Env {
		if strings.HasPrefix(e, rtEnv+"=") {
			t.Errorf("request still has %s", e)
		}
	}
	// A variable an earlier plugin set: dropped, owner cleared, marker kept.
	c, _ = mustRun(t, cp("00-a", adj(env("FOO", "1"))), cp("10-b", adj(removeEnv("FOO"))))
	if got := c.Result().Adjust.GetEnv(); len(got) != 1 || got[0].Key != "-FOO" {
		t.Errorf("reply env = %v, want [-FOO]", got)
	}
	if got := owner(t, c, ctrID, nriv1beta1.Field_FIELD_ENV, "FOO"); got != "-10-b" {
		t.Errorf("owner = %q, want -10-b", got)
	}
}

// Deliberate change 1.
func TestDeviceRemovalMarkerReachesRuntime(t *testing.T) {
	c, req := mustRun(t, cp("00-a", adj(removeDevice(rtDev))))
	if got := c.Result().Adjust.GetLinux().GetDevices(); len(got) != 1 || got[0].Path != "-"+rtDev {
		t.Errorf("reply devices = %v, want [-%s]", got, rtDev)
	}
	if len(req.Container.Linux.Devices) != 0 {
		t.Errorf("request devices = %v", req.Container.Linux.Devices)
	}
	c, _ = mustRun(t, cp("00-a", adj(device("/dev/x", 1))), cp("10-b", adj(removeDevice("/dev/x"))))
	if got := c.Result().Adjust.GetLinux().GetDevices(); len(got) != 1 || got[0].Path != "-/dev/x" {
		t.Errorf("reply devices = %v, want [-/dev/x]", got)
	}
	if got := owner(t, c, ctrID, nriv1beta1.Field_FIELD_DEVICES, "/dev/x"); got != "-10-b" {
		t.Errorf("owner = %q, want -10-b", got)
	}
}

// Deliberate change 2.
func TestReplyNeverHoldsKeyAndRemovalMarker(t *testing.T) {
	type kind struct {
		name       string
		set        func(k string, v int) func(*nriv1beta1.ContainerAdjustment)
		remove     func(k string) func(*nriv1beta1.ContainerAdjustment)
		key, rtKey string
	}
	kinds := []kind{
		{"annotations", func(k string, v int) func(*nriv1beta1.ContainerAdjustment) { return annotation(k, fmt.Sprint(v)) }, removeAnnotation, annKey, rtAnn},
		{"sysctl", func(k string, v int) func(*nriv1beta1.ContainerAdjustment) { return sysctl(k, fmt.Sprint(v)) },
			func(k string) func(*nriv1beta1.ContainerAdjustment) { return sysctl("-"+k, "") }, "net.core.somaxconn", rtSysct},
		{"net devices", func(k string, v int) func(*nriv1beta1.ContainerAdjustment) { return netDevice(k, fmt.Sprint("n", v)) },
			func(k string) func(*nriv1beta1.ContainerAdjustment) { return netDevice("-"+k, "") }, "eth1", rtNetif},
		{"env", func(k string, v int) func(*nriv1beta1.ContainerAdjustment) { return env(k, fmt.Sprint(v)) }, removeEnv, "FOO", rtEnv},
		{"devices", func(k string, v int) func(*nriv1beta1.ContainerAdjustment) { return device(k, int64(v)) }, removeDevice, "/dev/x", rtDev},
		{"mounts", func(k string, v int) func(*nriv1beta1.ContainerAdjustment) { return mount(k, fmt.Sprint("/src", v)) }, removeMount, "/x", rtMount},
		{"namespaces", func(k string, v int) func(*nriv1beta1.ContainerAdjustment) { return namespace(k, fmt.Sprint("/ns", v)) },
			func(k string) func(*nriv1beta1.ContainerAdjustment) { return namespace("-"+k, "") }, "network", "network"},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			// Override idiom in one response: only k.
			c, _ := mustRun(t, cp("00-a", adj(k.remove(k.rtKey), k.set(k.rtKey, 1))))
			if bad := keysWithMarker(c.Result().Adjust); len(bad) > 0 {
				t.Errorf("override: reply holds both k and -k for %v", bad)
			}
			if k.name == "namespaces" {
				return // removing a namespace claims it: nothing else applies
			}
			// Override of an earlier plugin's value.
			c, _ = mustRun(t, cp("00-a", adj(k.set(k.key, 1))), cp("10-b", adj(k.remove(k.key), k.set(k.key, 2))))
			if bad := keysWithMarker(c.Result().Adjust); len(bad) > 0 {
				t.Errorf("override: reply holds both k and -k for %v", bad)
			}
			if got := owner(t, c, ctrID, fieldOf(k.name), k.key); got != "10-b" {
				t.Errorf("override: owner = %q, want 10-b", got)
			}
			// Pure removal of an earlier plugin's value: -k only, owner -10-b,
			// the request loses k.
			c, req := mustRun(t, cp("00-a", adj(k.set(k.key, 1))), cp("10-b", adj(k.remove(k.key))))
			if bad := keysWithMarker(c.Result().Adjust); len(bad) > 0 {
				t.Errorf("pure removal: reply holds both k and -k for %v", bad)
			}
			if got := owner(t, c, ctrID, fieldOf(k.name), k.key); got != "-10-b" {
				t.Errorf("pure removal: owner = %q, want -10-b", got)
			}
			if requestHas(req.Container, k.name, k.key) {
				t.Errorf("pure removal: request still has %s", k.key)
			}
			// Removal of the runtime's entry, then another plugin sets it.
			c, _ = mustRun(t, cp("00-a", adj(k.remove(k.rtKey))), cp("10-b", adj(k.set(k.rtKey, 2))))
			if bad := keysWithMarker(c.Result().Adjust); len(bad) > 0 {
				t.Errorf("remove then set: reply holds both k and -k for %v", bad)
			}
		})
	}
}

func fieldOf(kind string) nriv1beta1.Field {
	return map[string]nriv1beta1.Field{
		"annotations": nriv1beta1.Field_FIELD_ANNOTATIONS,
		"sysctl":      nriv1beta1.Field_FIELD_SYSCTL,
		"net devices": nriv1beta1.Field_FIELD_LINUX_NET_DEVICES,
		"env":         nriv1beta1.Field_FIELD_ENV,
		"devices":     nriv1beta1.Field_FIELD_DEVICES,
		"mounts":      nriv1beta1.Field_FIELD_MOUNTS,
		"namespaces":  nriv1beta1.Field_FIELD_NAMESPACE,
	}[kind]
}

func requestHas(c *nriv1beta1.Container, kind, key string) bool {
	switch kind {
	case "annotations":
		_, ok := c.Annotations[key]
		return ok
	case "sysctl":
		_, ok := c.Linux.Sysctl[key]
		return ok
	case "net devices":
		_, ok := c.Linux.NetDevices[key]
		return ok
	case "env":
		return slices.ContainsFunc(c.Env, func(e string) bool { return strings.HasPrefix(e, key+"=") })
	case "devices":
		return slices.ContainsFunc(c.Linux.Devices, func(d *nriv1beta1.LinuxDevice) bool { return d.Path == key })
	case "mounts":
		return slices.ContainsFunc(c.Mounts, func(m *nriv1beta1.Mount) bool { return m.Destination == key })
	}
	return false
}

// Deliberate change 3.
func TestEvictionsArePassedOn(t *testing.T) {
	want := []*nriv1beta1.ContainerEviction{evict("ctr-1", "first"), evict("ctr-2", "b")}
	check := func(what string, got []*nriv1beta1.ContainerEviction) {
		t.Helper()
		if len(got) != len(want) || !proto.Equal(got[0], want[0]) || !proto.Equal(got[1], want[1]) {
			t.Errorf("%s: evictions = %v, want %v", what, got, want)
		}
	}
	c, _ := mustRun(t,
		cp("00-a", withEvictions(nil, evict("ctr-1", "first"))),
		cp("10-b", withEvictions(nil, evict("ctr-1", "second"), evict("ctr-2", "b"))))
	check("create", c.Result().Evict)

	u := merge.NewUpdate(&nriv1beta1.UpdateContainerRequest{Container: fixture.Container(1, 0)})
	for i, e := range [][]*nriv1beta1.ContainerEviction{{evict("ctr-1", "first")}, {evict("ctr-1", "second"), evict("ctr-2", "b")}} {
		if _, err := u.Apply(fmt.Sprint(i, "0-p"), &nriv1beta1.UpdateContainerResponse{Evict: e}, nil); err != nil {
			t.Fatal(err)
		}
	}
	check("update", u.Result().Evict)

	s := merge.NewStop(&nriv1beta1.StopContainerRequest{})
	for i, e := range [][]*nriv1beta1.ContainerEviction{{evict("ctr-1", "first")}, {evict("ctr-1", "second"), evict("ctr-2", "b")}} {
		if _, err := s.Apply(fmt.Sprint(i, "0-p"), &nriv1beta1.StopContainerResponse{Evict: e}, nil); err != nil {
			t.Fatal(err)
		}
	}
	check("stop", s.Result().Evict)

	// Many evictions: deduplicated past the linear-scan size too.
	s = merge.NewStop(&nriv1beta1.StopContainerRequest{})
	var many []*nriv1beta1.ContainerEviction
	for i := range 40 {
		many = append(many, evict(fmt.Sprint("ctr-", i%20), fmt.Sprint(i)))
	}
	if _, err := s.Apply("00-a", &nriv1beta1.StopContainerResponse{Evict: many}, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Result().Evict; len(got) != 20 || got[19].Reason != "19" {
		t.Errorf("evictions = %d, last %v", len(got), got[len(got)-1])
	}
}

// Deliberate change 4.
func TestPidsInUpdatesAreApplied(t *testing.T) {
	c, _ := mustRun(t, cp("00-a", withUpdates(nil, upd("ctr-1", false, pids(77)))))
	if got := c.Result().Update[0].GetLinux().GetResources().GetPids().GetLimit(); got != 77 {
		t.Errorf("pids = %d, want 77", got)
	}
	if got := owner(t, c, "ctr-1", nriv1beta1.Field_FIELD_PIDS_LIMIT, ""); got != "00-a" {
		t.Errorf("owner = %q", got)
	}
	_, _, err := run(t,
		cp("00-a", withUpdates(nil, upd("ctr-1", false, pids(77)))),
		cp("10-b", withUpdates(nil, upd("ctr-1", false, pids(78)))))
	if want := `plugins "10-b" and "00-a" both tried to set PidsLimit `; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	// The target of UpdateContainer.
	req := &nriv1beta1.UpdateContainerRequest{Container: fixture.Container(1, 0), LinuxResources: &nriv1beta1.LinuxResources{Pids: &nriv1beta1.LinuxPids{Limit: 100}}}
	u := merge.NewUpdate(req)
	if _, err := u.Apply("00-a", updates(upd(ctrID, false, memLimit(1<<20))), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Apply("10-b", updates(upd(ctrID, false, pids(50))), nil); err != nil {
		t.Fatal(err)
	}
	if got := u.Result().LinuxResources.GetPids().GetLimit(); got != 50 {
		t.Errorf("target pids = %d, want 50", got)
	}
}

// Deliberate change 5.
func TestIgnoreFailureUpdateIsDroppedWhole(t *testing.T) {
	var changes []*nriv1beta1.FieldChange
	req := &nriv1beta1.CreateContainerRequest{Container: baseContainer()}
	c := merge.NewCreate(req)
	if _, err := c.Apply("00-a", withUpdates(nil, upd("ctr-1", false, memSwap(1<<30))), nil); err != nil {
		t.Fatal(err)
	}
	// Limit (free) and swap (taken): nothing of it may stick.
	if _, err := c.Apply("10-b", withUpdates(nil,
		upd("ctr-1", true, memLimit(2<<30), memSwap(2<<30)),
		upd("ctr-2", true, hugepage("2MB", 1), hugepage("2MB", 2)), // conflicts with itself
		upd("ctr-3", true, cpuShares(5)),                           // fine
	), &changes); err != nil {
		t.Fatalf("ignore_failure conflict failed the event: %v", err)
	}
	res := c.Result()
	if len(res.Update) != 2 || res.Update[0].ContainerId != "ctr-1" || res.Update[1].ContainerId != "ctr-3" {
		t.Fatalf("updates = %v", res.Update)
	}
	r1 := res.Update[0].Linux.Resources
	if r1.Memory.GetLimit() != nil || r1.Memory.GetSwap().GetValue() != 1<<30 || res.Update[0].IgnoreFailure {
		t.Errorf("ctr-1 update = %v", res.Update[0])
	}
	if got := owner(t, c, "ctr-1", nriv1beta1.Field_FIELD_MEM_LIMIT, ""); got != "" {
		t.Errorf("dropped update left a claim on MemLimit: %q", got)
	}
	if _, ok := c.Owners().Owners["ctr-2"]; ok {
		t.Errorf("dropped update left claims on ctr-2")
	}
	if len(changes) != 1 || changes[0].ContainerId != "ctr-3" {
		t.Errorf("changes = %v, want only ctr-3's", changes)
	}
	// A later plugin may set what the dropped update would have claimed.
	if _, err := c.Apply("20-c", withUpdates(nil, upd("ctr-1", false, memLimit(3<<30))), nil); err != nil {
		t.Errorf("Apply after dropped update: %v", err)
	}
	// Without ignore_failure, the conflict fails the event.
	if _, err := c.Apply("30-d", withUpdates(nil, upd("ctr-1", false, memLimit(4<<30))), nil); err == nil {
		t.Errorf("conflict without ignore_failure did not fail")
	}
}

func TestUpdatesMergedPerContainerInFirstTouchOrder(t *testing.T) {
	c, _ := mustRun(t,
		cp("00-a", withUpdates(nil, upd("ctr-2", true, memLimit(1)), upd("ctr-1", true, cpuShares(2)))),
		cp("10-b", withUpdates(nil, upd("ctr-1", false, memLimit(3)), upd("ctr-3", true, unified("a", "b")))),
		cp("20-c", withUpdates(nil, upd("ctr-2", true, hugepage("2MB", 4)))))
	u := c.Result().Update
	var ids []string
	for _, x := range u {
		ids = append(ids, x.ContainerId)
	}
	if !slices.Equal(ids, []string{"ctr-2", "ctr-1", "ctr-3"}) {
		t.Fatalf("order = %v", ids)
	}
	if !u[0].IgnoreFailure || u[1].IgnoreFailure || !u[2].IgnoreFailure {
		t.Errorf("ignore_failure not ANDed: %v", u)
	}
	r := u[1].Linux.Resources
	if r.Cpu.GetShares().GetValue() != 2 || r.Memory.GetLimit().GetValue() != 3 {
		t.Errorf("ctr-1 = %v", r)
	}
	if len(u[0].Linux.Resources.HugepageLimits) != 1 || u[0].Linux.Resources.Cpu != nil {
		t.Errorf("ctr-2 = %v", u[0].Linux.Resources)
	}
	// Many containers: past the linear-scan size.
	var many []*nriv1beta1.ContainerUpdate
	for i := range 30 {
		many = append(many, upd(fmt.Sprint("c", i), false, memLimit(int64(i))))
	}
	for i := range 30 {
		many = append(many, upd(fmt.Sprint("c", i), false, cpuShares(uint64(i))))
	}
	c, _ = mustRun(t, cp("00-a", withUpdates(nil, many...)))
	if u := c.Result().Update; len(u) != 30 || u[29].Linux.Resources.Cpu.GetShares().GetValue() != 29 {
		t.Errorf("updates = %d", len(u))
	}
	if len(c.Owners().Owners) != 30 {
		t.Errorf("owners for %d containers", len(c.Owners().Owners))
	}
}

func TestUpdateOfContainerBeingCreatedFails(t *testing.T) {
	_, _, err := run(t, cp("00-a", withUpdates(nil, upd(ctrID, true, memLimit(1)))))
	var se *merge.SelfUpdateError
	want := fmt.Sprintf("plugin %q asked update of %q during creation", "00-a", ctrID)
	if err == nil || err.Error() != want || !errors.As(err, &se) {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestUpdateContainerTarget(t *testing.T) {
	req := &nriv1beta1.UpdateContainerRequest{Container: fixture.Container(1, 0)}
	u := merge.NewUpdate(req)
	if req.LinuxResources == nil || req.LinuxResources.Memory == nil || req.LinuxResources.Cpu == nil {
		t.Fatalf("request not normalized: %v", req.LinuxResources)
	}
	if res := u.Result(); res.LinuxResources == nil {
		t.Fatalf("LinuxResources not set without changes")
	}
	changed, err := u.Apply("00-a", updates(upd(ctrID, false, memLimit(1<<20)), upd("ctr-9", false, cpuShares(3))), nil)
	if err != nil || !changed {
		t.Fatalf("Apply = %v, %v", changed, err)
	}
	if req.LinuxResources.Memory.GetLimit().GetValue() != 1<<20 {
		t.Errorf("later plugins do not see the target change: %v", req.LinuxResources)
	}
	changed, err = u.Apply("10-b", updates(upd("ctr-9", false, memLimit(5))), nil)
	if err != nil || changed {
		t.Errorf("Apply of another container = %v, %v; want no change", changed, err)
	}
	if _, err := u.Apply("20-c", updates(upd(ctrID, false, memLimit(2))), nil); err == nil ||
		err.Error() != `plugins "20-c" and "00-a" both tried to set MemLimit ` {
		t.Errorf("target conflict = %v", err)
	}
	res := u.Result()
	if len(res.Update) != 1 || res.Update[0].ContainerId != "ctr-9" {
		t.Errorf("updates = %v (the target must not be listed)", res.Update)
	}
	if res.LinuxResources.Memory.GetLimit().GetValue() != 1<<20 {
		t.Errorf("target = %v", res.LinuxResources)
	}
}

func TestStopContainer(t *testing.T) {
	req := &nriv1beta1.StopContainerRequest{Container: fixture.Container(1, 0)}
	before := proto.Clone(req)
	s := merge.NewStop(req)
	var changes []*nriv1beta1.FieldChange
	if ch, err := s.Apply("00-a", &nriv1beta1.StopContainerResponse{Update: []*nriv1beta1.ContainerUpdate{upd(ctrID, false, memLimit(1)), upd("ctr-2", true, cpuShares(1))}}, &changes); err != nil || ch {
		t.Fatalf("Apply = %v, %v", ch, err)
	}
	if _, err := s.Apply("10-b", nil, nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.Apply("20-c", &nriv1beta1.StopContainerResponse{Update: []*nriv1beta1.ContainerUpdate{upd("ctr-2", false, cpuShares(2))}}, nil)
	if want := `plugins "20-c" and "00-a" both tried to set CPUShares `; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	res := s.Result()
	if len(res.Update) != 2 || res.Update[0].ContainerId != ctrID {
		t.Errorf("updates = %v", res.Update)
	}
	if len(changes) != 2 || changes[0].ContainerId != ctrID || changes[0].Field != nriv1beta1.Field_FIELD_MEM_LIMIT || changes[0].Value != "1" {
		t.Errorf("changes = %v", changes)
	}
	if !proto.Equal(req, before) {
		t.Errorf("Stop modified the request")
	}
}

func TestChangedReportsRequestModification(t *testing.T) {
	cases := []struct {
		name string
		rsp  createRsp
		want bool
	}{
		{"nil", nil, false},
		{"empty", &nriv1beta1.CreateContainerResponse{}, false},
		{"empty-sub-messages", adj(resAdj(func(r *nriv1beta1.LinuxResources) { mem(r); cpu(r) })), false},
		{"rdt-reply-only", adj(func(a *nriv1beta1.ContainerAdjustment) { simpleFields[23].set(a, 1) }), false},
		{"memory-policy-reply-only", adj(func(a *nriv1beta1.ContainerAdjustment) { simpleFields[26].set(a, 1) }), false},
		{"cdi-reply-only", adj(cdi("vendor.com/gpu=0")), false},
		{"updates-only", withUpdates(nil, upd("ctr-1", false, memLimit(1))), false},
		{"evictions-only", withEvictions(nil, evict("ctr-1", "x")), false},
		{"remove-absent-env", adj(removeEnv("NOT_THERE")), false},
		{"remove-absent-annotation", adj(removeAnnotation("not/there")), false},
		{"annotation", adj(annotation("a", "b")), true},
		{"memory", adj(resAdj(memLimit(1))), true},
		{"remove-runtime-env", adj(removeEnv(rtEnv)), true},
		{"hooks", adj(hooks("/bin/h")), true},
	}
	for _, tc := range cases {
		req := &nriv1beta1.CreateContainerRequest{Container: baseContainer()}
		c := merge.NewCreate(req)
		before := req.Container.CloneVT()
		got, err := c.Apply("00-a", tc.rsp, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: changed = %v, want %v", tc.name, got, tc.want)
		}
		if modified := !proto.Equal(before, req.Container); modified != tc.want {
			t.Errorf("%s: request modified = %v, want %v", tc.name, modified, tc.want)
		}
	}
}

func TestFieldChanges(t *testing.T) {
	var changes []*nriv1beta1.FieldChange
	req := &nriv1beta1.CreateContainerRequest{Container: baseContainer()}
	c := merge.NewCreate(req)
	if _, err := c.Apply("00-a", adj(annotation("k", "v"), env("FOO", "1"), mount("/x", "/src"), resAdj(memLimit(1024)), args("/bin/a")), nil); err != nil {
		t.Fatal(err)
	}
	rsp := withUpdates(adj(removeAnnotation("k"), removeEnv(rtEnv), removeEnv("FOO"), env("FOO", "2"), cdi("v.com/g=0"),
		func(a *nriv1beta1.ContainerAdjustment) { rdt(a).Remove = true }), upd("ctr-1", false, cpuShares(7), unified("memory.high", "1G")))
	if _, err := c.Apply("10-b", rsp, &changes); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range changes {
		got = append(got, fmt.Sprintf("%s %s %q=%q removed=%v", trimID(ch.ContainerId), merge.ClassicFieldName(ch.Field), ch.Key, ch.Value, ch.Removed))
	}
	want := []string{
		`ctr Annotations "k"="" removed=true`,
		`ctr Env "FOO"="2" removed=false`,
		`ctr Env "APP_ENV"="" removed=true`,
		`ctr RdtClosID ""="" removed=true`,
		`ctr RdtSchemata ""="" removed=true`,
		`ctr RdtEnableMonitoring ""="" removed=true`,
		`ctr CdiDevices "v.com/g=0"="" removed=false`,
		`ctr-1 CPUShares ""="7" removed=false`,
		`ctr-1 CgroupsUnified "memory.high"="1G" removed=false`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Every kind of field renders without panicking.
	changes = nil
	c = merge.NewCreate(&nriv1beta1.CreateContainerRequest{Container: baseContainer()})
	if _, err := c.Apply("00-a", adj(everything(1)), &changes); err != nil {
		t.Fatal(err)
	}
	fields := map[nriv1beta1.Field]bool{}
	for _, ch := range changes {
		fields[ch.Field] = true
	}
	for f := range nriv1beta1.Field_name {
		if f != 0 && !fields[nriv1beta1.Field(f)] {
			t.Errorf("no change recorded for %s", merge.ClassicFieldName(nriv1beta1.Field(f)))
		}
	}
	if !fields[nriv1beta1.Field_FIELD_UNSPECIFIED] {
		t.Errorf("no change recorded for the device cgroup rule")
	}
}

func trimID(id string) string {
	if id == ctrID {
		return "ctr"
	}
	return id
}

func TestPristine(t *testing.T) {
	req := &nriv1beta1.CreateContainerRequest{Container: baseContainer()}
	c := merge.NewCreate(req)
	want := req.Container.CloneVT() // normalized, before any plugin
	if _, err := c.Apply("00-a", adj(everything(1)), nil); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(norm(c.Pristine()), norm(want)) {
		t.Errorf("pristine differs from the container before any plugin")
	}
	if proto.Equal(c.Pristine(), req.Container) {
		t.Errorf("pristine equals the changed container")
	}
	// Nothing changed: pristine is the container.
	req = &nriv1beta1.CreateContainerRequest{Container: baseContainer()}
	c = merge.NewCreate(req, merge.WithoutPristine())
	if !proto.Equal(c.Pristine(), req.Container) {
		t.Errorf("pristine of an unchanged container")
	}
	c = merge.NewCreate(&nriv1beta1.CreateContainerRequest{Container: baseContainer()}, merge.WithoutPristine())
	if _, err := c.Apply("00-a", adj(annotation("a", "b")), nil); err != nil {
		t.Fatal(err)
	}
	if c.Pristine() != nil {
		t.Errorf("WithoutPristine: Pristine after a change is not nil")
	}
	// A nil container is normalized too.
	req = &nriv1beta1.CreateContainerRequest{}
	merge.NewCreate(req)
	if req.Container.GetLinux().GetResources().GetMemory() == nil || req.Container.Hooks == nil {
		t.Errorf("nil container not normalized: %v", req.Container)
	}
}

func TestApplyDoesNotModifyResponses(t *testing.T) {
	rsps := []createRsp{
		adj(everything(1)),
		adj(removeAnnotation(annKey), annotation(annKey, "x"), removeMount("/data"), mount("/data", "/d"),
			sysctl("-net.core.somaxconn", ""), netDevice("-eth1", ""), removeEnv("NRI_VARIANT")),
	}
	req := &nriv1beta1.CreateContainerRequest{Container: baseContainer()}
	c := merge.NewCreate(req)
	for i, rsp := range rsps {
		before := rsp.CloneVT()
		if _, err := c.Apply(fmt.Sprint(i, "0-p"), rsp, nil); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(before, rsp) {
			t.Errorf("response %d was modified", i)
		}
	}
}

func TestEmptyApplyDoesNotAllocate(t *testing.T) {
	c := merge.NewCreate(&nriv1beta1.CreateContainerRequest{Container: baseContainer()})
	empty := &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Linux: &nriv1beta1.LinuxContainerAdjustment{}}}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := c.Apply("00-a", empty, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Apply("10-b", nil, nil); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("empty Apply: %v allocations", n)
	}
	u := merge.NewUpdate(&nriv1beta1.UpdateContainerRequest{})
	if n := testing.AllocsPerRun(100, func() {
		if _, err := u.Apply("00-a", &nriv1beta1.UpdateContainerResponse{}, nil); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("empty Update.Apply: %v allocations", n)
	}
}

func TestNoEmptySubMessagesInResult(t *testing.T) {
	c, _ := mustRun(t,
		cp("00-a", adj(func(a *nriv1beta1.ContainerAdjustment) {
			res(a).Memory = &nriv1beta1.LinuxMemory{}
			res(a).Cpu = &nriv1beta1.LinuxCPU{}
			lin(a).Rdt = &nriv1beta1.LinuxRdt{}
			a.Hooks = &nriv1beta1.Hooks{}
		})),
		cp("10-b", adj(args(""))),
	)
	if a := c.Result().Adjust; a != nil {
		t.Errorf("adjust = %v, want nil", a)
	}
	c, _ = mustRun(t, cp("00-a", adj(resAdj(cpuset("1")))))
	assertNoEmptySubMessages(t, c.Result())
	if c.Result().Adjust.Linux.Resources.Memory != nil {
		t.Errorf("empty memory in the reply")
	}
}

func TestErrorPlugins(t *testing.T) {
	type pluginser interface{ Plugins() []string }
	_, _, err := run(t, cp("00-a", adj(annotation("k", "1"))), cp("10-b", adj(annotation("k", "2"))))
	if p, ok := err.(pluginser); !ok || !slices.Equal(p.Plugins(), []string{"10-b", "00-a"}) {
		t.Errorf("conflict plugins = %v", err)
	}
	_, _, err = run(t, cp("00-a", adj(mount("/x", "/a"), mount("/x", "/b"))))
	if p, ok := err.(pluginser); !ok || !slices.Equal(p.Plugins(), []string{"00-a"}) {
		t.Errorf("self-conflict plugins = %v", err)
	}
	_, _, err = run(t, cp("00-a", withUpdates(nil, upd(ctrID, false))))
	if p, ok := err.(pluginser); !ok || !slices.Equal(p.Plugins(), []string{"00-a"}) {
		t.Errorf("self-update plugins = %v", err)
	}
}
