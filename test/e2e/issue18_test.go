//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Issue 18 against a real containerd: nritest's classic runtime check,
// event selectors and plugin status, each through CRI.

// nritestReport is the part of `nritest --json-file` the suite reads.
type nritestReport struct {
	Command string `json:"command"`
	Counts  struct {
		Pass, Fail, Skip, Warn int
	} `json:"counts"`
	Report struct {
		Scenarios []struct {
			Group    string   `json:"group"`
			Name     string   `json:"name"`
			Result   string   `json:"result"`
			Messages []string `json:"messages"`
		} `json:"scenarios"`
	} `json:"report"`
}

// TestNritestRuntimeClassic: `nritest runtime --classic` on containerd's
// own NRI socket (classic NRI's model: the runtime listens, plugins dial;
// nrid's bridge is attached beside it), while a pod named nritest-* and a
// container are created through CRI: nritest exits 0 and its report
// passes (not skips) the registration, Configure, Synchronize and
// pod-events checks — containerd's event order and nritest's adjustment
// (NRITEST_ADJUSTED=1), which the container's OCI spec shows too.
func TestNritestRuntimeClassic(t *testing.T) {
	eachRuntime(t, EnvOptions{}, testNritestRuntimeClassic)
}

// testNritestRuntimeClassic is TestNritestRuntimeClassic on one runtime setup (eachRuntime).
func testNritestRuntimeClassic(t *testing.T, opts EnvOptions) {
	e := NewEnv(t, opts)
	report := filepath.Join(e.Dir, "nritest-runtime.json")
	nt := e.start("nritest", filepath.Join(e.Logs, "nritest.log"), filepath.Join(suite.Bin, "nritest"), nil,
		"runtime", "--classic", e.NRISock, "--pod-prefix", "nritest-", "--pod-timeout", "2m", "--json-file", report)
	// containerd logs this once the plugin is in its list: events from
	// then on reach it (the drop-in: once the server registered it).
	if !waitFor(60*time.Second, func() bool {
		return nt.Exited() || LogContains(e.Ctrd.Log, `plugin \"99-nritest\" connected and synchronized`) ||
			LogContains(e.Ctrd.Log, `plugin "99-nritest" connected and synchronized`) ||
			(e.DropIn && LogContains(e.Ctrd.Log, `nri-grpc: plugin registered plugin=99-nritest `))
	}) || nt.Exited() {
		t.Fatalf("nritest did not register with containerd within 60s:\n%s\ncontainerd:\n%s", e.Tail(nt.Log, 20), e.Tail(e.Ctrd.Log, 20))
	}

	other := e.RunPod("other") // not named nritest-*: neither watched nor adjusted
	otherID := e.Run(other, "c1")
	pod := e.RunPod("nritest-probe")
	id := e.Run(pod, "c1")

	if !waitFor(3*time.Minute, nt.Exited) {
		t.Fatalf("nritest did not finish within 3 min:\n%s", e.Tail(nt.Log, 30))
	}
	if code := nt.ExitCode(); code != 0 {
		t.Errorf("nritest exited %d, want 0:\n%s", code, e.Tail(nt.Log, 30))
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("nritest's JSON report: %v\n%s", err, e.Tail(nt.Log, 30))
	}
	var r nritestReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("nritest's JSON report: %v\n%s", err, b)
	}
	results := map[string]string{}
	for _, s := range r.Report.Scenarios {
		results[s.Name] = s.Result
		t.Logf("nritest %s/%s: %s %v", s.Group, s.Name, s.Result, s.Messages)
	}
	for _, name := range []string{"registers", "configure", "synchronize", "pod-events"} {
		if results[name] != "PASS" {
			t.Errorf("nritest check %s: %q, want PASS", name, results[name])
		}
	}
	if r.Counts.Fail != 0 || r.Counts.Skip != 0 {
		t.Errorf("nritest counts %+v, want no failure and no skip", r.Counts)
	}
	if got := SpecEnv(e.Inspect(id).Spec)["NRITEST_ADJUSTED"]; got != "1" {
		t.Errorf("OCI spec env NRITEST_ADJUSTED of the nritest-probe container = %q, want 1", got)
	}
	if _, ok := SpecEnv(e.Inspect(otherID).Spec)["NRITEST_ADJUSTED"]; ok {
		t.Errorf("the container of pod other (not nritest-*) got NRITEST_ADJUSTED")
	}
}

// withLabels gives a pod extra labels.
func withLabels(kv map[string]string) func(*runtimeapi.PodSandboxConfig) {
	return func(c *runtimeapi.PodSandboxConfig) {
		for k, v := range kv {
			c.Labels[k] = v
		}
	}
}

// TestSelectorsThroughContainerd: a Go SDK plugin behind the bridge that
// selects pods labelled tier=gold (plugin.WithSelectors) gets only the
// gold pod's events and adjusts only its container, while a plugin without
// selectors adjusts both; AdminService and `nrictl plugins -o json` count
// the filtered events and show the selector; a plugin with the same
// selector registering later is synchronized with the gold pod only.
func TestSelectorsThroughContainerd(t *testing.T) {
	eachRuntime(t, EnvOptions{NridTOML: `
[[plugin]]
name = "15-classic-gold"
selectors = [{ namespaces = ["e2e"], pod_labels = "tier=gold" }]
`}, testSelectorsThroughContainerd)
}

// testSelectorsThroughContainerd is TestSelectorsThroughContainerd on one runtime setup (eachRuntime).
func testSelectorsThroughContainerd(t *testing.T, opts EnvOptions) {
	e := NewEnv(t, opts)
	gold := e.StartGRPCPlugin("10", "gold", "-env", "E2E_GOLD=yes", "-select-labels", "tier in (gold)")
	cgold := e.StartClassicPlugin(e.ClassicSock, "15", "classic-gold", "-env", "E2E_CLASSIC_GOLD=yes")
	e.WaitPluginReady(cgold.Full, cgold.Proc)
	all := e.StartGRPCPlugin("20", "all", "-env", "E2E_ALL=yes")

	plainPod, err := e.TryRunPodWith("plain", withLabels(map[string]string{"tier": "bronze"}))
	if err != nil {
		t.Fatalf("RunPodSandbox plain: %v", err)
	}
	plain := e.Run(plainPod, "c1")
	goldPod, err := e.TryRunPodWith("gold", withLabels(map[string]string{"tier": "gold"}))
	if err != nil {
		t.Fatalf("RunPodSandbox gold: %v", err)
	}
	golden := e.Run(goldPod, "c1")

	for _, c := range []struct {
		id, pod string
		want    map[string]string
		absent  []string
	}{
		{golden, "gold", map[string]string{"E2E_GOLD": "yes", "E2E_CLASSIC_GOLD": "yes", "E2E_ALL": "yes"}, nil},
		{plain, "plain", map[string]string{"E2E_ALL": "yes"}, []string{"E2E_GOLD", "E2E_CLASSIC_GOLD"}},
	} {
		in := e.Inspect(c.id)
		spec, proc := SpecEnv(in.Spec), e.ProcEnv(in.Pid)
		for k, v := range c.want {
			if spec[k] != v || proc[k] != v {
				t.Errorf("pod %s: %s = %q in the OCI spec, %q in the process; want %q", c.pod, k, spec[k], proc[k], v)
			}
		}
		for _, k := range c.absent {
			if _, ok := spec[k]; ok {
				t.Errorf("pod %s (not selected): the OCI spec has %s", c.pod, k)
			}
			if _, ok := proc[k]; ok {
				t.Errorf("pod %s (not selected): the process has %s", c.pod, k)
			}
		}
	}

	// Every event of both pods has been dispatched once the unselective
	// plugin saw the gold container's PostStartContainer (one pod after
	// the other, each event to both plugins in index order).
	started := func(pod string) func([]Event) bool {
		return func(evs []Event) bool { return slices.Contains(PodEvents(evs, pod), "PostStartContainer") }
	}
	WaitEvents(t, all.Events, started("gold"), "PostStartContainer of the gold pod")
	WaitEvents(t, all.Events, started("plain"), "PostStartContainer of the plain pod")
	evs := WaitEvents(t, gold.Events, started("gold"), "PostStartContainer of the gold pod")
	if got := PodEvents(evs, "plain"); len(got) > 0 {
		t.Errorf("the gold plugin got events of the plain pod: %v", got)
	}
	want := []string{"RunPodSandbox", "CreateContainer", "PostCreateContainer", "StartContainer", "PostStartContainer"}
	if got := PodEvents(evs, "gold"); !slices.Equal(got, want) {
		t.Errorf("the gold plugin's events of the gold pod: %v, want %v", got, want)
	}
	// The classic plugin on nrid's plugin side, selected by the operator.
	cevs := WaitEvents(t, cgold.Events, started("gold"), "PostStartContainer of the gold pod")
	if got := PodEvents(cevs, "plain"); len(got) > 0 {
		t.Errorf("the classic gold plugin got events of the plain pod: %v", got)
	}
	if got := PodEvents(cevs, "gold"); !slices.Equal(got, want) {
		t.Errorf("the classic gold plugin's events of the gold pod: %v, want %v", got, want)
	}

	info := e.Plugins()
	g, a := info[gold.Full], info[all.Full]
	if g == nil || a == nil {
		t.Fatalf("nrid lists %v, want %s and %s", keys(info), gold.Full, all.Full)
	}
	// The plain pod's RunPodSandbox, CreateContainer, PostCreateContainer,
	// StartContainer and PostStartContainer, at least.
	if f := g.GetCounters().GetFiltered(); f < 5 {
		t.Errorf("AdminService: %s filtered %d events, want at least 5 (the plain pod's)", gold.Full, f)
	}
	t.Logf("AdminService: %s counters %v; %s counters %v", gold.Full, g.GetCounters(), all.Full, a.GetCounters())
	if f := a.GetCounters().GetFiltered(); f != 0 {
		t.Errorf("AdminService: %s (no selectors) filtered %d events, want 0", all.Full, f)
	}
	if sels := g.GetSelectors(); len(sels) != 1 || sels[0].GetPodLabels() != "tier in (gold)" {
		t.Errorf("AdminService: %s selectors %v, want pod_labels \"tier in (gold)\"", gold.Full, sels)
	}
	if c := info[cgold.Full]; c.GetCounters().GetFiltered() < 5 || len(c.GetSelectors()) != 1 || c.GetSelectors()[0].GetPodLabels() != "tier=gold" {
		t.Errorf("AdminService: classic %s: filtered %d, selectors %v; want at least 5 and the operator's tier=gold", cgold.Full,
			c.GetCounters().GetFiltered(), c.GetSelectors())
	}

	out, err := exec.Command(filepath.Join(suite.Bin, "nrictl"), "--socket", e.NridSock, "plugins", "-o", "json").Output()
	if err != nil {
		t.Fatalf("nrictl plugins -o json: %v\n%s", err, out)
	}
	var list nriv1beta1.ListPluginsResponse
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(out, &list); err != nil {
		t.Fatalf("nrictl plugins -o json: %v\n%s", err, out)
	}
	var seen bool
	for _, p := range list.GetPlugins() {
		if p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName() != gold.Full {
			continue
		}
		seen = true
		if p.GetCounters().GetFiltered() < g.GetCounters().GetFiltered() {
			t.Errorf("nrictl: %s filtered %d, AdminService said %d before", gold.Full, p.GetCounters().GetFiltered(), g.GetCounters().GetFiltered())
		}
		if len(p.GetSelectors()) != 1 || p.GetSelectors()[0].GetPodLabels() != "tier in (gold)" {
			t.Errorf("nrictl: %s selectors %v", gold.Full, p.GetSelectors())
		}
	}
	if !seen {
		t.Errorf("nrictl plugins -o json does not list %s:\n%s", gold.Full, out)
	}

	// Synchronize carries only the selected state.
	late := e.StartGRPCPlugin("30", "gold-late", "-select-labels", "tier=gold")
	lateAll := e.StartGRPCPlugin("40", "all-late")
	firstSync := func(path string) Event {
		evs := WaitEvents(t, path, func(evs []Event) bool { return CountEvents(evs, "Synchronize") > 0 }, "Synchronize")
		for _, ev := range evs {
			if ev.Event == "Synchronize" {
				return ev
			}
		}
		return Event{}
	}
	if s := firstSync(late.Events); s.Pods != 1 || s.Containers != 1 {
		t.Errorf("%s (selects tier=gold) was synchronized with %d pods, %d containers; want 1 and 1", late.Full, s.Pods, s.Containers)
	}
	if s := firstSync(lateAll.Events); s.Pods != 2 || s.Containers != 2 {
		t.Errorf("%s (no selectors) was synchronized with %d pods, %d containers; want 2 and 2", lateAll.Full, s.Pods, s.Containers)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestPluginStatusThroughContainerd: a required Go SDK plugin (failure
// policy fail) registers NOT_READY (plugin.WithStatus); nrid's default
// policy for it is WAIT. containerd's request timeout is 30 s here, so the
// bridge's budget leaves the plugin its own timeouts: 1 s for
// RunPodSandbox, 25 s for CreateContainer (0.5 s for the teardown events).
//   - a pod created through CRI waits for it 1 s and fails, naming the
//     plugin and NOT_READY; the plugin was not called;
//   - a container created meanwhile (in a pod made before the plugin
//     registered) is held: a READY plugin before it in index order has
//     seen the creation, the NOT_READY one has not; when the plugin
//     reports READY (SetStatus) the creation goes through, and the
//     container has the plugin's env var, whose CreateContainer came after
//     its status change;
//   - the plugin asks for a resync (RequestResync): it gets a Synchronize
//     of the epoch the call returned, with reason PLUGIN_REQUESTED and
//     containerd's containers.
func TestPluginStatusThroughContainerd(t *testing.T) {
	eachRuntime(t, EnvOptions{CtrdRequestTimeout: "30s"}, testPluginStatusThroughContainerd)
}

// testPluginStatusThroughContainerd is TestPluginStatusThroughContainerd on one runtime setup (eachRuntime).
func testPluginStatusThroughContainerd(t *testing.T, opts EnvOptions) {
	e := NewEnv(t, opts)
	probe := e.StartGRPCPlugin("10", "probe", "-env", "E2E_PROBE=yes")
	pod := e.RunPod("p1")

	gate := e.StartGRPCPlugin("40", "gate", "-env", "E2E_GATE=yes", "-fail-policy", "fail", "-not-ready", "warming up",
		"-timeout", "RunPodSandbox=1s", "-timeout", "CreateContainer=25s",
		"-timeout", "StopPodSandbox=500ms", "-timeout", "RemovePodSandbox=500ms") // the failed pod's teardown waits for it too
	info := e.Plugins()[gate.Full]
	if info.GetStatus() != nriv1beta1.PluginStatus_PLUGIN_STATUS_NOT_READY || info.GetStatusReason() != "warming up" {
		t.Errorf("AdminService: %s status %v (%q), want NOT_READY (warming up)", gate.Full, info.GetStatus(), info.GetStatusReason())
	}
	if p := info.GetNotReadyPolicy(); p != nriv1beta1.NotReadyPolicy_NOT_READY_POLICY_WAIT {
		t.Errorf("AdminService: %s NOT_READY policy %v, want WAIT (the default of a required plugin)", gate.Full, p)
	}
	if got := e.pluginHealth(gate.Full); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health of nri.plugin/%s = %v, want NOT_SERVING while NOT_READY", gate.Full, got)
	}
	if !e.NridServing() {
		t.Errorf("nrid's own health is not SERVING: a NOT_READY plugin must not change it")
	}

	_, err := e.TryRunPod("p0")
	if err == nil {
		t.Fatal("RunPodSandbox succeeded while the required plugin 40-gate is NOT_READY")
	}
	t.Logf("pod while 40-gate is NOT_READY: %v", err)
	for _, s := range []string{gate.Full, "NOT_READY", "warming up"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("RunPodSandbox error does not say %q: %v", s, err)
		}
	}
	if got := PodEvents(ReadEvents(gate.Events), "p0"); slices.Contains(got, "RunPodSandbox") {
		t.Errorf("the NOT_READY plugin was called for p0: %v", got)
	}

	type result struct {
		id  string
		err error
	}
	res := make(chan result, 1)
	go func() { id, err := e.TryCreate(pod, "held"); res <- result{id, err} }()
	createOf := func(name string) func([]Event) bool {
		return func(evs []Event) bool {
			return slices.ContainsFunc(evs, func(ev Event) bool { return ev.Event == "CreateContainer" && ev.Container == name })
		}
	}
	WaitEvents(t, probe.Events, createOf("held"), "the probe's CreateContainer of held")
	if createOf("held")(ReadEvents(gate.Events)) {
		t.Fatalf("the NOT_READY plugin's CreateContainer was called: %v", EventNames(ReadEvents(gate.Events)))
	}
	select {
	case r := <-res:
		t.Fatalf("the creation of held did not wait for the NOT_READY required plugin: id %q, err %v", r.id, r.err)
	default:
	}

	if err := syscall.Kill(gate.Pid(), syscall.SIGUSR1); err != nil { // SetStatus(READY)
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-res:
	case <-time.After(2 * criTimeout):
		t.Fatal("CreateContainer of held did not return")
	}
	if r.err != nil {
		t.Fatalf("CreateContainer of held failed after the plugin reported READY: %v", r.err)
	}
	e.Start(r.id)
	in := e.Inspect(r.id)
	if got := SpecEnv(in.Spec)["E2E_GATE"]; got != "yes" {
		t.Errorf("held: OCI spec env E2E_GATE = %q, want yes", got)
	}
	if got := e.ProcEnv(in.Pid)["E2E_GATE"]; got != "yes" {
		t.Errorf("held: process env E2E_GATE = %q, want yes", got)
	}
	evs := ReadEvents(gate.Events)
	// SetStatus is logged before the call, Status once it returned: the
	// server may call the plugin in between (the status is in effect
	// before the answer).
	asked := slices.IndexFunc(evs, func(ev Event) bool { return ev.Event == "SetStatus" })
	ready := slices.IndexFunc(evs, func(ev Event) bool { return ev.Event == "Status" })
	created := slices.IndexFunc(evs, func(ev Event) bool { return ev.Event == "CreateContainer" && ev.Container == "held" })
	if asked < 0 || ready < 0 || evs[ready].Detail != "READY" || created < asked {
		t.Errorf("gate's events %v (SetStatus at %d, Status at %d, CreateContainer of held at %d): want READY asked for, then the call",
			EventNames(evs), asked, ready, created)
	}
	info = e.Plugins()[gate.Full]
	if info.GetStatus() != nriv1beta1.PluginStatus_PLUGIN_STATUS_READY {
		t.Errorf("AdminService: %s status %v after SetStatus(READY)", gate.Full, info.GetStatus())
	}
	if got := e.pluginHealth(gate.Full); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health of nri.plugin/%s = %v, want SERVING once READY", gate.Full, got)
	}
	t.Logf("%s counters: %v", gate.Full, info.GetCounters())
	// containerd tears the failed pod p0 down (StopPodSandbox,
	// RemovePodSandbox): those events went on without the plugin.
	if info.GetCounters().GetNotReadySkips() < 1 {
		t.Errorf("AdminService: %s not_ready_skips = 0, want the failed pod's teardown events", gate.Full)
	}

	// RequestResync: a new Synchronize epoch with containerd's state (the
	// pod p1 and the container held), answered through the bridge.
	if err := syscall.Kill(gate.Pid(), syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	evs = WaitEvents(t, gate.Events, func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(ev Event) bool { return ev.Event == "RequestResync" }) &&
			slices.ContainsFunc(evs, func(ev Event) bool { return ev.Detail == "SYNC_REASON_PLUGIN_REQUESTED" })
	}, "RequestResync answered and its Synchronize")
	asked = slices.IndexFunc(evs, func(ev Event) bool { return ev.Event == "RequestResync" })
	resync := evs[slices.IndexFunc(evs, func(ev Event) bool { return ev.Detail == "SYNC_REASON_PLUGIN_REQUESTED" })]
	t.Logf("RequestResync: %+v; resync: %+v", evs[asked], resync)
	if evs[asked].Epoch < 2 || resync.Epoch != evs[asked].Epoch {
		t.Errorf("RequestResync returned epoch %d (%s), the resync had epoch %d; want the same, after the registration's 1",
			evs[asked].Epoch, evs[asked].Detail, resync.Epoch)
	}
	if resync.Pods < 1 || resync.Containers != 1 {
		t.Errorf("the requested resync carried %d pods and %d containers; want p1 and its container held", resync.Pods, resync.Containers)
	}
	if got := e.Plugins()[gate.Full].GetCounters().GetRequestedResyncs(); got != 1 {
		t.Errorf("AdminService: %s requested_resyncs = %d, want 1", gate.Full, got)
	}
}

// TestRequiredSelectorsThroughContainerd: the operator requires plugin
// 50-goldreq for the pods labelled tier=gold only ([[plugin]] required and
// selectors). While it is absent a bronze pod and its container are
// created, a gold pod fails naming it; registered, it adjusts the gold
// pod's container and not the bronze one's.
func TestRequiredSelectorsThroughContainerd(t *testing.T) {
	eachRuntime(t, EnvOptions{NridTOML: `
[[plugin]]
name = "50-goldreq"
required = true
selectors = [{ pod_labels = "tier=gold" }]
`}, testRequiredSelectorsThroughContainerd)
}

// testRequiredSelectorsThroughContainerd is TestRequiredSelectorsThroughContainerd on one runtime setup (eachRuntime).
func testRequiredSelectorsThroughContainerd(t *testing.T, opts EnvOptions) {
	e := NewEnv(t, opts)
	bronze, err := e.TryRunPodWith("bronze", withLabels(map[string]string{"tier": "bronze"}))
	if err != nil {
		t.Fatalf("RunPodSandbox of a pod 50-goldreq does not select, 50-goldreq absent: %v", err)
	}
	e.Run(bronze, "c1")
	_, err = e.TryRunPodWith("gold", withLabels(map[string]string{"tier": "gold"}))
	if err == nil {
		t.Fatal("RunPodSandbox of a gold pod succeeded while 50-goldreq, required for it, is absent")
	}
	t.Logf("gold pod, 50-goldreq absent: %v", err)
	if !strings.Contains(err.Error(), "50-goldreq") {
		t.Errorf("error does not name 50-goldreq: %v", err)
	}

	p := e.StartGRPCPlugin("50", "goldreq", "-env", "E2E_GOLDREQ=yes")
	if sels := e.Plugins()[p.Full].GetSelectors(); len(sels) != 1 || sels[0].GetPodLabels() != "tier=gold" {
		t.Errorf("AdminService: %s selectors %v, want the operator's tier=gold", p.Full, sels)
	}
	gold, err := e.TryRunPodWith("gold2", withLabels(map[string]string{"tier": "gold"}))
	if err != nil {
		t.Fatalf("RunPodSandbox of a gold pod with 50-goldreq registered: %v", err)
	}
	g := e.Run(gold, "c1")
	b := e.Run(bronze, "c2")
	if got := e.ProcEnv(e.Inspect(g).Pid)["E2E_GOLDREQ"]; got != "yes" {
		t.Errorf("gold container: process env E2E_GOLDREQ = %q, want yes", got)
	}
	if _, ok := SpecEnv(e.Inspect(b).Spec)["E2E_GOLDREQ"]; ok {
		t.Errorf("bronze container (not selected): the OCI spec has E2E_GOLDREQ")
	}
	if got := PodEvents(ReadEvents(p.Events), "bronze"); len(got) > 0 {
		t.Errorf("50-goldreq got events of the bronze pod: %v", got)
	}
}

// pluginHealth is nrid's health of a plugin's service, nri.plugin/NN-name.
func (e *Env) pluginHealth(full string) healthpb.HealthCheckResponse_ServingStatus {
	e.tb.Helper()
	ctx, cancel := ctxT(5 * time.Second)
	defer cancel()
	r, err := e.Health.Check(ctx, &healthpb.HealthCheckRequest{Service: "nri.plugin/" + full})
	if err != nil {
		e.tb.Errorf("health of nri.plugin/%s: %v", full, err)
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return r.GetStatus()
}
