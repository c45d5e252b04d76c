package check_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/server/check"
)

// typicalResponse is what a resource-management plugin answers to most
// CreateContainer requests: an annotation, environment, a device, a mount,
// a CDI device, rlimits, a sysctl, resources (cpuset, memory, unified), and
// an update and an eviction of other containers.
func typicalResponse() *nriv1beta1.CreateContainerResponse {
	r := plugin.NewAdjustment().
		AddAnnotation("cpu-manager.example.com/assigned", "2-3").
		AddEnv("GOMAXPROCS", "2").AddEnv("NVIDIA_VISIBLE_DEVICES", "0").RemoveEnv("DEBUG").
		AddDevice(&nriv1beta1.LinuxDevice{Path: "/dev/nvidia0", Type: "c", Major: 195, Minor: 0, FileMode: wrapperspb.UInt32(0o666)}).
		AddMount(&nriv1beta1.Mount{Source: "/srv/models", Destination: "/models", Type: "bind", Options: []string{"rbind", "ro"}}).
		AddCDIDevice(&nriv1beta1.CDIDevice{Name: "nvidia.com/gpu=0"}).
		AddRlimit("RLIMIT_NOFILE", 1048576, 1048576).AddRlimit("RLIMIT_MEMLOCK", 1<<30, 1<<30).
		SetLinuxSysctl("net.core.somaxconn", "4096").
		SetLinuxCPUSetCPUs("2-3").SetLinuxCPUSetMems("0").SetLinuxMemoryLimit(2<<30).
		AddLinuxUnified("memory.high", "1932735283").
		SetLinuxOomScoreAdj(-997).
		Response()
	r.Update = []*nriv1beta1.ContainerUpdate{plugin.NewUpdate(fixture.Container(1, 1).Id).SetLinuxCPUSetCPUs("0-1,4-7").Proto()}
	r.Evict = []*nriv1beta1.ContainerEviction{{ContainerId: fixture.Container(1, 2).Id, Reason: "preempted"}}
	return r
}

// BenchmarkResponse measures check.Response on accepted responses. The
// check runs on every container creation: it must not allocate.
func BenchmarkResponse(b *testing.B) {
	for _, c := range []struct {
		name string
		rsp  proto.Message
	}{
		{"typical", typicalResponse()},
		{"everything", mergeEverything(1)},
		{"whole-container", &nriv1beta1.CreateContainerResponse{Adjust: containerAsAdjustment(fixture.Container(1, 0))}},
		{"seccomp", seccomp(defaultSeccomp())},
	} {
		b.Run(c.name, func(b *testing.B) {
			if err := check.Response(c.rsp); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if check.Response(c.rsp) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}

// TestResponseAllocs pins the promise of BenchmarkResponse: accepting a
// response allocates nothing.
func TestResponseAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	for name, m := range map[string]proto.Message{
		"typical":    typicalResponse(),
		"everything": mergeEverything(1),
	} {
		if n := testing.AllocsPerRun(100, func() { _ = check.Response(m) }); n != 0 {
			t.Errorf("%s: %v allocations per accepted response, want 0", name, n)
		}
	}
}
