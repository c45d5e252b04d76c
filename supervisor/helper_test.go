package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

// The test binary doubles as the supervised plugin: run with helperArg as
// its first argument, it acts out the mode given as the second one instead
// of running the tests. The mode travels in argv so that the environment
// stays exactly what the test gave.
const helperArg = "supervisor-test-helper"

// waitLong bounds every wait for an event: the time left before the test
// binary's deadline (internal/testwait); it only matters when something is
// broken.
func waitLong() time.Duration { return testwait.Bound() }

func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == helperArg {
		// syscall.Exit skips the race detector's exit delay (atexit_sleep_ms).
		syscall.Exit(helperMain(os.Args[2], os.Args[3:]))
	}
	if path := os.Getenv(launchedEnv); path != "" {
		// Launched by LaunchDir (no arguments): the first process reports
		// the environment; every process crashes.
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			_, _ = f.WriteString(strings.Join(os.Environ(), "\n"))
			_ = f.Close()
		}
		syscall.Exit(3)
	}
	os.Exit(m.Run())
}

// report is what the "report" helper writes into fd 3.
type report struct {
	Env       []string
	Args      []string
	PID       int
	PGID      int
	Pdeathsig int
}

func helperMain(mode string, args []string) int {
	fd3 := os.NewFile(3, "fd3") // nil when not inherited
	ready := func() {
		if _, err := fd3.Write([]byte("ready\n")); err != nil {
			fmt.Fprintln(os.Stderr, "write fd 3:", err)
			os.Exit(10)
		}
	}
	switch mode {
	case "report":
		var sig int
		_, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0)
		if errno != 0 {
			sig = -1
		}
		r := report{Env: os.Environ(), Args: os.Args, PID: os.Getpid(), PGID: syscall.Getpgrp(), Pdeathsig: sig}
		fmt.Println("hello on stdout")
		fmt.Fprintln(os.Stderr, "hello on stderr")
		if err := json.NewEncoder(fd3).Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "write fd 3:", err)
			return 10
		}
		// Run until the peer closes its end or SIGTERM's default action.
		_, _ = io.Copy(io.Discard, fd3)
		return 0
	case "crash":
		fmt.Fprintln(os.Stderr, "crashing on purpose")
		return 3
	case "term":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		ready()
		<-c
		fmt.Println("got SIGTERM, exiting")
		return 0
	case "ignore":
		signal.Ignore(syscall.SIGTERM)
		ready()
		time.Sleep(time.Hour)
		return 0
	case "spawn":
		// Start a grandchild that ignores SIGTERM, in the same process
		// group, and report its PID.
		self, err := os.Executable()
		if err != nil {
			return 11
		}
		cmd := exec.Command(self, helperArg, "ignore")
		cmd.Env = []string{}
		r, w, err := os.Pipe()
		if err != nil {
			return 12
		}
		cmd.ExtraFiles = []*os.File{w}
		if err := cmd.Start(); err != nil {
			return 13
		}
		_ = w.Close()
		if _, err := io.ReadFull(r, make([]byte, len("ready\n"))); err != nil {
			return 14
		}
		signal.Ignore(syscall.SIGTERM)
		if _, err := fmt.Fprintf(fd3, "%d\n", cmd.Process.Pid); err != nil {
			fmt.Fprintln(os.Stderr, "write fd 3:", err)
			return 10
		}
		time.Sleep(time.Hour)
		return 0
	case "detach":
		// Start a grandchild in its own session that keeps our stdout
		// open, report its PID, and wait for SIGTERM's default action.
		self, err := os.Executable()
		if err != nil {
			return 11
		}
		cmd := exec.Command(self, helperArg, "sleep")
		cmd.Env = []string{}
		cmd.Stdout = os.Stdout
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return 13
		}
		if _, err := fmt.Fprintf(fd3, "%d\n", cmd.Process.Pid); err != nil {
			fmt.Fprintln(os.Stderr, "write fd 3:", err)
			return 10
		}
		time.Sleep(time.Hour)
		return 0
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode, args)
	return 2
}

// helperSpec returns a Spec that runs the test binary in mode.
func helperSpec(t *testing.T, name, mode string) Spec {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Name: name, Index: "10", Path: self, Args: []string{helperArg, mode}}
}

// fd3 hands every started process the peer end of a fresh socketpair as fd 3
// (the classic way) and delivers the local end, with the PID, through
// started.
type fd3 struct {
	t        *testing.T
	local    net.Conn // set by Prepare, consumed by OnStart: same goroutine
	started  chan startedConn
	mu       sync.Mutex
	cleanups int
}

type startedConn struct {
	Started
	conn net.Conn
}

func newFD3(t *testing.T) *fd3 {
	return &fd3{t: t, started: make(chan startedConn, 100)}
}

func (f *fd3) prepare() ([]*os.File, func(), error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	localFile := os.NewFile(uintptr(fds[0]), "local")
	peer := os.NewFile(uintptr(fds[1]), "peer")
	conn, err := net.FileConn(localFile)
	_ = localFile.Close()
	if err != nil {
		_ = peer.Close()
		return nil, nil, err
	}
	f.local = conn
	return []*os.File{peer}, func() {
		_ = conn.Close()
		f.mu.Lock()
		f.cleanups++
		f.mu.Unlock()
	}, nil
}

func (f *fd3) onStart(_ context.Context, s Started) {
	f.started <- startedConn{Started: s, conn: f.local}
	f.local = nil
}

func (f *fd3) cleanupCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cleanups
}

func (f *fd3) next() startedConn {
	f.t.Helper()
	select {
	case s := <-f.started:
		return s
	case <-time.After(waitLong()):
		f.t.Fatal("timed out waiting for a start")
		return startedConn{}
	}
}

// readLine reads one line from c.
func readLine(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(waitLong()))
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := c.Read(one); err != nil {
			t.Fatalf("read from fd 3 peer: %v (got %q)", err, b)
		}
		if one[0] == '\n' {
			return string(b)
		}
		b = append(b, one[0])
	}
}

// logRecord is one record captured by recorder.
type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// recorder is a slog.Handler store that tests can wait on.
type recorder struct {
	mu      sync.Mutex
	recs    []logRecord
	changed chan struct{}
}

func newRecorder(t *testing.T) (*recorder, *slog.Logger) {
	r := &recorder{changed: make(chan struct{})}
	t.Cleanup(func() {
		if t.Failed() {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, rec := range r.recs {
				t.Logf("log: %s %q %v", rec.Level, rec.Msg, rec.Attrs)
			}
		}
	})
	return r, slog.New(recHandler{r: r})
}

func (r *recorder) add(rec logRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	close(r.changed)
	r.changed = make(chan struct{})
}

// find returns the records for which match is true.
func (r *recorder) find(match func(logRecord) bool) []logRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(r.recs), func(rec logRecord) bool { return !match(rec) })
}

// waitFor waits until a record matches.
func (r *recorder) waitFor(t *testing.T, what string, match func(logRecord) bool) logRecord {
	t.Helper()
	timeout := time.After(waitLong())
	for {
		r.mu.Lock()
		changed := r.changed
		for _, rec := range r.recs {
			if match(rec) {
				r.mu.Unlock()
				return rec
			}
		}
		r.mu.Unlock()
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("timed out waiting for log record: %s", what)
		}
	}
}

type recHandler struct {
	r     *recorder
	attrs []slog.Attr
}

func (h recHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h recHandler) Handle(_ context.Context, rec slog.Record) error {
	m := make(map[string]string)
	for _, a := range h.attrs {
		m[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	h.r.add(logRecord{Level: rec.Level, Msg: rec.Message, Attrs: m})
	return nil
}

func (h recHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recHandler{r: h.r, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h recHandler) WithGroup(string) slog.Handler { return h }

// msgIs matches records with the given message and plugin attribute.
func msgIs(plugin, msg string) func(logRecord) bool {
	return func(rec logRecord) bool { return rec.Attrs["plugin"] == plugin && rec.Msg == msg }
}

// msgHas matches records whose message contains s.
func msgHas(plugin, s string) func(logRecord) bool {
	return func(rec logRecord) bool { return rec.Attrs["plugin"] == plugin && strings.Contains(rec.Msg, s) }
}

// waitDone waits for p's supervision to end.
func waitDone(t *testing.T, p *Proc) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(waitLong()):
		t.Fatalf("%s: supervision did not end", p.Name())
	}
}

// stopAtEnd stops s when the test ends, so no child outlives it.
func stopAtEnd(t *testing.T, s *Supervisor) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong())
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stop supervisor: %v", err)
		}
	})
}
