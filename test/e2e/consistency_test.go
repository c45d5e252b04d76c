//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestLateJoinerMissesNoContainer: a Go SDK plugin registers late, while a
// pod with one container runs, and its first Synchronize is slow (it blocks
// until the test releases it). A container created through CRI meanwhile
// waits for the plugin at most its share of containerd's 2 s timeout and is
// then created without it — but the plugin is not left with a wrong view:
// right after its Synchronize returns, and before any further event, it
// gets a second Synchronize (epoch 2, reason SYNC_REASON_MISSED_EVENTS)
// with both containers. The next container gets the plugin's adjustment.
// Before, the plugin was never told of the second container.
func TestLateJoinerMissesNoContainer(t *testing.T) {
	eachRuntime(t, EnvOptions{}, testLateJoinerMissesNoContainer)
}

// testLateJoinerMissesNoContainer is TestLateJoinerMissesNoContainer on one runtime setup (eachRuntime).
func testLateJoinerMissesNoContainer(t *testing.T, opts EnvOptions) {
	e := NewEnv(t, opts)
	pod := e.RunPod("late")
	first := e.Run(pod, "c1")

	full := "30-late"
	ev := filepath.Join(e.Logs, full+".events")
	marker := filepath.Join(e.Logs, full+".sync-marker")
	release := filepath.Join(e.Logs, full+".sync-release")
	args := []string{"-name", "late", "-idx", "30", "-server", "unix://" + e.NridSock,
		"-endpoint", filepath.Join(e.PluginDir, full+".sock"), "-events", ev, "-env", "E2E_LATE=yes",
		"-sync-marker", marker, "-sync-release", release, "-timeout", "Synchronize=50s"}
	p := e.start(full, filepath.Join(e.Logs, full+".log"), filepath.Join(suite.Bin, "e2e-grpc-plugin"), nil, args...)
	if !waitFor(60*time.Second, func() bool { _, err := os.Stat(marker); return err == nil || p.Exited() }) || p.Exited() {
		t.Fatalf("the late plugin never reached its Synchronize:\n%s", e.Tail(p.Log, 30))
	}

	// Created while the plugin synchronizes: containerd's CreateContainer
	// waits for it once, then goes on without it.
	second := e.Run(pod, "c2")
	if _, ok := SpecEnv(e.Inspect(second).Spec)["E2E_LATE"]; ok {
		t.Logf("c2 was adjusted by the late plugin (its Synchronize returned in time)")
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.WaitPluginReady(full, p)
	evs := WaitEvents(t, ev, func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(x Event) bool { return x.Event == "Resync" && x.Detail == "SYNC_REASON_MISSED_EVENTS" })
	}, "the late plugin's Synchronize with the events it missed")
	var sync, resync *Event
	for i := range evs {
		switch {
		case evs[i].Event == "Synchronize" && sync == nil:
			sync = &evs[i]
		case evs[i].Event == "Resync" && resync == nil:
			resync = &evs[i]
			if i+1 < len(evs) {
				t.Errorf("the plugin got %v before the rest of its catch-up", EventNames(evs[i+1:]))
			}
		case evs[i].Event == "Configure":
		case sync == nil || resync == nil:
			t.Errorf("the plugin got %s (%s/%s) before its catch-up ended", evs[i].Event, evs[i].Pod, evs[i].Container)
		}
	}
	if sync.Epoch != 1 || sync.Pods != 1 || sync.Containers != 1 {
		t.Errorf("first Synchronize: epoch %d, %d pods, %d containers; want epoch 1, 1 pod, 1 container (c1)", sync.Epoch, sync.Pods, sync.Containers)
	}
	if resync.Epoch != 2 || resync.Pods != 1 || resync.Containers != 2 {
		t.Errorf("catch-up Synchronize: epoch %d, %d pods, %d containers; want epoch 2, 1 pod, 2 containers (c1 and c2)",
			resync.Epoch, resync.Pods, resync.Containers)
	}
	t.Logf("late joiner: Synchronize epoch %d (%d containers), then %s epoch %d (%d containers); c1 %s, c2 %s",
		sync.Epoch, sync.Containers, resync.Detail, resync.Epoch, resync.Containers, short(first), short(second))

	third := e.Run(pod, "c3")
	if got := SpecEnv(e.Inspect(third).Spec)["E2E_LATE"]; got != "yes" {
		t.Errorf("c3 (created after the catch-up): E2E_LATE = %q in the OCI spec, want yes", got)
	}
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
