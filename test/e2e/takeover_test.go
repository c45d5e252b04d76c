//go:build e2e

package e2e

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// ctrdRequestTimeout is containerd's plugin_request_timeout in the suite
// (EnvOptions.CtrdRequestTimeout's default).
const ctrdRequestTimeout = 2 * time.Second

// reGateWaits matches nrid's log line naming the plugins its restart gate
// (or a takeover's hold) waits for.
var reGateWaits = regexp.MustCompile(`restart gate: waiting for the plugins registered before the restart" .*plugins=(\S+)`)

// TestTakeoverWithSelfConnectedClassicPlugin (issue 28, item 5): a
// classic plugin built on upstream pkg/stub dialed nrid's classic plugin
// socket itself (nrid did not launch it), beside a required gRPC plugin.
// pkg/stub exits when its connection ends, so after a takeover it never
// comes back: the new nrid must not wait for it. Containers are created
// back to back through CRI in one pod across two `nrid --takeover` in a row
// (the second as soon as the first serves with the gRPC plugin back); then,
// afterBack containers later, the last nrid is killed (SIGKILL) and started
// again: well within restart_grace (10 s) of the takeovers, so a roster that
// still listed the classic plugin would make the restart wait for it.
//
// Asserts: no creation is refused and every one has the gRPC plugin's env
// var; containerd never closes the bridge; no event is held longer than
// half of containerd's request timeout (nrid's "event held" log lines);
// each takeover's hold waits for the gRPC plugin only, ends with every
// plugin back and the roster forgets the classic plugin; after the SIGKILL
// the restart gate waits for the gRPC plugin only and ends with it back.
// Logs the figures as
//
//	takeover-roster holds=N hold-max=D refused=R created=M … restart-to-attached=D
func TestTakeoverWithSelfConnectedClassicPlugin(t *testing.T) {
	nridOnly(t, "nrid --takeover of the bridge and of nrid's classic plugin socket")
	e := NewEnv(t, documentedConfig.opts) // containerd requires the bridge, nrid the gRPC plugin
	gp := e.StartGRPCPlugin("10", "inject", "-env", admissionEnv+"=yes")
	cp := e.StartClassicPlugin(e.ClassicSock, "20", "selfdial", "-env", "E2E_CLASSIC=yes")
	roster := filepath.Join(e.NridStateDir, "plugins.json")
	if !waitFor(30*time.Second, func() bool {
		r := readFile(roster)
		return strings.Contains(r, `"`+gp.Full+`"`) && strings.Contains(r, `"`+cp.Full+`"`)
	}) {
		t.Fatalf("nrid did not record %s and %s in %s: %q", gp.Full, cp.Full, roster, readFile(roster))
	}
	pod := e.RunPod("p1")
	cr := startCreator(e, pod)
	defer cr.finish()
	cr.waitAdmitted(t)

	ctrdMark := len(readFile(e.Ctrd.Log))
	from := time.Now()
	var takeoverLogs []string
	for i := range 2 {
		old := e.Nrid
		log := filepath.Join(e.Logs, "nrid-takeover"+string(rune('1'+i))+".log")
		e.Nrid = e.start("nrid-takeover", log, old.Path, nil, append(withoutTakeover(old.Args), "--takeover")...)
		takeoverLogs = append(takeoverLogs, log)
		select {
		case <-old.done:
		case <-e.Nrid.done:
			t.Fatalf("nrid --takeover exited:\n%s", e.Tail(e.Nrid.Log, 30))
		case <-time.After(30 * time.Second):
			t.Fatalf("the old nrid still runs 30s after nrid --takeover started:\n%s", e.Tail(e.Nrid.Log, 30))
		}
		if code := old.ExitCode(); code != 0 {
			t.Errorf("the old nrid exited with %d after the takeover, want 0:\n%s", code, e.Tail(old.Log, 20))
		}
		e.WaitNridServing()
		e.WaitPluginReady(gp.Full, gp.Proc)
	}
	back := time.Now()
	cr.markBack()
	all := cr.wait(t)

	ctrdTakeovers := readFile(e.Ctrd.Log)[ctrdMark:]

	// SIGKILL at once, and started again (a plain start).
	ctrdMark = len(readFile(e.Ctrd.Log))
	e.Nrid.Kill()
	e.Nrid.Args = withoutTakeover(e.Nrid.Args)
	restartMark := len(readFile(e.Nrid.Log))
	start := time.Now()
	e.Restart(e.Nrid)
	e.WaitNridServing()
	restartLog := readFile(e.Nrid.Log)[restartMark:]
	// Attached: containerd's own log line, not the test's view of nrid's
	// health (its client reconnects with a backoff of its own).
	attached := time.Duration(-1)
	if m := regexp.MustCompile(`time="([^"]+)" level=info msg="plugin \\"00-nri-grpc\\" connected and synchronized"`).FindStringSubmatch(readFile(e.Ctrd.Log)[ctrdMark:]); m != nil {
		if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
			attached = at.Sub(start)
		}
	}

	if !waitFor(10*time.Second, cp.Exited) {
		t.Errorf("%s (pkg/stub) still runs after its nrid went away: the scenario assumes it cannot come back", cp.Full)
	}
	var refused, created, inWindow int
	var slowest time.Duration
	for _, a := range all {
		if a.err != nil {
			refused++
			t.Errorf("%s %s refused: %v", a.name, offsets(a, from), a.err)
			continue
		}
		created++
		if !a.end.Before(from) && !a.end.After(back) {
			inWindow++ // answered during the takeovers
		}
		if a.end.After(from) && a.start.Before(back) {
			slowest = max(slowest, a.end.Sub(a.start))
		}
		if SpecEnv(e.Inspect(a.id).Spec)[admissionEnv] != "yes" {
			t.Errorf("%s %s was created without the required gRPC plugin's change", a.name, offsets(a, from))
		}
	}
	var holds []time.Duration
	for i, log := range takeoverLogs {
		text := readFile(log)
		holds = append(holds, heldDurations(text)...)
		if m := reGateWaits.FindStringSubmatch(text); m != nil && strings.Contains(m[1], cp.Full) {
			t.Errorf("takeover %d waits for %s, which cannot come back: %s", i+1, cp.Full, m[0])
		}
		if strings.Contains(text, "restart gate: bound passed") {
			t.Errorf("takeover %d held events until restart_grace:\n%s", i+1, grepLines(log, "restart gate"))
		}
	}
	var holdMax time.Duration
	for _, d := range holds {
		holdMax = max(holdMax, d)
	}
	if holdMax > ctrdRequestTimeout/2 {
		t.Errorf("an event was held %v during the takeovers, more than half of containerd's %v request timeout", holdMax, ctrdRequestTimeout)
	}
	for _, l := range bridgeLines(ctrdTakeovers) {
		t.Logf("  containerd: %s", l)
	}
	if lines := bridgeDropped(ctrdTakeovers); len(lines) > 0 {
		t.Errorf("containerd dropped the bridge during the takeovers:\n%s", strings.Join(lines, "\n"))
	}
	switch m := reGateWaits.FindStringSubmatch(restartLog); {
	case m == nil:
		t.Errorf("after the SIGKILL nrid did not wait for %s:\n%s", gp.Full, e.Tail(e.Nrid.Log, 30))
	case strings.Contains(m[1], cp.Full):
		t.Errorf("after the SIGKILL nrid waits for %s, which went away at the first takeover: %s", cp.Full, m[0])
	}
	if !strings.Contains(restartLog, "restart gate: every plugin is back") {
		t.Errorf("after the SIGKILL the gate did not end with every plugin back:\n%s", e.Tail(e.Nrid.Log, 30))
	}
	window := back.Sub(from)
	t.Logf("takeover-roster holds=%d hold-max=%v refused=%d created=%d; two takeovers in %v: %d created meanwhile (%.1f/s), slowest CRI CreateContainer %v; restart-to-attached=%v after SIGKILL",
		len(holds), holdMax.Round(time.Millisecond), refused, created, window.Round(time.Millisecond), inWindow,
		float64(inWindow)/window.Seconds(), slowest.Round(time.Millisecond), attached.Round(time.Millisecond))
	if len(all) > 0 {
		first, last := all[0], all[len(all)-1]
		t.Logf("creator: %d attempts from %s to %s (%.1f/s)", len(all), ms(first.start.Sub(from)), ms(last.end.Sub(from)),
			float64(len(all))/last.end.Sub(first.start).Seconds())
	}
}

// heldDurations are the holds nrid logged ("event held for the plugins of
// the previous nrid", waited=D), each with the time the event had waited
// before (received_before=D: in the socket during the handover): how long
// containerd waited for the hold to end.
func heldDurations(log string) []time.Duration {
	var out []time.Duration
	re := regexp.MustCompile(`event held for the plugins of the previous nrid"? [^\n]*?waited=(\S+)(?: received_before=(\S+))?`)
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			continue
		}
		if before, err := time.ParseDuration(m[2]); err == nil {
			d += before
		}
		out = append(out, d)
	}
	return out
}

// withoutTakeover is args without --takeover.
func withoutTakeover(args []string) []string {
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--takeover" })
}
