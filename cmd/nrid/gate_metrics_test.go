package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRestartGateMetrics: while the restart gate waits, nrid's metrics say
// how many plugins it waits for and that it is not serving; once the
// plugin is back, both clear.
func TestRestartGateMetrics(t *testing.T) {
	state := tempDir(t)
	roster := `{"plugins":[{"plugin":"10-back","required":true}]}`
	if err := os.WriteFile(filepath.Join(state, rosterFile), []byte(roster), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNrid(t, gateConfig(state, "10m")+"[observability]\nmetrics_address = \"127.0.0.1:0\"\n")
	addr := reLog(`msg=serving .*metrics=(\S+)`).FindStringSubmatch(n.logs.String())[1]
	n.logs.wait(t, reMsg("restart gate: waiting for the plugins registered before the restart"), n.done)
	want := func(lines ...string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			body := scrapeMetrics(t, addr)
			var missing []string
			for _, l := range lines {
				if !strings.Contains(body, "\n"+l+"\n") {
					missing = append(missing, l)
				}
			}
			if len(missing) == 0 {
				return
			}
			if time.Now().After(deadline) {
				var nri []string
				for _, l := range strings.Split(body, "\n") {
					if strings.HasPrefix(l, "nri_") {
						nri = append(nri, l)
					}
				}
				t.Fatalf("metrics lack %q; nri_ series:\n%s", missing, strings.Join(nri, "\n"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	want("nri_restart_gate_waiting_plugins 1", "nri_serving 0")
	registerOn(t, n, "10", "back")
	n.logs.wait(t, reMsg("restart gate: every plugin is back"), n.done)
	want("nri_restart_gate_waiting_plugins 0", "nri_serving 1")
}

// scrapeMetrics GETs /metrics at addr: the text format, after a newline so
// that every line is "\n"-delimited.
func scrapeMetrics(t *testing.T, addr string) string {
	t.Helper()
	rsp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(rsp.Body)
	if err != nil || rsp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s %v", rsp.Status, err)
	}
	return "\n" + string(body)
}
