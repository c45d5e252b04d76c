package faults_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

// config is what a test sets in nrid's configuration; the rest is written
// by nrid.config.
type config struct {
	// requestTimeout is nrid's default call timeout: short, so that a
	// misbehaving plugin that keeps the default times out quickly. Healthy
	// plugins ask for a long one of their own, so a loaded machine never
	// times them out.
	requestTimeout string
	// registrationTimeout bounds Configure; long, so that a plugin hanging
	// there hangs until the test releases it.
	registrationTimeout string
	// maxTimeout is the longest timeout a plugin may ask for.
	maxTimeout string
	// registerRate and registerBurst limit RegisterPlugin calls per identity.
	registerRate  float64
	registerBurst int
	// logLevel is nrid's log level: "debug" logs every call.
	logLevel string
}

// defaultConfig is the configuration of the fault tests.
func defaultConfig() config {
	return config{
		requestTimeout:      "300ms",
		registrationTimeout: "1m",
		maxTimeout:          "1h",
		registerRate:        5,
		registerBurst:       10,
		logLevel:            "debug",
	}
}

// nrid is one nrid process, with its configuration, sockets and log in one
// short temporary directory. It can be stopped and started again on the same
// sockets (the soak's restarts).
type nrid struct {
	t       testing.TB
	dir     string
	sock    string
	plugins string
	cfgPath string
	logPath string
	logFile *os.File

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	metrics string // host:port serving /metrics
}

// startNrid writes the configuration and starts nrid. The process is
// stopped gracefully when the test ends; on failure the tail of its log is
// printed and the directory kept.
func startNrid(t testing.TB, c config) *nrid {
	t.Helper()
	dir, err := os.MkdirTemp("", "nf-")
	if err != nil {
		t.Fatal(err)
	}
	n := &nrid{t: t, dir: dir, sock: filepath.Join(dir, "nrid.sock"), plugins: filepath.Join(dir, "p"),
		cfgPath: filepath.Join(dir, "nrid.toml"), logPath: filepath.Join(dir, "nrid.log")}
	if n.logFile, err = os.Create(n.logPath); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.cfgPath, []byte(n.config(c)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.stop()
		_ = n.logFile.Close()
		if t.Failed() {
			t.Logf("nrid log (kept in %s), last lines:\n%s", n.logPath, tail(n.logPath, 300))
			return
		}
		_ = os.RemoveAll(dir)
	})
	n.start()
	return n
}

// config renders nrid's configuration file.
func (n *nrid) config(c config) string {
	return fmt.Sprintf(`[server]
socket = %q
plugin_socket_dir = %q
registration_timeout = %q
request_timeout = %q
max_timeout = %q
shutdown_grace = "1s"
stop_timeout = "5s"
register_rate = %v
register_burst = %d

[log]
level = %q

[observability]
metrics_address = "127.0.0.1:0"
`, n.sock, n.plugins, c.registrationTimeout, c.requestTimeout, c.maxTimeout, c.registerRate, c.registerBurst, c.logLevel)
}

// start starts the process and returns once it serves.
func (n *nrid) start() {
	t := n.t
	t.Helper()
	serving := make(chan string, 1)
	lw := &lineWriter{w: n.logFile, line: func(line string) {
		if strings.Contains(line, "msg=serving") {
			m := regexp.MustCompile(`metrics=(\S+)`).FindStringSubmatch(line)
			if m != nil {
				select {
				case serving <- m[1]:
				default:
				}
			}
		}
	}}
	cmd := exec.Command(nridBin, "--config", n.cfgPath)
	cmd.Stdout, cmd.Stderr = lw, lw
	// nrid does not outlive a test binary that dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting nrid: %v", err)
	}
	exited := make(chan struct{})
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	go func() {
		err := cmd.Wait()
		lw.flush()
		n.mu.Lock()
		n.waitErr = err
		n.mu.Unlock()
		close(exited)
	}()
	select {
	case addr := <-serving:
		n.mu.Lock()
		n.metrics = addr
		n.mu.Unlock()
	case <-exited:
		t.Fatalf("nrid exited before serving: %v\n%s", n.exitErr(), tail(n.logPath, 50))
	case <-time.After(testwait.Bound()):
		t.Fatalf("nrid did not serve; log:\n%s", tail(n.logPath, 50))
	}
}

// stop stops nrid gracefully (SIGTERM) and reports a failure when it does
// not exit cleanly. It does nothing when nrid is not running.
func (n *nrid) stop() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
	default:
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(testwait.Bound()):
			_ = cmd.Process.Kill()
			<-exited
			n.t.Errorf("nrid did not stop on SIGTERM")
		}
	}
	if err := n.exitErr(); err != nil {
		n.t.Errorf("nrid exited with %v", err)
	}
	n.mu.Lock()
	n.cmd = nil
	n.mu.Unlock()
}

func (n *nrid) exitErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.waitErr
}

func (n *nrid) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd.Process.Pid
}

// usage is what the fault tests compare with a baseline.
type usage struct {
	goroutines int
	fds        int
}

// String renders the usage for a test message.
func (u usage) String() string { return fmt.Sprintf("%d goroutines, %d fds", u.goroutines, u.fds) }

// procMem returns nrid's resident set size and its peak (VmRSS, VmHWM) in
// bytes.
func (n *nrid) procMem() (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.pid()))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, errors.New("no VmRSS or VmHWM in /proc/PID/status")
	}
	return rss, hwm, nil
}

// peak returns nrid's peak resident set size (VmHWM), in bytes.
func (n *nrid) peak(t testing.TB) int64 {
	t.Helper()
	_, hwm, err := n.procMem()
	if err != nil {
		t.Fatal(err)
	}
	return hwm
}

// fds counts nrid's open file descriptors.
func (n *nrid) fds() (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", n.pid()))
	return len(ents), err
}

// goroutines scrapes go_goroutines from nrid's /metrics, on a connection
// that is closed after the answer (a kept-alive one would count).
func (n *nrid) goroutines() (int, error) {
	n.mu.Lock()
	addr := n.metrics
	n.mu.Unlock()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: testwait.Bound()}
	rsp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("scraping metrics: %w", err)
	}
	defer rsp.Body.Close()
	sc := bufio.NewScanner(rsp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("go_goroutines %q: %w", v, err)
			}
			return int(f), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading metrics: %w", err)
	}
	return 0, errors.New("no go_goroutines in /metrics")
}

// usage measures goroutines and open files once. The files are counted
// first: the scrape's own connection would count until nrid closes it.
func (n *nrid) usage() (usage, error) {
	f, err := n.fds()
	if err != nil {
		return usage{}, err
	}
	g, err := n.goroutines()
	if err != nil {
		return usage{}, err
	}
	return usage{goroutines: g, fds: f}, nil
}

// settled measures usage once it is steady: two readings in a row equal
// (connections close asynchronously).
func (n *nrid) settled(t testing.TB) usage {
	t.Helper()
	deadline := time.Now().Add(testwait.Bound())
	var last usage
	for i := 0; ; i++ {
		u, err := n.usage()
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && u == last {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("nrid's usage never settled (last %v, then %v)", last, u)
		}
		last = u
		time.Sleep(100 * time.Millisecond) // poll interval, not a bound
	}
}

// Tolerances of the comparison with a baseline.
const (
	goroutineSlack = 5
	fdSlack        = 3
)

// backToBaseline waits until nrid's goroutines and open files are within
// the tolerances of base, and fails the test if they never get there.
func (n *nrid) backToBaseline(t testing.TB, base usage) {
	t.Helper()
	deadline := time.Now().Add(testwait.Bound())
	for {
		u, err := n.usage()
		if err != nil {
			t.Fatal(err)
		}
		if u.goroutines <= base.goroutines+goroutineSlack && u.fds <= base.fds+fdSlack {
			t.Logf("usage back to baseline: %v (baseline %v)", u, base)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nrid's usage did not come back to its baseline: %v, baseline %v (tolerance +%d goroutines, +%d fds)",
				u, base, goroutineSlack, fdSlack)
		}
		time.Sleep(100 * time.Millisecond) // poll interval, not a bound
	}
}

// client is a connection to nrid's socket: AdaptationService as the
// runtime, AdminService as an operator (the test runs as nrid's user, which
// may do both).
type client struct {
	cc    *grpc.ClientConn
	adapt nriv1beta1.AdaptationServiceClient
	admin nriv1beta1.AdminServiceClient
	rt    nriv1beta1.RuntimeServiceClient
}

// dial connects to nrid's socket; the connection is closed when the test
// ends.
func (n *nrid) dial(t testing.TB) *client {
	t.Helper()
	c, err := dialSocket(n.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cc.Close() })
	return c
}

func dialSocket(sock string) (*client, error) {
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
	if err != nil {
		return nil, fmt.Errorf("dialing nrid: %w", err)
	}
	return &client{cc: cc, adapt: nriv1beta1.NewAdaptationServiceClient(cc), admin: nriv1beta1.NewAdminServiceClient(cc),
		rt: nriv1beta1.NewRuntimeServiceClient(cc)}, nil
}

// plugins lists the registered plugins by full name.
func (c *client) plugins(ctx context.Context) (map[string]*nriv1beta1.PluginInfo, error) {
	rsp, err := c.admin.ListPlugins(ctx, &nriv1beta1.ListPluginsRequest{})
	if err != nil {
		return nil, fmt.Errorf("ListPlugins: %w", err)
	}
	out := map[string]*nriv1beta1.PluginInfo{}
	for _, p := range rsp.GetPlugins() {
		full := p.GetPlugin().GetIndex() + "-" + p.GetPlugin().GetName()
		// A slot may list a current and a pending instance: keep the
		// ready one.
		if old, ok := out[full]; ok && old.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
			continue
		}
		out[full] = p
	}
	return out, nil
}

// lineWriter hands every complete line written to it to line, and writes
// everything to w.
type lineWriter struct {
	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	line func(string)
}

// Write writes p through and hands on the lines it completes.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 1<<20 { // no line is that long; do not grow
		l.buf = l.buf[:0]
	}
	return l.w.Write(p)
}

func (l *lineWriter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.line(string(l.buf))
		l.buf = nil
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines before]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
