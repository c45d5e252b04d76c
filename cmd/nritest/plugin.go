package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/supervisor"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

func u64(v uint64) *wrapperspb.UInt64Value { return wrapperspb.UInt64(v) }
func i64(v int64) *wrapperspb.Int64Value   { return wrapperspb.Int64(v) }

// pluginOpts are the flags of `nritest plugin`.
type pluginOpts struct {
	out          outFlags
	name, idx    string
	classic      bool
	configFile   string
	config       []byte
	registerWait time.Duration
	restartWait  time.Duration
	syncPods     int
	concurrency  int
	cleanEnv     bool
	env          multiFlag
	annotations  multiFlag
	logFile      string
	cmd          []string
	path         string // cmd[0], resolved
	full         string // "NN-name"
	outputLines  int
	skipRestart  bool
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

var nameRe = regexp.MustCompile(`[^A-Za-z0-9_.+-]+`)

func parsePluginFlags(args []string, stderr io.Writer) (*pluginOpts, error) {
	o := &pluginOpts{}
	fs := flag.NewFlagSet("nritest plugin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: nritest plugin [flags] -- CMD [ARGS]\n\nRuns CMD as nrid launches a plugin and checks its behaviour (docs/nritest.md).\n\nFlags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.name, "name", "", "plugin name the launch slot assigns (default: CMD's file name, cleaned)")
	fs.StringVar(&o.idx, "idx", "50", "two-digit plugin index the launch slot assigns")
	fs.BoolVar(&o.classic, "classic", false, "CMD is a classic (ttrpc, containerd/nri pkg/stub) plugin: launch it as nrid's bridge does")
	fs.StringVar(&o.configFile, "config", "", "file whose content is the plugin's configuration (Configure), as a drop-in file of nrid's config dir")
	fs.DurationVar(&o.registerWait, "register-timeout", 30*time.Second, "bound on the plugin's first registration (process start included)")
	fs.DurationVar(&o.restartWait, "restart-timeout", 30*time.Second, "bound on the re-registration after the server restarts")
	fs.IntVar(&o.syncPods, "sync-pods", 150, "pods (each with a container, about 1 KiB each) in the state synchronized at registration")
	fs.IntVar(&o.concurrency, "concurrency", 8, "pods whose lifecycles run at once in the concurrency check")
	fs.BoolVar(&o.cleanEnv, "clean-env", false, "give the plugin only nrid's launch environment (default: nritest's environment, nrid's launch variables winning)")
	fs.Var(&o.env, "env", "KEY=VALUE added to the plugin's environment (repeatable)")
	fs.Var(&o.annotations, "annotation", "KEY=VALUE annotation of the pods the event checks create, to make the plugin act (repeatable)")
	fs.StringVar(&o.logFile, "log", "", "write the server's and the plugin's log to this file")
	fs.IntVar(&o.outputLines, "log-lines", 10, "log lines shown with a failed registration")
	fs.BoolVar(&o.skipRestart, "no-restart", false, "skip the server restart checks")
	o.out.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.cmd = fs.Args()
	if len(o.cmd) == 0 {
		fs.Usage()
		return nil, usageError{errors.New("plugin: no command given (nritest plugin [flags] -- CMD [ARGS])")}
	}
	path, err := exec.LookPath(o.cmd[0])
	if err != nil {
		return nil, usageError{fmt.Errorf("plugin: %w", err)}
	}
	if o.path, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	if o.name == "" {
		o.name = strings.Trim(nameRe.ReplaceAllString(strings.TrimSuffix(filepath.Base(o.cmd[0]), filepath.Ext(o.cmd[0])), "-"), "-")
	}
	if err := supervisor.CheckName(o.name); err != nil {
		return nil, usageError{fmt.Errorf("plugin: -name: %w", err)}
	}
	if err := supervisor.CheckIndex(o.idx); err != nil {
		return nil, usageError{fmt.Errorf("plugin: -idx: %w", err)}
	}
	if o.configFile != "" {
		if o.config, err = os.ReadFile(o.configFile); err != nil {
			return nil, usageError{fmt.Errorf("plugin: -config: %w", err)}
		}
	}
	for _, a := range o.annotations {
		if k, _, ok := strings.Cut(a, "="); !ok || k == "" {
			return nil, usageError{fmt.Errorf("plugin: -annotation %q: want KEY=VALUE", a)}
		}
	}
	o.full = o.idx + "-" + o.name
	return o, nil
}

// runPlugin is `nritest plugin`.
func runPlugin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parsePluginFlags(args, stderr)
	if err != nil {
		return err
	}
	h, err := newPluginHarness(o)
	if err != nil {
		return err
	}
	defer h.close()
	r := &report{Command: "plugin", Name: o.full, Subject: strings.Join(o.cmd, " ") + " (" + o.full + ", " + map[bool]string{false: "gRPC", true: "classic"}[o.classic] + ")", Started: time.Now()}
	r.Report = conformance.ExecuteChecks(ctx, h.checks(), conformance.Parallel(1),
		conformance.Bound(max(o.registerWait, o.restartWait)+conformance.Wait))
	return finish(r, o.out, stdout)
}

// pluginHarness runs one plugin process against a server that is
// restarted once, and checks it step by step.
type pluginHarness struct {
	o       *pluginOpts
	cfg     *serverConfig
	logs    *logBuffer
	logFile *os.File
	sup     *supervisor.Supervisor
	supCtx  context.Context
	supStop context.CancelFunc

	mu          sync.Mutex
	cur         *nriServer
	classic     *classicLaunch
	launched    bool
	info        *nriv1beta1.PluginInfo // the registration's, once registered
	regErr      error                  // why the first registration failed
	exits       supervisor.Status      // the process's status before the shutdown check
	stopped     bool                   // the shutdown check ran
	crashes     []string               // exits before the shutdown check
	unreachable int                    // calls that found the plugin unreachable before the shutdown check
	createMarks [2]int                 // record positions before the CreateContainer check
}

func newPluginHarness(o *pluginOpts) (*pluginHarness, error) {
	dir, pluginDir, err := newScratch()
	if err != nil {
		return nil, err
	}
	logs := &logBuffer{}
	h := &pluginHarness{o: o, logs: logs}
	if o.logFile != "" {
		if h.logFile, err = os.Create(o.logFile); err != nil {
			return nil, err
		}
		logs.copy = h.logFile
	}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pods, ctrs := syncState(o.syncPods)
	h.cfg = &serverConfig{
		dir: dir, pluginDir: pluginDir, sock: filepath.Join(dir, "nri-grpc.sock"), log: log,
		rec: &recorder{}, met: &metrics{}, rt: &fakeRuntime{}, pods: pods, ctrs: ctrs, maxMsg: 64 << 10,
	}
	h.sup = supervisor.New(supervisor.WithLogger(log.With("component", "plugin-output")),
		supervisor.WithInitialBackoff(200*time.Millisecond), supervisor.WithMaxBackoff(2*time.Second))
	h.supCtx, h.supStop = context.WithCancel(context.Background())
	return h, nil
}

func (h *pluginHarness) close() {
	ctx, cancel := context.WithTimeout(context.Background(), conformance.Wait)
	defer cancel()
	h.mu.Lock()
	cur := h.cur
	h.mu.Unlock()
	if cur != nil {
		_ = cur.stop(ctx)
	}
	_ = h.sup.Stop(ctx)
	h.supStop()
	if h.classic != nil {
		h.classic.stop()
	}
	if h.logFile != nil {
		_ = h.logFile.Close()
	}
	_ = os.RemoveAll(h.cfg.dir)
}

// env returns the plugin's environment: nritest's own (unless
// -clean-env), then the -env flags, then nrid's launch variables.
func (h *pluginHarness) env(launch []string) []string {
	var env []string
	if !h.o.cleanEnv {
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "NRI_") {
				env = append(env, kv)
			}
		}
	}
	env = append(env, h.o.env...)
	if !h.o.cleanEnv {
		// The caller's PATH: the command may be a script that needs its
		// interpreter.
		var rest []string
		for _, kv := range launch {
			if !strings.HasPrefix(kv, "PATH=") {
				rest = append(rest, kv)
			}
		}
		launch = rest
	}
	return append(env, launch...)
}

// LaunchDir implements server.Launcher: the first call starts the plugin
// under the supervisor with the environment the server's Launch gives
// (endpoint, server address, name, index); later calls (a restarted
// server) only bind the running plugin's launch slot again.
func (h *pluginHarness) LaunchDir(_ context.Context, _, _ string,
	setup func(index, name string, config []byte) (env []string, beforeStart func())) error {
	env, before := setup(h.o.idx, h.o.name, h.o.config)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.launched {
		return nil
	}
	h.launched = true
	_, err := h.sup.Start(h.supCtx, supervisor.Spec{
		Name: h.o.name, Index: h.o.idx, Path: h.o.path, Args: h.o.cmd[1:], Env: h.env(env),
		Prepare: func() ([]*os.File, func(), error) {
			if before != nil {
				before()
			}
			return nil, nil, nil
		},
		OnStart: func(context.Context, supervisor.Started) {}, // OnExit needs it
		OnExit:  h.exited,
	})
	return err
}

// exited records an exit of the plugin process the checks did not ask
// for, before the shutdown check.
func (h *pluginHarness) exited(_ context.Context, e supervisor.Exited) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !e.Requested && !h.stopped {
		h.crashes = append(h.crashes, fmt.Sprintf("pid %d after %v: %v", e.PID, e.Ran.Round(time.Millisecond), e.Err))
	}
}

// startServer starts a server and launches (or re-binds) the plugin.
func (h *pluginHarness) startServer(ctx context.Context) (*nriServer, error) {
	s, err := h.cfg.start(ctx)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.cur = s
	h.mu.Unlock()
	if h.o.classic {
		err = h.launchClassic(ctx, s)
	} else {
		err = s.srv.Launch(ctx, h, server.LaunchConfig{PluginDir: h.cfg.dir, ServerAddress: sockets.Target(h.cfg.sock)})
	}
	return s, err
}

func (h *pluginHarness) server() *nriServer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// procStatus returns the plugin process's status.
func (h *pluginHarness) procStatus() (supervisor.Status, bool) {
	procs := h.sup.Procs()
	if len(procs) == 0 {
		return supervisor.Status{}, false
	}
	return procs[0].Status(), true
}

// registered skips the calling check when the plugin never registered.
func (h *pluginHarness) registered(t conformance.T) *nriv1beta1.PluginInfo {
	t.Helper()
	h.mu.Lock()
	info, err := h.info, h.regErr
	h.mu.Unlock()
	if info == nil {
		t.Skipf("the plugin did not register (%v)", err)
	}
	return info
}

// subscribed reports whether the registration subscribed to ev.
func subscribed(info *nriv1beta1.PluginInfo, ev nriv1beta1.Event) bool {
	for _, e := range info.GetEvents() {
		if e == ev {
			return true
		}
	}
	return false
}

// logTail returns the server's and the plugin's last log lines about the
// plugin.
func (h *pluginHarness) logTail() string {
	lines := h.logs.lines(h.o.outputLines, h.o.name)
	if len(lines) == 0 {
		return "(no log lines name the plugin)"
	}
	return strings.Join(lines, "\n")
}
