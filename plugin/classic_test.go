package plugin_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/stub"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/plugin/plugintest"
)

// The same plugin twice: classicInjector on classic NRI's pkg/stub
// (v1alpha1 types), sdkInjector on this SDK (v1beta1 types). Each line of
// one has its counterpart in the other; docs/migrating-classic-plugins.md
// shows them side by side.

type classicInjector struct{}

func (classicInjector) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	a := &api.ContainerAdjustment{}
	a.AddAnnotation("injector.example.com/pod", pod.GetName())
	a.RemoveAnnotation("io.kubernetes.container.hash")
	a.AddMount(&api.Mount{Destination: "/data", Source: "/srv/data", Type: "bind", Options: []string{"rbind", "ro"}})
	a.RemoveMount("/etc/tls")
	a.AddEnv("INJECTED_INTO", ctr.GetName())
	a.AddDevice(&api.LinuxDevice{Path: "/dev/gpu0", Type: "c", Major: 195, Minor: 0, FileMode: api.FileMode(os.FileMode(0o660))})
	a.AddCDIDevice(&api.CDIDevice{Name: "vendor.com/gpu=0"})
	a.AddRlimit("RLIMIT_NOFILE", 4096, 1024)
	a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/usr/local/bin/hook", Args: []string{"hook", "prestart"}}}})
	a.UpdateArgs([]string{"/bin/app", "--injected"})
	a.SetLinuxMemoryLimit(2 << 30)
	a.SetLinuxMemorySwap(2 << 30)
	a.SetLinuxCPUShares(2048)
	a.SetLinuxCPUQuota(200000)
	a.SetLinuxCPUSetCPUs("0-1")
	a.SetLinuxCPUSetMems("0")
	a.SetLinuxPidLimits(1000)
	a.AddLinuxHugepageLimit("2MB", 1<<30)
	a.AddLinuxUnified("memory.high", "1073741824")
	a.SetLinuxBlockIOClass("gold")
	a.SetLinuxRDTClass("gold")
	oom := 500
	a.SetLinuxOomScoreAdj(&oom)
	a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "network", Path: "/var/run/netns/injected"})
	a.SetLinuxSysctl("net.ipv4.ip_forward", "1")
	return a, nil, nil
}

type sdkInjector struct{}

func (sdkInjector) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	pod, ctr := req.GetPod(), req.GetContainer()
	a := plugin.NewAdjustment()
	a.AddAnnotation("injector.example.com/pod", pod.GetName())
	a.RemoveAnnotation("io.kubernetes.container.hash")
	a.AddMount(&nriv1beta1.Mount{Destination: "/data", Source: "/srv/data", Type: "bind", Options: []string{"rbind", "ro"}})
	a.RemoveMount("/etc/tls")
	a.AddEnv("INJECTED_INTO", ctr.GetName())
	a.AddDevice(&nriv1beta1.LinuxDevice{Path: "/dev/gpu0", Type: "c", Major: 195, Minor: 0, FileMode: wrapperspb.UInt32(0o660)})
	a.AddCDIDevice(&nriv1beta1.CDIDevice{Name: "vendor.com/gpu=0"})
	a.AddRlimit("RLIMIT_NOFILE", 4096, 1024)
	a.AddHooks(&nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/usr/local/bin/hook", Args: []string{"hook", "prestart"}}}})
	a.UpdateArgs([]string{"/bin/app", "--injected"})
	a.SetLinuxMemoryLimit(2 << 30)
	a.SetLinuxMemorySwap(2 << 30)
	a.SetLinuxCPUShares(2048)
	a.SetLinuxCPUQuota(200000)
	a.SetLinuxCPUSetCPUs("0-1")
	a.SetLinuxCPUSetMems("0")
	a.SetLinuxPidLimits(1000)
	a.AddLinuxHugepageLimit("2MB", 1<<30)
	a.AddLinuxUnified("memory.high", "1073741824")
	a.SetLinuxBlockIOClass("gold")
	a.SetLinuxRDTClass("gold")
	a.SetLinuxOomScoreAdj(500)
	a.AddOrReplaceNamespace(&nriv1beta1.LinuxNamespace{Type: "network", Path: "/var/run/netns/injected"})
	a.SetLinuxSysctl("net.ipv4.ip_forward", "1")
	return a.Response(), nil
}

type quietLogger struct{}

func (quietLogger) Debugf(context.Context, string, ...any) {}
func (quietLogger) Infof(context.Context, string, ...any)  {}
func (quietLogger) Warnf(context.Context, string, ...any)  {}
func (quietLogger) Errorf(context.Context, string, ...any) {}

var quiet sync.Once

// convert re-types a message through its wire form.
func convert[T proto.Message](t *testing.T, from proto.Message, to T) T {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(from)
	if err != nil {
		t.Fatalf("marshal %T: %v", from, err)
	}
	if err := proto.Unmarshal(b, to); err != nil {
		t.Fatalf("unmarshal %T: %v", to, err)
	}
	return to
}

// classicCreate runs p as a classic stub plugin against classic NRI's
// runtime side (pkg/adaptation) and returns the CreateContainer result.
func classicCreate(t *testing.T, p stub.Plugin, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) *nriv1beta1.ContainerAdjustment {
	t.Helper()
	quiet.Do(func() { nrilog.Set(quietLogger{}) })
	dir, err := os.MkdirTemp("", "nri-c-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "nri.sock")
	// syncFn runs once when the runtime starts (for pre-installed plugins),
	// then once per connecting plugin.
	synced := make(chan struct{}, 2)
	syncFn := func(ctx context.Context, cb adaptation.SyncCB) error {
		_, err := cb(ctx, nil, nil)
		if err != nil {
			t.Logf("classic synchronize: %v", err)
		}
		synced <- struct{}{}
		return err
	}
	updateFn := func(context.Context, []*adaptation.ContainerUpdate) ([]*adaptation.ContainerUpdate, error) {
		return nil, nil
	}
	r, err := adaptation.New("classic", "v0", syncFn, updateFn,
		adaptation.WithPluginPath(filepath.Join(dir, "plugins")),
		adaptation.WithPluginConfigPath(filepath.Join(dir, "conf")),
		adaptation.WithSocketPath(sock))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)

	s, err := stub.New(p, stub.WithPluginName("injector"), stub.WithPluginIdx("10"), stub.WithSocketPath(sock))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for range 2 {
		select {
		case <-synced:
		case <-time.After(plugintest.Wait):
			t.Fatal("the classic plugin did not synchronize")
		}
	}
	// The plugin joins the runtime's list right after its synchronization,
	// under the lock BlockPluginSync waits for.
	r.BlockPluginSync().Unblock()

	rsp, err := r.CreateContainer(context.Background(), &api.CreateContainerRequest{
		Pod:       convert(t, pod, &api.PodSandbox{}),
		Container: convert(t, ctr, &api.Container{}),
	})
	if err != nil {
		t.Fatalf("classic CreateContainer: %v", err)
	}
	return convert(t, rsp.GetAdjust(), &nriv1beta1.ContainerAdjustment{})
}

// TestClassicParity: a classic pkg/stub plugin against classic NRI and its
// SDK rewrite against nri-grpc produce the same CreateContainer adjustment
// for the same container, compared after converting v1alpha1 to v1beta1
// through the wire form.
func TestClassicParity(t *testing.T) {
	pod, ctr := plugintest.Pod(0), plugintest.Container(0, 0)
	classic := classicCreate(t, classicInjector{}, pod, ctr)

	env := plugintest.New(t)
	env.Start(t, sdkInjector{}, plugin.WithName("injector"), plugin.WithIndex("10"))
	env.RunPodSandbox(t, pod)
	ours := env.CreateContainer(t, pod, ctr).GetAdjust()

	if len(classic.GetMounts()) == 0 || classic.GetLinux().GetResources().GetMemory().GetLimit() == nil {
		t.Fatalf("the classic plugin's adjustment is incomplete: %v", classic)
	}
	// Classic NRI's merge leaves an empty RDT message behind; it means
	// nothing (nri-grpc sends only what changed).
	if l := classic.GetLinux(); l != nil && l.Rdt != nil && proto.Size(l.Rdt) == 0 {
		l.Rdt = nil
	}
	if !proto.Equal(classic, ours) {
		m := prototext.MarshalOptions{Multiline: true}
		t.Errorf("adjustments differ\nclassic NRI:\n%s\nnri-grpc:\n%s", m.Format(classic), m.Format(ours))
	}
}
