package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestVersionFlag: --version is the version command: version, commit,
// dirty flag, Go version and protocol; -o json has them as fields.
func TestVersionFlag(t *testing.T) {
	n := startNrid(t)
	cmd, flag := n.must("version"), n.must("--version")
	if cmd != flag {
		t.Errorf("nrictl version:\n%s\nnrictl --version:\n%s", cmd, flag)
	}
	contains(t, "--version", flag, "nrictl ", "\n  commit    ", "\n  modified  ", "\n  go        go1.", "\n  protocol  v1beta1\n")
	var v map[string]any
	if err := json.Unmarshal([]byte(n.must("--version", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"nrictl", "version", "commit", "modified", "go", "protocol"} {
		if _, ok := v[k]; !ok {
			t.Errorf("--version -o json lacks %q: %v", k, v)
		}
	}
}

// TestRelativeSocket: --socket takes a path relative to the working
// directory, bare or as a unix: target.
func TestRelativeSocket(t *testing.T) {
	n := startNrid(t)
	t.Chdir(filepath.Dir(n.sock))
	base := filepath.Base(n.sock)
	for _, s := range []string{base, "./" + base, "unix:" + base, "unix://" + base, "../" + filepath.Base(filepath.Dir(n.sock)) + "/" + base} {
		out, errOut, err := n.nrictl("--socket", s, "plugins")
		if err != nil || !strings.Contains(out, "no plugins registered") {
			t.Errorf("nrictl --socket %s plugins: %v %s", s, err, errOut)
		}
	}
	for socket, want := range map[string][2]string{
		"nri.sock":           {"unix:nri.sock", "nri.sock"},
		"/run/nri.sock":      {"unix:///run/nri.sock", "/run/nri.sock"},
		"unix:///run/x.sock": {"unix:///run/x.sock", "/run/x.sock"},
		"unix:rel/x.sock":    {"unix:rel/x.sock", "rel/x.sock"},
		"dns:///host:1":      {"dns:///host:1", ""},
	} {
		if target, path := socketTarget(socket); target != want[0] || path != want[1] {
			t.Errorf("socketTarget(%q) = %q, %q, want %q, %q", socket, target, path, want[0], want[1])
		}
	}
}

// TestExplainPermissionDenied: a connection refused for permissions is
// called a permission problem, not a daemon that is not running.
func TestExplainPermissionDenied(t *testing.T) {
	err := explain(status.Error(codes.Unavailable,
		`connection error: desc = "transport: Error while dialing: dial unix /run/nri.sock: connect: permission denied"`), "/run/nri.sock")
	if !strings.Contains(err.Error(), "a permission problem") || !strings.Contains(err.Error(), "server.socket_mode") || strings.Contains(err.Error(), "is nrid running") {
		t.Errorf("got %v", err)
	}
	err = explain(status.Error(codes.Unavailable, `connection error: desc = "connect: connection refused"`), "/run/nri.sock")
	if !strings.Contains(err.Error(), "is nrid running") {
		t.Errorf("got %v", err)
	}
}

// TestBuiltBinary builds nrictl as a release build stamps it (-ldflags -X)
// and runs it: --version and version print the stamp, and a user who may
// not open nrid's socket is told it is a permission problem and which
// settings open the socket.
func TestBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nrictl")
	}
	binDir, err := os.MkdirTemp("", "nrictl-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "nrictl")
	pkg := "github.com/nri-grpc/nri-grpc/internal/version."
	build := exec.Command("go", "build", "-o", bin, "-ldflags",
		"-X "+pkg+"stampVersion=v9.8.7 -X "+pkg+"stampCommit=0123456789abcdef0123456789abcdef01234567 -X "+pkg+"stampModified=false", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	want := "nrictl v9.8.7\n  commit    0123456789ab\n  modified  false\n  go        go1."
	for _, arg := range []string{"--version", "version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("nrictl %s: %v\n%s\nwant it to start with\n%s", arg, err, out, want)
		}
	}

	// Run as another user (as root: nobody), or with the socket closed to
	// its owner (as another user: root ignores modes).
	n := startNrid(t)
	dir := filepath.Dir(n.sock)
	asOther := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--socket", n.sock}, args...)...)
		if os.Getuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	closeTo := func(path string, mode os.FileMode) {
		t.Helper()
		if os.Getuid() != 0 {
			mode = 0
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}

	closeTo(dir, 0o700)
	out, code := asOther("plugins")
	if code != 1 || !strings.Contains(out, "permission denied") || !strings.Contains(out, "a directory on the way is closed to it") {
		t.Errorf("closed directory: exit %d\n%s", code, out)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	closeTo(n.sock, 0o600)
	out, code = asOther("plugins")
	for _, w := range []string{"permission denied: nrictl runs as uid", "may not open nrid's socket " + n.sock, "server.socket_mode", "server.socket_group", "admin grant"} {
		if code != 1 || !strings.Contains(out, w) {
			t.Errorf("nrictl plugins: exit %d, %q missing:\n%s", code, w, out)
		}
	}
	if strings.Contains(out, "is nrid running") {
		t.Errorf("a permission problem is reported as nrid not running:\n%s", out)
	}
	out, code = asOther("health")
	if code != 1 || !strings.Contains(out, "health needs no grant") || !strings.Contains(out, "/readyz") {
		t.Errorf("nrictl health: exit %d\n%s", code, out)
	}
}
