package check_test

import (
	"errors"
	"strings"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/check"
)

func TestNamespacedSysctl(t *testing.T) {
	for key, want := range map[string]bool{
		"net.ipv4.ip_forward":              true,
		"net/ipv4/ip_forward":              true,
		"net.ipv4.conf.eth0/100.rp_filter": true,
		"net/ipv4/conf/eth0.100/rp_filter": true,
		"net.core.somaxconn":               true,
		"kernel.msgmax":                    true,
		"kernel.msgmnb":                    true,
		"kernel.msgmni":                    true,
		"kernel.sem":                       true,
		"kernel.shmall":                    true,
		"kernel.shmmax":                    true,
		"kernel.shmmni":                    true,
		"kernel.shm_rmid_forced":           true,
		"kernel/shm_rmid_forced":           true,
		"fs.mqueue.msg_max":                true,
		"fs/mqueue/queues_max":             true,
		"kernel.hostname":                  true,
		"kernel.domainname":                true,

		"kernel.core_pattern":        false,
		"kernel/core_pattern":        false,
		"vm.swappiness":              false,
		"netfoo":                     false,
		"net":                        false,
		"netfilter.x":                false,
		"kernel.shmmax2":             false,
		"kernel.sem.x":               false,
		"kernel.shm":                 false,
		"fs.mqueue":                  false,
		"fs.mqueuex.msg_max":         false,
		"fs.file-max":                false,
		"user.max_user_namespaces":   false,
		"kernel.pid_max":             false,
		"-net.ipv4.ip_forward":       false, // the caller strips the marker
		"":                           false,
		"net.":                       false,
		"net..ipv4":                  false,
		"net/../kernel/core_pattern": false, // swaps to net.//.kernel.core_pattern
		"net.//.kernel.core_pattern": false,
		"net.ipv4.\x00":              false,
		"Net.ipv4.ip_forward":        false,
		"kernel.hostname/x":          false,
	} {
		if got := check.NamespacedSysctl(key); got != want {
			t.Errorf("NamespacedSysctl(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestAPI(t *testing.T) {
	if err := check.Adjustment("adjust", nil); err != nil {
		t.Errorf("Adjustment(nil) = %v", err)
	}
	if err := check.Resources("r", nil); err != nil {
		t.Errorf("Resources(nil) = %v", err)
	}
	if err := check.Updates("update", nil); err != nil {
		t.Errorf("Updates(nil) = %v", err)
	}
	if err := check.Evictions("evict", nil); err != nil {
		t.Errorf("Evictions(nil) = %v", err)
	}
	if err := check.Response(nil); err != nil {
		t.Errorf("Response(nil) = %v", err)
	}
	if err := check.Response((*nriv1beta1.CreateContainerResponse)(nil)); err != nil {
		t.Errorf("Response(typed nil) = %v", err)
	}

	a := &nriv1beta1.ContainerAdjustment{Linux: &nriv1beta1.LinuxContainerAdjustment{OomScoreAdj: i64(-100000)}}
	expect(t, check.Adjustment("validate.adjust", a), "validate.adjust.linux.oom_score_adj", "OOM_SCORE_ADJ_MIN")
	expect(t, check.Adjustment("", a), "linux.oom_score_adj", "OOM_SCORE_ADJ_MIN")

	r := &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: i64(-12345)}}
	expect(t, check.Resources("update[0].linux.resources", r), "update[0].linux.resources.memory.limit", "neither -1")
	expect(t, check.Resources("linux_resources", r), "linux_resources.memory.limit", "neither -1")

	us := []*nriv1beta1.ContainerUpdate{nil, update("c1", nil), update("", nil)}
	expect(t, check.Updates("update", us), "update[2].container_id", "must not be empty")
	expect(t, check.Updates("sync.update", us), "sync.update[2].container_id", "must not be empty")

	es := []*nriv1beta1.ContainerEviction{evict("c1", ""), nil, evict("", "")}
	expect(t, check.Evictions("evict", es), "evict[2].container_id", "must not be empty")
}

// TestFieldOrder checks that the first violation in field order is
// reported, whatever the order of evaluation inside.
func TestFieldOrder(t *testing.T) {
	everyBad := func() *nriv1beta1.CreateContainerResponse {
		return &nriv1beta1.CreateContainerResponse{
			Adjust: &nriv1beta1.ContainerAdjustment{
				Annotations: map[string]string{"": "x"},
				Mounts:      []*nriv1beta1.Mount{{Destination: "rel"}},
				Env:         []*nriv1beta1.KeyValue{{Key: ""}},
				Hooks:       &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "rel"}}},
				Linux: &nriv1beta1.LinuxContainerAdjustment{
					Devices:     []*nriv1beta1.LinuxDevice{{Path: "rel"}},
					Resources:   &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: i64(-2)}, Pids: &nriv1beta1.LinuxPids{}},
					CgroupsPath: "..",
					OomScoreAdj: i64(5000),
					IoPriority:  &nriv1beta1.LinuxIOPriority{Class: 99},
					Namespaces:  []*nriv1beta1.LinuxNamespace{{Type: "x"}},
					Sysctl:      map[string]string{"": ""},
					NetDevices:  map[string]*nriv1beta1.LinuxNetDevice{"": nil},
					Scheduler:   &nriv1beta1.LinuxScheduler{Policy: 99},
					Rdt:         &nriv1beta1.LinuxRdt{ClosId: nil, Schemata: &nriv1beta1.OptionalRepeatedString{Value: []string{"\n"}}},
					MemoryPolicy: &nriv1beta1.LinuxMemoryPolicy{
						Mode: 99,
					},
				},
				Rlimits:    []*nriv1beta1.POSIXRlimit{{Type: "x"}},
				CdiDevices: []*nriv1beta1.CDIDevice{{Name: "x"}},
				Args:       []string{""},
			},
			Update: []*nriv1beta1.ContainerUpdate{{}},
			Evict:  []*nriv1beta1.ContainerEviction{{}},
		}
	}
	// Fix the reported field, one after the other: the next one in field
	// order must be reported.
	r := everyBad()
	a, l := r.Adjust, r.Adjust.Linux
	steps := []struct {
		field string
		fix   func()
	}{
		{`adjust.annotations[""]`, func() { a.Annotations = nil }},
		{"adjust.mounts[0].destination", func() { a.Mounts = nil }},
		{"adjust.env[0].key", func() { a.Env = nil }},
		{"adjust.hooks.prestart[0].path", func() { a.Hooks = nil }},
		{"adjust.linux.devices[0].path", func() { l.Devices = nil }},
		{"adjust.linux.resources.memory.limit", func() { l.Resources = nil }},
		{"adjust.linux.cgroups_path", func() { l.CgroupsPath = "" }},
		{"adjust.linux.oom_score_adj", func() { l.OomScoreAdj = nil }},
		{"adjust.linux.io_priority.class", func() { l.IoPriority = nil }},
		{"adjust.linux.namespaces[0].type", func() { l.Namespaces = nil }},
		{`adjust.linux.sysctl[""]`, func() { l.Sysctl = nil }},
		{`adjust.linux.net_devices[""]`, func() { l.NetDevices = nil }},
		{"adjust.linux.scheduler.policy", func() { l.Scheduler = nil }},
		{"adjust.linux.rdt.schemata.value[0]", func() { l.Rdt = nil }},
		{"adjust.linux.memory_policy.mode", func() { l.MemoryPolicy = nil }},
		{"adjust.rlimits[0].type", func() { a.Rlimits = nil }},
		{"adjust.cdi_devices[0].name", func() { a.CdiDevices = nil }},
		{"adjust.args", func() { a.Args = nil }},
		{"update[0].container_id", func() { r.Update = nil }},
		{"evict[0].container_id", func() { r.Evict = nil }},
	}
	for _, s := range steps {
		var ce *check.Error
		if err := check.Response(r); !errors.As(err, &ce) || ce.Field != s.field {
			t.Fatalf("Response = %v, want the error on %s", err, s.field)
		}
		s.fix()
	}
	if err := check.Response(r); err != nil {
		t.Fatalf("everything fixed, still %v", err)
	}
}

// TestMapOrder checks that a map with several bad keys always reports the
// first in sorted order, although map iteration order is random.
func TestMapOrder(t *testing.T) {
	r := sysctls("z..", "", "net..a", "", "net.ok", "1", "m..", "", "-", "")
	u := unified("z", "", "b", "", "a.ok", "", "c", "")
	for range 50 {
		expect(t, check.Response(r), `adjust.linux.sysctl["-"]`, "must not be empty")
		expect(t, check.Response(u), `adjust.linux.resources.unified["b"]`, "<controller>.<file>")
	}
}

// TestQuoteBounded checks that a long bad value is quoted in part, with its
// length.
func TestQuoteBounded(t *testing.T) {
	v := strings.Repeat("é", 1000) // 2000 bytes, multi-byte runes
	err := check.Response(adj(rlimits(rl(v, 1, 1))))
	var ce *check.Error
	if !errors.As(err, &ce) {
		t.Fatalf("Response = %v", err)
	}
	if !strings.Contains(ce.Rule, "... (2000 bytes)") || len(ce.Rule) > 512 {
		t.Errorf("Rule = %q: want a cut quote with the length", ce.Rule)
	}
	if !strings.HasPrefix(ce.Rule, `"`+strings.Repeat("é", 32)+`"`) {
		t.Errorf("Rule = %q: want the first 64 bytes, cut at a rune boundary", ce.Rule)
	}
}
