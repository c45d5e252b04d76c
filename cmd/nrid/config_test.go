package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runOnce runs nrid with args and expects it to fail at once.
func runOnce(t *testing.T, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	err := run(ctx, args, &bytes.Buffer{}, &logs)
	if err == nil {
		t.Fatalf("nrid %v started; log:\n%s", args, logs.String())
	}
	return err
}

// nothingListens checks that nrid left no socket and nothing accepts on it.
func nothingListens(t *testing.T, sock string) {
	t.Helper()
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s: %v, want it absent", sock, err)
	}
	if c, err := net.Dial("unix", sock); err == nil {
		c.Close()
		t.Errorf("something listens on %s", sock)
	}
}

func writeConfig(t *testing.T, dir, doc string) string {
	t.Helper()
	path := filepath.Join(dir, "nrid.toml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInvalidConfigStartsNothing: an invalid file is an error naming the
// key and line (or the line of a syntax error), and nrid serves nothing.
func TestInvalidConfigStartsNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		doc  string
		want []string
	}{
		{"unknown key", "[server]\nsocket = %SOCK%\n\n[log]\nlevel = \"info\"\nlevle = \"debug\"\n",
			[]string{"nrid.toml:6:1: log.levle: unknown key \"levle\""}},
		{"syntax error", "[server]\nsocket = %SOCK%\n[log\n", []string{"nrid.toml:3:", "syntax error"}},
		{"invalid value", "[server]\nsocket = %SOCK%\n[observability]\ntracing = \"zipkin\"\n",
			[]string{"nrid.toml:4: observability.tracing: \"zipkin\" is not one of off, stdout, otlp"}},
		{"invalid policy", "[server]\nsocket = %SOCK%\n[[policy]]\nidentity = \"uid:1000\"\nplugins = [\"bad/name\"]\n",
			[]string{"nrid.toml:5: policy[0].plugins[0]:"}},
		{"wrong type in a plugin entry", "[server]\nsocket = %SOCK%\n[[plugin]]\nname = \"10-a\"\n[[plugin]]\nname = \"20-b\"\nrequired = \"yes\"\n",
			[]string{"nrid.toml:7:", "plugin[1].required"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := tempDir(t)
			sock := filepath.Join(dir, "nrid.sock")
			path := writeConfig(t, dir, strings.ReplaceAll(c.doc, "%SOCK%", `"`+sock+`"`))
			err := runOnce(t, "--config", path)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			nothingListens(t, sock)
		})
	}
}

// TestFailureAfterListeningLeavesNothing: when the TCP listener cannot be
// opened, the unix socket opened before it is closed and removed.
func TestFailureAfterListeningLeavesNothing(t *testing.T) {
	dir := tempDir(t)
	_, tcp := tlsFiles(t, dir)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	sock := filepath.Join(dir, "nrid.sock")
	path := writeConfig(t, dir, "[tcp]\naddress = \""+busy.Addr().String()+"\"\n"+tcp)
	err = runOnce(t, "--config", path, "--socket", sock, "--plugin-socket-dir", filepath.Join(dir, "plugins"))
	if !strings.Contains(err.Error(), "tcp.address") {
		t.Errorf("error %v does not name tcp.address", err)
	}
	nothingListens(t, sock)
}

func TestFlagErrorsNameTheFlag(t *testing.T) {
	err := runOnce(t, "--socket", "relative.sock")
	if !strings.Contains(err.Error(), "flag --socket") {
		t.Fatalf("got %v", err)
	}
	var out bytes.Buffer
	dir := tempDir(t)
	path := writeConfig(t, dir, "[log]\nlevel = \"warn\"\n")
	if err := run(context.Background(), []string{"--config", path, "--check"}, &out, &bytes.Buffer{}); err != nil || !strings.Contains(out.String(), "OK") {
		t.Fatalf("--check: %v %q", err, out.String())
	}
}

func TestSampleConfigStarts(t *testing.T) {
	data, err := os.ReadFile("../../deploy/nrid.toml")
	if err != nil {
		t.Fatal(err)
	}
	n := startNrid(t, string(data))
	st, err := healthOf(t, n.conn(t), "")
	if err != nil || st.String() != "SERVING" {
		t.Fatalf("health %v %v", st, err)
	}
}
