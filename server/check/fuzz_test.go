package check_test

import (
	"maps"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/server/check"
	"github.com/nri-grpc/nri-grpc/server/merge"
)

// FuzzMergeChecked feeds arbitrary CreateContainer responses to the
// merging of server/merge, after an earlier plugin's valid response: a
// response that check accepts must merge without panicking into results
// (the merged adjustment, updates and evictions of CreateContainer, and
// the same updates and evictions merged for StopContainer and
// UpdateContainer) that check accepts too. Merging must keep the values
// valid: it only moves, drops and combines what plugins sent.
//
// Run it with `make fuzz` (FUZZTIME, default 1m), or
// go test -run='^$' -fuzz=FuzzMergeChecked -fuzztime=3m -parallel=1 ./server/check/
func FuzzMergeChecked(f *testing.F) {
	for _, m := range fuzzSeeds() {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Built once: every run merges into clones (merging writes into the
	// request's container).
	in := newFuzzInput()
	f.Fuzz(func(t *testing.T, data []byte) {
		var rsp nriv1beta1.CreateContainerResponse
		if proto.Unmarshal(data, &rsp) != nil {
			t.Skip()
		}
		if check.Response(&rsp) != nil {
			return
		}
		in.mergeCreate(t, &rsp)
		in.mergeStop(t, &rsp)
		in.mergeUpdate(t, &rsp)
	})
}

// fuzzInput is what the fuzzed response is merged with.
type fuzzInput struct {
	pod  *nriv1beta1.PodSandbox
	ctr  *nriv1beta1.Container
	base *nriv1beta1.CreateContainerResponse
}

func newFuzzInput() fuzzInput {
	return fuzzInput{pod: fixture.Pod(1), ctr: fuzzCtr(), base: fuzzBase()}
}

// fuzzCtr is the container being created.
func fuzzCtr() *nriv1beta1.Container {
	c := fixture.Container(1, 0)
	c.Linux.Devices = []*nriv1beta1.LinuxDevice{{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229}}
	c.Linux.Sysctl = map[string]string{"net.ipv4.ip_forward": "1"}
	c.Linux.NetDevices = map[string]*nriv1beta1.LinuxNetDevice{"eth9": {Name: "net9"}}
	return c
}

// fuzzBase is the valid response of a plugin called before the fuzzed one,
// so that the fuzzed response's removals and overrides meet earlier
// values.
func fuzzBase() *nriv1beta1.CreateContainerResponse {
	r := plugin.NewAdjustment().
		AddAnnotation("a", "base").AddAnnotation("b", "base").
		AddMount(&nriv1beta1.Mount{Destination: "/base", Type: "bind", Source: "/srv/base", Options: []string{"rbind", "ro"}}).
		AddEnv("A", "base").AddEnv("B", "base").
		SetArgs([]string{"/bin/base", "-x"}).
		AddHooks(&nriv1beta1.Hooks{Poststop: []*nriv1beta1.Hook{{Path: "/bin/hook", Timeout: wrapperspb.Int64(3)}}}).
		AddDevice(&nriv1beta1.LinuxDevice{Path: "/dev/base", Type: "c", Major: 1, Minor: 3}).
		AddOrReplaceNamespace(&nriv1beta1.LinuxNamespace{Type: "ipc"}).
		SetLinuxSysctl("net.core.somaxconn", "1024").
		AddLinuxNetDevice("eth1", &nriv1beta1.LinuxNetDevice{Name: "net1"}).
		AddRlimit("RLIMIT_NOFILE", 2048, 1024).
		SetLinuxMemoryLimit(1<<30).SetLinuxCPUSetCPUs("0-1").AddLinuxUnified("memory.high", "max").
		SetLinuxRDTClosID("base").
		Response()
	r.Update = []*nriv1beta1.ContainerUpdate{plugin.NewUpdate("other").SetLinuxCPUShares(512).SetLinuxMemoryLimit(1 << 29).Proto()}
	r.Evict = []*nriv1beta1.ContainerEviction{{ContainerId: "victim", Reason: "base"}}
	return r
}

func (in fuzzInput) mergeCreate(t *testing.T, rsp *nriv1beta1.CreateContainerResponse) {
	t.Helper()
	c := merge.NewCreate(&nriv1beta1.CreateContainerRequest{Pod: in.pod, Container: in.ctr.CloneVT()})
	if _, err := c.Apply("05-base", in.base.CloneVT(), nil); err != nil {
		t.Fatalf("base response: %v", err)
	}
	if _, err := c.Apply("10-fuzz", rsp, nil); err != nil {
		return // a conflict fails the event: nothing goes to the runtime
	}
	r := c.Result()
	if err := check.Adjustment("adjust", r.GetAdjust()); err != nil {
		t.Fatalf("merged adjustment: %v\nresponse: %v\nmerged: %v", err, rsp, r.GetAdjust())
	}
	if err := check.Updates("update", r.GetUpdate()); err != nil {
		t.Fatalf("merged updates: %v\nresponse: %v", err, rsp)
	}
	if err := check.Evictions("evict", r.GetEvict()); err != nil {
		t.Fatalf("merged evictions: %v\nresponse: %v", err, rsp)
	}
}

func (in fuzzInput) mergeStop(t *testing.T, rsp *nriv1beta1.CreateContainerResponse) {
	t.Helper()
	s := merge.NewStop(&nriv1beta1.StopContainerRequest{Pod: in.pod, Container: in.ctr})
	base := in.base.CloneVT()
	if _, err := s.Apply("05-base", &nriv1beta1.StopContainerResponse{Update: base.Update, Evict: base.Evict}, nil); err != nil {
		t.Fatalf("base response: %v", err)
	}
	if _, err := s.Apply("10-fuzz", &nriv1beta1.StopContainerResponse{Update: rsp.Update, Evict: rsp.Evict}, nil); err != nil {
		return
	}
	r := s.Result()
	if err := check.Updates("update", r.GetUpdate()); err != nil {
		t.Fatalf("merged stop updates: %v\nresponse: %v", err, rsp)
	}
	if err := check.Evictions("evict", r.GetEvict()); err != nil {
		t.Fatalf("merged stop evictions: %v\nresponse: %v", err, rsp)
	}
}

func (in fuzzInput) mergeUpdate(t *testing.T, rsp *nriv1beta1.CreateContainerResponse) {
	t.Helper()
	u := merge.NewUpdate(&nriv1beta1.UpdateContainerRequest{Pod: in.pod, Container: in.ctr,
		LinuxResources: in.ctr.GetLinux().GetResources().CloneVT()})
	if _, err := u.Apply("10-fuzz", &nriv1beta1.UpdateContainerResponse{Update: rsp.Update, Evict: rsp.Evict}, nil); err != nil {
		return
	}
	r := u.Result()
	if err := check.Resources("linux_resources", r.GetLinuxResources()); err != nil {
		t.Fatalf("merged target resources: %v\nresponse: %v", err, rsp)
	}
	if err := check.Updates("update", r.GetUpdate()); err != nil {
		t.Fatalf("merged updates: %v\nresponse: %v", err, rsp)
	}
	if err := check.Evictions("evict", r.GetEvict()); err != nil {
		t.Fatalf("merged evictions: %v\nresponse: %v", err, rsp)
	}
}

// fuzzSeeds are valid responses (the realistic ones, and ones that remove
// and override the base's values) and invalid ones.
func fuzzSeeds() []proto.Message {
	id := fixture.Container(1, 0).Id
	seeds := []proto.Message{
		// Valid: removals and overrides of the base's values.
		plugin.NewAdjustment().
			RemoveAnnotation("a").AddAnnotation("b", "x").RemoveAnnotation("b").
			RemoveMount("/base").RemoveEnv("A").RemoveEnv("B").AddEnv("B", "fuzz").
			UpdateArgs([]string{"/bin/fuzz"}).
			RemoveDevice("/dev/base").RemoveDevice("/dev/fuse").
			RemoveNamespace(&nriv1beta1.LinuxNamespace{Type: "ipc"}).
			RemoveLinuxSysctl("net.core.somaxconn").RemoveLinuxSysctl("net.ipv4.ip_forward").
			RemoveLinuxNetDevice("eth1").RemoveLinuxNetDevice("eth9").
			RemoveLinuxRDT().
			Response(),
		&nriv1beta1.CreateContainerResponse{
			Update: []*nriv1beta1.ContainerUpdate{
				plugin.NewUpdate("other").SetLinuxCPUQuota(50000).SetIgnoreFailure().Proto(),
				plugin.NewUpdate("third").SetLinuxCPUSetCPUs("2-3").AddLinuxHugepageLimit("2MB", 1<<21).Proto(),
			},
			Evict: []*nriv1beta1.ContainerEviction{{ContainerId: "victim", Reason: "fuzz"}, {ContainerId: "second"}},
		},
		// Invalid: one rule broken each.
		lin(func(l *nriv1beta1.LinuxContainerAdjustment) { l.OomScoreAdj = wrapperspb.Int64(-100000) }),
		sysctls("net/../kernel/core_pattern", "|/evil"),
		adj(rlimits(rl("RLIMIT_BOGUS", 1, 1))),
		adj(args("")),
		mem(func(m *nriv1beta1.LinuxMemory) { m.Limit = wrapperspb.Int64(-12345) }),
		lin(func(l *nriv1beta1.LinuxContainerAdjustment) { l.CgroupsPath = "../../../evil" }),
		lin(func(l *nriv1beta1.LinuxContainerAdjustment) {
			l.IoPriority = &nriv1beta1.LinuxIOPriority{Class: 9999}
		}),
		// Invalid: an update of the container being created.
		&nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{plugin.NewUpdate(id).SetLinuxCPUShares(2).Proto()}},
	}
	real := realistic()
	delete(real, "fixture container") // 4 kB: too slow to minimize, nothing new
	for _, name := range slices.Sorted(maps.Keys(real)) {
		if r, ok := real[name].(*nriv1beta1.CreateContainerResponse); ok {
			seeds = append(seeds, r)
		}
	}
	return seeds
}

// TestFuzzSeedsMerge makes sure the seeds meant to merge do: the fuzzer
// starts from responses that reach the invariant's checks.
func TestFuzzSeedsMerge(t *testing.T) {
	for i, m := range fuzzSeeds()[:2] {
		rsp := m.(*nriv1beta1.CreateContainerResponse)
		if err := check.Response(rsp); err != nil {
			t.Fatalf("seed %d refused: %v", i, err)
		}
		c := merge.NewCreate(&nriv1beta1.CreateContainerRequest{Pod: fixture.Pod(1), Container: fuzzCtr()})
		if _, err := c.Apply("05-base", fuzzBase(), nil); err != nil {
			t.Fatalf("base response: %v", err)
		}
		if _, err := c.Apply("10-fuzz", rsp, nil); err != nil {
			t.Fatalf("seed %d does not merge: %v", i, err)
		}
	}
}
