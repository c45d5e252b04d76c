//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// lifecycle is the order in which containerd 2.4 sends a pod's events for
// run pod, create, start, update, stop, remove container, stop and remove pod.
var lifecycle = []string{
	"RunPodSandbox",
	"CreateContainer", "PostCreateContainer",
	"StartContainer", "PostStartContainer",
	"UpdateContainer", "PostUpdateContainer",
	"StopContainer", "RemoveContainer",
	"StopPodSandbox", "RemovePodSandbox",
}

// TestGoPluginInjects: a Go SDK plugin behind nrid injects an env var, an
// annotation and a mount, which the OCI spec and the running process show;
// the plugin sees containerd's lifecycle events in containerd's order (the
// same order as a classic plugin connected to containerd directly).
func TestGoPluginInjects(t *testing.T) {
	eachRuntime(t, EnvOptions{}, testGoPluginInjects)
}

// testGoPluginInjects is TestGoPluginInjects on one runtime setup (eachRuntime).
func testGoPluginInjects(t *testing.T, opts EnvOptions) {
	e := NewEnv(t, opts)
	src := filepath.Join(e.Dir, "mount-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "hello.txt"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := e.StartClassicPlugin(e.NRISock, "90", "reference")
	gp := e.StartGRPCPlugin("10", "inject",
		"-env", "E2E_GO=injected-by-go", "-annotation", "e2e.nri-grpc/go=yes", "-mount", src+":/e2e-mount")

	pod := e.RunPod("p1")
	id := e.Run(pod, "c1")

	in := e.Inspect(id)
	if got := SpecEnv(in.Spec)["E2E_GO"]; got != "injected-by-go" {
		t.Errorf("OCI spec env E2E_GO = %q, want injected-by-go; env %v", got, in.Spec.Process.Env)
	}
	if got := SpecEnv(in.Spec)["FROM_CRI"]; got != "yes" {
		t.Errorf("OCI spec env FROM_CRI = %q, want yes (CRI's own env kept)", got)
	}
	if got := in.Spec.Annotations["e2e.nri-grpc/go"]; got != "yes" {
		t.Errorf("OCI spec annotation e2e.nri-grpc/go = %q, want yes; annotations %v", got, in.Spec.Annotations)
	}
	m := SpecMount(in.Spec, "/e2e-mount")
	if m == nil {
		t.Errorf("OCI spec has no mount at /e2e-mount; mounts %+v", in.Spec.Mounts)
	} else if m.Source != src || m.Type != "bind" || !slices.Contains(m.Options, "ro") {
		t.Errorf("OCI spec mount /e2e-mount = %+v, want a read-only bind of %s", *m, src)
	}
	if got := e.ProcEnv(in.Pid)["E2E_GO"]; got != "injected-by-go" {
		t.Errorf("running process: E2E_GO = %q, want injected-by-go", got)
	}
	if got, err := e.ProcFile(in.Pid, "/e2e-mount/hello.txt"); err != nil || got != "hello from the host\n" {
		t.Errorf("running process: /e2e-mount/hello.txt = %q, %v; want the host file", got, err)
	}

	ctx, cancel := ctxT(criTimeout)
	defer cancel()
	if _, err := e.CRI.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{CpuShares: 768, MemoryLimitInBytes: 64 << 20},
	}); err != nil {
		t.Fatalf("UpdateContainerResources: %v", err)
	}
	e.StopRemove(id)
	e.StopRemovePod(pod)

	done := func(evs []Event) bool { return slices.Contains(PodEvents(evs, "p1"), "RemovePodSandbox") }
	got := PodEvents(WaitEvents(t, gp.Events, done, "RemovePodSandbox"), "p1")
	direct := PodEvents(WaitEvents(t, ref.Events, done, "RemovePodSandbox"), "p1")
	if !slices.Equal(got, lifecycle) {
		t.Errorf("Go plugin behind nrid saw\n  %v\nwant\n  %v", got, lifecycle)
	}
	if !slices.Equal(got, direct) {
		t.Errorf("Go plugin behind nrid saw\n  %v\nthe classic plugin on containerd saw\n  %v", got, direct)
	}
	if evs := ReadEvents(gp.Events); len(evs) < 2 || evs[0].Event != "Configure" || evs[1].Event != "Synchronize" {
		t.Errorf("Go plugin's first events = %v, want Configure, Synchronize", EventNames(evs))
	} else if evs[0].Detail != "containerd 2.4.2+unknown" {
		t.Errorf("Go plugin's Configure names runtime %q, want containerd's own name and version", evs[0].Detail)
	}
}

// TestClassicAndGRPCMerge: a classic v1alpha1 plugin on nrid's plugin side
// and a gRPC plugin adjust the same container without conflict; then a
// conflicting pair (one classic, one gRPC, the same annotation key) fails
// the creation with a message naming both plugins; last, a plugin connected
// to containerd directly that conflicts with one behind nrid: containerd's
// message names the bridge.
func TestClassicAndGRPCMerge(t *testing.T) {
	eachRuntime(t, EnvOptions{}, testClassicAndGRPCMerge)
}

// testClassicAndGRPCMerge is TestClassicAndGRPCMerge on one runtime setup (eachRuntime).
func testClassicAndGRPCMerge(t *testing.T, opts EnvOptions) {
	e := NewEnv(t, opts)
	cp := e.StartClassicPlugin(e.ClassicSock, "10", "classic", "-env", "E2E_CLASSIC=from-classic", "-annotation", "e2e/classic=yes")
	e.WaitPluginReady(cp.Full, cp.Proc)
	gp := e.StartGRPCPlugin("20", "grpc", "-env", "E2E_GRPC=from-grpc", "-annotation", "e2e/grpc=yes")

	pod := e.RunPod("p1")
	id := e.Run(pod, "both")
	in := e.Inspect(id)
	env := SpecEnv(in.Spec)
	penv := e.ProcEnv(in.Pid)
	for k, v := range map[string]string{"E2E_CLASSIC": "from-classic", "E2E_GRPC": "from-grpc"} {
		if env[k] != v {
			t.Errorf("OCI spec env %s = %q, want %q", k, env[k], v)
		}
		if penv[k] != v {
			t.Errorf("running process env %s = %q, want %q", k, penv[k], v)
		}
	}
	for _, k := range []string{"e2e/classic", "e2e/grpc"} {
		if in.Spec.Annotations[k] != "yes" {
			t.Errorf("OCI spec annotation %s = %q, want yes", k, in.Spec.Annotations[k])
		}
	}
	for _, p := range []string{cp.Events, gp.Events} {
		if !slices.Contains(PodEvents(ReadEvents(p), "p1"), "CreateContainer") {
			t.Errorf("%s: no CreateContainer", filepath.Base(p))
		}
	}

	a := e.StartClassicPlugin(e.ClassicSock, "30", "conflict-classic", "-annotation", "e2e/conflict=classic")
	e.WaitPluginReady(a.Full, a.Proc)
	b := e.StartGRPCPlugin("31", "conflict-grpc", "-annotation", "e2e/conflict=grpc")
	_, err := e.TryCreate(pod, "conflicting")
	if err == nil {
		t.Fatal("CreateContainer with two plugins setting the same annotation succeeded; want a conflict")
	}
	t.Logf("conflict error: %v", err)
	for _, name := range []string{a.Full, b.Full, "e2e/conflict"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("conflict error does not name %q: %v", name, err)
		}
	}
	ctx, cancel := ctxT(criTimeout)
	defer cancel()
	list, lerr := e.CRI.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: pod.ID}})
	if lerr != nil {
		t.Fatal(lerr)
	}
	if n := len(list.GetContainers()); n != 1 {
		t.Errorf("pod has %d containers after the conflict, want 1 (the conflicting one not created)", n)
	}

	if opts.DropIn {
		return // no bridge: a classic plugin on containerd's socket is one of the server's, as above
	}
	// A conflict between a plugin behind nrid and one connected to
	// containerd directly is containerd's to find: it sees one plugin, the
	// bridge, as the owner of everything nri-grpc's plugins set.
	a.Stop(t)
	b.Stop(t)
	direct := e.StartClassicPlugin(e.NRISock, "50", "direct", "-annotation", "e2e/grpc=direct")
	_, err = e.TryCreate(pod, "conflicting-direct")
	if err == nil {
		t.Fatal("CreateContainer with a direct plugin setting the annotation 20-grpc sets succeeded; want a conflict")
	}
	t.Logf("conflict with a direct plugin: %v", err)
	for _, name := range []string{direct.Full, "00-nri-grpc", "e2e/grpc"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("conflict error does not name %q: %v", name, err)
		}
	}
}

// TestRequiredPlugins: a plugin with the fail policy that is absent fails
// creation with an error naming it (and creation works once it registers);
// a plugin with the ignore policy killed in the middle of its
// CreateContainer call does not stop the creation, which proceeds without
// its changes.
func TestRequiredPlugins(t *testing.T) {
	t.Run("FailPluginAbsent", func(t *testing.T) {
		eachRuntime(t, EnvOptions{NridTOML: `
[[plugin]]
name = "40-must"
required = true
`}, testFailPluginAbsent)
	})
	t.Run("IgnorePluginKilledMidCall", func(t *testing.T) {
		eachRuntime(t, EnvOptions{}, testIgnorePluginKilledMidCall)
	})
}

// testFailPluginAbsent is TestRequiredPlugins/FailPluginAbsent on one
// runtime setup (eachRuntime).
func testFailPluginAbsent(t *testing.T, opts EnvOptions) {
	e := NewEnv(t, opts)
	// RunPodSandbox is a creating event too: absent, the required
	// plugin fails the pod already.
	_, err := e.TryRunPod("p0")
	if err == nil {
		t.Fatal("RunPodSandbox succeeded while the required plugin 40-must is absent")
	}
	t.Logf("pod, 40-must absent: %v", err)
	if !strings.Contains(err.Error(), "40-must") {
		t.Errorf("error does not name the absent plugin 40-must: %v", err)
	}

	must := e.StartGRPCPlugin("40", "must", "-env", "E2E_MUST=present")
	pod := e.RunPod("p1")
	id := e.Run(pod, "c1")
	if got := e.ProcEnv(e.Inspect(id).Pid)["E2E_MUST"]; got != "present" {
		t.Errorf("with 40-must registered: process env E2E_MUST = %q, want present", got)
	}

	must.Stop(t) // unregisters: absent again
	if !waitFor(30*time.Second, func() bool { _, ok := e.Plugins()[must.Full]; return !ok }) {
		t.Fatal("nrid still lists 40-must after it stopped")
	}
	_, err = e.TryCreate(pod, "c2")
	if err == nil {
		t.Fatal("CreateContainer succeeded while the required plugin 40-must is absent")
	}
	t.Logf("container, 40-must absent: %v", err)
	if !strings.Contains(err.Error(), "40-must") {
		t.Errorf("error does not name the absent plugin 40-must: %v", err)
	}
}

// testIgnorePluginKilledMidCall is
// TestRequiredPlugins/IgnorePluginKilledMidCall on one runtime setup
// (eachRuntime).
func testIgnorePluginKilledMidCall(t *testing.T, opts EnvOptions) {
	e := NewEnv(t, opts)
	marker := filepath.Join(e.Dir, "blocked")
	gp := e.StartGRPCPlugin("41", "optional", "-fail-policy", "ignore", "-env", "E2E_OPTIONAL=yes",
		"-block-create", "victim", "-blocked-marker", marker)
	pod := e.RunPod("p1")
	before := e.Run(pod, "before")
	if got := e.ProcEnv(e.Inspect(before).Pid)["E2E_OPTIONAL"]; got != "yes" {
		t.Fatalf("plugin alive: process env E2E_OPTIONAL = %q, want yes", got)
	}

	type result struct {
		id  string
		err error
	}
	res := make(chan result, 1)
	go func() { id, err := e.TryCreate(pod, "victim"); res <- result{id, err} }()
	if !waitFor(30*time.Second, func() bool { _, err := os.Stat(marker); return err == nil }) {
		t.Fatal("the plugin never blocked in CreateContainer of victim")
	}
	gp.Kill() // SIGKILL by PID, while nrid waits for its answer
	r := <-res
	if r.err != nil {
		t.Fatalf("CreateContainer failed after the ignore plugin was killed mid-call: %v", r.err)
	}
	e.Start(r.id)
	in := e.Inspect(r.id)
	if _, ok := SpecEnv(in.Spec)["E2E_OPTIONAL"]; ok {
		t.Errorf("victim's OCI spec has the killed plugin's E2E_OPTIONAL")
	}
	if _, ok := e.ProcEnv(in.Pid)["E2E_OPTIONAL"]; ok {
		t.Errorf("victim's process has the killed plugin's E2E_OPTIONAL")
	}
	after := e.Run(pod, "after")
	if _, ok := e.ProcEnv(e.Inspect(after).Pid)["E2E_OPTIONAL"]; ok {
		t.Errorf("container created after the kill has E2E_OPTIONAL")
	}
	if _, ok := e.Plugins()[gp.Full]; ok {
		t.Errorf("nrid still lists the killed plugin %s", gp.Full)
	}
}

// TestNridRestart: while nrid is down containerd keeps creating containers,
// unadjusted, unless containerd's default validator requires the bridge;
// when nrid is back, plugins register again and adjust again.
func TestNridRestart(t *testing.T) {
	nridOnly(t, "nrid stopped and started again while containerd runs")
	t.Run("BridgeNotRequired", func(t *testing.T) {
		e := NewEnv(t, EnvOptions{})
		gp := e.StartGRPCPlugin("10", "inject", "-env", "E2E_GO=yes")
		pod := e.RunPod("p1")
		c1 := e.Run(pod, "c1")
		if in := e.Inspect(c1); e.ProcEnv(in.Pid)["E2E_GO"] != "yes" {
			t.Fatalf("c1 not adjusted: OCI spec env %q, process env %v", in.Spec.Process.Env, e.ProcEnv(in.Pid))
		}
		e.Nrid.Stop(t)

		// containerd v2.4.2 (NRI v0.12.3) keeps the closed bridge in its
		// lists until the end of its next event, and the bridge is one of
		// its validators (it always subscribes there: docs/bridge.md), so
		// that event's creation fails, closed; the next ones are created
		// without nri-grpc.
		if _, err := e.TryCreate(pod, "first-down"); err == nil || !strings.Contains(err.Error(), "validator plugin 00-nri-grpc failed") {
			t.Errorf("the first creation after nrid stopped: %v, want containerd's validator plugin 00-nri-grpc failed", err)
		}
		c2 := e.Run(pod, "down")
		in := e.Inspect(c2)
		if _, ok := SpecEnv(in.Spec)["E2E_GO"]; ok {
			t.Errorf("container created while nrid was down has E2E_GO")
		}
		if e.ProcEnv(in.Pid)["FROM_CRI"] != "yes" {
			t.Errorf("container created while nrid was down: process env lacks FROM_CRI")
		}

		e.Restart(e.Nrid)
		e.WaitNridServing()
		e.WaitPluginReady(gp.Full, gp.Proc)
		// Registered again, and synchronized with containerd's state: the
		// pod and both running containers, the unadjusted one included.
		WaitEvents(t, gp.Events, func(evs []Event) bool {
			configures := 0
			for _, ev := range evs {
				if ev.Event == "Configure" {
					configures++
				}
				if configures == 2 && (ev.Event == "Synchronize" || ev.Event == "Resync") && ev.Pods == 1 && ev.Containers == 2 {
					return true
				}
			}
			return false
		}, "a second registration synchronized with 1 pod and 2 containers")

		c3 := e.Run(pod, "back")
		if got := e.ProcEnv(e.Inspect(c3).Pid)["E2E_GO"]; got != "yes" {
			t.Errorf("container created after nrid came back: E2E_GO = %q, want yes", got)
		}
	})

	t.Run("BridgeRequiredByContainerd", func(t *testing.T) {
		e := NewEnv(t, EnvOptions{ContainerdRequired: []string{"nri-grpc"}})
		gp := e.StartGRPCPlugin("10", "inject", "-env", "E2E_GO=yes")
		pod := e.RunPod("p1")
		c1 := e.Run(pod, "c1")
		if in := e.Inspect(c1); e.ProcEnv(in.Pid)["E2E_GO"] != "yes" {
			t.Fatalf("c1 not adjusted: OCI spec env %q, process env %v", in.Spec.Process.Env, e.ProcEnv(in.Pid))
		}
		e.Nrid.Stop(t)

		// containerd v2.4.2 embeds NRI v0.12.3, which drops a disconnected
		// plugin from its list only at the end of its next event, and its
		// CreateContainer counts it as present until then: the first
		// creation right after nrid stopped would pass the required-plugin
		// check (fixed in NRI v0.12.5, which skips closed plugins). Any NRI
		// event flushes it: here a new pod. See docs/containerd.md.
		e.RunPod("p2")
		for _, name := range []string{"down1", "down2"} {
			_, err := e.TryCreate(pod, name)
			if err == nil {
				t.Fatalf("CreateContainer %s succeeded while nrid is down and containerd requires nri-grpc", name)
			}
			if !strings.Contains(err.Error(), `required plugin "nri-grpc" not present`) {
				t.Errorf("error does not name the required bridge: %v", err)
			}
			t.Logf("nrid down: %v", err)
		}

		e.Restart(e.Nrid)
		e.WaitNridServing()
		e.WaitPluginReady(gp.Full, gp.Proc)
		c2 := e.Run(pod, "back")
		if got := e.ProcEnv(e.Inspect(c2).Pid)["E2E_GO"]; got != "yes" {
			t.Errorf("container created after nrid came back: E2E_GO = %q, want yes", got)
		}
	})
}

// TestSlowPluginsWithinBudget: three plugins that each take 700 ms in
// CreateContainer (2.1 s together) behind the bridge, with containerd's
// 2 s plugin timeout: the bridge answers within its budget (2 s less
// 250 ms), the third plugin is skipped (not disconnected), and containerd
// never drops the bridge.
func TestSlowPluginsWithinBudget(t *testing.T) {
	nridOnly(t, "the bridge's budget within containerd's one request timeout; with the drop-in every plugin has its own request timeout")
	e := NewEnv(t, EnvOptions{})
	var plugins []*GRPCPlugin
	for i, n := range []string{"a", "b", "c"} {
		plugins = append(plugins, e.StartGRPCPlugin(fmt.Sprintf("5%d", i+1), "slow-"+n,
			"-create-delay", "700ms", "-env", "E2E_SLOW_"+strings.ToUpper(n)+"=yes"))
	}
	instances := map[string]string{}
	for full, info := range e.Plugins() {
		instances[full] = info.GetInstanceId()
	}
	pod := e.RunPod("p1")
	for _, name := range []string{"c1", "c2", "c3"} {
		id := e.Run(pod, name)
		env := e.ProcEnv(e.Inspect(id).Pid)
		t.Logf("%s: E2E_SLOW_A=%q E2E_SLOW_B=%q E2E_SLOW_C=%q", name, env["E2E_SLOW_A"], env["E2E_SLOW_B"], env["E2E_SLOW_C"])
		if env["E2E_SLOW_A"] != "yes" {
			t.Errorf("%s: the first slow plugin's E2E_SLOW_A is missing: containerd dropped the bridge's answer", name)
		}
		if _, ok := env["E2E_SLOW_C"]; ok {
			t.Errorf("%s: E2E_SLOW_C present: the third plugin ran past the bridge's budget", name)
		}
	}
	if LogContains(e.Ctrd.Log, "closing plugin") {
		t.Errorf("containerd closed a plugin:\n%s", grepLines(e.Ctrd.Log, "closing plugin"))
	}
	if LogContains(e.Nrid.Log, "classic runtime connection lost") {
		t.Errorf("nrid lost its connection to containerd")
	}
	if !e.NridServing() {
		t.Errorf("nrid is not attached to containerd any more")
	}
	for _, p := range plugins {
		info := e.Plugins()[p.Full]
		if info == nil || info.GetState() != nriv1beta1.PluginState_PLUGIN_STATE_READY {
			t.Errorf("slow plugin %s is no longer registered (skipped plugins must stay)", p.Full)
			continue
		}
		if c := info.GetCounters(); c.GetTimeouts() != 0 || c.GetUnavailable() != 0 {
			t.Errorf("slow plugin %s: %d timeouts, %d unavailable; want 0 (cut short by the budget is skipped)", p.Full,
				c.GetTimeouts(), c.GetUnavailable())
		}
		if info.GetInstanceId() != instances[p.Full] {
			t.Errorf("slow plugin %s registered again (instance %s, was %s): it was disconnected", p.Full,
				info.GetInstanceId(), instances[p.Full])
		}
	}
}

// TestUpdateContainerResources: CRI UpdateContainerResources with a plugin
// that changes the update (cpu shares 1000 instead of the requested 768):
// the plugin's value lands in the container's cgroup, the rest of the
// request (the memory limit) as requested.
func TestUpdateContainerResources(t *testing.T) {
	eachRuntime(t, EnvOptions{}, testUpdateContainerResources)
}

// testUpdateContainerResources is TestUpdateContainerResources on one runtime setup (eachRuntime).
func testUpdateContainerResources(t *testing.T, opts EnvOptions) {
	e := NewEnv(t, opts)
	gp := e.StartGRPCPlugin("10", "update", "-update-cpu-shares", "1000")
	pod := e.RunPod("p1")
	id := e.Run(pod, "c1")
	pid := e.Inspect(id).Pid
	if got := cpuShares(e, pid); got != 512 {
		t.Errorf("cpu shares before the update = %d, want CRI's 512", got)
	}
	ctx, cancel := ctxT(criTimeout)
	defer cancel()
	if _, err := e.CRI.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{CpuShares: 768, MemoryLimitInBytes: 96 << 20},
	}); err != nil {
		t.Fatalf("UpdateContainerResources: %v", err)
	}
	if got := cpuShares(e, pid); got != 1000 {
		t.Errorf("cpu shares after the update = %d, want the plugin's 1000 (requested 768)", got)
	}
	if got := memoryLimit(e, pid); got != 96<<20 {
		t.Errorf("memory limit after the update = %d, want the requested %d", got, 96<<20)
	}
	evs := ReadEvents(gp.Events)
	if !slices.ContainsFunc(evs, func(ev Event) bool { return ev.Event == "UpdateContainer" && ev.Detail == "cpu.shares=768" }) {
		t.Errorf("the plugin did not see the requested update: %v", EventNames(evs))
	}
}

// TestContainerdRestart: containerd restarted with a pod and a container
// running: the bridge reattaches, the plugins are resynced with the running
// pod and container, and the next container is adjusted by both a gRPC
// plugin and a classic plugin on nrid's plugin side.
func TestContainerdRestart(t *testing.T) {
	nridOnly(t, "the bridge reattaching and a classic plugin on nrid's socket surviving containerd's restart (the drop-in's: TestDropInContainerdRestart)")
	e := NewEnv(t, EnvOptions{})
	gp := e.StartGRPCPlugin("10", "inject", "-env", "E2E_GO=yes")
	cp := e.StartClassicPlugin(e.ClassicSock, "20", "classic", "-env", "E2E_CLASSIC=yes")
	e.WaitPluginReady(cp.Full, cp.Proc)
	pod := e.RunPod("p1")
	c1 := e.Run(pod, "c1")
	pid1 := e.Inspect(c1).Pid

	e.Ctrd.Stop(t)
	e.Restart(e.Ctrd)
	e.WaitContainerd()

	if st := e.Status(c1).GetState(); st != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("c1 is %v after containerd's restart, want running", st)
	}
	WaitEvents(t, gp.Events, func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(ev Event) bool {
			return (ev.Event == "Resync" || ev.Event == "Synchronize") && ev.Epoch > 1 && ev.Pods == 1 && ev.Containers == 1
		})
	}, "a resync with the running pod and container")
	if !waitFor(60*time.Second, func() bool {
		return strings.Count(readFile(e.Nrid.Log), "attached to classic runtime") >= 2 && e.NridServing()
	}) {
		t.Fatalf("the bridge did not reattach to containerd:\n%s", e.Tail(e.Nrid.Log, 20))
	}
	e.WaitPluginReady(cp.Full, cp.Proc)

	c2 := e.Run(pod, "c2")
	env := e.ProcEnv(e.Inspect(c2).Pid)
	if env["E2E_GO"] != "yes" || env["E2E_CLASSIC"] != "yes" {
		t.Errorf("container created after containerd's restart: E2E_GO=%q E2E_CLASSIC=%q, want both yes", env["E2E_GO"], env["E2E_CLASSIC"])
	}
	if e.ProcEnv(pid1)["E2E_GO"] != "yes" {
		t.Errorf("c1's process lost its environment?")
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func grepLines(path, s string) string {
	var out []string
	for _, l := range strings.Split(readFile(path), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// cpuShares reads the process's cpu shares: cpu.shares (v1) or cpu.weight
// converted back (v2).
func cpuShares(e *Env, pid int) int64 {
	if isV1(e, pid, "cpu") {
		return atoi(e, e.CgroupFile(pid, "cpu", "cpu.shares"))
	}
	w := atoi(e, e.CgroupFile(pid, "cpu", "cpu.weight"))
	// runc: weight = 1 + ((shares-2)*9999)/262142
	for s := int64(2); s <= 262144; s++ {
		if 1+((s-2)*9999)/262142 == w {
			return s
		}
	}
	return -1
}

func memoryLimit(e *Env, pid int) int64 {
	if isV1(e, pid, "memory") {
		return atoi(e, e.CgroupFile(pid, "memory", "memory.limit_in_bytes"))
	}
	return atoi(e, e.CgroupFile(pid, "memory", "memory.max"))
}

func isV1(e *Env, pid int, controller string) bool {
	for _, l := range strings.Split(readFile(fmt.Sprintf("/proc/%d/cgroup", pid)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), controller) {
			return true
		}
	}
	return false
}

func atoi(e *Env, s string) int64 {
	e.tb.Helper()
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		e.tb.Fatalf("not a number: %q", s)
	}
	return n
}

// TestPythonExamplePlugin: the Python SDK's example plugin
// (clients/python/examples/env-ulimit-injector, run with the venv of `make
// python-venv`) behind nrid performs the same injection as the Go plugins:
// the pod annotations env.noderesource.dev and ulimits.noderesource.dev
// give a container the same environment variable and the same rlimit
// (OCI spec and running process) with the Python plugin as with the Go
// ulimit-adjuster example plus a Go SDK plugin injecting the variable.
func TestPythonExamplePlugin(t *testing.T) {
	eachRuntime(t, EnvOptions{}, testPythonExamplePlugin)
}

// testPythonExamplePlugin is TestPythonExamplePlugin on one runtime setup (eachRuntime).
func testPythonExamplePlugin(t *testing.T, opts EnvOptions) {
	script := filepath.Join(suite.Repo, "clients", "python", "examples", "env-ulimit-injector", "env_ulimit_injector.py")
	if _, err := os.Stat(script); err != nil {
		t.Skipf("missing: the Python example plugin %s", script)
	}
	python := filepath.Join(suite.Repo, "clients", "python", ".venv", "bin", "python")
	if _, err := os.Stat(filepath.Join(suite.Repo, "clients", "python", ".venv", ".installed")); err != nil {
		t.Logf("make python-venv (clients/python/.venv is not installed)")
		cmd := exec.Command("make", "python-venv")
		cmd.Dir = suite.Repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make python-venv: %v\n%s", err, out)
		}
	}
	annotations := map[string]string{
		"env.noderesource.dev":     `{"E2E_INJECTED": "same-value"}`,
		"ulimits.noderesource.dev": `[{"type": "RLIMIT_NOFILE", "soft": 1024, "hard": 4096}]`,
	}
	type result struct {
		env        string
		rlimits    []string
		hardNofile string // the running process's hard RLIMIT_NOFILE
	}
	observe := func(e *Env, id string) result {
		in := e.Inspect(id)
		var r result
		r.env = SpecEnv(in.Spec)["E2E_INJECTED"]
		if got := e.ProcEnv(in.Pid)["E2E_INJECTED"]; got != r.env {
			t.Errorf("process env E2E_INJECTED = %q, OCI spec %q", got, r.env)
		}
		for _, l := range in.Spec.Process.Rlimits {
			r.rlimits = append(r.rlimits, fmt.Sprintf("%s %d/%d", l.Type, l.Soft, l.Hard))
		}
		slices.Sort(r.rlimits)
		// The running process's hard limit: its soft limit is not the
		// container's any more, the Go runtime of /sleeper raises it.
		for _, l := range strings.Split(readFile(fmt.Sprintf("/proc/%d/limits", in.Pid)), "\n") {
			if f := strings.Fields(l); len(f) == 6 && strings.HasPrefix(l, "Max open files") {
				r.hardNofile = f[4]
			}
		}
		return r
	}

	e := NewEnv(t, opts)
	full := "30-env-ulimit-injector"
	py := e.start(full, filepath.Join(e.Logs, full+".log"), python, nil, script, "--server", e.NridSock,
		"--endpoint", filepath.Join(e.PluginDir, full+".sock"), "--verbose")
	e.WaitPluginReady(full, py)
	pod := e.RunPodAnnotated("py", annotations)
	pyRes := observe(e, e.Run(pod, "c1"))
	py.Stop(t)
	if !waitFor(30*time.Second, func() bool { _, ok := e.Plugins()[full]; return !ok }) {
		t.Fatalf("nrid still lists %s after it stopped", full)
	}

	ul := e.start("20-ulimit-adjuster", filepath.Join(e.Logs, "20-ulimit-adjuster.log"), filepath.Join(suite.Bin, "ulimit-adjuster"), nil,
		"-server", "unix://"+e.NridSock, "-endpoint", filepath.Join(e.PluginDir, "20-ulimit-adjuster.sock"))
	e.WaitPluginReady("20-ulimit-adjuster", ul)
	e.StartGRPCPlugin("10", "env", "-env", "E2E_INJECTED=same-value")
	pod = e.RunPodAnnotated("go", annotations)
	goRes := observe(e, e.Run(pod, "c1"))

	t.Logf("Python: %+v", pyRes)
	t.Logf("Go:     %+v", goRes)
	if pyRes.env != "same-value" || !slices.Contains(pyRes.rlimits, "RLIMIT_NOFILE 1024/4096") || pyRes.hardNofile != "4096" {
		t.Errorf("the Python example did not inject the annotated env and ulimit: %+v", pyRes)
	}
	if pyRes.env != goRes.env || !slices.Equal(pyRes.rlimits, goRes.rlimits) || pyRes.hardNofile != goRes.hardNofile {
		t.Errorf("the Python and Go plugins injected differently:\n  Python %+v\n  Go     %+v", pyRes, goRes)
	}
}
