package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v1alpha1 "github.com/containerd/nri/pkg/api"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/validate"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// TestClassicComparison drives the same steps on the two classic paths —
// classic NRI driving classic plugins directly (classic-direct), and
// classic NRI driving the same plugins through nri-grpc's runtime side,
// server and plugin side (classic-bridged) — and asserts that the plugins
// see the same calls (method and request, in order) and the runtime gets
// the same raw results, errors and updates to apply. The differences are
// asserted explicitly, each where it shows:
//
// Always (compareGeneric):
//   - the classic runtime's plugin list: the real plugins on the direct
//     path; behind the bridge one plugin, 00-nri-grpc, invoked once for
//     every lifecycle event (DESIGN §5a);
//   - Configure advertises the runtime's NRI version: classic NRI's build
//     version directly, nri-grpc's protocol (v1beta1 ...) behind the bridge;
//   - validators get classic NRI's merge skeleton of empty messages as the
//     adjustment directly, only what changed behind the bridge (§5a: no
//     empty sub-messages).
//
// Per case (the differ functions below):
//   - errors: classic NRI's text directly; behind the bridge nri-grpc's
//     status (code, ErrorInfo reason, a message naming the plugin), which
//     the classic runtime returns unchanged;
//   - notification and teardown errors: classic NRI fails the event and
//     stops delivery; behind the bridge they never fail and delivery goes
//     on (DESIGN §5.2, docs/bridge.md);
//   - the bridge's reply carries env and device removal markers, which the
//     classic runtime's merge drops as it drops a direct plugin's; pid limits
//     in updates are ignored on both paths (§5a limitations);
//   - classic NRI's reply holds both k and -k (annotations, sysctl, net
//     devices) and a pure removal leaves the request later plugins see
//     unchanged; nri-grpc's never holds both and applies the removal (§5.5,
//     docs/PROTOCOL.md §9), as does its namespace override (a conflict in
//     classic NRI);
//   - required plugins: nri-grpc refuses a creation before any plugin gets
//     it, classic NRI's default validator after (§5.3);
//   - unsolicited and synchronization-time updates reach the runtime from
//     the bridge, asynchronously, without the failed list (docs/bridge.md);
//   - a plugin that does not answer: classic NRI times it out and drops it;
//     behind the bridge the runtime's one timeout is the budget of the whole
//     fan-out: the plugin is skipped, not disconnected, and later plugins are
//     skipped too (§5a);
//   - a solicited update that leaves the target as requested: the bridge
//     answers no update of the target, so the classic runtime's tail is nil
//     (classic answers the requested resources): the same resources apply;
//   - NRI stopping: classic NRI tells its plugins nothing; nri-grpc sends the
//     classic, reason-less Shutdown.
func TestClassicComparison(t *testing.T) {
	for _, c := range comparisonCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dr := runComparison(t, c, false)
			br := runComparison(t, c, true)
			if len(dr.calls) == 0 || len(dr.results) == 0 {
				t.Fatalf("the case drove nothing: %d calls, %d results", len(dr.calls), len(dr.results))
			}
			t.Logf("%d plugin calls, %d runtime results, %d applied requests on each path", len(dr.calls), len(dr.results), len(dr.applied))
			compareGeneric(t, dr, br)
			if c.differ != nil {
				c.differ(t, dr, br)
			}
			compareRest(t, dr, br)
		})
	}
}

// cmpCase is one comparison: run drives an env, differ asserts the
// documented differences and neutralizes what it asserted (so that the
// rest must be equal).
type cmpCase struct {
	name   string
	opts   conformance.Options
	run    func(d *driver)
	differ func(t *testing.T, dr, br *cmpRecord)
}

// cmpRecord is what one path showed: the plugins' calls, the runtime's
// raw results, the plugins the runtime invoked and their replies, and the
// updates the runtime was asked to apply.
type cmpRecord struct {
	path        string
	calls       []conformance.Call
	results     []runtimeResult
	invocations []string
	replies     []pluginReply
	applied     []conformance.Applied
}

// driver drives one env the same way on both paths.
type driver struct {
	t   *testing.T
	env *classicEnv
	ctx context.Context
}

func runComparison(t *testing.T, c cmpCase, bridged bool) *cmpRecord {
	t.Helper()
	mode := modeDirect
	if bridged {
		mode = modeBridged
	}
	env, err := newClassicEnv(t, c.opts.WithDefaults(), mode)
	if err != nil {
		t.Fatal(err)
	}
	env.rec.reset()
	ctx, cancel := context.WithTimeout(context.Background(), conformance.Wait)
	defer cancel()
	c.run(&driver{t: t, env: env, ctx: ctx})
	results, invocations, replies := env.rec.snapshot()
	name := map[bool]string{false: "classic-direct", true: "classic-bridged"}[bridged]
	return &cmpRecord{path: name, calls: env.calls.Calls(), results: results, invocations: invocations, replies: replies, applied: env.applied.All()}
}

// start starts plugin idx-name, configured by set.
func (d *driver) start(idx, name string, set func(*conformance.PluginSpec)) conformance.Plugin {
	d.t.Helper()
	spec := &conformance.PluginSpec{Index: idx, Name: name}
	if set != nil {
		set(spec)
	}
	return d.env.StartPlugin(d.t, spec)
}

func (d *driver) rt() conformance.Runtime { return d.env.Runtime() }

// event drives one lifecycle event; its result is in the env's record.
func (d *driver) event(ev string, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) error {
	rt, ctx := d.rt(), d.ctx
	p, c := clonePod(pod), cloneCtr(ctr)
	var err error
	switch ev {
	case "RunPodSandbox":
		err = rt.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: p})
	case "UpdatePodSandbox":
		err = rt.UpdatePodSandbox(ctx, &nriv1beta1.UpdatePodSandboxRequest{Pod: p,
			OverheadLinuxResources: &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(1 << 20)}},
			LinuxResources:         &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Shares: wrapperspb.UInt64(512)}}})
	case "PostUpdatePodSandbox":
		_, err = rt.PostUpdatePodSandbox(ctx, &nriv1beta1.PostUpdatePodSandboxRequest{Pod: p})
	case "StopPodSandbox":
		_, err = rt.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: p})
	case "RemovePodSandbox":
		_, err = rt.RemovePodSandbox(ctx, &nriv1beta1.RemovePodSandboxRequest{Pod: p})
	case "CreateContainer":
		_, err = rt.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: p, Container: c})
	case "PostCreateContainer":
		_, err = rt.PostCreateContainer(ctx, &nriv1beta1.PostCreateContainerRequest{Pod: p, Container: c})
	case "StartContainer":
		err = rt.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: p, Container: c})
	case "PostStartContainer":
		_, err = rt.PostStartContainer(ctx, &nriv1beta1.PostStartContainerRequest{Pod: p, Container: c})
	case "UpdateContainer":
		_, err = rt.UpdateContainer(ctx, &nriv1beta1.UpdateContainerRequest{Pod: p, Container: c, LinuxResources: requested()})
	case "PostUpdateContainer":
		_, err = rt.PostUpdateContainer(ctx, &nriv1beta1.PostUpdateContainerRequest{Pod: p, Container: c})
	case "StopContainer":
		_, err = rt.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: p, Container: c})
	case "RemoveContainer":
		_, err = rt.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: p, Container: c})
	default:
		d.t.Fatalf("unknown event %s", ev)
	}
	return err
}

var allEvents = []string{
	"RunPodSandbox", "UpdatePodSandbox", "PostUpdatePodSandbox",
	"CreateContainer", "PostCreateContainer", "StartContainer", "PostStartContainer",
	"UpdateContainer", "PostUpdateContainer", "StopContainer", "RemoveContainer",
	"StopPodSandbox", "RemovePodSandbox",
}

// lifecycle drives every lifecycle event; results are compared, not
// asserted here.
func (d *driver) lifecycle(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) {
	for _, ev := range allEvents {
		_ = d.event(ev, pod, ctr)
	}
}

// waitApplied waits until the runtime was asked to apply n requests (the
// bridge relays them asynchronously).
func (d *driver) waitApplied(n int) {
	d.t.Helper()
	if err := d.env.applied.Wait(d.ctx, func(a []conformance.Applied) bool { return len(a) >= n }); err != nil {
		d.t.Fatal(err)
	}
}

func clonePod(p *nriv1beta1.PodSandbox) *nriv1beta1.PodSandbox {
	return proto.Clone(p).(*nriv1beta1.PodSandbox)
}
func cloneCtr(c *nriv1beta1.Container) *nriv1beta1.Container {
	if c == nil {
		return nil
	}
	return proto.Clone(c).(*nriv1beta1.Container)
}

// cmpPod and cmpCtr are a pod and a container with something in every
// part plugins adjust.
func cmpPod(id string) *nriv1beta1.PodSandbox {
	return &nriv1beta1.PodSandbox{Id: id, Name: id, Uid: "uid-" + id, Namespace: "default",
		Labels: map[string]string{"app": "demo"}, Annotations: map[string]string{"pod": "yes"}}
}

func cmpCtr(pod, id string) *nriv1beta1.Container {
	return &nriv1beta1.Container{
		Id: id, PodSandboxId: pod, Name: id, State: nriv1beta1.ContainerState_CONTAINER_STATE_CREATED,
		Labels: map[string]string{"tier": "web"}, Annotations: map[string]string{"orig": "1"},
		Args: []string{"/bin/app", "--serve"}, Env: []string{"APP_ENV=production", "KEEP=1"},
		Mounts: []*nriv1beta1.Mount{{Destination: "/data", Type: "bind", Source: "/host/data", Options: []string{"rbind", "rw"}}},
		Linux: &nriv1beta1.LinuxContainer{
			Namespaces: []*nriv1beta1.LinuxNamespace{{Type: "network", Path: "/var/run/netns/demo"}},
			Devices:    []*nriv1beta1.LinuxDevice{{Path: "/dev/foo", Type: "c", Major: 1, Minor: 2}},
			Resources: &nriv1beta1.LinuxResources{
				Cpu:    &nriv1beta1.LinuxCPU{Shares: wrapperspb.UInt64(1024), Quota: wrapperspb.Int64(50000), Period: wrapperspb.UInt64(100000)},
				Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(1 << 30)},
			},
			CgroupsPath: "/kubepods/demo",
		},
	}
}

// requested are the resources every UpdateContainer asks for.
func requested() *nriv1beta1.LinuxResources {
	return &nriv1beta1.LinuxResources{
		Cpu:    &nriv1beta1.LinuxCPU{Shares: wrapperspb.UInt64(2048), Cpus: "0-3"},
		Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(2 << 30), DisableOomKiller: wrapperspb.Bool(false)},
	}
}

func linuxAdj(l *nriv1beta1.LinuxContainerAdjustment) *nriv1beta1.ContainerAdjustment {
	return &nriv1beta1.ContainerAdjustment{Linux: l}
}

func resAdj(r *nriv1beta1.LinuxResources) *nriv1beta1.ContainerAdjustment {
	return linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Resources: r})
}

// adjustSubjects are adjustments of every adjustable field, one per
// subject, as plugin would make them.
func adjustSubjects(plugin string) []struct {
	name   string
	adjust *nriv1beta1.ContainerAdjustment
} {
	return []struct {
		name   string
		adjust *nriv1beta1.ContainerAdjustment
	}{
		{"annotations", &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"key": plugin}}},
		{"annotation removal", &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"-orig": ""}}},
		{"mounts", &nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Destination: "/mnt/" + plugin, Type: "bind", Source: "/src", Options: []string{"ro"}}}}},
		{"mount removal", &nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Destination: "-/data"}}}},
		{"env", &nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "FROM", Value: plugin}, {Key: "KEEP", Value: "2"}}}},
		{"env removal", &nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "-APP_ENV"}}}},
		{"args", &nriv1beta1.ContainerAdjustment{Args: []string{"/bin/other", plugin}}},
		{"hooks", &nriv1beta1.ContainerAdjustment{Hooks: &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/bin/" + plugin}},
			Poststop: []*nriv1beta1.Hook{{Path: "/bin/cleanup", Args: []string{"cleanup", "-v"}, Env: []string{"X=1"}}}}}},
		{"rlimits", &nriv1beta1.ContainerAdjustment{Rlimits: []*nriv1beta1.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 456, Soft: 123}}}},
		{"CDI devices", &nriv1beta1.ContainerAdjustment{CdiDevices: []*nriv1beta1.CDIDevice{{Name: "vendor0.com/dev=dev0"}}}},
		{"devices", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "/dev/test", Type: "c", Major: 313, Minor: 100,
			FileMode: wrapperspb.UInt32(0o660), Uid: wrapperspb.UInt32(0)}}})},
		{"device removal", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "-/dev/foo"}}})},
		{"namespaces", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Namespaces: []*nriv1beta1.LinuxNamespace{{Type: "cgroup", Path: "/var/run/cgroupns/x"}}})},
		{"sysctl", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"net.core.somaxconn": "256"}})},
		{"net devices", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{NetDevices: map[string]*nriv1beta1.LinuxNetDevice{"hostIf": {Name: "containerIf"}}})},
		{"scheduler", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Scheduler: &nriv1beta1.LinuxScheduler{
			Policy: nriv1beta1.LinuxSchedulerPolicy_LINUX_SCHEDULER_POLICY_FIFO, Priority: 10,
			Flags: []nriv1beta1.LinuxSchedulerFlag{nriv1beta1.LinuxSchedulerFlag_LINUX_SCHEDULER_FLAG_RESET_ON_FORK}}})},
		{"memory policy", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{MemoryPolicy: &nriv1beta1.LinuxMemoryPolicy{
			Mode: nriv1beta1.MpolMode_MPOL_MODE_INTERLEAVE, Nodes: "0,1", Flags: []nriv1beta1.MpolFlag{nriv1beta1.MpolFlag_MPOL_FLAG_STATIC_NODES}}})},
		{"I/O priority", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{IoPriority: &nriv1beta1.LinuxIOPriority{Class: nriv1beta1.IOPrioClass_IO_PRIO_CLASS_RT, Priority: 5}})},
		{"cgroups path", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{CgroupsPath: "/" + plugin})},
		{"OOM score adjustment", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{OomScoreAdj: wrapperspb.Int64(-999)})},
		{"seccomp policy", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{SeccompPolicy: &nriv1beta1.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW",
			ListenerPath: "/run/notify.sock", Syscalls: []*nriv1beta1.LinuxSyscall{{Names: []string{"sched_getaffinity"}, Action: "SCMP_ACT_NOTIFY"}}}})},
		{"RDT", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Rdt: &nriv1beta1.LinuxRdt{ClosId: wrapperspb.String(plugin),
			Schemata: &nriv1beta1.OptionalRepeatedString{Value: []string{"L3:0=ff"}}, EnableMonitoring: wrapperspb.Bool(true)}})},
		{"CPU resources", resAdj(&nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Shares: wrapperspb.UInt64(123), Quota: wrapperspb.Int64(4560),
			Period: wrapperspb.UInt64(7890), RealtimeRuntime: wrapperspb.Int64(321), RealtimePeriod: wrapperspb.UInt64(654), Cpus: "0-1", Mems: "0"}})},
		{"memory resources", resAdj(&nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(1234000), Reservation: wrapperspb.Int64(4000),
			Swap: wrapperspb.Int64(34000), Swappiness: wrapperspb.UInt64(60), DisableOomKiller: wrapperspb.Bool(true), UseHierarchy: wrapperspb.Bool(false)}})},
		{"class resources", resAdj(&nriv1beta1.LinuxResources{RdtClass: wrapperspb.String(plugin), BlockioClass: wrapperspb.String(plugin)})},
		{"hugepage limits", resAdj(&nriv1beta1.LinuxResources{HugepageLimits: []*nriv1beta1.HugepageLimit{{PageSize: "2MB", Limit: 4096}}})},
		{"unified resources", resAdj(&nriv1beta1.LinuxResources{Unified: map[string]string{"memory.high": "1000000"}})},
		{"device cgroup rules", resAdj(&nriv1beta1.LinuxResources{Devices: []*nriv1beta1.LinuxDeviceCgroup{{Allow: true, Type: "c",
			Major: wrapperspb.Int64(313), Minor: wrapperspb.Int64(100), Access: "rwm"}}})},
		{"pids limit", resAdj(&nriv1beta1.LinuxResources{Pids: &nriv1beta1.LinuxPids{Limit: 77}})},
	}
}

func onCreate(f func(req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error)) func(*conformance.PluginSpec) {
	return func(p *conformance.PluginSpec) {
		p.OnCreateContainer = func(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return f(req)
		}
	}
}

func adjusting(a *nriv1beta1.ContainerAdjustment) func(*conformance.PluginSpec) {
	return onCreate(func(*nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
		return &nriv1beta1.CreateContainerResponse{Adjust: proto.Clone(a).(*nriv1beta1.ContainerAdjustment)}, nil
	})
}

func update(id string, r *nriv1beta1.LinuxResources) *nriv1beta1.ContainerUpdate {
	return &nriv1beta1.ContainerUpdate{ContainerId: id, Linux: &nriv1beta1.LinuxContainerUpdate{Resources: r}}
}

func cpus(c string) *nriv1beta1.LinuxResources {
	return &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: c}}
}

func comparisonCases() []cmpCase {
	var cases []cmpCase
	pod, ctr := cmpPod("pod0"), cmpCtr("pod0", "ctr0")

	// Every field one plugin can adjust.
	for _, s := range adjustSubjects("00-test") {
		c := cmpCase{name: "single plugin adjusts " + s.name, run: func(d *driver) {
			d.start("00", "test", adjusting(s.adjust))
			d.start("10", "observer", nil) // sees the adjusted container
			_ = d.event("RunPodSandbox", pod, nil)
			_ = d.event("CreateContainer", pod, ctr)
		}}
		switch s.name {
		case "annotation removal":
			c.differ = annotationRemovalSeen
		case "env removal", "device removal":
			marker := map[string]string{"env removal": "-APP_ENV", "device removal": "-/dev/foo"}[s.name]
			c.differ = func(t *testing.T, dr, br *cmpRecord) { removalMarkerDropped(t, dr, br, marker) }
		}
		cases = append(cases, c)
	}

	// Several plugins: strict order, every event, each seeing the changes
	// of the earlier ones.
	cases = append(cases, cmpCase{name: "multiple plugins in index order see each other's changes", run: func(d *driver) {
		for _, id := range [][2]string{{"20", "test"}, {"99", "foo"}, {"00", "bar"}} {
			d.start(id[0], id[1], adjusting(&nriv1beta1.ContainerAdjustment{
				Annotations: map[string]string{"by-" + id[1]: id[0]},
				Env:         []*nriv1beta1.KeyValue{{Key: "BY_" + strings.ToUpper(id[1]), Value: id[0]}},
			}))
		}
		d.lifecycle(pod, ctr)
	}})
	cases = append(cases, cmpCase{name: "subscriptions are honored", run: func(d *driver) {
		d.start("10", "pods", func(p *conformance.PluginSpec) {
			p.Events = []nriv1beta1.Event{nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX}
		})
		d.start("20", "posts", func(p *conformance.PluginSpec) {
			p.Events = []nriv1beta1.Event{nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, nriv1beta1.Event_EVENT_POST_START_CONTAINER,
				nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER, nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX}
		})
		d.lifecycle(pod, ctr)
	}})

	// Conflicts.
	for _, s := range []struct{ name, conflict string }{
		{"annotations", "Annotations key"}, {"mounts", "Mounts /mnt/x"}, {"env", "Env FROM"}, {"devices", "Devices /dev/test"},
		{"sysctl", "Sysctl net.core.somaxconn"}, {"CPU resources", "CPUShares"}, {"cgroups path", "CgroupsPath"},
	} {
		a := map[string]*nriv1beta1.ContainerAdjustment{}
		for _, sub := range adjustSubjects("x") {
			a[sub.name] = sub.adjust
		}
		cases = append(cases, cmpCase{name: "conflicting " + s.name, run: func(d *driver) {
			d.start("10", "foo", adjusting(a[s.name]))
			d.start("00", "bar", adjusting(a[s.name]))
			_ = d.event("CreateContainer", pod, ctr)
			_ = d.event("RunPodSandbox", cmpPod("pod1"), nil) // both plugins still get events
		}, differ: func(t *testing.T, dr, br *cmpRecord) {
			bridgedErrors(t, dr, br, "CreateContainer", codes.FailedPrecondition, "DISPATCH_OUTCOME_CONFLICT",
				fmt.Sprintf(`plugins "10-foo" and "00-bar" both tried to set %s`, s.conflict))
		}})
	}

	// Remove-then-add overrides.
	for _, s := range []struct {
		name          string
		remove, set   *nriv1beta1.ContainerAdjustment
		keyAndMarker  bool // classic NRI's reply keeps both k and -k
		marker, field string
	}{
		{"annotation", &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"k": "bar"}},
			&nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"-k": "", "k": "foo"}}, true, "-k", "annotations"},
		{"mount", &nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Destination: "/m", Source: "/bar"}}},
			&nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Destination: "-/m"}, {Destination: "/m", Source: "/foo"}}}, false, "", ""},
		{"env", &nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "K", Value: "bar"}}},
			&nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "-K"}, {Key: "K", Value: "foo"}}}, false, "", ""},
		{"device", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "/dev/x", Type: "c", Major: 1, Minor: 1}}}),
			linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "-/dev/x"}, {Path: "/dev/x", Type: "c", Major: 1, Minor: 2}}}), false, "", ""},
		{"sysctl", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"net.x": "1"}}),
			linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"-net.x": "", "net.x": "2"}}), true, "-net.x", "sysctl"},
		{"net device", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{NetDevices: map[string]*nriv1beta1.LinuxNetDevice{"eth1": {Name: "bar"}}}),
			linuxAdj(&nriv1beta1.LinuxContainerAdjustment{NetDevices: map[string]*nriv1beta1.LinuxNetDevice{"-eth1": {}, "eth1": {Name: "foo"}}}), true, "-eth1", "net_devices"},
	} {
		c := cmpCase{name: "override of a " + s.name, run: func(d *driver) {
			d.start("00", "bar", adjusting(s.remove))
			d.start("10", "foo", adjusting(s.set))
			d.start("20", "observer", nil)
			_ = d.event("CreateContainer", pod, ctr)
		}}
		if s.keyAndMarker {
			c.differ = bothKeyAndMarker(s.field, s.marker[1:], s.marker)
		}
		cases = append(cases, c)
	}

	{
		bar := &nriv1beta1.ContainerAdjustment{Args: []string{"/bin/bar"}}
		foo := &nriv1beta1.ContainerAdjustment{Args: []string{"", "/bin/foo", "--twice"}}
		cases = append(cases, cmpCase{name: "override of the arguments", run: func(d *driver) {
			d.start("00", "bar", adjusting(bar))
			d.start("10", "foo", adjusting(foo))
			_ = d.event("CreateContainer", pod, ctr)
		}})
	}
	cases = append(cases, cmpCase{name: "hooks of several plugins", run: func(d *driver) {
		for _, id := range [][2]string{{"10", "foo"}, {"00", "bar"}} {
			d.start(id[0], id[1], adjusting(&nriv1beta1.ContainerAdjustment{Hooks: &nriv1beta1.Hooks{
				Prestart: []*nriv1beta1.Hook{{Path: "/bin/" + id[1]}}, CreateRuntime: []*nriv1beta1.Hook{{Path: "/bin/rt-" + id[1]}}}}))
		}
		_ = d.event("CreateContainer", pod, ctr)
	}})
	cases = append(cases, cmpCase{name: "override of a namespace", run: func(d *driver) {
		d.start("00", "bar", adjusting(linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Namespaces: []*nriv1beta1.LinuxNamespace{{Type: "cgroup", Path: "/bar"}}})))
		d.start("10", "foo", adjusting(linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Namespaces: []*nriv1beta1.LinuxNamespace{{Type: "-cgroup"}, {Type: "cgroup", Path: "/foo"}}})))
		_ = d.event("CreateContainer", pod, ctr)
	}, differ: namespaceOverride})
	// A pure removal of what an earlier plugin set.
	for _, s := range []struct {
		name        string
		set, remove *nriv1beta1.ContainerAdjustment
		field       string // both k and -k in classic NRI's reply
	}{
		{"an annotation", &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"k": "v"}}, &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"-k": ""}}, "annotations"},
		{"an env variable", &nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "K", Value: "v"}}}, &nriv1beta1.ContainerAdjustment{Env: []*nriv1beta1.KeyValue{{Key: "-K"}}}, ""},
		{"a mount", &nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Source: "/s", Destination: "/d"}}}, &nriv1beta1.ContainerAdjustment{Mounts: []*nriv1beta1.Mount{{Destination: "-/d"}}}, ""},
		{"a device", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "/dev/x", Type: "c", Major: 1, Minor: 1}}}),
			linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Devices: []*nriv1beta1.LinuxDevice{{Path: "-/dev/x"}}}), ""},
		{"a sysctl", linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"net.x": "1"}}), linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Sysctl: map[string]string{"-net.x": ""}}), "sysctl"},
	} {
		c := cmpCase{name: "removal of " + s.name + " an earlier plugin set", run: func(d *driver) {
			d.start("00", "setter", adjusting(s.set))
			d.start("10", "remover", adjusting(s.remove))
			d.start("20", "observer", nil)
			_ = d.event("CreateContainer", pod, ctr)
		}}
		if s.field != "" {
			key := map[string]string{"annotations": "k", "sysctl": "net.x"}[s.field]
			c.differ = both(bothKeyAndMarker(s.field, key, key), removalSeenLater("20-observer", s.field, key))
		}
		cases = append(cases, c)
	}

	// Validation.
	cases = append(cases, cmpCase{name: "validators see the adjustment, its owners and the plugins", run: func(d *driver) {
		d.start("00", "adjuster", adjusting(&nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"key": "v"},
			Env: []*nriv1beta1.KeyValue{{Key: "E", Value: "1"}}, Linux: &nriv1beta1.LinuxContainerAdjustment{CgroupsPath: "/x"}}))
		d.start("10", "bystander", func(p *conformance.PluginSpec) { p.Events = []nriv1beta1.Event{nriv1beta1.Event_EVENT_RUN_POD_SANDBOX} })
		d.start("20", "validator", func(p *conformance.PluginSpec) {
			p.OnValidate = func(context.Context, *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
				return &nriv1beta1.ValidateContainerAdjustmentResponse{}, nil
			}
		})
		_ = d.event("RunPodSandbox", pod, nil)
		_ = d.event("CreateContainer", pod, ctr)
	}})
	cases = append(cases, cmpCase{name: "a validator's rejection fails the creation", run: func(d *driver) {
		d.start("00", "adjuster", adjusting(&nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"no-no": "v"}}))
		d.start("20", "validator", func(p *conformance.PluginSpec) {
			p.OnValidate = func(context.Context, *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
				return &nriv1beta1.ValidateContainerAdjustmentResponse{Reject: true, Reason: "no-no is forbidden"}, nil
			}
		})
		_ = d.event("CreateContainer", pod, ctr)
	}, differ: func(t *testing.T, dr, br *cmpRecord) {
		bridgedErrors(t, dr, br, "CreateContainer", codes.FailedPrecondition, "DISPATCH_OUTCOME_REJECTED",
			`validator "20-validator" rejected container adjustment, reason: no-no is forbidden`)
	}})
	cases = append(cases, cmpCase{name: "the default validator rejects OCI hook injection",
		opts: conformance.Options{Validator: validate.Config{RejectOCIHookAdjustment: true}}, run: func(d *driver) {
			d.start("00", "hooker", adjusting(&nriv1beta1.ContainerAdjustment{Hooks: &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/bin/sh"}}}}))
			_ = d.event("CreateContainer", pod, ctr)
		}, differ: func(t *testing.T, dr, br *cmpRecord) {
			bridgedErrors(t, dr, br, "CreateContainer", codes.FailedPrecondition, "DISPATCH_OUTCOME_REJECTED",
				`plugin "00-hooker" attempted restricted OCI hook injection`)
		}})
	cases = append(cases, cmpCase{name: "the default validator's required plugins",
		opts: conformance.Options{Validator: validate.Config{RequiredPlugins: []string{"gpu"}}}, run: func(d *driver) {
			d.start("00", "other", nil)
			_ = d.event("CreateContainer", pod, ctr)
			d.start("10", "gpu", nil)
			_ = d.event("CreateContainer", pod, cmpCtr("pod0", "ctr1"))
		}, differ: requiredUpfront})

	// Updates.
	cases = append(cases, cmpCase{name: "updates of other containers during creation", run: func(d *driver) {
		d.start("00", "bar", onCreate(func(req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			if req.GetContainer().GetId() != "ctr1" {
				return nil, nil
			}
			return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{update("ctr0", cpus("2-3"))}}, nil
		}))
		d.start("10", "foo", onCreate(func(req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			if req.GetContainer().GetId() != "ctr1" {
				return nil, nil
			}
			u := update("ctr0", &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(1 << 20)},
				HugepageLimits: []*nriv1beta1.HugepageLimit{{PageSize: "2MB", Limit: 1}}, Unified: map[string]string{"memory.high": "b"},
				RdtClass: wrapperspb.String("gold")})
			return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{u, update("ctr9", cpus("7"))}}, nil
		}))
		_ = d.event("CreateContainer", pod, ctr)
		_ = d.event("CreateContainer", pod, cmpCtr("pod0", "ctr1"))
	}})
	cases = append(cases, cmpCase{name: "an update with ignore_failure", run: func(d *driver) {
		d.start("00", "a", onCreate(func(*nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			u := update("ctr8", cpus("1"))
			u.IgnoreFailure = true
			return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{u, update("ctr9", cpus("1"))}}, nil
		}))
		d.start("10", "b", onCreate(func(*nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			u := update("ctr9", &nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Limit: wrapperspb.Int64(5)}, Cpu: &nriv1beta1.LinuxCPU{Cpus: "2"}})
			u.IgnoreFailure = true
			return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{u}}, nil
		}))
		_ = d.event("CreateContainer", pod, ctr)
	}})
	cases = append(cases, cmpCase{name: "a solicited update repeating the requested resources", run: func(d *driver) {
		d.start("00", "same", func(p *conformance.PluginSpec) {
			p.OnUpdateContainer = func(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
				return &nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{update(req.GetContainer().GetId(), cpus(requested().GetCpu().GetCpus()))}}, nil
			}
		})
		_ = d.event("UpdateContainer", pod, ctr)
	}, differ: repeatedRequest})
	cases = append(cases, cmpCase{name: "conflicting updates during creation", run: func(d *driver) {
		for _, id := range [][2]string{{"10", "foo"}, {"00", "bar"}} {
			d.start(id[0], id[1], onCreate(func(*nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{update("ctr9", cpus(id[0]))}}, nil
			}))
		}
		_ = d.event("CreateContainer", pod, ctr)
	}, differ: func(t *testing.T, dr, br *cmpRecord) {
		bridgedErrors(t, dr, br, "CreateContainer", codes.FailedPrecondition, "DISPATCH_OUTCOME_CONFLICT", `plugins "10-foo" and "00-bar" both tried to set CPUSetCPUs`)
	}})
	solicited := func(target bool) func(d *driver) {
		return func(d *driver) {
			d.start("00", "first", func(p *conformance.PluginSpec) {
				p.OnUpdateContainer = func(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
					ups := []*nriv1beta1.ContainerUpdate{update("ctr9", cpus("5"))}
					if target {
						ups = append(ups, update(req.GetContainer().GetId(), &nriv1beta1.LinuxResources{Cpu: &nriv1beta1.LinuxCPU{Cpus: "7", Quota: wrapperspb.Int64(1000)}}))
					}
					return &nriv1beta1.UpdateContainerResponse{Update: ups}, nil
				}
			})
			d.start("10", "second", func(p *conformance.PluginSpec) {
				p.OnUpdateContainer = func(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
					if !target {
						return nil, nil
					}
					return &nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{update(req.GetContainer().GetId(),
						&nriv1beta1.LinuxResources{Memory: &nriv1beta1.LinuxMemory{Swap: wrapperspb.Int64(5)}, Unified: map[string]string{"memory.low": "y"}})}}, nil
				}
			})
			_ = d.event("UpdateContainer", pod, ctr)
			_ = d.event("PostUpdateContainer", pod, ctr)
		}
	}
	cases = append(cases, cmpCase{name: "solicited updates of the target and another container", run: solicited(true)})
	cases = append(cases, cmpCase{name: "solicited update leaving the target unchanged (nil tail)", run: solicited(false)})
	cases = append(cases, cmpCase{name: "conflicting solicited updates", run: func(d *driver) {
		for _, id := range [][2]string{{"10", "foo"}, {"00", "bar"}} {
			d.start(id[0], id[1], func(p *conformance.PluginSpec) {
				p.OnUpdateContainer = func(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
					return &nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{update(req.GetContainer().GetId(),
						&nriv1beta1.LinuxResources{RdtClass: wrapperspb.String(id[1])})}}, nil
				}
			})
		}
		_ = d.event("UpdateContainer", pod, ctr)
	}, differ: func(t *testing.T, dr, br *cmpRecord) {
		bridgedErrors(t, dr, br, "UpdateContainer", codes.FailedPrecondition, "DISPATCH_OUTCOME_CONFLICT", `plugins "10-foo" and "00-bar" both tried to set RdtClass`)
	}})
	cases = append(cases, cmpCase{name: "updates at StopContainer", run: func(d *driver) {
		d.start("00", "a", func(p *conformance.PluginSpec) {
			p.OnStopContainer = func(context.Context, *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
				return &nriv1beta1.StopContainerResponse{Update: []*nriv1beta1.ContainerUpdate{update("ctr9", cpus("0-7"))}}, nil
			}
		})
		_ = d.event("StopContainer", pod, ctr)
		_ = d.event("RemoveContainer", pod, ctr)
	}})
	cases = append(cases, cmpCase{name: "conflicting updates at StopContainer", run: func(d *driver) {
		for _, id := range [][2]string{{"00", "a"}, {"10", "b"}} {
			d.start(id[0], id[1], func(p *conformance.PluginSpec) {
				p.OnStopContainer = func(context.Context, *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
					return &nriv1beta1.StopContainerResponse{Update: []*nriv1beta1.ContainerUpdate{update("ctr9", cpus(id[0]))}}, nil
				}
			})
		}
		d.start("20", "c", nil)
		_ = d.event("StopContainer", pod, ctr)
	}, differ: teardownGoesOn("StopContainer", "20-c", `plugins "10-b" and "00-a" both tried to set CPUSetCPUs`)})
	cases = append(cases, cmpCase{name: "pid limits in updates", run: func(d *driver) {
		d.start("00", "pids", func(p *conformance.PluginSpec) {
			p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{update("ctr9", &nriv1beta1.LinuxResources{
					Pids: &nriv1beta1.LinuxPids{Limit: 77}, Cpu: &nriv1beta1.LinuxCPU{Cpus: "1"}})}}, nil
			}
			p.OnUpdateContainer = func(_ context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
				return &nriv1beta1.UpdateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{update(req.GetContainer().GetId(), &nriv1beta1.LinuxResources{
					Pids: &nriv1beta1.LinuxPids{Limit: 88}, Cpu: &nriv1beta1.LinuxCPU{Cpus: "2"}})}}, nil
			}
		})
		_ = d.event("CreateContainer", pod, ctr)
		_ = d.event("UpdateContainer", pod, ctr)
	}, differ: pidsIgnored})
	cases = append(cases, cmpCase{name: "unsolicited updates", opts: conformance.Options{FailUpdates: []string{"ctr1"}}, run: func(d *driver) {
		p := d.start("00", "test", nil)
		_ = d.event("RunPodSandbox", pod, nil)
		_ = d.event("CreateContainer", pod, ctr)
		_ = d.event("CreateContainer", pod, cmpCtr("pod0", "ctr1"))
		failed, _, err := p.UpdateContainers(d.ctx, []*nriv1beta1.ContainerUpdate{update("ctr0", cpus("1")), update("ctr1", cpus("2"))}, nil)
		if err != nil {
			d.t.Errorf("%s: UpdateContainers: %v", d.env.name(), err)
		}
		d.env.rec.add("UpdateContainers", &nriv1beta1.UpdateContainersResponse{Failed: failed}, nil)
		d.waitApplied(1)
	}, differ: unsolicited})
	cases = append(cases, cmpCase{name: "updates at synchronization", run: func(d *driver) {
		d.env.SetState(d.t, []*nriv1beta1.PodSandbox{cmpPod("pod0"), cmpPod("pod1")}, []*nriv1beta1.Container{cmpCtr("pod0", "ctr0"), cmpCtr("pod1", "ctr1")})
		d.start("00", "syncer", func(p *conformance.PluginSpec) {
			p.OnSynchronize = func(context.Context, *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
				return &nriv1beta1.SynchronizeResponse{Update: []*nriv1beta1.ContainerUpdate{update("ctr1", cpus("3"))}}, nil
			}
		})
		d.waitApplied(1)
		d.lifecycle(cmpPod("pod2"), cmpCtr("pod2", "ctr2"))
	}, differ: syncUpdates})

	cases = append(cases, cmpCase{name: "a plugin registering after events synchronizes their state", run: func(d *driver) {
		d.start("00", "early", adjusting(&nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"early": "1"}}))
		for _, ev := range []string{"RunPodSandbox", "CreateContainer", "PostCreateContainer", "StartContainer", "PostStartContainer"} {
			_ = d.event(ev, pod, ctr)
		}
		for _, ev := range []string{"RunPodSandbox", "CreateContainer"} {
			_ = d.event(ev, cmpPod("pod1"), cmpCtr("pod1", "ctr1"))
		}
		d.start("10", "late", nil)
		d.lifecycle(cmpPod("pod2"), cmpCtr("pod2", "ctr2"))
	}})

	// Time: classic NRI's request timeout (2 s) drops a plugin that does
	// not answer; behind the bridge, the bridge's budget (the runtime's
	// timeout less a margin) cuts the call first and the plugin stays.
	cases = append(cases, cmpCase{name: "a plugin that does not answer within the runtime's request timeout", run: func(d *driver) {
		hung := make(chan struct{}) // the plugin hangs: it answers only when the case ends
		d.start("10", "slow", func(p *conformance.PluginSpec) {
			p.Handle = func(ctx context.Context, method string, _ proto.Message) error {
				if method == "CreateContainer" {
					<-hung
					return status.Error(codes.Unavailable, "too late")
				}
				return nil
			}
		})
		d.t.Cleanup(func() { close(hung) })
		d.start("20", "next", adjusting(&nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"next": "1"}}))
		_ = d.event("CreateContainer", pod, ctr)
		_ = d.event("RunPodSandbox", cmpPod("pod1"), nil)
	}, differ: budgetSkips})

	cases = append(cases, cmpCase{name: "a plugin whose connection breaks during a call", run: func(d *driver) {
		var broken conformance.Plugin
		broken = d.start("10", "broken", func(p *conformance.PluginSpec) {
			p.Handle = func(ctx context.Context, method string, _ proto.Message) error {
				if method == "CreateContainer" {
					broken.(*classicPlugin).closeConn()
					<-ctx.Done()
					return status.FromContextError(ctx.Err()).Err()
				}
				return nil
			}
		})
		d.start("20", "next", adjusting(&nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"next": "1"}}))
		_ = d.event("CreateContainer", pod, ctr)
		_ = d.event("RunPodSandbox", cmpPod("pod1"), nil)
	}, differ: brokenConnection})

	cases = append(cases, cmpCase{name: "NRI stops", run: func(d *driver) {
		a := d.start("10", "a", nil)
		_ = d.event("RunPodSandbox", pod, nil)
		if err := d.env.Shutdown(d.ctx); err != nil {
			d.t.Errorf("%s: Shutdown: %v", d.env.name(), err)
		}
		if d.env.bridged {
			select {
			case <-a.Done():
			case <-d.ctx.Done():
				d.t.Errorf("classic-bridged: the plugin's connection stayed open after Shutdown")
			}
		}
	}, differ: stopping})

	// Errors.
	for _, ev := range []string{"RunPodSandbox", "UpdatePodSandbox", "CreateContainer", "StartContainer", "UpdateContainer"} {
		cases = append(cases, cmpCase{name: "a veto on " + ev, run: func(d *driver) {
			d.start("10", "veto", func(p *conformance.PluginSpec) {
				p.Handle = func(_ context.Context, method string, _ proto.Message) error {
					if method == ev {
						return status.Error(codes.PermissionDenied, "no GPUs for you")
					}
					return nil
				}
			})
			d.start("20", "later", nil)
			_ = d.event(ev, pod, ctr)
		}, differ: func(t *testing.T, dr, br *cmpRecord) {
			bridgedErrors(t, dr, br, ev, codes.PermissionDenied, "DISPATCH_OUTCOME_VETOED", "no GPUs for you")
		}})
	}
	for _, ev := range []string{"PostCreateContainer", "StopContainer", "RemovePodSandbox"} {
		cases = append(cases, cmpCase{name: "an error on " + ev, run: func(d *driver) {
			d.start("10", "failing", func(p *conformance.PluginSpec) {
				p.Handle = func(_ context.Context, method string, _ proto.Message) error {
					if method == ev {
						return status.Error(codes.Internal, "boom")
					}
					return nil
				}
			})
			d.start("20", "healthy", nil)
			_ = d.event(ev, pod, ctr)
		}, differ: teardownGoesOn(ev, "20-healthy", "boom")})
	}
	return cases
}

func (e *classicEnv) name() string {
	if e.bridged {
		return "classic-bridged"
	}
	return "classic-direct"
}

// Documented differences.

// compareGeneric asserts the differences every case has, and neutralizes
// them: the runtime's plugin list (the bridge alone behind it), the
// protocol advertised in Configure, validators' adjustments without the
// classic skeleton.
func compareGeneric(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	// The classic runtime invokes the real plugins on the direct path, the
	// bridge alone — once per event it got — behind the bridge.
	var want []string
	for _, r := range br.results {
		if slices.Contains(allEvents, r.Event) {
			want = append(want, bridgeFull+":"+r.Event)
		}
	}
	// The bridge is also synchronized at every (re)attach (SetState).
	br.invocations = slices.DeleteFunc(br.invocations, func(s string) bool { return s == bridgeFull+":Synchronize" })
	if !slices.Equal(br.invocations, want) {
		t.Errorf("classic-bridged: the runtime invoked %v, want the bridge once per event: %v", br.invocations, want)
	}
	for _, inv := range dr.invocations {
		if strings.HasPrefix(inv, bridgeFull+":") {
			t.Errorf("classic-direct: the runtime invoked the bridge: %v", dr.invocations)
		}
	}
	br.invocations, dr.invocations = nil, nil
	// Configure: the NRI version is the runtime's, nri-grpc's protocol
	// behind the bridge.
	for _, r := range []*cmpRecord{dr, br} {
		for i, c := range r.calls {
			switch req := c.Req.(type) {
			case *nriv1beta1.ConfigureRequest:
				v := req.GetNriVersion()
				if bridged := r == br; bridged != strings.HasPrefix(v, "v1beta1") {
					t.Errorf("%s: %s advertises NRI version %q", r.path, c, v)
				}
				req = proto.Clone(req).(*nriv1beta1.ConfigureRequest)
				req.NriVersion = ""
				r.calls[i].Req = req
			case *nriv1beta1.CreateContainerRequest:
				// Classic NRI orders the namespaces of an adjusted container
				// randomly (maps.Values): compare them as a set.
				if ns := req.GetContainer().GetLinux().GetNamespaces(); len(ns) > 1 {
					req = proto.Clone(req).(*nriv1beta1.CreateContainerRequest)
					slices.SortFunc(req.Container.Linux.Namespaces, func(a, b *nriv1beta1.LinuxNamespace) int { return strings.Compare(a.GetType(), b.GetType()) })
					r.calls[i].Req = req
				}
			case *nriv1beta1.ValidateContainerAdjustmentRequest:
				// Classic NRI hands validators its merge skeleton of
				// empty messages; nri-grpc only what changed.
				req = proto.Clone(req).(*nriv1beta1.ValidateContainerAdjustmentRequest)
				stripped := strip(proto.Clone(req.GetAdjust()).(*nriv1beta1.ContainerAdjustment))
				if bridged := r == br; bridged != proto.Equal(req.GetAdjust(), stripped) {
					t.Errorf("%s: %s: adjustment %s (stripped of empty messages: %s)", r.path, c, format(req.GetAdjust()), format(stripped))
				}
				req.Adjust = stripped
				r.calls[i].Req = req
			}
		}
	}
}

// bridgedErrors asserts the errors of event on both paths: classic NRI's
// text on the direct path; behind the bridge nri-grpc's status, with the
// code, the ErrorInfo reason and a message holding the same text, which
// the classic runtime returns unchanged.
func bridgedErrors(t *testing.T, dr, br *cmpRecord, event string, code codes.Code, reason, text string) {
	t.Helper()
	de, be := firstError(dr, event), firstError(br, event)
	if de == nil || be == nil {
		t.Fatalf("%s: errors: classic-direct %v, classic-bridged %v; want both", event, de, be)
	}
	if !strings.Contains(de.Error(), text) {
		t.Errorf("classic-direct: %s error %q does not contain %q", event, de, text)
	}
	st := status.Convert(be)
	if st.Code() != code || !strings.Contains(st.Message(), text) || errReason(be) != reason {
		t.Errorf("classic-bridged: %s error: code %v reason %q message %q; want %v %s containing %q", event, st.Code(), errReason(be), st.Message(), code, reason, text)
	}
	clearErrors(dr, event)
	clearErrors(br, event)
}

func errReason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

func firstError(r *cmpRecord, event string) error {
	for _, x := range r.results {
		if x.Event == event && x.Err != nil {
			return x.Err
		}
	}
	return nil
}

var errCompared = errors.New("(compared)")

func clearErrors(r *cmpRecord, event string) {
	for i := range r.results {
		if r.results[i].Event == event && r.results[i].Err != nil {
			r.results[i].Err = errCompared
		}
	}
}

// teardownGoesOn: classic NRI fails a teardown or notification event on
// the first plugin error and later plugins do not get it; behind the
// bridge it never fails (the error is only logged) and later plugins get
// it (DESIGN §5.2, docs/bridge.md).
func teardownGoesOn(event, later, text string) func(t *testing.T, dr, br *cmpRecord) {
	return func(t *testing.T, dr, br *cmpRecord) {
		t.Helper()
		de, be := firstError(dr, event), firstError(br, event)
		if de == nil || !strings.Contains(de.Error(), text) {
			t.Errorf("classic-direct: %s error %v, want one containing %q", event, de, text)
		}
		if be != nil {
			t.Errorf("classic-bridged: %s failed (%v): notifications never fail behind the bridge", event, be)
		}
		for i := range dr.results {
			if dr.results[i].Event == event {
				dr.results[i].Err = nil
			}
		}
		if n := len(callsOf(dr, later, event)); n != 0 {
			t.Errorf("classic-direct: %s got %s after the error", later, event)
		}
		got := callsOf(br, later, event)
		if len(got) != 1 {
			t.Fatalf("classic-bridged: %s got %d %s calls, want 1 (delivery goes on)", later, len(got), event)
		}
		br.calls = slices.DeleteFunc(br.calls, func(c conformance.Call) bool { return c.Plugin == later && c.Method == event })
		// StopContainer: the update of the first plugin reaches the runtime
		// behind the bridge; classic NRI answers nothing.
		for i := range br.results {
			if br.results[i].Event == event {
				br.results[i].Rsp = nil
			}
		}
	}
}

func callsOf(r *cmpRecord, plugin, method string) []conformance.Call {
	var out []conformance.Call
	for _, c := range r.calls {
		if c.Plugin == plugin && c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// budgetSkips: classic NRI gives every plugin its own request timeout:
// the slow plugin times out, is dropped, and the next plugin runs. Behind
// the bridge the classic runtime's one timeout is the budget of the whole
// fan-out (DESIGN §5a), shared (DESIGN §12, docs/bridge.md): the hung
// plugin is cut at its share, early enough for the next plugin, which still
// gets the event, as with classic NRI; the hung plugin is skipped, not
// disconnected (the budget cut it, not its own timeout); the bridge answers
// in time.
func budgetSkips(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	if err := firstError(dr, "CreateContainer"); err != nil {
		t.Fatalf("classic-direct: CreateContainer failed: %v", err)
	}
	if err := firstError(br, "CreateContainer"); err != nil {
		t.Fatalf("classic-bridged: CreateContainer failed: %v", err)
	}
	if len(callsOf(dr, "20-next", "CreateContainer")) != 1 || len(callsOf(br, "20-next", "CreateContainer")) != 1 {
		t.Errorf("20-next got CreateContainer: classic-direct %d, classic-bridged %d (want 1 on both: the hung plugin before it must not starve it)",
			len(callsOf(dr, "20-next", "CreateContainer")), len(callsOf(br, "20-next", "CreateContainer")))
	}
	if n := len(callsOf(dr, "10-slow", "RunPodSandbox")); n != 0 {
		t.Errorf("classic-direct: the timed-out plugin got RunPodSandbox: classic NRI kept it")
	}
	if n := len(callsOf(br, "10-slow", "RunPodSandbox")); n != 1 {
		t.Errorf("classic-bridged: the plugin cut by the budget got %d RunPodSandbox calls, want 1 (skipped, not disconnected)", n)
	}
	br.calls = slices.DeleteFunc(br.calls, func(c conformance.Call) bool { return c.String() == "10-slow:RunPodSandbox" })
}

// brokenConnection: a plugin whose connection breaks during a call is an
// availability failure on both paths: it is dropped and the event goes on
// without it (DESIGN §5.1, ignore policy).
func brokenConnection(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	if err := firstError(dr, "CreateContainer"); err != nil {
		t.Fatalf("classic-direct: CreateContainer failed: %v", err)
	}
	if err := firstError(br, "CreateContainer"); err != nil {
		t.Fatalf("classic-bridged: CreateContainer failed although the broken plugin's policy is ignore: %v", err)
	}
}

// stopping: classic NRI stopping tells its plugins nothing; nri-grpc
// stopping sends classic plugins the classic, reason-less Shutdown
// (docs/bridge.md) and closes their connections.
func stopping(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	if got := callsOf(dr, "10-a", "Shutdown"); len(got) != 0 {
		t.Errorf("classic-direct: the plugin got Shutdown: %v", got)
	}
	got := callsOf(br, "10-a", "Shutdown")
	if len(got) != 1 || proto.Size(got[0].Req) != 0 {
		t.Fatalf("classic-bridged: Shutdown calls %v, want one classic (empty) Shutdown", got)
	}
	br.calls = slices.DeleteFunc(br.calls, func(c conformance.Call) bool { return c.String() == "10-a:Shutdown" })
}

// annotationRemovalSeen: a pure annotation removal leaves the container
// later plugins see unchanged in classic NRI (reference §4.4); nri-grpc
// applies it (DESIGN §5.5: removals take effect, docs/PROTOCOL.md §9). The
// runtime gets the marker on both paths.
func annotationRemovalSeen(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	seen := func(r *cmpRecord) (*conformance.Call, bool) {
		calls := callsOf(r, "10-observer", "CreateContainer")
		if len(calls) != 1 {
			t.Fatalf("%s: 10-observer got %d CreateContainer calls", r.path, len(calls))
		}
		_, ok := calls[0].Req.(*nriv1beta1.CreateContainerRequest).GetContainer().GetAnnotations()["orig"]
		return &calls[0], ok
	}
	dc, dseen := seen(dr)
	if _, bseen := seen(br); !dseen || bseen {
		t.Errorf("the removed annotation seen by the next plugin: classic-direct %v (want true), classic-bridged %v (want false)", dseen, bseen)
	}
	for i := range dr.calls {
		if dr.calls[i].String() == dc.String() {
			req := proto.Clone(dr.calls[i].Req).(*nriv1beta1.CreateContainerRequest)
			delete(req.GetContainer().GetAnnotations(), "orig")
			dr.calls[i].Req = req
		}
	}
}

// requiredUpfront: classic NRI's default validator checks required
// plugins after every plugin handled CreateContainer; nri-grpc refuses a
// creating event before any plugin gets it while a required plugin is
// missing (DESIGN §5.3). Once the plugin is there, both paths agree.
func requiredUpfront(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	bridgedErrors(t, dr, br, "CreateContainer", codes.Unavailable, "DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE", `"gpu"`)
	if got := dr.calls[2].String(); got != "00-other:CreateContainer" {
		t.Errorf("classic-direct: call 2 is %s, want 00-other:CreateContainer before the validator's rejection", got)
	}
	if n := len(callsOf(br, "00-other", "CreateContainer")); n != 1 {
		t.Errorf("classic-bridged: 00-other got %d CreateContainer calls, want 1 (none for the refused creation)", n)
	}
	dr.calls = slices.Delete(dr.calls, 2, 3)
}

// removalMarkerDropped: nri-grpc's reply to the classic runtime holds the
// removal marker, the classic runtime's merge drops it, as on the direct
// path (DESIGN §5a: env and device removal markers are a limitation of
// the classic path).
func removalMarkerDropped(t *testing.T, dr, br *cmpRecord, marker string) {
	t.Helper()
	var reply *nriv1beta1.ContainerAdjustment
	for _, r := range br.replies {
		if r.Plugin == bridgeFull && r.Op == "CreateContainer" {
			reply = r.Adjust
		}
	}
	if !hasMarker(reply, marker) {
		t.Errorf("classic-bridged: the bridge's reply %v lacks the removal marker %s", reply, marker)
	}
	for _, r := range []*cmpRecord{dr, br} {
		for _, x := range r.results {
			if rsp, ok := x.Rsp.(interface {
				GetAdjust() *v1alpha1Adjust
			}); ok && hasMarker(conv(rsp.GetAdjust(), &nriv1beta1.ContainerAdjustment{}), marker) {
				t.Errorf("%s: the runtime's result keeps the marker %s: the classic runtime now keeps removal markers, update docs/bridge.md", r.path, marker)
			}
		}
	}
}

func hasMarker(a *nriv1beta1.ContainerAdjustment, marker string) bool {
	for _, e := range a.GetEnv() {
		if e.GetKey() == marker {
			return true
		}
	}
	for _, d := range a.GetLinux().GetDevices() {
		if d.GetPath() == marker {
			return true
		}
	}
	return false
}

// bothKeyAndMarker: classic NRI's reply holds both the key and its
// removal marker (an override: -k and k; a pure removal of what an earlier
// plugin set: k and -k), for annotations, sysctl and net devices
// (reference §4.4); behind the bridge the reply never holds both (DESIGN
// §5.5; docs/bridge.md: the bridge's reply does not, the runtime's merge
// with other plugins may). drop is the entry only the direct reply holds.
func bothKeyAndMarker(field, key, drop string) func(t *testing.T, dr, br *cmpRecord) {
	return func(t *testing.T, dr, br *cmpRecord) {
		t.Helper()
		entries := func(r *cmpRecord) (*createRsp, map[string]bool) {
			for _, x := range r.results {
				if rsp, ok := x.Rsp.(*createRsp); ok {
					a := conv(rsp.GetAdjust(), &nriv1beta1.ContainerAdjustment{})
					m := map[string]bool{}
					switch field {
					case "annotations":
						for k := range a.GetAnnotations() {
							m[k] = true
						}
					case "sysctl":
						for k := range a.GetLinux().GetSysctl() {
							m[k] = true
						}
					case "net_devices":
						for k := range a.GetLinux().GetNetDevices() {
							m[k] = true
						}
					}
					return rsp, m
				}
			}
			t.Fatalf("%s: no CreateContainer result", r.path)
			return nil, nil
		}
		d, dm := entries(dr)
		_, bm := entries(br)
		if !dm[key] || !dm["-"+key] {
			t.Errorf("classic-direct: the reply's %s %v do not hold both %s and -%s: classic NRI changed, update the comparison", field, dm, key, key)
		}
		if bm[key] && bm["-"+key] {
			t.Errorf("classic-bridged: the reply's %s %v hold both %s and -%s", field, bm, key, key)
		}
		a := conv(d.GetAdjust(), &nriv1beta1.ContainerAdjustment{})
		delete(a.GetAnnotations(), drop)
		delete(a.GetLinux().GetSysctl(), drop)
		delete(a.GetLinux().GetNetDevices(), drop)
		d.Adjust = conv(a, &v1alpha1Adjust{})
	}
}

// removalSeenLater: after a pure removal of what an earlier plugin set, a
// later plugin still sees the entry in classic NRI (the request is not
// changed, reference §4.4) and no longer sees it behind the bridge
// (nri-grpc applies removals, docs/PROTOCOL.md §9).
func removalSeenLater(plugin, field, key string) func(t *testing.T, dr, br *cmpRecord) {
	return func(t *testing.T, dr, br *cmpRecord) {
		t.Helper()
		has := func(c conformance.Call) bool {
			ctr := c.Req.(*nriv1beta1.CreateContainerRequest).GetContainer()
			switch field {
			case "annotations":
				_, ok := ctr.GetAnnotations()[key]
				return ok
			case "sysctl":
				_, ok := ctr.GetLinux().GetSysctl()[key]
				return ok
			}
			return false
		}
		dc, bc := callsOf(dr, plugin, "CreateContainer"), callsOf(br, plugin, "CreateContainer")
		if len(dc) != 1 || len(bc) != 1 {
			t.Fatalf("%s got %d and %d CreateContainer calls", plugin, len(dc), len(bc))
		}
		if !has(dc[0]) || has(bc[0]) {
			t.Errorf("%s sees the removed %s %s: classic-direct %v (want true), classic-bridged %v (want false)", plugin, field, key, has(dc[0]), has(bc[0]))
		}
		for i, c := range dr.calls {
			if c.Plugin == plugin && c.Method == "CreateContainer" {
				req := proto.Clone(c.Req).(*nriv1beta1.CreateContainerRequest)
				delete(req.GetContainer().GetAnnotations(), key)
				delete(req.GetContainer().GetLinux().GetSysctl(), key)
				dr.calls[i].Req = req
			}
		}
	}
}

func both(fs ...func(t *testing.T, dr, br *cmpRecord)) func(t *testing.T, dr, br *cmpRecord) {
	return func(t *testing.T, dr, br *cmpRecord) {
		t.Helper()
		for _, f := range fs {
			f(t, dr, br)
		}
	}
}

// namespaceOverride: classic NRI's namespace removal is a claim, so the
// override idiom conflicts; nri-grpc's removal always succeeds
// (docs/PROTOCOL.md §9) and behind the bridge the override holds.
func namespaceOverride(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	de, be := firstError(dr, "CreateContainer"), firstError(br, "CreateContainer")
	if de == nil || !strings.Contains(de.Error(), `plugins "10-foo" and "00-bar" both tried to set Namespace cgroup`) {
		t.Errorf("classic-direct: CreateContainer error %v, want classic's namespace conflict", de)
	}
	if be != nil {
		t.Fatalf("classic-bridged: CreateContainer failed: %v", be)
	}
	want := linuxAdj(&nriv1beta1.LinuxContainerAdjustment{Namespaces: []*nriv1beta1.LinuxNamespace{{Type: "cgroup", Path: "/foo"}}})
	got := strip(conv(br.results[0].Rsp.(*createRsp).GetAdjust(), &nriv1beta1.ContainerAdjustment{}))
	if !proto.Equal(got, want) {
		t.Errorf("classic-bridged: adjustment %s, want %s", format(got), format(want))
	}
	dr.results[0].Err, br.results[0].Rsp = nil, nil
}

// repeatedRequest: a plugin "updating" the target to the requested
// resources. Classic NRI answers the target's resources last; behind the
// bridge the final resources equal the request, so the bridge answers no
// update of the target and the classic runtime's tail is nil (reference
// §4.5): the resources the runtime applies are the requested ones either
// way.
func repeatedRequest(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	tail := func(r *cmpRecord) (*v1alpha1.UpdateContainerResponse, *v1alpha1.ContainerUpdate) {
		rsp := r.results[0].Rsp.(*v1alpha1.UpdateContainerResponse)
		if n := len(rsp.GetUpdate()); n != 1 {
			t.Fatalf("%s: %d updates, want the tail only", r.path, n)
		}
		return rsp, rsp.GetUpdate()[0]
	}
	_, dt := tail(dr)
	brsp, bt := tail(br)
	if res := betaRes(dt.GetLinux().GetResources()); !proto.Equal(strip(res), requested()) {
		t.Errorf("classic-direct: final resources %s, want the requested %s", format(res), format(requested()))
	}
	if bt != nil && proto.Size(bt) != 0 { // the record's clone of a nil tail is empty
		t.Errorf("classic-bridged: tail %s, want nil (no change)", format(bt))
	}
	brsp.Update = []*v1alpha1.ContainerUpdate{dt}
}

// pidsIgnored: the classic runtime ignores pid limits in updates, on both
// paths (DESIGN §5a).
func pidsIgnored(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	for _, r := range []*cmpRecord{dr, br} {
		for _, x := range r.results {
			if x.Rsp != nil && strings.Contains(prototext.Format(x.Rsp), "pids") {
				t.Errorf("%s: %s result keeps pid limits: %v", r.path, x.Event, prototext.Format(x.Rsp))
			}
		}
	}
}

// unsolicited: the classic runtime gets the updates from the plugin on the
// direct path, from the bridge (asynchronously) behind it; the failed list
// reaches the plugin only on the direct path (docs/bridge.md).
func unsolicited(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	attribution(t, dr, br, "00-test")
	for _, r := range []*cmpRecord{dr, br} {
		for i, x := range r.results {
			if x.Event != "UpdateContainers" {
				continue
			}
			failed := x.Rsp.(*nriv1beta1.UpdateContainersResponse).GetFailed()
			if r == dr && (len(failed) != 1 || failed[0].GetContainerId() != "ctr1") {
				t.Errorf("classic-direct: failed updates %v, want ctr1's", failed)
			}
			if r == br && len(failed) != 0 {
				t.Errorf("classic-bridged: failed updates %v: the relay is asynchronous, none are reported", failed)
			}
			r.results[i].Rsp = nil
		}
	}
}

// syncUpdates: updates a plugin answers Synchronize with reach the classic
// runtime from its synchronization on the direct path, from the bridge
// through UpdateContainers behind it (docs/bridge.md).
func syncUpdates(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	attribution(t, dr, br, "00-syncer")
}

// attribution: the runtime attributes the updates to the plugin (the
// harness knows it on the direct path) and to the bridge behind it.
func attribution(t *testing.T, dr, br *cmpRecord, plugin string) {
	t.Helper()
	for _, a := range dr.applied {
		if a.Plugin != plugin {
			t.Errorf("classic-direct: updates from %q, want %s", a.Plugin, plugin)
		}
	}
	for i, a := range br.applied {
		if a.Plugin != bridgeFull {
			t.Errorf("classic-bridged: updates from %q, want the bridge %s", a.Plugin, bridgeFull)
		}
		br.applied[i].Plugin = plugin
	}
}

// compareRest asserts that what is left is equal on both paths.
func compareRest(t *testing.T, dr, br *cmpRecord) {
	t.Helper()
	dc, bc := dr.calls, br.calls
	for i := 0; i < max(len(dc), len(bc)); i++ {
		var d, b conformance.Call
		if i < len(dc) {
			d = dc[i]
		}
		if i < len(bc) {
			b = bc[i]
		}
		if d.String() != b.String() {
			t.Errorf("plugin call %d: classic-direct %s, classic-bridged %s\n direct:  %v\n bridged: %v", i, d, b, callNames(dc), callNames(bc))
			break
		}
		if !proto.Equal(d.Req, b.Req) {
			t.Errorf("plugin call %d (%s): requests differ:\n classic-direct:  %s\n classic-bridged: %s", i, d, format(d.Req), format(b.Req))
		}
	}
	if len(dr.results) != len(br.results) {
		t.Fatalf("runtime results: classic-direct %d, classic-bridged %d", len(dr.results), len(br.results))
	}
	for i := range dr.results {
		d, b := dr.results[i], br.results[i]
		if d.Event != b.Event {
			t.Errorf("runtime result %d: %s vs %s", i, d.Event, b.Event)
			continue
		}
		if (d.Err == nil) != (b.Err == nil) || (d.Err != nil && d.Err != errCompared && d.Err.Error() != b.Err.Error()) {
			t.Errorf("runtime result %d (%s): errors differ: classic-direct %v, classic-bridged %v", i, d.Event, d.Err, b.Err)
		}
		if !proto.Equal(d.Rsp, b.Rsp) {
			t.Errorf("runtime result %d (%s) differs:\n classic-direct:  %s\n classic-bridged: %s", i, d.Event, format(d.Rsp), format(b.Rsp))
		}
	}
	if len(dr.applied) != len(br.applied) {
		t.Fatalf("applied: classic-direct %d requests, classic-bridged %d", len(dr.applied), len(br.applied))
	}
	for i := range dr.applied {
		d, b := dr.applied[i], br.applied[i]
		if d.Plugin != b.Plugin || !slices.EqualFunc(d.Update, b.Update, func(x, y *nriv1beta1.ContainerUpdate) bool { return proto.Equal(x, y) }) {
			t.Errorf("applied %d differs: classic-direct %s %v, classic-bridged %s %v", i, d.Plugin, d.Update, b.Plugin, b.Update)
		}
	}
}

func callNames(calls []conformance.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.String())
	}
	return out
}

func format(m proto.Message) string {
	if m == nil || !m.ProtoReflect().IsValid() {
		return "<nil>"
	}
	return prototext.MarshalOptions{Multiline: false}.Format(m)
}

type (
	v1alpha1Adjust = v1alpha1.ContainerAdjustment
	createRsp      = v1alpha1.CreateContainerResponse
)
