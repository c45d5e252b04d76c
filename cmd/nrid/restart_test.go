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
