package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/internal/wasmbuild"
	"github.com/nri-grpc/nri-grpc/wasm"
)

// The tests load modules built from source (internal/testplugin/wasmbad,
// whose config picks how it misbehaves), once per test binary.
var modules *wasmbuild.Cache

// engine is the engine of the tests that need no options of their own:
// it compiles the module once.
var engine *wasm.Engine

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nri-wasm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	modules = wasmbuild.NewCache(dir)
	if engine, err = wasm.NewEngine(wasm.WithLogger(quiet)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = engine.Close(context.Background())
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// quiet drops what modules log (a crash prints its stack).
var quiet = slog.New(slog.DiscardHandler)

const bad = "internal/testplugin/wasmbad"

// records is a slog handler that keeps what is logged.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.recs = append(r.recs, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) all() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Record(nil), r.recs...)
}

// load builds the misbehaving plugin, loads it with opts and configures it
// with config.
func load(t *testing.T, config string, opts ...wasm.Option) *wasm.Plugin {
	t.Helper()
	path := modules.Path(t, bad)
	e := engine
	if len(opts) > 0 {
		var err error
		if e, err = wasm.NewEngine(append([]wasm.Option{wasm.WithLogger(quiet)}, opts...)...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close(context.Background()) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	p, err := e.Load(ctx, path, "10-wasmbad")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := (&v1alpha1.ConfigureRequest{Config: config, RuntimeName: "test", RuntimeVersion: "1"}).MarshalVT()
	out, err := p.Call(ctx, "Configure", b)
	if err != nil {
		t.Fatalf("Configure: %v", err)
	}
	rsp := &v1alpha1.ConfigureResponse{}
	if err := rsp.UnmarshalVT(out); err != nil {
		t.Fatal(err)
	}
	if mask := v1alpha1.EventMask(rsp.GetEvents()); !mask.IsSet(v1alpha1.Event_CREATE_CONTAINER) {
		t.Fatalf("the plugin did not subscribe to CreateContainer: %v", rsp)
	}
	return p
}

// create calls CreateContainer within d.
func create(p *wasm.Plugin, d time.Duration) (*v1alpha1.CreateContainerResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	b, _ := (&v1alpha1.CreateContainerRequest{
		Pod:       &v1alpha1.PodSandbox{Id: "pod0", Name: "pod0", Namespace: "ns"},
		Container: &v1alpha1.Container{Id: "ctr0", PodSandboxId: "pod0", Name: "ctr0"},
	}).MarshalVT()
	out, err := p.Call(ctx, "CreateContainer", b)
	if err != nil {
		return nil, err
	}
	rsp := &v1alpha1.CreateContainerResponse{}
	if err := rsp.UnmarshalVT(out); err != nil {
		return nil, err
	}
	return rsp, nil
}

// env returns the value of the adjustment's environment variable key.
func env(rsp *v1alpha1.CreateContainerResponse, key string) (string, bool) {
	for _, kv := range rsp.GetAdjust().GetEnv() {
		if kv.GetKey() == key {
			return kv.GetValue(), true
		}
	}
	return "", false
}

func mustEnv(t *testing.T, rsp *v1alpha1.CreateContainerResponse, key string) string {
	t.Helper()
	v, ok := env(rsp, key)
	if !ok {
		t.Fatalf("no %s in the adjustment %v", key, rsp.GetAdjust())
	}
	return v
}

// dead checks that p died and that a later call says so.
func dead(t *testing.T, p *wasm.Plugin) {
	t.Helper()
	select {
	case <-p.Done():
	default:
		t.Fatal("the module is not dead")
	}
	if _, err := create(p, testwait.Bound()); status.Code(err) != codes.Unavailable {
		t.Fatalf("a call to the dead module: %v, want UNAVAILABLE", err)
	}
}

func TestCall(t *testing.T) {
	p := load(t, `{"mode":"ok"}`)
	rsp, err := create(p, testwait.Bound())
	if err != nil {
		t.Fatal(err)
	}
	if v := mustEnv(t, rsp, "WASMBAD"); v != "ok" {
		t.Fatalf("WASMBAD=%q", v)
	}
	if p.MemorySize() == 0 {
		t.Fatal("no memory size")
	}
	if _, err := p.Call(context.Background(), "Frobnicate", nil); status.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown method: %v", err)
	}
}

// TestLoadRefusesNonPlugins: a module without the plugin ABI, and bytes
// that are no module, are refused at load.
func TestLoadRefusesNonPlugins(t *testing.T) {
	e, err := wasm.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close(context.Background()) }()
	ctx := context.Background()
	if _, err := e.LoadBytes(ctx, []byte("\x00asm\x01\x00\x00\x00"), "10-empty"); err == nil || !strings.Contains(err.Error(), "plugin_api_version is not exported") {
		t.Fatalf("empty module: %v", err)
	}
	if _, err := e.LoadBytes(ctx, []byte("\x00asm\x01\x00\x00\x00garbage"), "10-garbage"); err == nil {
		t.Fatal("garbage loaded")
	}
}

// TestTimeoutStopsLoop: a call whose context ends while the module spins
// returns DEADLINE_EXCEEDED, and the module is dead. Without wazero's
// close-on-context-done the call would never return.
func TestTimeoutStopsLoop(t *testing.T) {
	p := load(t, `{"mode":"loop"}`)
	done := make(chan error, 1)
	go func() {
		_, err := create(p, 100*time.Millisecond)
		done <- err
	}()
	select {
	case err := <-done:
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("looping call: %v, want DEADLINE_EXCEEDED", err)
		}
	case <-time.After(testwait.Bound()):
		t.Fatal("the looping module was not stopped at its deadline")
	}
	dead(t, p)
}

// TestTimeoutStopsLoopInConfigure: the same for a module looping in
// Configure.
func TestTimeoutStopsLoopInConfigure(t *testing.T) {
	p, err := engine.Load(context.Background(), modules.Path(t, bad), "10-wasmbad")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	b, _ := (&v1alpha1.ConfigureRequest{Config: `{"mode":"loop-configure"}`}).MarshalVT()
	done := make(chan error, 1)
	go func() { _, err := p.Call(ctx, "Configure", b); done <- err }()
	select {
	case err := <-done:
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("looping Configure: %v", err)
		}
	case <-time.After(testwait.Bound()):
		t.Fatal("the module looping in Configure was not stopped")
	}
	dead(t, p)
}

// TestMemoryLimit: the same allocation succeeds under a large limit and
// kills the module under a small one.
func TestMemoryLimit(t *testing.T) {
	big := load(t, `{"mode":"alloc","alloc_mib":48}`, wasm.WithMemoryLimit(256<<20))
	rsp, err := create(big, testwait.Bound())
	if err != nil {
		t.Fatalf("48 MiB under a 256 MiB limit: %v", err)
	}
	if v := mustEnv(t, rsp, "ALLOCATED"); v != "48" {
		t.Fatalf("ALLOCATED=%q", v)
	}
	if big.MemorySize() < 48<<20 {
		t.Fatalf("memory %d after allocating 48 MiB", big.MemorySize())
	}
	small := load(t, `{"mode":"alloc","alloc_mib":48}`, wasm.WithMemoryLimit(32<<20))
	if _, err := create(small, testwait.Bound()); status.Code(err) != codes.Unavailable {
		t.Fatalf("48 MiB under a 32 MiB limit: %v, want UNAVAILABLE", err)
	}
	dead(t, small)
}

// TestNoHostFilesystemOrEnvironment: the module can read, list and write
// no host file, and sees none of the host's environment.
func TestNoHostFilesystemOrEnvironment(t *testing.T) {
	t.Setenv("NRI_TEST_SECRET", "hunter2")
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("hunter2"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := load(t, fmt.Sprintf(`{"mode":"fs","path":%q}`, secret))
	rsp, err := create(p, testwait.Bound())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"FS_READ", "FS_LIST", "FS_WRITE"} {
		if v := mustEnv(t, rsp, k); !strings.HasPrefix(v, "err:") {
			t.Errorf("%s=%q: the module reached the host filesystem", k, v)
		}
	}
	if _, err := os.Stat(secret + ".w"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the module wrote a host file: %v", err)
	}
	if v := mustEnv(t, rsp, "ENV_SECRET"); v != "" {
		t.Errorf("the module read the host's environment: %q", v)
	}
	if v := mustEnv(t, rsp, "ENV_COUNT"); v != "0" {
		t.Errorf("the module has %s environment variables", v)
	}
}

// TestNoNetwork: the module cannot connect to a listening host socket.
func TestNoNetwork(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	p := load(t, fmt.Sprintf(`{"mode":"net","addr":%q}`, lis.Addr().String()))
	rsp, err := create(p, testwait.Bound())
	if err != nil {
		t.Fatal(err)
	}
	if v := mustEnv(t, rsp, "NET_DIAL"); !strings.HasPrefix(v, "err:") {
		t.Errorf("NET_DIAL=%q: the module reached the network", v)
	}
	_ = lis.(*net.TCPListener).SetDeadline(time.Now())
	if c, err := lis.Accept(); err == nil {
		c.Close()
		t.Error("the module connected to the host's listener")
	}
}

// TestCrashAndExitKillOnlyTheModule: a panic and an exit make the call
// UNAVAILABLE and the module dead; another module of the same engine goes
// on.
func TestCrashAndExitKillOnlyTheModule(t *testing.T) {
	for _, tc := range []struct{ mode, says string }{{"crash", "crashed"}, {"exit", "exited with code 3"}} {
		t.Run(tc.mode, func(t *testing.T) {
			logs := &records{}
			p := load(t, fmt.Sprintf(`{"mode":%q}`, tc.mode), wasm.WithLogger(slog.New(logs)))
			healthy := load(t, `{"mode":"ok"}`)
			_, err := create(p, testwait.Bound())
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("%s: %v", tc.mode, err)
			}
			dead(t, p)
			if _, err := create(healthy, testwait.Bound()); err != nil {
				t.Fatalf("the healthy module: %v", err)
			}
			if tc.mode == "crash" {
				found := false
				for _, r := range logs.all() {
					found = found || strings.HasPrefix(r.Message, "panic:")
				}
				if !found {
					t.Error("the module's panic is not in the log")
				}
			}
		})
	}
}

// TestLogsBounded: a module's log calls, stdout and stderr reach the log,
// each line cut to a bound and their number limited.
func TestLogsBounded(t *testing.T) {
	logs := &records{}
	p := load(t, `{"mode":"logflood"}`, wasm.WithLogger(slog.New(logs)))
	rsp, err := create(p, testwait.Bound())
	if err != nil {
		t.Fatal(err)
	}
	mustEnv(t, rsp, "FLOODED")
	recs := logs.all()
	if len(recs) < 10 || len(recs) > 300 {
		t.Fatalf("%d lines logged for 1000+ log calls and 128 KiB of output: the rate limit does not hold", len(recs))
	}
	streams := map[string]bool{}
	for _, r := range recs {
		if len(r.Message) > 5<<10 {
			t.Fatalf("a line of %d bytes", len(r.Message))
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "stream" {
				streams[a.Value.String()] = true
			}
			return true
		})
	}
	longest := ""
	for _, r := range recs {
		if len(r.Message) > len(longest) {
			longest = r.Message
		}
	}
	if len(longest) < 4<<10 || !strings.HasSuffix(longest, "(cut)") {
		t.Errorf("the 1 MiB log line was not logged cut: the longest line has %d bytes", len(longest))
	}
	_ = streams // stdout and stderr come after the flood: the limit may hold them back
}

// TestBigErrorClipped: a module's error message is cut before it goes on.
func TestBigErrorClipped(t *testing.T) {
	p := load(t, `{"mode":"bigerror"}`)
	_, err := create(p, testwait.Bound())
	if status.Code(err) != codes.Unknown {
		t.Fatalf("error answer: %v", err)
	}
	if n := len(status.Convert(err).Message()); n > 1<<10 {
		t.Fatalf("an error message of %d bytes went on", n)
	}
	if _, err := create(p, testwait.Bound()); status.Code(err) != codes.Unknown {
		t.Fatalf("the module died of an error answer: %v", err)
	}
}

// TestCallsTakeTurns: concurrent calls are serialized: they all succeed
// (wazero's module is not safe for concurrent calls, and the race
// detector watches the host side).
func TestCallsTakeTurns(t *testing.T) {
	p := load(t, `{"mode":"ok"}`)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			if _, err := create(p, testwait.Bound()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestCacheDirRefusedWhenOthersMayWrite: compiled code is only kept where
// only its owner may write.
func TestCacheDirRefusedWhenOthersMayWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := wasm.NewEngine(wasm.WithCacheDir(dir)); err == nil {
		t.Fatal("a world-writable cache directory was accepted")
	}
	own := filepath.Join(t.TempDir(), "own")
	e, err := wasm.NewEngine(wasm.WithCacheDir(own))
	if err != nil {
		t.Fatal(err)
	}
	_ = e.Close(context.Background())
	if fi, err := os.Stat(own); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache directory: %v %v", fi, err)
	}
}

// TestConcurrentLoadsCompileOnce: copies of one module loaded at once (as
// a plugin directory's copies are at start) are compiled once, the other
// loads waiting for that compilation and taking it from the cache, and
// every copy runs.
func TestConcurrentLoadsCompileOnce(t *testing.T) {
	e, err := wasm.NewEngine(wasm.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close(context.Background()) }()
	code, err := os.ReadFile(modules.Path(t, bad))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	const copies = 4
	plugins := make([]*wasm.Plugin, copies)
	errs := make([]error, copies)
	var wg sync.WaitGroup
	for i := range copies {
		wg.Go(func() { plugins[i], errs[i] = e.LoadBytes(ctx, code, fmt.Sprintf("%02d-wasmbad", i)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
	}
	if n := e.Compilations(); n != 1 {
		t.Errorf("%d copies loaded at once were compiled %d times, want once", copies, n)
	}
	b, _ := (&v1alpha1.ConfigureRequest{Config: `{"mode":"ok"}`}).MarshalVT()
	for i, p := range plugins {
		if _, err := p.Call(ctx, "Configure", b); err != nil {
			t.Fatalf("copy %d: Configure: %v", i, err)
		}
		rsp, err := create(p, testwait.Bound())
		if err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
		mustEnv(t, rsp, "WASMBAD")
	}
}
