package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/containerd/nri/pkg/api"
)

// fakeSys records what the plugin does to its process.
type fakeSys struct {
	lines          []string
	stdout, stderr bytes.Buffer
	exits          []int
}

// sys returns the plugin's view of f.
func (f *fakeSys) sys() sys {
	return sys{
		log:    func(_ context.Context, _ api.LogRequest_Level, msg string) { f.lines = append(f.lines, msg) },
		stdout: &f.stdout,
		stderr: &f.stderr,
		exit:   func(code int) { f.exits = append(f.exits, code) },
	}
}

// configured returns a plugin configured with cfg, failing t on error.
func configured(t *testing.T, cfg string) (*bad, *fakeSys) {
	t.Helper()
	f := &fakeSys{}
	b := newBad(f.sys())
	rpl, err := b.Configure(t.Context(), &api.ConfigureRequest{Config: cfg})
	if err != nil {
		t.Fatalf("Configure(%q): %v", cfg, err)
	}
	want := api.EventMask(0)
	want.Set(api.Event_CREATE_CONTAINER)
	if got := api.EventMask(rpl.GetEvents()); got != want {
		t.Fatalf("events %s, want CreateContainer", got.PrettyString())
	}
	return b, f
}

// create calls CreateContainer and returns the env it answers.
func create(t *testing.T, b *bad) map[string]string {
	t.Helper()
	rpl, err := b.CreateContainer(t.Context(), &api.CreateContainerRequest{
		Pod:       &api.PodSandbox{Id: "pod", Name: "p", Namespace: "ns"},
		Container: &api.Container{Id: "ctr", PodSandboxId: "pod", Name: "c"},
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	env := map[string]string{}
	for _, kv := range rpl.GetAdjust().GetEnv() {
		env[kv.GetKey()] = kv.GetValue()
	}
	return env
}

func TestParseConfig(t *testing.T) {
	for _, cfg := range []string{"", " ", "{}", `{"mode": ""}`} {
		if got, err := parseConfig(cfg); err != nil || got.Mode != modeOK {
			t.Errorf("parseConfig(%q) = %+v, %v; want mode ok", cfg, got, err)
		}
	}
	got, err := parseConfig(`{"mode": "alloc", "alloc_mib": 7, "path": "/p", "addr": "a:1"}`)
	if err != nil || got != (config{Mode: modeAlloc, AllocMiB: 7, Path: "/p", Addr: "a:1"}) {
		t.Errorf("parseConfig = %+v, %v", got, err)
	}
	for _, cfg := range []string{
		`{"mode": "nope"}`, `{"mode": "ok", "other": 1}`, `{"alloc_mib": -1}`, `{"alloc_mib": "1"}`,
		`{} {}`, `x`,
	} {
		if _, err := parseConfig(cfg); err == nil {
			t.Errorf("parseConfig(%q) succeeded", cfg)
		}
		b := newBad((&fakeSys{}).sys())
		if _, err := b.Configure(t.Context(), &api.ConfigureRequest{Config: cfg}); err == nil {
			t.Errorf("Configure(%q) succeeded", cfg)
		}
	}
}

func TestOK(t *testing.T) {
	b, _ := configured(t, "")
	if env := create(t, b); len(env) != 1 || env["WASMBAD"] != "ok" {
		t.Errorf("env %v, want WASMBAD=ok", env)
	}
}

func TestCrashPanics(t *testing.T) {
	b, _ := configured(t, `{"mode": "crash"}`)
	defer func() {
		if recover() == nil {
			t.Error("mode crash did not panic")
		}
	}()
	_, _ = b.CreateContainer(t.Context(), &api.CreateContainerRequest{})
}

func TestExit(t *testing.T) {
	b, f := configured(t, `{"mode": "exit"}`)
	_, _ = b.CreateContainer(t.Context(), &api.CreateContainerRequest{})
	if len(f.exits) != 1 || f.exits[0] != 3 {
		t.Errorf("exits %v, want [3]", f.exits)
	}
}

func TestAlloc(t *testing.T) {
	b, _ := configured(t, `{"mode": "alloc", "alloc_mib": 3}`)
	if env := create(t, b); env["ALLOCATED"] != "3" {
		t.Errorf("env %v, want ALLOCATED=3", env)
	}
	create(t, b)
	if len(b.held) != 6 {
		t.Fatalf("holds %d blocks after two calls, want 6", len(b.held))
	}
	for i, block := range b.held {
		if len(block) != mib || block[0] != 1 || block[mib-pageSize] != 1 {
			t.Fatalf("block %d: %d bytes, pages not touched", i, len(block))
		}
	}
}

func TestFS(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(path, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NRI_TEST_SECRET", "hunter2")
	b, _ := configured(t, `{"mode": "fs", "path": "`+path+`"}`)
	env := create(t, b)

	if env["FS_READ"] != "ok:s3cret" {
		t.Errorf("FS_READ %q", env["FS_READ"])
	}
	if !strings.HasPrefix(env["FS_LIST"], "ok:") || !strings.Contains(env["FS_LIST"], "tmp") {
		t.Errorf("FS_LIST %q", env["FS_LIST"])
	}
	if env["FS_WRITE"] != "ok" {
		t.Errorf("FS_WRITE %q", env["FS_WRITE"])
	}
	if _, err := os.Stat(path + ".w"); err != nil {
		t.Errorf("FS_WRITE said ok: %v", err)
	}
	if env["ENV_SECRET"] != "hunter2" || env["ENV_COUNT"] == "" || env["ENV_COUNT"] == "0" {
		t.Errorf("ENV_SECRET %q, ENV_COUNT %q", env["ENV_SECRET"], env["ENV_COUNT"])
	}

	b, _ = configured(t, `{"mode": "fs", "path": "`+filepath.Join(dir, "none", "x")+`"}`)
	env = create(t, b)
	if !strings.HasPrefix(env["FS_READ"], "err:") || !strings.HasPrefix(env["FS_WRITE"], "err:") {
		t.Errorf("missing directory: FS_READ %q, FS_WRITE %q", env["FS_READ"], env["FS_WRITE"])
	}
}

func TestFSClipsContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, bytes.Repeat([]byte{0xff, 'x'}, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := configured(t, `{"mode": "fs", "path": "`+path+`"}`)
	got := create(t, b)["FS_READ"]
	if len(got) > maxValue || !utf8.ValidString(got) || !strings.HasPrefix(got, "ok:?x?x") {
		t.Errorf("FS_READ of binary content: %d bytes %q", len(got), got)
	}
}

func TestNet(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	b, _ := configured(t, `{"mode": "net", "addr": "`+addr+`"}`)
	if got := create(t, b)["NET_DIAL"]; got != "ok" {
		t.Errorf("NET_DIAL to a listener: %q", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := create(t, b)["NET_DIAL"]; !strings.HasPrefix(got, "err:") {
		t.Errorf("NET_DIAL to a closed port: %q", got)
	}
}

func TestLogFlood(t *testing.T) {
	b, f := configured(t, `{"mode": "logflood"}`)
	f.lines = nil
	if env := create(t, b); env["FLOODED"] != "1" {
		t.Errorf("env %v, want FLOODED=1", env)
	}
	if len(f.lines) != 1+floodLines || len(f.lines[0]) != mib {
		t.Errorf("logged %d lines, the first %d bytes; want %d, %d", len(f.lines), len(f.lines[0]), 1+floodLines, mib)
	}
	if f.stdout.Len() != 64<<10 || f.stderr.Len() != 64<<10 {
		t.Errorf("wrote %d bytes to stdout and %d to stderr, want 64 KiB each", f.stdout.Len(), f.stderr.Len())
	}
}

func TestBigError(t *testing.T) {
	b, _ := configured(t, `{"mode": "bigerror"}`)
	_, err := b.CreateContainer(t.Context(), &api.CreateContainerRequest{})
	if err == nil || len(err.Error()) != mib {
		t.Fatalf("error of %d bytes, want %d", len(err.Error()), mib)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("a", 199) + "é" // the two-byte rune straddles the limit
	if got := clip(long); got != strings.Repeat("a", 199) {
		t.Errorf("clip cut %q", got[190:])
	}
	if got := clip("short"); got != "short" {
		t.Errorf("clip(short) = %q", got)
	}
	if got := clip(strings.Repeat("b", 500)); len(got) != maxValue {
		t.Errorf("clip of 500 bytes kept %d", len(got))
	}
}

func TestOtherRequestsAnswerEmpty(t *testing.T) {
	b, _ := configured(t, `{"mode": "crash"}`)
	ctx := t.Context()
	if rpl, err := b.Synchronize(ctx, &api.SynchronizeRequest{}); err != nil || rpl == nil || len(rpl.GetUpdate()) != 0 {
		t.Errorf("Synchronize: %v, %v", rpl, err)
	}
	if rpl, err := b.UpdateContainer(ctx, &api.UpdateContainerRequest{}); err != nil || rpl == nil || len(rpl.GetUpdate()) != 0 {
		t.Errorf("UpdateContainer: %v, %v", rpl, err)
	}
	if rpl, err := b.Shutdown(ctx, &api.Empty{}); err != nil || rpl == nil {
		t.Errorf("Shutdown: %v, %v", rpl, err)
	}
}
