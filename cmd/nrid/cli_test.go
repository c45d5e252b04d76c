package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// TestHelp: --help (and -h) says what nrid is, where the configuration is
// documented, gives examples, every flag and the documentation's address,
// on standard output, and succeeds.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{arg}, &stdout, &stderr); err != nil {
			t.Fatalf("nrid %s: %v", arg, err)
		}
		out := stdout.String()
		for _, want := range []string{
			"nrid is the nri-grpc daemon: containerd's Node Resource Interface (NRI)",
			"usage: nrid [--config FILE]",
			"deploy/nrid.toml", "/etc/nri/nrid.toml",
			"examples:\n  nrid --config /etc/nri/nrid.toml ",
			"--check     check the file",
			docsURL,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("nrid %s: %q missing from\n%s", arg, want, out)
			}
		}
		newFlags().fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(out, "\n  --"+f.Name) {
				t.Errorf("nrid %s: flag --%s missing", arg, f.Name)
			}
		})
		if stderr.Len() != 0 {
			t.Errorf("nrid %s wrote to standard error: %s", arg, stderr.String())
		}
	}
}

// TestUsageErrors: a command line mistake is a usageError (exit status 2)
// that names the mistake and points at --help, once.
func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"extra"}, {"--runtime-required=maybe"}} {
		var stderr bytes.Buffer
		err := run(context.Background(), args, io.Discard, &stderr)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "(nrid --help lists the flags)") {
			t.Errorf("nrid %v: %v, want a usage error", args, err)
		}
		if stderr.Len() != 0 {
			t.Errorf("nrid %v also wrote %q", args, stderr.String())
		}
	}
}

// TestVersionOfBuiltBinary builds nrid with go build as a release build
// stamps it (-ldflags -X) and checks what --version prints: version,
// commit, dirty flag, Go version and protocol.
func TestVersionOfBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nrid")
	}
	bin := filepath.Join(t.TempDir(), "nrid")
	const commit = "0123456789abcdef0123456789abcdef01234567"
	pkg := "github.com/nri-grpc/nri-grpc/internal/version."
	build := exec.Command("go", "build", "-o", bin, "-ldflags",
		"-X "+pkg+"stampVersion=v9.8.7 -X "+pkg+"stampCommit="+commit+" -X "+pkg+"stampModified=true", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("nrid --version: %v\n%s", err, out)
	}
	want := "nrid v9.8.7+dirty\n  commit    0123456789ab\n  modified  true\n  go        go1."
	if !strings.HasPrefix(string(out), want) || !strings.HasSuffix(string(out), "  protocol  v1beta1\n") {
		t.Errorf("nrid --version:\n%s\nwant it to start with\n%s", out, want)
	}
	// A command line mistake exits 2, --help 0.
	if err := exec.Command(bin, "--bogus").Run(); exitStatus(err) != 2 {
		t.Errorf("nrid --bogus: %v, want exit status 2", err)
	}
	if out, err := exec.Command(bin, "--help").Output(); err != nil || !strings.Contains(string(out), "deploy/nrid.toml") {
		t.Errorf("nrid --help: %v\n%s", err, out)
	}
}

func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestCheckWarnsAboutSkippedLaunchFiles: --check accepts the file but warns
// about every file of the launch directories nrid would not launch, and
// about a launch directory that does not exist.
func TestCheckWarnsAboutSkippedLaunchFiles(t *testing.T) {
	dir := tempDir(t)
	plugins := filepath.Join(dir, "launch")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"10-good": 0o755, "20-noexec": 0o644, "README.md": 0o644, "x-bad": 0o755} {
		if err := os.WriteFile(filepath.Join(plugins, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(plugins, "30-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(doc string) (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"--config", writeConfig(t, dir, doc), "--check"}, &stdout, &stderr); err != nil {
			t.Fatalf("--check: %v\n%s", err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}

	out, warn := check("[launch]\nplugin_dir = \"" + plugins + "\"\n[bridge]\nclassic_plugin_dir = \"" + filepath.Join(dir, "none") + "\"\n")
	if out != "configuration OK (5 warning(s) above)\n" {
		t.Errorf("stdout %q", out)
	}
	for _, want := range []string{
		"nrid: warning: launch.plugin_dir: skipping plugin file " + filepath.Join(plugins, "20-noexec") + ": not executable (mode 0644)\n",
		"nrid: warning: launch.plugin_dir: skipping plugin file " + filepath.Join(plugins, "README.md") + ": not executable (mode 0644)\n",
		"nrid: warning: launch.plugin_dir: skipping plugin file " + filepath.Join(plugins, "x-bad") + `: invalid plugin index "x"`,
		"nrid: warning: launch.plugin_dir: skipping plugin file " + filepath.Join(plugins, "30-dir") + ": a directory",
		"nrid: warning: bridge.classic_plugin_dir: skipping plugin file " + filepath.Join(dir, "none") + ": the plugin directory does not exist",
	} {
		if !strings.Contains(warn, want) {
			t.Errorf("missing warning %q in\n%s", want, warn)
		}
	}
	if strings.Contains(warn, "10-good") {
		t.Errorf("warned about the good plugin:\n%s", warn)
	}

	for _, name := range []string{"20-noexec", "README.md", "x-bad"} {
		if err := os.Remove(filepath.Join(plugins, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(plugins, "30-dir")); err != nil {
		t.Fatal(err)
	}
	if out, warn := check("[launch]\nplugin_dir = \"" + plugins + "\"\n"); out != "configuration OK\n" || warn != "" {
		t.Errorf("clean directory: %q %q", out, warn)
	}
}

// TestHTTPProbes: with metrics_address, readiness and liveness are served
// over HTTP beside /metrics, for probes that cannot open the owner-only
// socket: /readyz follows gRPC health (503 until the runtime is attached
// with runtime.required), /livez answers whatever the status.
func TestHTTPProbes(t *testing.T) {
	n := startNrid(t, "[runtime]\nrequired = true\n[observability]\nmetrics_address = \"127.0.0.1:0\"\n")
	addr := reLog(`msg=serving .*metrics=(\S+)`).FindStringSubmatch(n.logs.String())[1]
	probe := func(path string) (int, string) {
		t.Helper()
		rsp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		body, _ := io.ReadAll(rsp.Body)
		return rsp.StatusCode, strings.TrimSpace(string(body))
	}
	for path, want := range map[string]string{
		"/readyz": "503 NOT_SERVING",
		"/livez":  "200 NOT_SERVING",
		"/readyz?service=nri.v1beta1.AdminService": "503 NOT_SERVING",
		"/readyz?service=nri.v1beta1.Nothing":      "404 unknown service",
	} {
		if code, body := probe(path); strconv.Itoa(code)+" "+body != want {
			t.Errorf("GET %s: %d %s, want %s", path, code, body, want)
		}
	}

	// A runtime attaches: ready.
	cc := n.conn(t)
	watch, err := healthpb.NewHealthClient(cc).Watch(testCtx(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	attach, err := nriv1beta1.NewAdaptationServiceClient(cc).Attach(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := attach.Send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Hello{
		Hello: &nriv1beta1.AttachHello{RuntimeName: "test-runtime", RuntimeVersion: "1"},
	}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			m, err := attach.Recv()
			if err != nil {
				return
			}
			if sr := m.GetSnapshotRequest(); sr != nil {
				_ = attach.Send(&nriv1beta1.AttachRequest{Message: &nriv1beta1.AttachRequest_Snapshot{
					Snapshot: &nriv1beta1.StateSnapshot{RequestId: sr.GetRequestId()},
				}})
			}
		}
	}()
	for {
		rsp, err := watch.Recv()
		if err != nil {
			t.Fatalf("waiting for SERVING: %v", err)
		}
		if rsp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}
	if code, body := probe("/readyz"); code != 200 || body != "SERVING" {
		t.Errorf("GET /readyz with the runtime attached: %d %s", code, body)
	}
	if code, _ := probe("/metrics"); code != 200 {
		t.Errorf("GET /metrics: %d", code)
	}
}
