//go:build e2e

// Package e2e runs nri-grpc against a real containerd: containerd v2.4.2
// with CRI and NRI, runc from the distribution, nrid attached to
// containerd's NRI socket through the bridge, and test plugins, all driven
// through CRI with the k8s.io/cri-api client. See README.md.
//
// Layout of the scratch directory (NRI_E2E_DIR, default /tmp/nri-e2e):
//
//	cache/containerd-v2.4.2-goX.Y.Z/bin   containerd, ctr, containerd-shim-runc-v2 (built once, reused)
//	cache/containerd-v2.4.2-nri-grpc-goX.Y.Z/src
//	                                      containerd's source patched for nri-grpc's drop-in
//	                                      (containerd-nri-grpc.sh, once); its containerd is
//	                                      rebuilt from it for every run that needs it
//	run-<id>/                             one run: owner, pids, bin/, images/, one directory per scenario
//
// Every process the suite starts is recorded by PID in run-<id>/pids, and
// the containers it creates live in cgroups under /nri-e2e/<id>; cleanup
// (and the next run, for a run that was killed) kills those PIDs, unmounts
// what is left under the run directory and removes the cgroup directories.
package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ContainerdVersion is the containerd release the suite runs against. It is
// pinned: a later release may drop cgroup v1 support that CI machines rely on.
const ContainerdVersion = "v2.4.2"

// Image references of the two hand-made images.
const (
	PauseImage   = "local.test/e2e-pause:1"
	SleeperImage = "local.test/e2e-sleeper:1"
)

var keep = flag.Bool("e2e.keep", false, "keep the run directory (logs, configs) even when every test passed")

// Suite is what TestMain built: shared by every test of the run.
type Suite struct {
	Base    string // NRI_E2E_DIR
	RunID   string
	RunDir  string
	Bin     string // nrid, test plugins, sleeper (built from this repository for this run)
	CtrdBin string // containerd, ctr, containerd-shim-runc-v2 (cached across runs)
	Runc    string
	Images  []string // OCI layout tarballs
	Repo    string   // module root

	mu   sync.Mutex
	pids *os.File

	dropInOnce sync.Once
	dropInBin  string // containerd built with nri-grpc's drop-in, for this run
	dropInErr  error
}

var suite *Suite

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(mainE(m))
}

func mainE(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e: must run as root (containerd, runc, cgroups, mounts)")
		return 1
	}
	if runtime.GOOS != "linux" {
		fmt.Fprintln(os.Stderr, "e2e: linux only")
		return 1
	}
	s, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: setup:", err)
		if s != nil {
			s.teardown(false)
		}
		return 1
	}
	suite = s
	code := m.Run()
	s.teardown(code == 0 && !*keep)
	return code
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
}

// setup builds or reuses everything and creates the run directory.
func setup() (*Suite, error) {
	start := time.Now()
	base := os.Getenv("NRI_E2E_DIR")
	if base == "" {
		base = "/tmp/nri-e2e"
	}
	if err := os.MkdirAll(filepath.Join(base, "cache"), 0o755); err != nil {
		return nil, err
	}
	sweepStale(base)

	id := strconv.FormatInt(time.Now().Unix()%1e6, 36) + strconv.Itoa(os.Getpid())
	s := &Suite{Base: base, RunID: id, RunDir: filepath.Join(base, "run-"+id)}
	s.Bin = filepath.Join(s.RunDir, "bin")
	if err := os.MkdirAll(s.Bin, 0o755); err != nil {
		return nil, err
	}
	st, err := procStart(os.Getpid())
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.RunDir, "owner"), fmt.Appendf(nil, "%d %d %s\n", os.Getpid(), st, s.CgroupRoot()), 0o644); err != nil {
		return nil, err
	}
	if s.pids, err = os.OpenFile(filepath.Join(s.RunDir, "pids"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	logf("run directory %s", s.RunDir)

	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return s, fmt.Errorf("go env GOMOD: %w", err)
	}
	s.Repo = filepath.Dir(strings.TrimSpace(string(out)))

	if s.Runc, err = ensureRunc(); err != nil {
		return s, err
	}
	if s.CtrdBin, err = buildContainerd(base); err != nil {
		return s, err
	}
	if err := s.buildRepoBinaries(); err != nil {
		return s, err
	}
	if err := s.buildImages(); err != nil {
		return s, err
	}
	logf("setup done in %.1fs", time.Since(start).Seconds())
	return s, nil
}

// CgroupRoot is the cgroup parent of every pod of this run.
func (s *Suite) CgroupRoot() string { return "/nri-e2e/" + s.RunID }

// ensureRunc finds runc, installing Debian's with apt-get when it is missing.
func ensureRunc() (string, error) {
	find := func() string {
		if p, err := exec.LookPath("runc"); err == nil {
			return p
		}
		for _, p := range []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc"} {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
		return ""
	}
	if p := find(); p != "" {
		return p, nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", errors.New("runc is not installed and there is no apt-get to install it: install runc")
	}
	logf("runc missing: apt-get install runc")
	start := time.Now()
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", "--no-install-recommends", "runc"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	logf("runc installed in %.1fs", time.Since(start).Seconds())
	if p := find(); p != "" {
		return p, nil
	}
	return "", errors.New("apt-get installed runc but it is not on PATH")
}

// buildContainerd returns the bin directory of containerd, ctr and the runc
// shim at ContainerdVersion, built with `go install` from the Go module
// proxy the first time and reused afterwards (keyed by version and Go
// version). A lock makes concurrent runs build it once.
func buildContainerd(base string) (string, error) {
	gover := strings.TrimPrefix(runtime.Version(), "go")
	dir := filepath.Join(base, "cache", "containerd-"+ContainerdVersion+"-go"+gover)
	bin := filepath.Join(dir, "bin")
	stamp := filepath.Join(dir, "complete")
	if _, err := os.Stat(stamp); err == nil {
		return bin, nil
	}
	lock, err := os.OpenFile(filepath.Join(base, "cache", ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(stamp); err == nil {
		return bin, nil
	}
	_ = os.RemoveAll(dir)
	tmp, err := os.MkdirTemp(filepath.Join(base, "cache"), "containerd-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	logf("building containerd %s (ctr, containerd-shim-runc-v2) into %s: a few minutes on a cold cache", ContainerdVersion, dir)
	start := time.Now()
	args := []string{"install"}
	for _, c := range []string{"containerd", "ctr", "containerd-shim-runc-v2"} {
		args = append(args, "github.com/containerd/containerd/v2/cmd/"+c+"@"+ContainerdVersion)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = tmp // outside any module: go install pkg@version needs none
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Join(tmp, "bin"), "GOWORK=off", "GOFLAGS=-buildvcs=false", "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, "complete"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	logf("containerd built in %.1fs", time.Since(start).Seconds())
	return bin, nil
}

// DropInDirName is the cache directory of containerd's source patched for
// nri-grpc's drop-in (below $NRI_E2E_DIR/cache).
func DropInDirName() string {
	return "containerd-" + ContainerdVersion + "-nri-grpc-go" + strings.TrimPrefix(runtime.Version(), "go")
}

// DropInContainerd returns containerd built with nri-grpc's drop-in
// (adaptation/ of this checkout instead of containerd/nri's pkg/adaptation),
// building it the first time a scenario asks for it in this run: the patched
// source tree once per containerd and Go version (containerd-nri-grpc.sh,
// into the cache), the binary from it for every run with `go build` (Go's
// build cache makes it an incremental build). It fails the test when the
// drop-in does not build.
func (s *Suite) DropInContainerd(tb testing.TB) string {
	tb.Helper()
	s.dropInOnce.Do(func() { s.dropInBin, s.dropInErr = s.buildDropIn() })
	if s.dropInErr != nil {
		tb.Fatalf("containerd with nri-grpc's drop-in: %v", s.dropInErr)
	}
	return s.dropInBin
}

func (s *Suite) buildDropIn() (string, error) {
	if _, err := os.Stat(filepath.Join(s.Repo, "adaptation")); err != nil {
		return "", fmt.Errorf("this checkout has no drop-in package adaptation/: %w", err)
	}
	src, err := prepareDropInSource(s.Base, s.Repo)
	if err != nil {
		return "", err
	}
	// This run's go.mod, in the run directory: containerd's resolved one
	// with the replace naming this checkout (the cached tree may have been
	// prepared from another one). -mod=mod lets go add what this
	// checkout's module needs beyond it.
	modDir := filepath.Join(s.RunDir, "containerd-nri-grpc-mod")
	if err := os.MkdirAll(modDir, 0o755); err != nil {
		return "", err
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(modDir, f), b, 0o644); err != nil {
			return "", err
		}
	}
	modfile := filepath.Join(modDir, "go.mod")
	env := []string{"GOWORK=off", "GOFLAGS=-buildvcs=false", "CGO_ENABLED=1"}
	if err := goIn(src, env, "mod", "edit", "-replace=github.com/nri-grpc/nri-grpc="+s.Repo, modfile); err != nil {
		return "", err
	}
	start := time.Now()
	bin := filepath.Join(s.Bin, "containerd-nri-grpc")
	if err := goIn(src, env, "build", "-modfile="+modfile, "-mod=mod", "-trimpath", "-o", bin, "./cmd/containerd"); err != nil {
		return "", err
	}
	logf("containerd with nri-grpc's drop-in built in %.1fs (incremental, from %s)", time.Since(start).Seconds(), src)
	return bin, nil
}

// prepareDropInSource returns the patched containerd source tree in the
// cache, running containerd-nri-grpc.sh the first time (under the cache
// lock; a stamp marks a complete tree, with the hash of the script that
// made it: a changed script makes it again).
func prepareDropInSource(base, repo string) (string, error) {
	dir := filepath.Join(base, "cache", DropInDirName())
	script := filepath.Join(repo, "test", "e2e", "containerd-nri-grpc.sh")
	b, err := os.ReadFile(script)
	if err != nil {
		return "", err
	}
	sum := fmt.Sprintf("%x\n", sha256.Sum256(b))
	stamp := filepath.Join(dir, "script.sha256")
	fresh := func() bool {
		got, err := os.ReadFile(stamp)
		_, cerr := os.Stat(filepath.Join(dir, "complete"))
		return err == nil && cerr == nil && string(got) == sum
	}
	if fresh() {
		return filepath.Join(dir, "src"), nil
	}
	lock, err := os.OpenFile(filepath.Join(base, "cache", ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", err
	}
	if fresh() {
		return filepath.Join(dir, "src"), nil
	}
	_ = os.RemoveAll(dir)
	logf("patching containerd %s for nri-grpc's drop-in into %s (containerd-nri-grpc.sh): minutes on a cold build cache", ContainerdVersion, dir)
	start := time.Now()
	cmd := exec.Command("bash", script, repo, dir)
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v\n%s", script, err, out)
	}
	if err := os.WriteFile(stamp, []byte(sum), 0o644); err != nil {
		return "", err
	}
	logf("patched containerd source prepared and built in %.1fs", time.Since(start).Seconds())
	return filepath.Join(dir, "src"), nil
}

// goIn runs the go command in dir.
func goIn(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

// buildRepoBinaries builds nrid and the test programs of this checkout.
func (s *Suite) buildRepoBinaries() error {
	start := time.Now()
	run := func(env []string, args ...string) error {
		cmd := exec.Command("go", args...)
		cmd.Dir = s.Repo
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run(nil, "build", "-tags", "e2e", "-o", s.Bin+"/",
		"./cmd/nrid", "./cmd/nrictl", "./cmd/nritest", "./examples/ulimit-adjuster", "./test/e2e/cmd/e2e-grpc-plugin", "./test/e2e/cmd/e2e-classic-plugin"); err != nil {
		return err
	}
	if err := run([]string{"CGO_ENABLED=0"}, "build", "-tags", "e2e", "-trimpath", "-ldflags=-s -w",
		"-o", filepath.Join(s.Bin, "sleeper"), "./test/e2e/cmd/sleeper"); err != nil {
		return err
	}
	logf("nrid and test programs built in %.1fs", time.Since(start).Seconds())
	return nil
}

// recordPID notes a started process, for cleanup after a killed run.
func (s *Suite) recordPID(pid int, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.pids, "%d %s\n", pid, path); err != nil {
		logf("recording pid %d: %v (a killed run cannot clean it up)", pid, err)
	}
}

// teardown removes the run directory (or everything but the logs).
func (s *Suite) teardown(removeAll bool) {
	if s.pids != nil {
		killRecorded(filepath.Join(s.RunDir, "pids"))
	}
	cleanRunDir(s.RunDir, s.CgroupRoot(), removeAll)
	_ = os.Remove(filepath.Join(s.RunDir, "pids")) // cleaned: the next run's sweep skips it
	if removeAll {
		logf("run directory removed")
	} else {
		logf("logs kept under %s", s.RunDir)
	}
}

// ---- cleanup primitives, shared by scenario cleanup and the stale sweep ----

// procStart returns the start time of pid (field 22 of /proc/pid/stat), to
// tell a live process from a reused PID.
func procStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, errors.New("malformed stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// killPID sends SIGKILL to pid if it still runs the binary path (or any
// binary when path is empty), and waits a little for it to go.
func killPID(pid int, path string) {
	if pid <= 1 {
		return
	}
	if path != "" {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || strings.TrimSuffix(exe, " (deleted)") != path {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killRecorded kills the processes listed in a pids file that still run
// their recorded binary.
func killRecorded(pidsFile string) {
	b, err := os.ReadFile(pidsFile)
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		pidStr, path, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if pid, err := strconv.Atoi(pidStr); err == nil {
			killPID(pid, path)
		}
	}
}

// killContainerProcesses kills what containerd started under a state
// directory: container processes (init.pid) and shims (shim.pid), by PID.
func killContainerProcesses(stateDir string) {
	root := filepath.Join(stateDir, "io.containerd.runtime.v2.task")
	var inits, shims []int
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		switch d.Name() {
		case "init.pid", "shim.pid":
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return nil
			}
			if d.Name() == "init.pid" {
				inits = append(inits, pid)
			} else {
				shims = append(shims, pid)
			}
		}
		return nil
	})
	for _, pid := range inits {
		// A container's PID: only if it is still in this run's cgroups
		// (checked by the caller's cgroup sweep too).
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil && strings.Contains(string(b), "/nri-e2e/") {
			killPID(pid, "")
		}
	}
	for _, pid := range shims {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && filepath.Base(exe) == "containerd-shim-runc-v2" {
			killPID(pid, "")
		}
	}
}

// mountInfo is one line of /proc/self/mountinfo.
type mountInfo struct {
	point  string
	fstype string
	super  string // super options: the controllers of a cgroup v1 hierarchy
}

// mounts returns the mount points of this mount namespace.
func mounts() []mountInfo {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mountInfo
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+3 >= len(fields) {
			continue
		}
		out = append(out, mountInfo{point: unescapeMount(fields[4]), fstype: fields[sep+1], super: fields[sep+3]})
	}
	return out
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder lazily unmounts every mount point below dir, deepest first.
func unmountUnder(dir string) {
	dir = filepath.Clean(dir) + "/"
	var pts []string
	for _, m := range mounts() {
		if strings.HasPrefix(m.point+"/", dir) {
			pts = append(pts, m.point)
		}
	}
	sort.Slice(pts, func(i, j int) bool { return len(pts[i]) > len(pts[j]) })
	for _, p := range pts {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			logf("unmount %s: %v", p, err)
		}
	}
}

// cgroupMounts returns the mount points of the cgroup (v1 and v2) hierarchies.
func cgroupMounts() []string {
	var out []string
	for _, m := range mounts() {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			out = append(out, m.point)
		}
	}
	return out
}

// removeCgroups kills any process left in the cgroup subtree rel (a path
// below the hierarchies' roots) and removes its directories, deepest first,
// in every hierarchy; then the empty parents up to and including /nri-e2e.
func removeCgroups(rel string) {
	for _, mp := range cgroupMounts() {
		root := filepath.Join(mp, rel)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for _, d := range dirs {
			if b, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil {
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						killPID(pid, "")
					}
				}
			}
		}
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			rmdirRetry(d)
		}
		for p := filepath.Dir(root); strings.HasPrefix(p, filepath.Join(mp, "nri-e2e")); p = filepath.Dir(p) {
			_ = unix.Rmdir(p) // only when empty: another run may be using it
		}
	}
}

// rmdirRetry removes a cgroup directory; the kernel refuses (EBUSY) for a
// moment after its last process exited.
func rmdirRetry(d string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := unix.Rmdir(d)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return
		}
		if time.Now().After(deadline) {
			logf("rmdir %s: %v", d, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cleanRunDir kills what is left of a run, unmounts, removes its cgroups and
// its directory (all of it, or all but the logs).
func cleanRunDir(runDir, cgroupRoot string, removeAll bool) {
	entries, _ := os.ReadDir(runDir)
	for _, e := range entries {
		if e.IsDir() {
			killContainerProcesses(filepath.Join(runDir, e.Name(), "state"))
		}
	}
	if cgroupRoot != "" {
		removeCgroups(cgroupRoot)
	}
	unmountUnder(runDir)
	if removeAll {
		if err := os.RemoveAll(runDir); err != nil {
			logf("remove %s: %v", runDir, err)
		}
		return
	}
	// Keep logs/ and the configs; drop the bulky root and state trees.
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if e.Name() == "bin" || e.Name() == "images" {
			_ = os.RemoveAll(filepath.Join(runDir, e.Name()))
			continue
		}
		for _, sub := range []string{"root", "state", "runc", "tmp", "s"} {
			_ = os.RemoveAll(filepath.Join(runDir, e.Name(), sub))
		}
	}
}

// sweepStale cleans up runs whose test process is gone (a run that was
// killed before its cleanup ran), so that the next run starts clean.
func sweepStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "run-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue
		}
		var pid int
		var start uint64
		var cg string
		if n, _ := fmt.Sscanf(string(b), "%d %d %s", &pid, &start, &cg); n < 3 {
			continue
		}
		if st, err := procStart(pid); err == nil && st == start {
			continue // a concurrent run is alive
		}
		if _, err := os.Stat(filepath.Join(dir, "pids")); err != nil {
			// A finished run whose logs were kept: dropped after a week.
			if fi, err := os.Stat(dir); err == nil && time.Since(fi.ModTime()) > 7*24*time.Hour {
				_ = os.RemoveAll(dir)
			}
			continue
		}
		logf("cleaning up stale run %s", dir)
		killRecorded(filepath.Join(dir, "pids"))
		cleanRunDir(dir, cg, false)
		_ = os.Remove(filepath.Join(dir, "pids"))
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// ctxT is a context bounded by d for one call.
func ctxT(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
