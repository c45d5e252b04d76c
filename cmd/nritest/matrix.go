package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nri-grpc/nri-grpc/bridge"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/supervisor"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// `nritest matrix`: classic runtimes (pkg/adaptation) of two releases ×
// classic stub plugins of those releases × nri-grpc's paths.
//
// One Go binary cannot link two versions of github.com/containerd/nri, so
// the classic runtime and plugin are small helper programs whose sources
// nritest carries (helpers/*.go.txt, embedded): for each release nritest
// writes them into its cache with a go.mod requiring that release and
// builds them with the Go toolchain (`go mod tidy`, `go build`; the module
// proxy or a warm module cache). No checkout is needed.

//go:embed helpers/*.go.txt
var helperSources embed.FS

// matrixOpts are the flags of `nritest matrix`.
type matrixOpts struct {
	out      outFlags
	old      string
	current  string
	cache    string
	goBin    string
	parallel int
}

// defaultCurrent is the containerd/nri release nritest itself links (the
// current release nri-grpc's bridge speaks).
func defaultCurrent() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/containerd/nri" {
				return d.Version
			}
		}
	}
	return "v0.12.5"
}

func runMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := &matrixOpts{}
	fs := flag.NewFlagSet("nritest matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cacheDir, _ := os.UserCacheDir()
	fs.StringVar(&o.old, "old", "v0.11.0", "the old classic release (before v0.12.0's dedicated lifecycle RPCs: its plugins get notifications as StateChange)")
	fs.StringVar(&o.current, "current", defaultCurrent(), "the current classic release")
	fs.StringVar(&o.cache, "cache", filepath.Join(cacheDir, "nritest"), "where the classic helpers are built")
	fs.StringVar(&o.goBin, "go", "go", "the Go toolchain that builds the classic helpers")
	fs.IntVar(&o.parallel, "parallel", 2, "cells run at once")
	o.out.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, v := range []string{o.old, o.current} {
		if _, _, ok := minor(v); !ok {
			return usageError{fmt.Errorf("matrix: %q is not a release (vX.Y.Z)", v)}
		}
	}
	r := &report{Command: "matrix", Name: "matrix", Subject: "classic " + o.old + " and " + o.current + " × nri-grpc", Started: time.Now()}
	helpers := map[string]*helperBuild{}
	for _, rel := range []string{o.old, o.current} {
		helpers[rel] = buildHelpers(ctx, o, rel)
	}
	cells := matrixCells(o, helpers)
	checks := make([]conformance.Check, len(cells))
	for i, c := range cells {
		checks[i] = conformance.Check{ScenarioInfo: conformance.ScenarioInfo{Group: "matrix", Name: c.name(), Origin: conformance.Behaviour}, Run: c.run}
	}
	r.Report = conformance.ExecuteChecks(ctx, checks, conformance.Parallel(o.parallel), conformance.Bound(2*conformance.Wait))
	err := finish(r, o.out, stdout)
	if !o.out.json {
		printGrid(stdout, cells, r.Report)
	}
	return err
}

// minor parses "vX.Y.Z" into its major and minor numbers.
func minor(v string) (int, int, bool) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) != 3 || !strings.HasPrefix(v, "v") {
		return 0, 0, false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	return ma, mi, err1 == nil && err2 == nil
}

// helperBuild is one release's helpers, or why they did not build.
type helperBuild struct {
	release string
	plugin  string
	runtime string
	err     error
}

// buildHelpers builds the classic plugin and runtime of release into the
// cache (reused while the sources, the release and the toolchain are the
// same).
func buildHelpers(ctx context.Context, o *matrixOpts, release string) *helperBuild {
	h := &helperBuild{release: release}
	ma, mi, _ := minor(release)
	events := "events_new.go.txt"
	if ma == 0 && mi < 12 {
		events = "events_old.go.txt"
	}
	for _, kind := range []struct {
		name  string
		files []string
		out   *string
	}{
		{"plugin", []string{"plugin.go.txt"}, &h.plugin},
		{"runtime", []string{"runtime.go.txt", events}, &h.runtime},
	} {
		bin, err := buildHelper(ctx, o, release, kind.name, kind.files)
		if err != nil {
			h.err = fmt.Errorf("building the classic %s of %s: %w", kind.name, release, err)
			return h
		}
		*kind.out = bin
	}
	return h
}

func buildHelper(ctx context.Context, o *matrixOpts, release, kind string, files []string) (string, error) {
	sum := sha256.New()
	fmt.Fprintln(sum, release, kind, runtime.Version())
	srcs := map[string][]byte{}
	for _, f := range files {
		b, err := helperSources.ReadFile("helpers/" + f)
		if err != nil {
			return "", err
		}
		srcs[strings.TrimSuffix(f, ".txt")] = b
		sum.Write(b)
	}
	stamp := hex.EncodeToString(sum.Sum(nil))[:16]
	dir := filepath.Join(o.cache, "classic-"+release, kind+"-"+stamp)
	bin := filepath.Join(dir, kind)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, b := range srcs {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	mod := "module nritest.local/classic-" + kind + "\n\ngo 1.22\n\nrequire github.com/containerd/nri " + release + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{
		{"mod", "tidy"},
		{"build", "-trimpath", "-ldflags", "-X main.release=" + release, "-o", kind + ".tmp", "."},
	} {
		cmd := exec.CommandContext(ctx, o.goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return bin, os.Rename(filepath.Join(dir, kind+".tmp"), bin)
}

// cell is one runtime × plugin × path of the matrix.
type cell struct {
	runtime string // "classic vX" or "nri-grpc"
	plugin  string // "classic vX" or "nri-grpc"
	path    string
	rt, pl  *helperBuild // nil for nri-grpc's own
}

func (c *cell) name() string {
	return "runtime " + c.runtime + " × plugin " + c.plugin + " (" + c.path + ")"
}

// matrixCells lists the cells: each classic runtime with each classic
// plugin directly (the reference) and through nri-grpc (bridge runtime
// side, server, bridge plugin side) and with an nri-grpc plugin (bridge
// runtime side); nri-grpc's gRPC runtime with each classic plugin (bridge
// plugin side) and an nri-grpc plugin (direct gRPC).
func matrixCells(o *matrixOpts, helpers map[string]*helperBuild) []*cell {
	var cells []*cell
	rels := []string{o.old, o.current}
	for _, r := range rels {
		for _, p := range rels {
			cells = append(cells,
				&cell{runtime: "classic " + r, plugin: "classic " + p, path: "direct, no nri-grpc", rt: helpers[r], pl: helpers[p]},
				&cell{runtime: "classic " + r, plugin: "classic " + p, path: "bridge runtime side + plugin side", rt: helpers[r], pl: helpers[p]})
		}
		cells = append(cells, &cell{runtime: "classic " + r, plugin: "nri-grpc", path: "bridge runtime side", rt: helpers[r]})
	}
	for _, p := range rels {
		cells = append(cells, &cell{runtime: "nri-grpc", plugin: "classic " + p, path: "bridge plugin side", pl: helpers[p]})
	}
	cells = append(cells, &cell{runtime: "nri-grpc", plugin: "nri-grpc", path: "direct gRPC"})
	return cells
}

// matrixEvents are the events every cell's plugin must see, in order.
var matrixEvents = []string{"RunPodSandbox", "CreateContainer", "PostCreateContainer", "StartContainer",
	"StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox"}

// run runs the cell: one pod lifecycle through the runtime; the plugin's
// annotation must reach the runtime and the plugin must see the events in
// order.
func (c *cell) run(ctx context.Context, t conformance.T) {
	for _, h := range []*helperBuild{c.rt, c.pl} {
		if h != nil && h.err != nil {
			t.Fatal(h.err)
		}
	}
	env := newCellEnv(t)
	var (
		ann  map[string]string
		err  error
		seen func() []string
	)
	switch {
	case c.rt != nil && c.pl != nil && strings.HasPrefix(c.path, "direct"):
		rt := env.classicRuntime(ctx, c.rt)
		seen = env.classicPlugin(ctx, c.pl, rt.socket)
		rt.call(t, "settle")
		ann, err = rt.lifecycle(t)
	case c.rt != nil:
		rt := env.classicRuntime(ctx, c.rt)
		srv := env.server(ctx, false)
		env.attachBridge(ctx, srv, rt)
		if c.pl != nil {
			seen = env.classicPlugin(ctx, c.pl, "")
			env.launchClassic(ctx, srv)
		} else {
			seen = env.grpcPlugin(ctx)
		}
		env.waitPlugin(ctx, srv)
		ann, err = rt.lifecycle(t)
	default:
		srv := env.server(ctx, true)
		if c.pl != nil {
			seen = env.classicPlugin(ctx, c.pl, "")
			env.launchClassic(ctx, srv)
		} else {
			seen = env.grpcPlugin(ctx)
		}
		env.waitPlugin(ctx, srv)
		ann, err = env.grpcLifecycle(ctx, srv)
	}
	if err != nil {
		t.Fatalf("the lifecycle failed: %v", err)
	}
	want := "nri-grpc"
	if c.pl != nil {
		want = c.pl.release
	}
	if got := ann["nritest-matrix-plugin"]; got != want {
		t.Errorf("the plugin's adjustment did not reach the runtime: annotation nritest-matrix-plugin=%q, want %q (annotations %v)", got, want, ann)
	}
	got := seen()
	var evs []string
	configure := ""
	for _, l := range got {
		name, rest, _ := strings.Cut(l, " ")
		if name == "Configure" {
			configure = rest
		}
		for _, e := range matrixEvents {
			if name == e {
				evs = append(evs, name)
			}
		}
	}
	if strings.Join(evs, ",") != strings.Join(matrixEvents, ",") {
		t.Errorf("the plugin saw %v, want %v", evs, matrixEvents)
	}
	if configure != "" {
		t.Logf("annotation landed; events in order; Configure: %s", configure)
	} else {
		t.Logf("annotation landed; events in order")
	}
}

// cellEnv holds what a cell started; t's cleanups stop it.
type cellEnv struct {
	t    conformance.T
	dir  string
	log  *slog.Logger
	logs *logBuffer
	cfg  *serverConfig
	sup  *supervisor.Supervisor
	pdir string // classic plugin directory (bridge plugin side)
	conf string
}

func newCellEnv(t conformance.T) *cellEnv {
	dir, pluginDir, err := newScratch()
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := &cellEnv{t: t, dir: dir, log: log, logs: logs,
		cfg: &serverConfig{dir: dir, pluginDir: pluginDir, sock: filepath.Join(dir, "nri-grpc.sock"), log: log,
			rec: &recorder{}, met: &metrics{}, rt: &fakeRuntime{}},
		sup: supervisor.New(supervisor.WithLogger(log.With("component", "supervisor")))}
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		if t.Failed() {
			t.Logf("log:\n%s", strings.Join(logs.lines(30), "\n"))
		}
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), conformance.Wait)
		defer cancel()
		_ = e.sup.Stop(ctx)
	})
	return e
}

// classicRT is a running classic runtime helper.
type classicRT struct {
	socket string
	mu     sync.Mutex
	in     io.Writer
	out    *bufio.Scanner
}

type rtAnswer struct {
	Err         string            `json:"err"`
	Annotations map[string]string `json:"annotations"`
}

func (r *classicRT) call(t conformance.T, op string, kv ...string) rtAnswer {
	t.Helper()
	cmd := map[string]string{"op": op}
	for i := 0; i+1 < len(kv); i += 2 {
		cmd[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(cmd)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("classic runtime: %v", err)
	}
	if !r.out.Scan() {
		t.Fatalf("classic runtime: no answer to %s: %v", op, r.out.Err())
	}
	var a rtAnswer
	if err := json.Unmarshal(r.out.Bytes(), &a); err != nil {
		t.Fatalf("classic runtime: %v", err)
	}
	return a
}

func (r *classicRT) lifecycle(t conformance.T) (map[string]string, error) {
	a := r.call(t, "lifecycle")
	if a.Err != "" {
		return a.Annotations, errors.New(a.Err)
	}
	return a.Annotations, nil
}

// classicRuntime starts the classic runtime of h on a socket of its own.
func (e *cellEnv) classicRuntime(ctx context.Context, h *helperBuild) *classicRT {
	t := e.t
	cmd := exec.CommandContext(ctx, h.runtime)
	cmd.Stderr = e.logs
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	r := &classicRT{socket: filepath.Join(e.dir, "nri.sock"), in: in, out: bufio.NewScanner(out)}
	r.out.Buffer(make([]byte, 0, 64<<10), 16<<20)
	r.call(t, "start", "socket", r.socket)
	return r
}

// classicPlugin prepares the classic plugin of h: started at once on
// socket when given, else put into the bridge's classic plugin directory
// (launchClassic starts it). It returns the plugin's event lines.
func (e *cellEnv) classicPlugin(ctx context.Context, h *helperBuild, socket string) func() []string {
	t := e.t
	events := filepath.Join(e.dir, "events")
	if socket != "" {
		cmd := exec.CommandContext(ctx, h.plugin)
		cmd.Env = []string{"NRI_PLUGIN_NAME=matrix", "NRI_PLUGIN_IDX=10", "NRITEST_SOCKET=" + socket, "NRITEST_EVENTS=" + events}
		cmd.Stdout, cmd.Stderr = e.logs, e.logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		e.waitFile(events, "Synchronize")
	} else {
		e.pdir, e.conf = filepath.Join(e.dir, "classic"), filepath.Join(e.dir, "classic-conf")
		for _, d := range []string{e.pdir, e.conf} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(h.plugin, filepath.Join(e.pdir, "10-matrix")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.conf, "10-matrix.conf"), []byte(events), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return func() []string {
		b, _ := os.ReadFile(events)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// waitFile waits until path holds substr. The plugin writes it; there is
// nothing else to wait on, so the file is polled.
func (e *cellEnv) waitFile(path, substr string) {
	deadline := time.Now().Add(conformance.Wait)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), substr) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the classic plugin did not register (no %q in its event file)", substr)
		}
		timer := time.NewTimer(10 * time.Millisecond)
		<-timer.C
	}
}

// server starts nri-grpc's server; with the fake runtime attached when
// attach is set (the gRPC runtime), else the bridge attaches.
func (e *cellEnv) server(ctx context.Context, attach bool) *nriServer {
	e.cfg.noRuntime = !attach
	s, err := e.cfg.start(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), conformance.Wait)
		defer cancel()
		_ = s.stop(sctx)
	})
	return s
}

// attachBridge attaches the bridge's runtime side to the classic runtime.
func (e *cellEnv) attachBridge(ctx context.Context, s *nriServer, rt *classicRT) {
	rs, err := bridge.NewRuntimeSide(s.srv, bridge.WithRuntimeSocket(rt.socket), bridge.WithRuntimeLogger(e.log.With("side", "runtime")),
		bridge.WithReconnectBackoff(5*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		e.t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = rs.Run(rctx); close(done) }()
	e.t.Cleanup(func() { cancel(); <-done })
	select {
	case <-rs.Synchronized():
	case <-time.After(conformance.Wait):
		e.t.Fatal("the bridge did not attach to the classic runtime")
	}
	rt.call(e.t, "settle")
}

// launchClassic launches the classic plugin through the bridge's plugin
// side, as nrid does with bridge.classic_plugin_dir.
func (e *cellEnv) launchClassic(ctx context.Context, s *nriServer) {
	ps, err := bridge.NewPluginSide(s.srv, bridge.WithPluginLogger(e.log.With("side", "plugin")))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := ps.Launch(ctx, e.sup, e.pdir, e.conf); err != nil {
		e.t.Fatal(err)
	}
}

// grpcPlugin starts an nri-grpc plugin (internal/testplugin) that
// annotates created containers.
func (e *cellEnv) grpcPlugin(ctx context.Context) func() []string {
	tp := &testplugin.Plugin{Name: "matrix", Index: "10", Log: testplugin.NewLog(),
		OnCreateContainer: func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Annotations: map[string]string{"nritest-matrix-plugin": "nri-grpc"}}}, nil
		}}
	sctx, cancel := context.WithTimeout(ctx, conformance.Wait)
	defer cancel()
	if _, err := tp.Start(sctx, e.cfg.sock, e.cfg.pluginDir); err != nil {
		e.t.Fatalf("starting the nri-grpc plugin: %v", err)
	}
	e.t.Cleanup(tp.Stop)
	return func() []string {
		var out []string
		for _, c := range tp.Log.Calls() {
			out = append(out, c.Method)
		}
		return out
	}
}

// waitPlugin waits until 10-matrix is registered with the server.
func (e *cellEnv) waitPlugin(ctx context.Context, s *nriServer) {
	wctx, cancel := context.WithTimeout(ctx, conformance.Wait)
	defer cancel()
	if _, err := waitPlugin(wctx, s.srv, "10-matrix"); err != nil {
		e.t.Fatalf("the plugin did not register with nri-grpc: %v", err)
	}
}

// grpcLifecycle runs one pod lifecycle through the server's Go API and
// returns the annotations CreateContainer gave.
func (e *cellEnv) grpcLifecycle(ctx context.Context, s *nriServer) (map[string]string, error) {
	pod, ctr := eventPod("matrix-pod"), eventCtr("matrix-pod", "matrix-ctr")
	var ann map[string]string
	for _, ev := range lifecycle {
		if ev == nriv1beta1.Event_EVENT_CREATE_CONTAINER {
			rsp, err := s.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: clonePod(pod), Container: cloneCtr(ctr)})
			if err != nil {
				return nil, fmt.Errorf("CreateContainer: %w", err)
			}
			ann = rsp.GetAdjust().GetAnnotations()
			continue
		}
		if _, err := drive(ctx, s.srv, ev, clonePod(pod), cloneCtr(ctr)); err != nil {
			return nil, fmt.Errorf("%v: %w", ev, err)
		}
	}
	return ann, nil
}

// printGrid prints the matrix as a runtime × plugin grid.
func printGrid(w io.Writer, cells []*cell, rep conformance.Report) {
	res := map[string]string{}
	for _, s := range rep.Scenarios {
		res[s.Name] = string(s.Result)
	}
	var rts, pls []string
	grid := map[[2]string][]string{}
	for _, c := range cells {
		if !contains(rts, c.runtime) {
			rts = append(rts, c.runtime)
		}
		if !contains(pls, c.plugin) {
			pls = append(pls, c.plugin)
		}
		short := map[string]string{"direct, no nri-grpc": "direct", "bridge runtime side + plugin side": "bridged",
			"bridge runtime side": "bridge-rt", "bridge plugin side": "bridge-pl", "direct gRPC": "gRPC"}[c.path]
		k := [2]string{c.runtime, c.plugin}
		grid[k] = append(grid[k], short+" "+res[c.name()])
	}
	fmt.Fprintln(w, "\nruntime \\ plugin")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "")
	for _, p := range pls {
		fmt.Fprint(tw, "\t"+p)
	}
	fmt.Fprintln(tw)
	for _, r := range rts {
		fmt.Fprint(tw, r)
		for _, p := range pls {
			fmt.Fprint(tw, "\t"+strings.Join(grid[[2]string{r, p}], ", "))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
