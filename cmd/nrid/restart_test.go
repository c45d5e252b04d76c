package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/policy"
)

// gateConfig keeps nrid's state in dir, with the restart gate bounded by
// grace.
func gateConfig(dir, grace string) string {
	return fmt.Sprintf("[server]\nstate_dir = %q\nrestart_grace = %q\n", dir, grace)
}

// registerOn registers a test plugin with n and returns it.
func registerOn(t *testing.T, n *nrid, idx, name string) *testplugin.Plugin {
	t.Helper()
	p := &testplugin.Plugin{Name: name, Index: idx, Log: testplugin.NewLog()}
	if _, err := p.Start(testCtx(t), n.sock, n.plugins); err != nil {
		t.Fatalf("registering %s-%s: %v", idx, name, err)
	}
	t.Cleanup(p.Stop)
	return p
}

// TestRestartGateWaitsForThePlugins: nrid records the plugins that are
// registered; after a restart it is NOT_SERVING (and would not attach to a
// classic runtime) until they are all back, however long that takes within
// the bound, then SERVING. nrid's own stop, which unregisters every plugin,
// does not erase the record.
func TestRestartGateWaitsForThePlugins(t *testing.T) {
	state := tempDir(t)
	cfg := gateConfig(state, "10m") // the test waits for the plugins, never for the bound

	first := startNrid(t, cfg)
	registerOn(t, first, "10", "alpha")
	registerOn(t, first, "20", "beta")
	first.logs.wait(t, reLog(`restart gate: recorded the registered plugins" .*plugins="\[10-alpha 20-beta\]"`), first.done)
	first.stop(t) // unregisters both, with Shutdown "server stopping"

	second := startNrid(t, cfg)
	cc := second.conn(t)
	second.logs.wait(t, reLog(`restart gate: waiting for the plugins registered before the restart" .*plugins="\[10-alpha 20-beta\]"`), second.done)
	st, err := healthOf(t, cc, "")
	must(t, err == nil && st == healthpb.HealthCheckResponse_NOT_SERVING, "health during the gate: %v %v", st, err)

	registerOn(t, second, "10", "alpha")
	// One of two is back (registered and ready): still closed.
	st, err = healthOf(t, cc, "")
	must(t, err == nil && st == healthpb.HealthCheckResponse_NOT_SERVING, "health with one plugin of two back: %v %v", st, err)

	registerOn(t, second, "20", "beta")
	second.logs.wait(t, reMsg("restart gate: every plugin is back"), second.done)
	waitHealth(t, cc, healthpb.HealthCheckResponse_SERVING)
}

// TestRestartGateIsBounded: a plugin that does not come back holds nrid
// only for restart_grace; nrid then serves, says whom it went on without
// and which of them were required, and keeps those required until they are
// back: their own failure policy ended with their registration.
func TestRestartGateIsBounded(t *testing.T) {
	state := tempDir(t)
	roster := `{"plugins":[{"plugin":"10-gone","required":true},{"plugin":"20-also-gone"}]}`
	if err := os.WriteFile(filepath.Join(state, rosterFile), []byte(roster), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNrid(t, gateConfig(state, "100ms"))
	n.logs.wait(t, reLog(`restart gate: bound passed without these plugins.* missing="\[10-gone 20-also-gone\]" were_required=\[10-gone\]`), n.done)
	cc := n.conn(t)
	waitHealth(t, cc, healthpb.HealthCheckResponse_SERVING)
	// The roster keeps the required one for the next restart, not the
	// other.
	// The first record after the gate (nothing registers meanwhile).
	if m := n.logs.wait(t, reLog(`restart gate: recorded the registered plugins" .*plugins=(\S*)`), n.done); m[1] != "[10-gone]" {
		t.Fatalf("recorded %s after the gate, want [10-gone]", m[1])
	}

	// The plugin that was required stays required until it is back; the
	// other one had the ignore policy.
	_, err := createContainer(t, cc, 1)
	wantCode(t, "CreateContainer without 10-gone", err, codes.Unavailable, `required plugins ["10-gone"] not present`)
	registerOn(t, n, "10", "gone")
	if _, err := createContainer(t, cc, 2); err != nil {
		t.Fatalf("CreateContainer with 10-gone back: %v", err)
	}
}

// TestRestartGateOff: without state_dir nothing is recorded and nrid serves
// at once.
func TestRestartGateOff(t *testing.T) {
	n := startNrid(t, "")
	registerOn(t, n, "10", "alpha")
	st, err := healthOf(t, n.conn(t), "")
	must(t, err == nil && st == healthpb.HealthCheckResponse_SERVING, "health: %v %v", st, err)
}

// waitHealth waits until nrid's overall health is want.
func waitHealth(t *testing.T, cc *grpc.ClientConn, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	stream, err := healthpb.NewHealthClient(cc).Watch(testCtx(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		rsp, err := stream.Recv()
		if err != nil {
			t.Fatalf("waiting for health %v: %v", want, err)
		}
		if rsp.GetStatus() == want {
			return
		}
	}
}

// TestRosterEntries: the roster keeps a registered plugin that is
// synchronizing again (a resync) and a required plugin the restart gate
// went on without until it is back; it forgets a plugin that left.
func TestRosterEntries(t *testing.T) {
	info := func(full string, st nriv1beta1.PluginState) *nriv1beta1.PluginInfo {
		idx, name, _ := strings.Cut(full, "-")
		return &nriv1beta1.PluginInfo{Plugin: &nriv1beta1.PluginInstance{Index: idx, Name: name}, State: st}
	}
	const (
		ready   = nriv1beta1.PluginState_PLUGIN_STATE_READY
		syncing = nriv1beta1.PluginState_PLUGIN_STATE_SYNCHRONIZING
	)
	names := func(es []rosterEntry) string { return fmt.Sprint(rosterNames(es)) }
	r := &roster{}
	r.owe([]rosterEntry{{Plugin: "30-owed", Required: true}})
	if got := names(r.entries([]*nriv1beta1.PluginInfo{info("10-a", ready), info("20-b", ready), info("40-new", syncing)})); got != "[10-a 20-b 30-owed]" {
		t.Fatalf("first record: %s (a plugin in its first synchronization is not registered yet)", got)
	}
	// 10-a is synchronizing again (a resync), 20-b left.
	if got := names(r.entries([]*nriv1beta1.PluginInfo{info("10-a", syncing)})); got != "[10-a 30-owed]" {
		t.Fatalf("during a resync: %s", got)
	}
	// 30-owed is back, then leaves: forgotten like any plugin that left.
	if got := names(r.entries([]*nriv1beta1.PluginInfo{info("10-a", ready), info("30-owed", ready)})); got != "[10-a 30-owed]" {
		t.Fatalf("owed plugin back: %s", got)
	}
	if got := names(r.entries([]*nriv1beta1.PluginInfo{info("10-a", ready)})); got != "[10-a]" {
		t.Fatalf("owed plugin left after coming back: %s", got)
	}
}

// TestPlanGate: which plugins of the roster a restart or a takeover waits
// for. gRPC plugins come back by themselves (the SDKs), and so do the
// plugins nrid launches; a classic plugin that connected by itself does
// not (pkg/stub never reconnects) unless it is required, or the operator
// says wait_on_restart; a required plugin an earlier gate went on without
// is not waited for again; wait_on_restart = false waits for nobody.
func TestPlanGate(t *testing.T) {
	pol, err := policy.New(nil, policy.Options{Plugins: []policy.PluginRule{
		{Name: "40-reconnects", WaitOnRestart: ptr(true)},
		{Name: "50-grpc-never", WaitOnRestart: ptr(false)},
		{Name: "classic-required", Required: ptr(true)},
		{Name: "80-owed-wanted", WaitOnRestart: ptr(true)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	gate := []rosterEntry{
		{Plugin: "10-grpc"},
		{Plugin: "20-launched-classic"},
		{Plugin: "30-selfdial", SelfConnected: true},
		{Plugin: "40-reconnects", SelfConnected: true},
		{Plugin: "50-grpc-never"},
		{Plugin: "60-selfdial-fail", SelfConnected: true, Required: true},
		{Plugin: "61-classic-required", SelfConnected: true},
		{Plugin: "70-owed", Required: true, Missed: true},
		{Plugin: "80-owed-wanted", Required: true, Missed: true},
	}
	wait, skip := planGate(gate, pol)
	if got, want := fmt.Sprint(rosterNames(wait)), "[10-grpc 20-launched-classic 40-reconnects 60-selfdial-fail 61-classic-required 80-owed-wanted]"; got != want {
		t.Errorf("waits for %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(rosterNames(skip)), "[30-selfdial 50-grpc-never 70-owed]"; got != want {
		t.Errorf("does not wait for %s, want %s", got, want)
	}
}

func ptr[T any](v T) *T { return &v }

// TestSelfConnected: the roster marks a classic plugin that connected to
// the bridge's plugin socket by itself, not one nrid launched (its launch
// slot is its identity), nor a gRPC plugin.
func TestSelfConnected(t *testing.T) {
	for _, c := range []struct {
		kind     nriv1beta1.PluginKind
		identity string
		want     bool
	}{
		{nriv1beta1.PluginKind_PLUGIN_KIND_CLASSIC, "uid:0", true},
		{nriv1beta1.PluginKind_PLUGIN_KIND_CLASSIC, "unknown", true},
		{nriv1beta1.PluginKind_PLUGIN_KIND_CLASSIC, "launch:20-classic", false},
		{nriv1beta1.PluginKind_PLUGIN_KIND_REMOTE, "uid:0", false},
		{nriv1beta1.PluginKind_PLUGIN_KIND_LAUNCHED, "launch:10-grpc", false},
	} {
		p := &nriv1beta1.PluginInfo{Plugin: &nriv1beta1.PluginInstance{Index: "20", Name: "x"}, Kind: c.kind, Identity: c.identity,
			State: nriv1beta1.PluginState_PLUGIN_STATE_READY}
		if got := readyEntries([]*nriv1beta1.PluginInfo{p})[0].SelfConnected; got != c.want {
			t.Errorf("%v %s: self_connected %v, want %v", c.kind, c.identity, got, c.want)
		}
	}
}

// TestRestartGateSkipsPluginsThatCannotComeBack: a restart waits only for
// the plugins of the roster that come back (TestPlanGate): here the gRPC
// plugin, not the classic plugin that had connected by itself nor the
// required plugin an earlier gate went on without, however long the bound
// (10 minutes: waiting for them would hang the test). The owed plugin
// stays required, and on the roster; the classic one is forgotten.
func TestRestartGateSkipsPluginsThatCannotComeBack(t *testing.T) {
	state := tempDir(t)
	roster := `{"plugins":[{"plugin":"10-alpha"},{"plugin":"20-selfdial","self_connected":true},{"plugin":"30-owed","required":true,"missed":true}]}`
	if err := os.WriteFile(filepath.Join(state, rosterFile), []byte(roster), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNrid(t, gateConfig(state, "10m"))
	n.logs.wait(t, reLog(`restart gate: not waiting for these plugins[^\n]* plugins="\[20-selfdial 30-owed\]"`), n.done)
	n.logs.wait(t, reLog(`restart gate: waiting for the plugins registered before the restart" .*plugins=\[10-alpha\]`), n.done)
	cc := n.conn(t)
	_, err := createContainer(t, cc, 1)
	wantCode(t, "CreateContainer during the gate, without 30-owed", err, codes.Unavailable, `required plugins ["30-owed"] not present`)
	registerOn(t, n, "10", "alpha")
	n.logs.wait(t, reMsg("restart gate: every plugin is back"), n.done)
	waitHealth(t, cc, healthpb.HealthCheckResponse_SERVING)
	if m := n.logs.wait(t, reLog(`restart gate: recorded the registered plugins" .*plugins="?(\[[^\]]*\])`), n.done); m[1] != "[10-alpha 30-owed]" {
		t.Fatalf("recorded %s after the gate, want [10-alpha 30-owed]", m[1])
	}
	_, err = createContainer(t, cc, 2)
	wantCode(t, "CreateContainer after the gate, without 30-owed", err, codes.Unavailable, `required plugins ["30-owed"] not present`)
	data, err := os.ReadFile(filepath.Join(state, rosterFile))
	if err != nil || !strings.Contains(string(data), `{"plugin":"30-owed","required":true,"missed":true}`) {
		t.Fatalf("the roster %s (%v) does not keep 30-owed as missed", data, err)
	}
}
