//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/status"
)

// Scenarios of containerd built with nri-grpc's drop-in (EnvOptions.DropIn)
// side by side with stock containerd: the same classic plugins, connected to
// each containerd's own NRI socket, must give the same results.

// stockAndDropIn starts stock containerd with no nrid and containerd with
// the drop-in, with the same options otherwise.
func stockAndDropIn(t *testing.T, opts EnvOptions) (stock, dropIn *Env) {
	t.Helper()
	s, d := opts, opts
	s.NoNrid = true
	d.DropIn = true
	return NewEnv(t, s), NewEnv(t, d)
}

// specNormalised returns the OCI spec as indented JSON with what differs
// between two scenarios by construction replaced:
//
//   - the scenario directory (root, state, logs, mount sources) by <dir>;
//   - the scenario's cgroup parent by <cgroup>, then the scenario name
//     (in the pod uid) by <scenario>;
//   - the container id by <container>, the pod sandbox id by <pod>;
//   - the sandbox process's PID in namespace paths (/proc/PID/ns/…) by <pid>.
//
// Nothing else is touched.
func specNormalised(t *testing.T, e *Env, in *Inspected, pod *Pod, id string) string {
	t.Helper()
	b, err := json.MarshalIndent(in.Spec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	s = strings.ReplaceAll(s, e.Dir, "<dir>")
	s = strings.ReplaceAll(s, e.Cgroup, "<cgroup>")
	s = strings.ReplaceAll(s, e.Name+"-", "<scenario>-")
	s = strings.ReplaceAll(s, id, "<container>")
	s = strings.ReplaceAll(s, pod.ID, "<pod>")
	return nsPID.ReplaceAllString(s, "/proc/<pid>/ns/")
}

var nsPID = regexp.MustCompile(`/proc/[0-9]+/ns/`)

// lineDiff lists the lines of a and b that differ (a small diff for
// failure messages: the specs have the same shape).
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("line %d:\n  stock:  %s\n  drop-in: %s", i+1, x, y))
		}
		if len(out) >= 20 {
			out = append(out, "…")
			break
		}
	}
	return strings.Join(out, "\n")
}

// criError is a CRI error as the client sees it: its gRPC code and
// message, with the scenario's ids and directory replaced as in
// specNormalised.
func criError(e *Env, pod *Pod, err error) string {
	st, _ := status.FromError(err)
	msg := strings.ReplaceAll(st.Message(), e.Dir, "<dir>")
	if pod != nil && pod.ID != "" {
		msg = strings.ReplaceAll(msg, pod.ID, "<pod>")
	}
	msg = containerID.ReplaceAllString(msg, "<id>")
	return st.Code().String() + ": " + msg
}

var containerID = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// TestDropInClassicSpecsIdentical: classic plugins built on upstream's
// pkg/stub (e2e-classic-plugin: one injecting a device, a read-only bind
// mount, an env var and an annotation like upstream's device-injector; one
// injecting rlimits and an env var like upstream's ulimit-adjuster; a
// validator) connected to containerd's own NRI socket give a container the
// same full OCI spec (CRI's verbose status, normalised as in
// specNormalised) with stock containerd and with the drop-in, and the
// running process has the device, the mount and the limits. A container the
// validator rejects fails with the same CRI error on both; so it does when
// the validator on the drop-in is a gRPC plugin of the same name.
func TestDropInClassicSpecsIdentical(t *testing.T) {
	stock, dropIn := stockAndDropIn(t, EnvOptions{})
	src := filepath.Join(suite.RunDir, "dropin-mount-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "hello.txt"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type side struct {
		name   string
		e      *Env
		valid  *ClassicPlugin
		spec   string
		reject string
	}
	sides := []*side{{name: "stock", e: stock}, {name: "drop-in", e: dropIn}}
	for _, s := range sides {
		e := s.e
		e.StartClassicPlugin(e.NRISock, "10", "devices", "-device", "/dev/e2e-null:c:1:3:666", "-mount", src+":/e2e-mount",
			"-env", "E2E_DEVICES=yes", "-annotation", "e2e/devices=yes")
		e.StartClassicPlugin(e.NRISock, "20", "ulimits", "-rlimit", "RLIMIT_NOFILE=1024:4096", "-rlimit", "RLIMIT_NPROC=512:1024",
			"-env", "E2E_ULIMITS=yes")
		s.valid = e.StartClassicPlugin(e.NRISock, "90", "validator", "-reject", "bad")
		pod := e.RunPod("p1")
		id := e.Run(pod, "c1")
		in := e.Inspect(id)
		s.spec = specNormalised(t, e, in, pod, id)

		env := e.ProcEnv(in.Pid)
		if env["E2E_DEVICES"] != "yes" || env["E2E_ULIMITS"] != "yes" {
			t.Errorf("%s: process env E2E_DEVICES=%q E2E_ULIMITS=%q, want both yes", s.name, env["E2E_DEVICES"], env["E2E_ULIMITS"])
		}
		var st unix.Stat_t
		if err := unix.Stat(fmt.Sprintf("/proc/%d/root/dev/e2e-null", in.Pid), &st); err != nil {
			t.Errorf("%s: the injected device: %v", s.name, err)
		} else if st.Mode&syscall.S_IFMT != syscall.S_IFCHR || unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
			t.Errorf("%s: /dev/e2e-null is mode %o rdev %d:%d, want the character device 1:3", s.name, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
		}
		if got, err := e.ProcFile(in.Pid, "/e2e-mount/hello.txt"); err != nil || got != "hello from the host\n" {
			t.Errorf("%s: /e2e-mount/hello.txt = %q, %v; want the host file", s.name, got, err)
		}
		// The hard limit: the Go runtime of /sleeper raises its soft limit.
		if got := procLimit(in.Pid, "Max open files"); !strings.HasSuffix(got, " 4096") {
			t.Errorf("%s: RLIMIT_NOFILE soft/hard = %q, want the hard limit 4096", s.name, got)
		}
		if got := procLimit(in.Pid, "Max processes"); got != "512 1024" {
			t.Errorf("%s: RLIMIT_NPROC soft/hard = %q, want 512 1024", s.name, got)
		}

		_, err := e.TryCreate(pod, "bad-1")
		if err == nil {
			t.Fatalf("%s: the validator's rejected container bad-1 was created", s.name)
		}
		s.reject = criError(e, pod, err)
		t.Logf("%s: rejection: %s", s.name, s.reject)
	}
	if sides[0].spec != sides[1].spec {
		t.Errorf("the OCI specs differ between stock containerd and the drop-in:\n%s", lineDiff(sides[0].spec, sides[1].spec))
	} else {
		t.Logf("OCI specs identical (%d bytes normalised)", len(sides[0].spec))
	}
	for _, want := range []string{"90-validator", "e2e: containers named so are not allowed"} {
		if !strings.Contains(sides[0].reject, want) {
			t.Errorf("stock containerd's rejection does not name %q: %s", want, sides[0].reject)
		}
	}
	if sides[0].reject != sides[1].reject {
		t.Errorf("the validator's rejection differs:\n  stock:   %s\n  drop-in: %s", sides[0].reject, sides[1].reject)
	}

	// The same validator as a gRPC plugin on the drop-in.
	sides[1].valid.Stop(t)
	dropIn.StartGRPCPlugin("90", "validator", "-reject", "bad")
	pod := dropIn.RunPod("p2")
	_, err := dropIn.TryCreate(pod, "bad-2")
	if err == nil {
		t.Fatal("drop-in: the gRPC validator's rejected container bad-2 was created")
	}
	grpcReject := criError(dropIn, pod, err)
	t.Logf("drop-in, gRPC validator: %s", grpcReject)
	if grpcReject != sides[0].reject {
		t.Errorf("a gRPC validator's rejection on the drop-in differs from a classic one's on stock containerd:\n  stock:   %s\n  drop-in: %s",
			sides[0].reject, grpcReject)
	}
	dropIn.Run(pod, "good") // accepted by the gRPC validator
}

// procLimit returns the soft and hard limits of a /proc/PID/limits line.
func procLimit(pid int, name string) string {
	for _, l := range strings.Split(readFile(fmt.Sprintf("/proc/%d/limits", pid)), "\n") {
		if strings.HasPrefix(l, name) {
			if f := strings.Fields(strings.TrimPrefix(l, name)); len(f) >= 2 {
				return f[0] + " " + f[1]
			}
		}
	}
	return ""
}

// TestDropInRequiredPluginAbsent: containerd's default validator requiring
// a plugin that is not there: RunPodSandbox succeeds (the default validator
// validates container adjustments only) and CreateContainer fails with the
// same CRI error, with stock containerd and with the drop-in.
func TestDropInRequiredPluginAbsent(t *testing.T) {
	stock, dropIn := stockAndDropIn(t, EnvOptions{ContainerdRequired: []string{"absent"}})
	var outcomes []string
	for _, e := range []*Env{stock, dropIn} {
		pod, err := e.TryRunPod("p1")
		if err != nil {
			outcomes = append(outcomes, "RunPodSandbox failed: "+criError(e, nil, err))
			continue
		}
		if _, err = e.TryCreate(pod, "c1"); err == nil {
			outcomes = append(outcomes, "CreateContainer succeeded")
			continue
		}
		outcomes = append(outcomes, "CreateContainer failed: "+criError(e, pod, err))
	}
	t.Logf("stock:   %s", outcomes[0])
	t.Logf("drop-in: %s", outcomes[1])
	if !strings.Contains(outcomes[0], `CreateContainer failed: Unknown: `) || !strings.Contains(outcomes[0], `required plugin "absent" not present`) {
		t.Errorf("stock containerd: %s; want CreateContainer to fail naming the absent plugin", outcomes[0])
	}
	if outcomes[0] != outcomes[1] {
		t.Errorf("the outcomes differ:\n  stock:   %s\n  drop-in: %s", outcomes[0], outcomes[1])
	}
}

// TestDropInConflictReadsAsStock: two classic plugins setting the same
// annotation: CreateContainer fails with the same CRI error (code and
// message) with stock containerd and with the drop-in, and a plugin that
// fails CreateContainer with its own error too.
func TestDropInConflictReadsAsStock(t *testing.T) {
	stock, dropIn := stockAndDropIn(t, EnvOptions{})
	var conflicts, failures []string
	for _, e := range []*Env{stock, dropIn} {
		e.StartClassicPlugin(e.NRISock, "10", "first", "-annotation", "e2e/same=first", "-fail-create", "fail")
		e.StartClassicPlugin(e.NRISock, "20", "second", "-annotation", "e2e/same=second")
		pod := e.RunPod("p1")
		_, err := e.TryCreate(pod, "c1")
		if err == nil {
			t.Fatalf("%s (drop-in %v): two plugins set the same annotation and the container was created", e.Name, e.DropIn)
		}
		conflicts = append(conflicts, criError(e, pod, err))
		if _, err = e.TryCreate(pod, "fail-1"); err == nil {
			t.Fatalf("%s (drop-in %v): the plugin failed CreateContainer and the container was created", e.Name, e.DropIn)
		}
		failures = append(failures, criError(e, pod, err))
	}
	t.Logf("plugin error, stock:   %s", failures[0])
	t.Logf("plugin error, drop-in: %s", failures[1])
	if !strings.Contains(failures[0], "e2e: CreateContainer of fail-1 fails") {
		t.Errorf("stock containerd's error does not carry the plugin's: %s", failures[0])
	}
	if failures[0] != failures[1] {
		t.Errorf("a plugin's CreateContainer error reads differently:\n  stock:   %s\n  drop-in: %s", failures[0], failures[1])
	}
	t.Logf("stock:   %s", conflicts[0])
	t.Logf("drop-in: %s", conflicts[1])
	for _, want := range []string{"10-first", "20-second", "e2e/same"} {
		if !strings.Contains(conflicts[0], want) {
			t.Errorf("stock containerd's conflict does not name %q: %s", want, conflicts[0])
		}
	}
	if conflicts[0] != conflicts[1] {
		t.Errorf("the conflict reads differently:\n  stock:   %s\n  drop-in: %s", conflicts[0], conflicts[1])
	}
}

// oldPlugins are test/classic-old builds, by NRI version.
var oldPlugins struct {
	sync.Mutex
	bins map[string]string
}

// OldClassicPlugin returns test/classic-old built against NRI nriVersion:
// "v0.11.0" (its go.mod) or "v0.6.1" (test/e2e/classic-v061.mod, the same
// source).
func OldClassicPlugin(tb testing.TB, nriVersion string) string {
	tb.Helper()
	oldPlugins.Lock()
	defer oldPlugins.Unlock()
	if bin, ok := oldPlugins.bins[nriVersion]; ok {
		return bin
	}
	bin := filepath.Join(suite.Bin, "classic-old-"+nriVersion)
	args := []string{"build", "-o", bin}
	switch nriVersion {
	case "v0.11.0":
	case "v0.6.1":
		args = append(args, "-modfile="+filepath.Join(suite.Repo, "test", "e2e", "classic-v061.mod"))
	default:
		tb.Fatalf("no classic-old build for NRI %s", nriVersion)
	}
	if err := goIn(filepath.Join(suite.Repo, "test", "classic-old"), []string{"GOWORK=off"}, append(args, ".")...); err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil || !strings.Contains(string(out), "github.com/containerd/nri\t"+nriVersion) {
		tb.Fatalf("%s is not built against NRI %s: %v\n%s", bin, nriVersion, err, out)
	}
	if oldPlugins.bins == nil {
		oldPlugins.bins = map[string]string{}
	}
	oldPlugins.bins[nriVersion] = bin
	return bin
}

// PrelaunchPlugin installs bin as the pre-launched plugin full ("NN-name")
// in containerd's plugin_path, with config as its plugin_config_path file;
// it is for EnvOptions.Prepare (containerd launches it at startup).
func (e *Env) PrelaunchPlugin(full, bin, config string) {
	e.tb.Helper()
	if err := os.Symlink(bin, filepath.Join(e.Dir, "nri", "plugins", full)); err != nil {
		e.tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "nri", "conf.d", full+".conf"), []byte(config), 0o644); err != nil {
		e.tb.Fatal(err)
	}
}

// oldNotes reads classic-old's notes ("Event ID…" lines) as event names.
func oldNotes(path string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(readFile(path)), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}

// TestDropInOldClassicPlugins: test/classic-old, a plugin built against
// NRI v0.11.0 and against v0.6.1 (before the dedicated lifecycle RPCs: it
// gets them through StateChange), pre-launched by containerd from its
// plugin_path: on the drop-in it adjusts the container (env var and
// annotation in the OCI spec and the process) and sees the same events in
// the same order as on stock containerd.
func TestDropInOldClassicPlugins(t *testing.T) {
	for _, v := range []string{"v0.6.1", "v0.11.0"} {
		t.Run(v, func(t *testing.T) {
			bin := OldClassicPlugin(t, v)
			var seen [][]string
			for _, dropIn := range []bool{false, true} {
				var notes string
				e := NewEnv(t, EnvOptions{NoNrid: !dropIn, DropIn: dropIn, Prepare: func(e *Env) {
					notes = filepath.Join(e.Logs, "10-old.notes")
					e.PrelaunchPlugin("10-old", bin, notes)
				}})
				if !waitFor(60*time.Second, func() bool { return slices.Contains(oldNotes(notes), "Synchronize") }) {
					t.Fatalf("%s: the pre-launched plugin was not synchronized: %v\n%s", e.Name, oldNotes(notes), e.Tail(e.Ctrd.Log, 20))
				}
				pod := e.RunPod("p1")
				id := e.Run(pod, "c1")
				in := e.Inspect(id)
				if in.Spec.Annotations["classic-old"] != "v0.11.0" || e.ProcEnv(in.Pid)["CLASSIC_OLD"] != "1" {
					t.Errorf("%s (drop-in %v): annotation classic-old=%q, process env CLASSIC_OLD=%q; want the plugin's v0.11.0 and 1",
						e.Name, dropIn, in.Spec.Annotations["classic-old"], e.ProcEnv(in.Pid)["CLASSIC_OLD"])
				}
				e.StopRemove(id)
				e.StopRemovePod(pod)
				if !waitFor(60*time.Second, func() bool { return slices.Contains(oldNotes(notes), "RemovePodSandbox") }) {
					t.Fatalf("%s: no RemovePodSandbox: %v", e.Name, oldNotes(notes))
				}
				seen = append(seen, oldNotes(notes))
			}
			t.Logf("stock:   %v", seen[0])
			t.Logf("drop-in: %v", seen[1])
			if !slices.Equal(seen[0], seen[1]) {
				t.Errorf("NRI %s plugin's events differ:\n  stock:   %v\n  drop-in: %v", v, seen[0], seen[1])
			}
		})
	}
}

// TestDropInClassicPluginKilledMidCall: a classic plugin SIGKILLed while
// containerd waits for its CreateContainer answer (containerd's request
// timeout 30 s, the plugin's delay 25 s): the creation proceeds without its
// changes and the next container too, with stock containerd and with the
// drop-in alike.
func TestDropInClassicPluginKilledMidCall(t *testing.T) {
	stock, dropIn := stockAndDropIn(t, EnvOptions{CtrdRequestTimeout: "30s"})
	for _, e := range []*Env{stock, dropIn} {
		e.StartClassicPlugin(e.NRISock, "10", "keep", "-env", "E2E_KEEP=yes")
		victim := e.StartClassicPlugin(e.NRISock, "20", "victim", "-env", "E2E_VICTIM=yes", "-create-delay", "25s")
		pod := e.RunPod("p1")
		res := make(chan error, 1)
		var id string
		go func() {
			var err error
			id, err = e.TryCreate(pod, "c1")
			res <- err
		}()
		WaitEvents(t, victim.Events, func(evs []Event) bool { return slices.Contains(PodEvents(evs, "p1"), "CreateContainer") },
			"the victim's CreateContainer")
		victim.Kill()
		if err := <-res; err != nil {
			t.Fatalf("%s (drop-in %v): creation failed after the plugin was killed: %v", e.Name, e.DropIn, err)
		}
		e.Start(id)
		for _, c := range []string{id, e.Run(pod, "c2")} {
			env := e.ProcEnv(e.Inspect(c).Pid)
			if env["E2E_KEEP"] != "yes" || env["E2E_VICTIM"] != "" {
				t.Errorf("%s (drop-in %v): E2E_KEEP=%q E2E_VICTIM=%q, want yes and nothing", e.Name, e.DropIn, env["E2E_KEEP"], env["E2E_VICTIM"])
			}
		}
	}
}

// TestDropInContainerdRestart: containerd restarted with a pod and a
// container running, stock and with the drop-in: the pre-launched classic
// plugin is launched again and synchronized with the pod and container, an
// external pkg/stub plugin is gone (it exits with its connection), and the
// next container is adjusted by the pre-launched plugin; on the drop-in a
// gRPC plugin registers again by itself, is synchronized with the pod and
// the container, and adjusts the next container too.
func TestDropInContainerdRestart(t *testing.T) {
	bin := OldClassicPlugin(t, "v0.11.0")
	for _, dropIn := range []bool{false, true} {
		var notes string
		e := NewEnv(t, EnvOptions{NoNrid: !dropIn, DropIn: dropIn, Prepare: func(e *Env) {
			notes = filepath.Join(e.Logs, "10-old.notes")
			e.PrelaunchPlugin("10-old", bin, notes)
		}})
		ext := e.StartClassicPlugin(e.NRISock, "20", "external", "-env", "E2E_EXTERNAL=yes")
		var gp *GRPCPlugin
		if dropIn {
			gp = e.StartGRPCPlugin("30", "grpc", "-env", "E2E_GO=yes")
		}
		pod := e.RunPod("p1")
		c1 := e.Run(pod, "c1")

		e.Ctrd.Stop(t)
		e.Restart(e.Ctrd)
		e.WaitContainerd()
		if st := e.Status(c1).GetState(); st.String() != "CONTAINER_RUNNING" {
			t.Fatalf("%s: c1 is %v after containerd's restart", e.Name, st)
		}
		if !waitFor(60*time.Second, func() bool { return strings.Contains(readFile(notes), "Synchronize 1 1") }) {
			t.Fatalf("%s (drop-in %v): the pre-launched plugin was not synchronized again with 1 pod and 1 container: %q",
				e.Name, dropIn, readFile(notes))
		}
		if !waitFor(60*time.Second, ext.Exited) {
			t.Errorf("%s (drop-in %v): the external pkg/stub plugin still runs after containerd's restart", e.Name, dropIn)
		}
		if gp != nil {
			WaitEvents(t, gp.Events, func(evs []Event) bool {
				return CountEvents(evs, "Configure") >= 2 && slices.ContainsFunc(evs, func(ev Event) bool {
					return (ev.Event == "Synchronize" || ev.Event == "Resync") && ev.Pods == 1 && ev.Containers == 1
				})
			}, "a second registration synchronized with 1 pod and 1 container")
		}
		env := e.ProcEnv(e.Inspect(e.Run(pod, "c2")).Pid)
		if env["CLASSIC_OLD"] != "1" {
			t.Errorf("%s (drop-in %v): c2 lacks the pre-launched plugin's CLASSIC_OLD", e.Name, dropIn)
		}
		if env["E2E_EXTERNAL"] != "" {
			t.Errorf("%s (drop-in %v): c2 has the gone external plugin's E2E_EXTERNAL", e.Name, dropIn)
		}
		if gp != nil && env["E2E_GO"] != "yes" {
			t.Errorf("%s: c2 lacks the gRPC plugin's E2E_GO after containerd's restart", e.Name)
		}
	}
}

// childrenRunning returns the PIDs of the children of ppid that run bin.
func childrenRunning(ppid int, bin string) []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || strings.TrimSuffix(exe, " (deleted)") != bin {
			continue
		}
		for _, l := range strings.Split(readFile(fmt.Sprintf("/proc/%d/status", pid)), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "PPid:" && f[1] == strconv.Itoa(ppid) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestDropInPrelaunchedPluginKilled: a pre-launched plugin (test/classic-old
// v0.11.0) SIGKILLed by PID. Stock containerd leaves it dead: the next
// containers are created without its changes. The drop-in supervises it,
// deliberately (docs/containerd.md §8): it is launched again, configured and
// synchronized with the running pod and container, and adjusts the next
// container.
func TestDropInPrelaunchedPluginKilled(t *testing.T) {
	bin := OldClassicPlugin(t, "v0.11.0")
	for _, dropIn := range []bool{false, true} {
		var notes string
		e := NewEnv(t, EnvOptions{NoNrid: !dropIn, DropIn: dropIn, Prepare: func(e *Env) {
			notes = filepath.Join(e.Logs, "10-old.notes")
			e.PrelaunchPlugin("10-old", bin, notes)
		}})
		pod := e.RunPod("p1")
		c1 := e.Run(pod, "c1")
		if e.ProcEnv(e.Inspect(c1).Pid)["CLASSIC_OLD"] != "1" {
			t.Fatalf("%s (drop-in %v): c1 not adjusted by the pre-launched plugin", e.Name, dropIn)
		}
		pids := childrenRunning(e.Ctrd.Pid(), bin)
		if len(pids) != 1 {
			t.Fatalf("%s: %d pre-launched plugin processes under containerd, want 1", e.Name, len(pids))
		}
		killPID(pids[0], bin)
		if dropIn {
			if !waitFor(60*time.Second, func() bool {
				return strings.Count(readFile(notes), "Configure ") >= 2 && strings.Contains(readFile(notes), "Synchronize 1 1")
			}) {
				t.Fatalf("the drop-in did not launch the killed plugin again (configured, synchronized with 1 pod, 1 container): %q", readFile(notes))
			}
		}
		c2 := e.Run(pod, "c2")
		got := e.ProcEnv(e.Inspect(c2).Pid)["CLASSIC_OLD"]
		switch {
		case !dropIn && got != "":
			t.Errorf("stock containerd: c2 has the killed plugin's CLASSIC_OLD=%q", got)
		case dropIn && got != "1":
			t.Errorf("drop-in: c2 lacks the relaunched plugin's CLASSIC_OLD (%q)", got)
		}
		t.Logf("drop-in %v: after the kill, c2 CLASSIC_OLD=%q; pre-launched processes now %v", dropIn, got, childrenRunning(e.Ctrd.Pid(), bin))
	}
}
