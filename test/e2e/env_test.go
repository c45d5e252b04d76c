//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Proc is a process the suite started.
type Proc struct {
	Name string
	Log  string
	Path string
	Args []string
	env  []string
	cmd  *exec.Cmd
	done chan struct{}
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process and waits up to timeout for it to exit;
// then it is killed.
func (p *Proc) Signal(tb testing.TB, sig syscall.Signal, timeout time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return
	case <-time.After(timeout):
	}
	if tb != nil {
		tb.Logf("%s (pid %d) did not exit on %v within %v: killing it", p.Name, p.Pid(), sig, timeout)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Stop stops the process gracefully (SIGTERM).
func (p *Proc) Stop(tb testing.TB) { p.Signal(tb, syscall.SIGTERM, 20*time.Second) }

// Kill kills the process (SIGKILL) and waits for it.
func (p *Proc) Kill() { p.Signal(nil, syscall.SIGKILL, 10*time.Second) }

// ExitCode waits for the process to exit and returns its exit code (-1 when
// a signal ended it).
func (p *Proc) ExitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// start starts a process with its output appended to log, records its PID,
// and stops it at the end of the test unless it was stopped before.
func (e *Env) start(name, log, path string, env []string, args ...string) *Proc {
	e.tb.Helper()
	p := &Proc{Name: name, Log: log, Path: path, Args: args, env: env}
	e.launch(p)
	e.procs = append(e.procs, p)
	return p
}

func (e *Env) launch(p *Proc) {
	e.tb.Helper()
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		e.tb.Fatal(err)
	}
	if _, err := fmt.Fprintf(f, "==== %s: start %s %s\n", time.Now().Format(time.RFC3339Nano), p.Path, strings.Join(p.Args, " ")); err != nil {
		e.tb.Fatal(err)
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), p.env...)
	// Own process group (a terminal's ^C goes to the suite, which stops
	// everything in order), and killed if the suite dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		e.tb.Fatalf("start %s: %v", p.Name, err)
	}
	suite.recordPID(cmd.Process.Pid, p.Path)
	p.cmd = cmd
	p.done = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_, _ = fmt.Fprintf(f, "==== %s: exited: %v\n", time.Now().Format(time.RFC3339Nano), cmd.ProcessState) // a marker only; the test may be over
		f.Close()
		close(p.done)
	}()
}

// Restart starts a stopped process again with the same arguments.
func (e *Env) Restart(p *Proc) {
	e.tb.Helper()
	if !p.Exited() {
		e.tb.Fatalf("restart %s: still running", p.Name)
	}
	e.launch(p)
}

// EnvOptions configure a scenario's containerd and nrid.
type EnvOptions struct {
	// ContainerdRequired is containerd's default_validator.required_plugins.
	ContainerdRequired []string
	// ContainerdTolerate is the default validator's
	// tolerate_missing_plugins_annotation (with ContainerdRequired).
	ContainerdTolerate string
	// CNIBinDir is containerd's CNI bin_dirs (default: none the scenario
	// fills; its pods are host-network).
	CNIBinDir string
	// NridTOML is appended to nrid's configuration.
	NridTOML string
	// NridStateDir gives nrid a server.state_dir in the scenario directory
	// (Env.NridStateDir) and server.restart_grace = "10s": the restart gate.
	NridStateDir bool
	// NoNrid leaves nrid out (classic plugins directly on containerd).
	NoNrid bool
	// NridLogLevel is nrid's log.level (default "debug"; the benchmark
	// uses nrid's own default, "info").
	NridLogLevel string
	// CtrdRequestTimeout is containerd's NRI plugin_request_timeout
	// (default "2s"): the bridge's budget follows it.
	CtrdRequestTimeout string
	// DropIn runs containerd built with nri-grpc's drop-in
	// (Suite.DropInContainerd) and no nrid: containerd itself serves
	// classic plugins on NRISock and gRPC plugins on NridSock, named by the
	// nri-grpc configuration (NridConfig, with NridTOML appended) that
	// containerd's environment variable NRI_GRPC_CONFIG points at. Admin and
	// Health are clients of that socket; ClassicSock is NRISock.
	DropIn bool
	// Prepare runs before containerd starts, the scenario directories made
	// (pre-launched plugins: Env.PrelaunchPlugin).
	Prepare func(e *Env)
}

// Runtime names a scenario's runtime setup: "nrid" (stock containerd, nrid
// attached through the bridge) or "dropin" (containerd with the drop-in).
func (o EnvOptions) Runtime() string {
	if o.DropIn {
		return "dropin"
	}
	return "nrid"
}

// eachRuntime runs f as one subtest per runtime setup, "nrid" and
// "dropin", with opts for NewEnv.
func eachRuntime(t *testing.T, opts EnvOptions, f func(t *testing.T, opts EnvOptions)) {
	t.Helper()
	for _, dropIn := range []bool{false, true} {
		o := opts
		o.DropIn = dropIn
		t.Run(o.Runtime(), func(t *testing.T) { f(t, o) })
	}
}

// Env is one scenario's containerd (with CRI and NRI on scratch sockets)
// and nrid (its runtime side attached to containerd's NRI socket, its plugin
// side on ClassicSock).
type Env struct {
	tb     testing.TB
	Name   string
	Dir    string
	Logs   string
	Cgroup string // cgroup parent of this scenario's pods

	CtrdConfig string
	CtrdSock   string
	NRISock    string
	Ctrd       *Proc
	CRI        runtimeapi.RuntimeServiceClient
	criConn    *grpc.ClientConn

	DropIn bool // containerd with nri-grpc's drop-in, no nrid (EnvOptions.DropIn)

	NridConfig   string // nrid's configuration, or the drop-in's (NRI_GRPC_CONFIG)
	NridSock     string // nrid's socket, or the drop-in's gRPC plugin socket
	NridStateDir string // server.state_dir, when EnvOptions.NridStateDir
	PluginDir    string
	ClassicSock  string
	Nrid         *Proc
	nridConn     *grpc.ClientConn
	Admin        nriv1beta1.AdminServiceClient
	Health       healthpb.HealthClient

	procs []*Proc
}

var envSeq atomic.Int32

// NewEnv starts containerd and (unless opts.NoNrid) nrid for a scenario,
// and cleans everything up when the test ends.
func NewEnv(tb testing.TB, opts EnvOptions) *Env {
	tb.Helper()
	if suite == nil {
		tb.Fatal("suite not set up")
	}
	n := envSeq.Add(1)
	name := fmt.Sprintf("s%02d", n)
	e := &Env{tb: tb, Name: name, Dir: filepath.Join(suite.RunDir, name)}
	e.Logs = filepath.Join(e.Dir, "logs")
	e.Cgroup = suite.CgroupRoot() + "/" + name
	for _, d := range []string{e.Logs, filepath.Join(e.Dir, "nri", "plugins"), filepath.Join(e.Dir, "nri", "conf.d"), filepath.Join(e.Dir, "plugins")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "test-name"), []byte(tb.Name()+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("scenario directory %s", e.Dir)
	tb.Cleanup(e.cleanup)

	e.CtrdSock = filepath.Join(e.Dir, "containerd.sock")
	e.NRISock = filepath.Join(e.Dir, "nri", "nri.sock")
	e.CtrdConfig = filepath.Join(e.Dir, "containerd.toml")
	if err := os.WriteFile(e.CtrdConfig, []byte(e.containerdConfig(opts)), 0o644); err != nil {
		tb.Fatal(err)
	}
	ctrdBin := filepath.Join(suite.CtrdBin, "containerd")
	ctrdEnv := []string{"PATH=" + suite.CtrdBin + ":" + os.Getenv("PATH")}
	if opts.DropIn {
		if opts.NridStateDir || opts.NoNrid {
			tb.Fatal("EnvOptions.DropIn goes with neither NridStateDir nor NoNrid")
		}
		ctrdBin = suite.DropInContainerd(tb)
		e.DropIn = true
		e.NridSock = filepath.Join(e.Dir, "nri-grpc.sock")
		e.PluginDir = filepath.Join(e.Dir, "plugins")
		e.ClassicSock = e.NRISock
		e.NridConfig = filepath.Join(e.Dir, "nri-grpc.toml")
		if err := os.WriteFile(e.NridConfig, []byte(e.dropInConfig(opts)), 0o644); err != nil {
			tb.Fatal(err)
		}
		ctrdEnv = append(ctrdEnv, "NRI_GRPC_CONFIG="+e.NridConfig)
	}
	if opts.Prepare != nil {
		opts.Prepare(e)
	}
	e.Ctrd = e.start("containerd", filepath.Join(e.Logs, "containerd.log"), ctrdBin, ctrdEnv, "--config", e.CtrdConfig)
	e.WaitContainerd()
	for _, img := range suite.Images {
		out, err := exec.Command(filepath.Join(suite.CtrdBin, "ctr"), "--address", e.CtrdSock, "-n", "k8s.io",
			"images", "import", img).CombinedOutput()
		if err != nil {
			tb.Fatalf("ctr images import %s: %v\n%s", img, err, out)
		}
	}

	if opts.NoNrid {
		return e
	}
	if opts.DropIn {
		e.connectNrid()
		return e
	}
	e.NridSock = filepath.Join(e.Dir, "nrid.sock")
	e.PluginDir = filepath.Join(e.Dir, "plugins")
	e.ClassicSock = filepath.Join(e.Dir, "nri-classic.sock")
	e.NridConfig = filepath.Join(e.Dir, "nrid.toml")
	if opts.NridStateDir {
		e.NridStateDir = filepath.Join(e.Dir, "nrid-state")
	}
	if err := os.WriteFile(e.NridConfig, []byte(e.nridConfig(opts)), 0o644); err != nil {
		tb.Fatal(err)
	}
	e.Nrid = e.start("nrid", filepath.Join(e.Logs, "nrid.log"), filepath.Join(suite.Bin, "nrid"), nil, "--config", e.NridConfig)
	e.connectNrid()
	e.WaitNridServing()
	return e
}

// connectNrid makes the clients of NridSock (nrid's, or the drop-in's).
func (e *Env) connectNrid() {
	e.tb.Helper()
	var err error
	if e.nridConn, err = grpc.NewClient("unix://"+e.NridSock, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		e.tb.Fatal(err)
	}
	e.Admin = nriv1beta1.NewAdminServiceClient(e.nridConn)
	e.Health = healthpb.NewHealthClient(e.nridConn)
}

// nridOnly adds a skipped "dropin" subtest naming why a scenario runs on
// stock containerd with nrid only.
func nridOnly(t *testing.T, reason string) {
	t.Helper()
	t.Run("dropin", func(t *testing.T) { t.Skip("nrid only: " + reason) })
}

// ServerLog is the log of the process serving the gRPC plugins: nrid's, or
// containerd's with the drop-in.
func (e *Env) ServerLog() string {
	if e.DropIn || e.Nrid == nil {
		return e.Ctrd.Log
	}
	return e.Nrid.Log
}

// dropInConfig is the drop-in's nri-grpc configuration (nrid.toml's schema
// without [bridge] and [runtime], which the drop-in refuses).
func (e *Env) dropInConfig(opts EnvOptions) string {
	return fmt.Sprintf(`# nri-grpc inside containerd (the drop-in) for the nri-grpc e2e suite.
[server]
socket = %q
plugin_socket_dir = %q
%s
`, e.NridSock, e.PluginDir, opts.NridTOML)
}

func (e *Env) containerdConfig(opts EnvOptions) string {
	d := e.Dir
	var validator string
	reqTimeout := opts.CtrdRequestTimeout
	if reqTimeout == "" {
		reqTimeout = "2s"
	}
	if len(opts.ContainerdRequired) > 0 {
		q := make([]string, len(opts.ContainerdRequired))
		for i, p := range opts.ContainerdRequired {
			q[i] = fmt.Sprintf("%q", p)
		}
		validator = fmt.Sprintf(`
    [plugins.'io.containerd.nri.v1.nri'.default_validator]
      enable = true
      required_plugins = [%s]`, strings.Join(q, ", "))
		if opts.ContainerdTolerate != "" {
			validator += fmt.Sprintf("\n      tolerate_missing_plugins_annotation = '%s'", opts.ContainerdTolerate)
		}
	}
	cniBin := opts.CNIBinDir
	if cniBin == "" {
		cniBin = d + "/cni/bin"
	}
	return fmt.Sprintf(`# containerd %[2]s for the nri-grpc e2e suite: every path under %[1]s.
version = 4
root = '%[1]s/root'
state = '%[1]s/state'
temp = '%[1]s/tmp'

[debug]
  level = 'info'

[plugins]
  [plugins.'io.containerd.server.v1.grpc']
    address = '%[1]s/containerd.sock'
  [plugins.'io.containerd.server.v1.ttrpc']
    address = '%[1]s/containerd.sock.ttrpc'

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '%[3]s'

  [plugins.'io.containerd.cri.v1.runtime']
    cdi_spec_dirs = ['%[1]s/cdi']
    netns_mounts_under_state_dir = true
    enable_criu = false
    # Root may lack CAP_SYS_RESOURCE (CI VMs do): runc could not write the
    # sandbox's oom_score_adj of -998.
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '%[4]s'
          Root = '%[1]s/runc'
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['%[7]s']
      conf_dir = '%[1]s/cni/net.d'

  [plugins.'io.containerd.internal.v1.opt']
    path = '%[1]s/opt'
  [plugins.'io.containerd.image-verifier.v1.bindir']
    bin_dir = '%[1]s/opt/image-verifier/bin'
  [plugins.'io.containerd.shim.v1.manager']
    socket_dir = '%[1]s/s'

  [plugins.'io.containerd.nri.v1.nri']
    disable = false
    disable_connections = false
    socket_path = '%[1]s/nri/nri.sock'
    plugin_path = '%[1]s/nri/plugins'
    plugin_config_path = '%[1]s/nri/conf.d'
    plugin_registration_timeout = '5s'
    plugin_request_timeout = '%[6]s'%[5]s
`, d, ContainerdVersion, PauseImage, suite.Runc, validator, reqTimeout, cniBin)
}

func (e *Env) nridConfig(opts EnvOptions) string {
	level := opts.NridLogLevel
	if level == "" {
		level = "debug"
	}
	var gate string
	if e.NridStateDir != "" {
		gate = fmt.Sprintf("# the restart gate (docs/containerd.md §3)\nstate_dir = %q\nrestart_grace = \"10s\"\n", e.NridStateDir)
	}
	return fmt.Sprintf(`# nrid for the nri-grpc e2e suite (see deploy/nrid.toml).
[server]
socket = %q
plugin_socket_dir = %q
%s
[runtime]
# health is SERVING only while the bridge is attached to containerd and synchronized
required = true

[log]
level = %q

[bridge]
runtime_socket = %q
plugin_socket = %q
%s
`, e.NridSock, e.PluginDir, gate, level, e.NRISock, e.ClassicSock, opts.NridTOML)
}

// WaitContainerd waits until containerd answers CRI and its NRI socket
// exists.
func (e *Env) WaitContainerd() {
	e.tb.Helper()
	if e.criConn == nil {
		var err error
		if e.criConn, err = grpc.NewClient("unix://"+e.CtrdSock, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			e.tb.Fatal(err)
		}
		e.CRI = runtimeapi.NewRuntimeServiceClient(e.criConn)
	}
	ok := waitFor(60*time.Second, func() bool {
		if e.Ctrd.Exited() {
			return true
		}
		ctx, cancel := ctxT(2 * time.Second)
		defer cancel()
		if _, err := e.CRI.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
			return false
		}
		_, err := os.Stat(e.NRISock)
		return err == nil
	})
	if e.Ctrd.Exited() {
		e.tb.Fatalf("containerd exited at startup:\n%s", e.Tail(e.Ctrd.Log, 30))
	}
	if !ok {
		e.tb.Fatalf("containerd did not serve CRI and NRI within 60s:\n%s", e.Tail(e.Ctrd.Log, 30))
	}
}

// NridServing reports whether nrid's health is SERVING: it serves and its
// bridge is attached to containerd and synchronized.
func (e *Env) NridServing() bool {
	ctx, cancel := ctxT(2 * time.Second)
	defer cancel()
	r, err := e.Health.Check(ctx, &healthpb.HealthCheckRequest{})
	return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING
}

// WaitNridServing waits for NridServing.
func (e *Env) WaitNridServing() {
	e.tb.Helper()
	if !waitFor(60*time.Second, func() bool { return e.Nrid.Exited() || e.NridServing() }) || e.Nrid.Exited() {
		e.tb.Fatalf("nrid did not become SERVING (attached to containerd) within 60s:\n%s", e.Tail(e.Nrid.Log, 30))
	}
}

// Plugins lists nrid's registered plugins ("NN-name" -> state).
func (e *Env) Plugins() map[string]*nriv1beta1.PluginInfo {
	ctx, cancel := ctxT(5 * time.Second)
	defer cancel()
	r, err := e.Admin.ListPlugins(ctx, &nriv1beta1.ListPluginsRequest{})
	if err != nil {
		return nil
	}
	out := map[string]*nriv1beta1.PluginInfo{}
	for _, p := range r.GetPlugins() {
		out[p.GetPlugin().GetIndex()+"-"+p.GetPlugin().GetName()] = p
	}
	return out
}

// WaitPluginReady waits until nrid lists plugin full ("NN-name") as ready.
func (e *Env) WaitPluginReady(full string, p *Proc) {
	e.tb.Helper()
	if e.DropIn && LogContains(e.Ctrd.Log, "grpc=none") {
		// No AdminService to ask, and no gRPC plugin can register.
		e.tb.Fatalf("plugin %s: the drop-in serves no gRPC socket (containerd's log: %s)", full,
			strings.TrimSpace(grepLines(e.Ctrd.Log, "grpc=none")))
	}
	ok := waitFor(60*time.Second, func() bool {
		if p != nil && p.Exited() {
			return true
		}
		info := e.Plugins()[full]
		return info != nil && info.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY
	})
	if p != nil && p.Exited() {
		e.tb.Fatalf("plugin %s exited:\n%s", full, e.Tail(p.Log, 30))
	}
	if !ok {
		e.tb.Fatalf("plugin %s not ready within 60s; %s:\n%s", full, e.ServerLog(), e.Tail(e.ServerLog(), 30))
	}
}

// GRPCPlugin is a running e2e-grpc-plugin.
type GRPCPlugin struct {
	*Proc
	Full   string
	Events string
}

// StartGRPCPlugin starts e2e-grpc-plugin as idx-name on nrid, with extra
// flags, and waits until nrid lists it ready.
func (e *Env) StartGRPCPlugin(idx, name string, flags ...string) *GRPCPlugin {
	e.tb.Helper()
	full := idx + "-" + name
	ev := filepath.Join(e.Logs, full+".events")
	args := append([]string{"-name", name, "-idx", idx, "-server", "unix://" + e.NridSock,
		"-endpoint", filepath.Join(e.PluginDir, full+".sock"), "-events", ev}, flags...)
	p := e.start(full, filepath.Join(e.Logs, full+".log"), filepath.Join(suite.Bin, "e2e-grpc-plugin"), nil, args...)
	e.WaitPluginReady(full, p)
	return &GRPCPlugin{Proc: p, Full: full, Events: ev}
}

// ClassicPlugin is a running e2e-classic-plugin.
type ClassicPlugin struct {
	*Proc
	Full   string
	Events string
}

// StartClassicPlugin starts e2e-classic-plugin on a classic NRI socket
// (containerd's NRISock or nrid's ClassicSock) and waits until it was
// synchronized.
func (e *Env) StartClassicPlugin(socket, idx, name string, flags ...string) *ClassicPlugin {
	e.tb.Helper()
	full := idx + "-" + name
	ev := filepath.Join(e.Logs, full+".events")
	args := append([]string{"-socket-path", socket, "-name", name, "-idx", idx, "-events", ev}, flags...)
	p := e.start(full, filepath.Join(e.Logs, full+".log"), filepath.Join(suite.Bin, "e2e-classic-plugin"), nil, args...)
	WaitEvents(e.tb, ev, func(evs []Event) bool { return p.Exited() || CountEvents(evs, "Synchronize") > 0 }, full+" synchronized")
	if p.Exited() {
		e.tb.Fatalf("plugin %s exited:\n%s", full, e.Tail(p.Log, 30))
	}
	return &ClassicPlugin{Proc: p, Full: full, Events: ev}
}

// Tail returns the last n lines of a log file.
func (e *Env) Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogContains reports whether a log file contains s.
func LogContains(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), s)
}

// cleanup removes the scenario's pods through CRI, stops every process it
// started (plugins, nrid, containerd, in this order), kills what containerd
// left (shims, containers) by PID, unmounts and removes the cgroups.
func (e *Env) cleanup() {
	if e.tb.Failed() {
		for _, p := range e.procs {
			e.tb.Logf("---- last lines of %s:\n%s", p.Log, e.Tail(p.Log, 15))
		}
	}
	if e.Ctrd != nil && !e.Ctrd.Exited() && e.CRI != nil {
		ctx, cancel := ctxT(30 * time.Second)
		if r, err := e.CRI.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err == nil {
			for _, p := range r.GetItems() {
				if _, err := e.CRI.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
					e.tb.Logf("cleanup: StopPodSandbox %s: %v", p.Id, err)
				}
				if _, err := e.CRI.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
					e.tb.Logf("cleanup: RemovePodSandbox %s: %v", p.Id, err)
				}
			}
		}
		cancel()
	}
	if e.criConn != nil {
		_ = e.criConn.Close()
	}
	if e.nridConn != nil {
		_ = e.nridConn.Close()
	}
	// Plugins first, then nrid, then containerd: reverse start order.
	for _, p := range slices.Backward(e.procs) {
		p.Stop(e.tb)
	}
	killContainerProcesses(filepath.Join(e.Dir, "state"))
	removeCgroups(e.Cgroup)
	unmountUnder(e.Dir)
}

// ---- plugin event logs ----

// Event is one line of a test plugin's event log.
type Event struct {
	Time       string `json:"time"`
	Event      string `json:"event"`
	Pod        string `json:"pod"`
	Container  string `json:"container"`
	Pods       int    `json:"pods"`
	Containers int    `json:"containers"`
	Epoch      uint64 `json:"epoch"`
	Detail     string `json:"detail"`
}

// ReadEvents reads an event log.
func ReadEvents(path string) []Event {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			out = append(out, ev)
		}
	}
	return out
}

// WaitEvents waits until cond holds for the event log at path.
func WaitEvents(tb testing.TB, path string, cond func([]Event) bool, what string) []Event {
	tb.Helper()
	var evs []Event
	if !waitFor(60*time.Second, func() bool { evs = ReadEvents(path); return cond(evs) }) {
		tb.Fatalf("waiting for %s in %s: not within 60s; events: %v", what, filepath.Base(path), EventNames(evs))
	}
	return evs
}

// CountEvents counts the events named name.
func CountEvents(evs []Event, name string) int {
	n := 0
	for _, e := range evs {
		if e.Event == name {
			n++
		}
	}
	return n
}

// EventNames lists event names, "Event(pod/container)" style.
func EventNames(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Event)
	}
	return out
}

// PodEvents returns the names of the events about pod, in order.
func PodEvents(evs []Event, pod string) []string {
	var out []string
	for _, e := range evs {
		if e.Pod == pod {
			out = append(out, e.Event)
		}
	}
	return out
}
