package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// exitCode returns the exit code in err, or -1 and the signal.
func exitStatus(err error) (code int, sig syscall.Signal) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -2, 0
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return -1, ws.Signal()
	}
	return ws.ExitStatus(), 0
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		randN func(int64) int64
		scale func(d time.Duration) time.Duration // jittered value for d
	}{
		{"upper", func(n int64) int64 { return n - 1 }, func(d time.Duration) time.Duration { return d }},
		{"lower", func(int64) int64 { return 0 }, func(d time.Duration) time.Duration { return d / 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(WithInitialBackoff(100*time.Millisecond), WithMaxBackoff(time.Second), WithBackoffReset(10*time.Second))
			s.randN = tc.randN
			b := s.newBackoff()
			ms := time.Millisecond
			for i, step := range []struct {
				ran, want time.Duration
			}{
				{0, 100 * ms}, {time.Second, 200 * ms}, {0, 400 * ms}, {0, 800 * ms},
				{0, time.Second}, {0, time.Second}, // capped
				{10 * time.Second, 100 * ms}, // a long run resets
				{0, 200 * ms},
			} {
				if got := b.delay(step.ran); got != tc.scale(step.want) {
					t.Errorf("step %d: delay(%v) = %v, want %v", i, step.ran, got, tc.scale(step.want))
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	s := New(WithInitialBackoff(-1), WithMaxBackoff(0), WithBackoffReset(0), WithStopTimeout(-1), WithLogger(nil))
	if s.initialBackoff != DefaultInitialBackoff || s.maxBackoff != DefaultMaxBackoff ||
		s.backoffReset != DefaultBackoffReset || s.stopTimeout != DefaultStopTimeout || s.log == nil {
		t.Errorf("invalid options changed the defaults: %+v", s)
	}
	if s := New(WithInitialBackoff(time.Minute), WithMaxBackoff(time.Second)); s.maxBackoff != time.Minute {
		t.Errorf("max backoff below initial = %v, want it raised to 1m", s.maxBackoff)
	}
}

// TestEnvAndFD3 launches a plugin the classic way: only the three NRI_
// variables, and a socketpair end as fd 3.
func TestEnvAndFD3(t *testing.T) {
	rec, log := newRecorder(t)
	s := New(WithLogger(log))
	stopAtEnd(t, s)
	f := newFD3(t)
	spec := helperSpec(t, "classic", "report")
	spec.Env = []string{"NRI_PLUGIN_NAME=classic", "NRI_PLUGIN_IDX=10", "NRI_PLUGIN_SOCKET=3"}
	spec.Prepare = f.prepare
	spec.OnStart = f.onStart
	exits := make(chan Exited, 10)
	spec.OnExit = func(_ context.Context, e Exited) { exits <- e }

	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "10-classic" {
		t.Errorf("Name() = %q, want 10-classic", p.Name())
	}
	// OnStart has run before Start returned.
	var sc startedConn
	select {
	case sc = <-f.started:
	default:
		t.Fatal("Start returned before OnStart")
	}
	if sc.Restarts != 0 {
		t.Errorf("first start has Restarts = %d", sc.Restarts)
	}

	_ = sc.conn.SetReadDeadline(time.Now().Add(waitLong()))
	var r report
	if err := json.NewDecoder(sc.conn).Decode(&r); err != nil {
		t.Fatalf("read report from fd 3: %v", err)
	}
	if !slices.Equal(r.Env, spec.Env) {
		t.Errorf("child environment = %q, want exactly %q", r.Env, spec.Env)
	}
	if want := []string{spec.Path, helperArg, "report"}; !slices.Equal(r.Args, want) {
		t.Errorf("child argv = %q, want %q", r.Args, want)
	}
	st := p.Status()
	if r.PID != sc.PID || st.PID != sc.PID || !st.Running || st.Restarts != 0 || st.Stopped {
		t.Errorf("child PID %d, OnStart PID %d, Status %+v", r.PID, sc.PID, st)
	}
	if r.PGID != r.PID {
		t.Errorf("child process group = %d, want its own (%d)", r.PGID, r.PID)
	}
	if r.Pdeathsig != int(syscall.SIGKILL) {
		t.Errorf("child parent-death signal = %d, want SIGKILL", r.Pdeathsig)
	}

	out := rec.waitFor(t, "stdout line", msgIs("10-classic", "hello on stdout"))
	if out.Attrs["stream"] != "stdout" || out.Attrs["pid"] != strconv.Itoa(r.PID) {
		t.Errorf("stdout record attributes = %v", out.Attrs)
	}
	errLine := rec.waitFor(t, "stderr line", msgIs("10-classic", "hello on stderr"))
	if errLine.Attrs["stream"] != "stderr" {
		t.Errorf("stderr record attributes = %v", errLine.Attrs)
	}

	if err := p.Stop(ctxTimeout(t, waitLong())); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	st = p.Status()
	if _, sig := exitStatus(st.LastExit); sig != syscall.SIGTERM || st.Running || st.PID != 0 || !st.Stopped {
		t.Errorf("after Stop: Status %+v, want stopped by SIGTERM", st)
	}
	if n := f.cleanupCount(); n != 1 {
		t.Errorf("cleanup ran %d times, want 1", n)
	}
	e := <-exits
	if !e.Requested || e.Restarting || e.PID != r.PID {
		t.Errorf("Exited = %+v, want requested, not restarting, PID %d", e, r.PID)
	}
	// cleanup closed our end of the socketpair.
	if _, err := sc.conn.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after cleanup = %v, want net.ErrClosed", err)
	}
}

// TestCrashRestartsWithBackoff drives the restart timer by hand: each delay
// is checked, and the restart happens when the test says so.
func TestCrashRestartsWithBackoff(t *testing.T) {
	rec, log := newRecorder(t)
	s := New(WithLogger(log), WithInitialBackoff(100*time.Millisecond), WithMaxBackoff(400*time.Millisecond))
	delays := make(chan time.Duration, 100)
	fire := make(chan time.Time)
	s.after = func(d time.Duration) <-chan time.Time {
		delays <- d
		return fire
	}
	stopAtEnd(t, s)

	starts := make(chan Started, 100)
	exits := make(chan Exited, 100)
	spec := helperSpec(t, "crasher", "crash")
	spec.OnStart = func(_ context.Context, st Started) { starts <- st }
	spec.OnExit = func(_ context.Context, e Exited) { exits <- e }

	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	<-starts

	ms := time.Millisecond
	for i, want := range []time.Duration{100 * ms, 200 * ms, 400 * ms, 400 * ms} {
		e := recv(t, exits, "exit")
		if code, _ := exitStatus(e.Err); code != 3 || e.Requested || !e.Restarting {
			t.Errorf("exit %d = %+v, want unrequested exit status 3, restarting", i, e)
		}
		d := recv(t, delays, "backoff delay")
		if d < want/2 || d > want {
			t.Errorf("delay %d = %v, want within [%v, %v]", i, d, want/2, want)
		}
		fire <- time.Now()
		if st := recv(t, starts, "restart"); st.Restarts != i+1 {
			t.Errorf("restart %d: Started.Restarts = %d", i, st.Restarts)
		}
	}

	// The fifth process crashes; stop while waiting to restart it.
	recv(t, exits, "exit")
	recv(t, delays, "backoff delay")
	if err := p.Stop(ctxTimeout(t, waitLong())); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitDone(t, p)
	if len(starts) != 0 {
		t.Error("a stopped process was started again")
	}
	st := p.Status()
	if code, _ := exitStatus(st.LastExit); code != 3 || st.Restarts != 4 || st.Running || !st.Stopped {
		t.Errorf("Status = %+v, want 4 restarts, last exit status 3, stopped", st)
	}
	if n := len(rec.find(msgIs("10-crasher", "crashing on purpose"))); n != 5 {
		t.Errorf("logged %d stderr lines of the crasher, want 5", n)
	}
}

func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(waitLong()):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// TestCrashRestartsWithTimers uses real timers with tiny delays.
func TestCrashRestartsWithTimers(t *testing.T) {
	_, log := newRecorder(t)
	s := New(WithLogger(log), WithInitialBackoff(time.Millisecond), WithMaxBackoff(2*time.Millisecond))
	stopAtEnd(t, s)
	starts := make(chan Started, 100)
	spec := helperSpec(t, "crasher", "crash")
	spec.OnStart = func(_ context.Context, st Started) { starts <- st }
	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if st := recv(t, starts, "start"); st.Restarts != i {
			t.Errorf("start %d has Restarts = %d", i, st.Restarts)
		}
	}
	if err := p.Stop(ctxTimeout(t, waitLong())); err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.Restarts < 3 || !st.Stopped || st.Running {
		t.Errorf("Status = %+v", st)
	}
}

// TestFailedRestartIsRetried makes the second Prepare fail: the failure is
// recorded and retried with a longer delay.
func TestFailedRestartIsRetried(t *testing.T) {
	_, log := newRecorder(t)
	s := New(WithLogger(log), WithInitialBackoff(100*time.Millisecond))
	delays := make(chan time.Duration, 100)
	fire := make(chan time.Time)
	s.after = func(d time.Duration) <-chan time.Time {
		delays <- d
		return fire
	}
	stopAtEnd(t, s)

	var prepares atomic.Int32
	errPrepare := errors.New("no socket today")
	starts := make(chan Started, 100)
	spec := helperSpec(t, "crasher", "crash")
	spec.Prepare = func() ([]*os.File, func(), error) {
		if prepares.Add(1) == 2 {
			return nil, nil, errPrepare
		}
		return nil, nil, nil
	}
	spec.OnStart = func(_ context.Context, st Started) { starts <- st }
	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	<-starts

	if d := recv(t, delays, "delay after crash"); d > 100*time.Millisecond {
		t.Errorf("first delay = %v", d)
	}
	fire <- time.Now() // the restart fails in Prepare
	if d := recv(t, delays, "delay after failed start"); d < 100*time.Millisecond || d > 200*time.Millisecond {
		t.Errorf("delay after failed start = %v, want within [100ms, 200ms]", d)
	}
	if st := p.Status(); !errors.Is(st.LastExit, errPrepare) || st.Running || st.Restarts != 0 {
		t.Errorf("after failed restart: Status = %+v", st)
	}
	fire <- time.Now() // this one works
	if st := recv(t, starts, "restart"); st.Restarts != 1 {
		t.Errorf("Started.Restarts = %d, want 1", st.Restarts)
	}
	recv(t, delays, "delay after second crash")
	if err := p.Stop(ctxTimeout(t, waitLong())); err != nil {
		t.Fatal(err)
	}
}

// TestStopGraceful stops a process that exits on SIGTERM.
func TestStopGraceful(t *testing.T) {
	rec, log := newRecorder(t)
	s := New(WithLogger(log))
	stopAtEnd(t, s)
	f := newFD3(t)
	spec := helperSpec(t, "graceful", "term")
	spec.Prepare, spec.OnStart = f.prepare, f.onStart
	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, f.next().conn); got != "ready" {
		t.Fatalf("child said %q", got)
	}
	if err := p.Stop(ctxTimeout(t, waitLong())); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitDone(t, p)
	if st := p.Status(); st.LastExit != nil || st.Running || !st.Stopped || st.Restarts != 0 {
		t.Errorf("Status = %+v, want a clean exit", st)
	}
	if len(rec.find(msgIs("10-graceful", "got SIGTERM, exiting"))) != 1 {
		t.Error("the child's last output line was not logged before Stop returned")
	}
	if len(rec.find(msgHas("10-graceful", "killing"))) != 0 {
		t.Error("a graceful stop escalated to SIGKILL")
	}
	if len(f.started) != 0 {
		t.Error("a stopped process was started again")
	}
	// Stop again, and Restart after Stop.
	if err := p.Stop(ctxTimeout(t, waitLong())); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := p.Restart(ctxTimeout(t, waitLong())); !errors.Is(err, ErrStopped) {
		t.Errorf("Restart after Stop = %v, want ErrStopped", err)
	}
}

// TestStopEscalatesToKill stops a process that ignores SIGTERM.
func TestStopEscalatesToKill(t *testing.T) {
	rec, log := newRecorder(t)
	s := New(WithLogger(log))
	stopAtEnd(t, s)
	f := newFD3(t)
	spec := helperSpec(t, "stubborn", "ignore")
	spec.Prepare, spec.OnStart = f.prepare, f.onStart
	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, f.next().conn); got != "ready" {
		t.Fatalf("child said %q", got)
	}
	if err := p.Stop(ctxTimeout(t, 200*time.Millisecond)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitDone(t, p)
	st := p.Status()
	if _, sig := exitStatus(st.LastExit); sig != syscall.SIGKILL || st.Running || !st.Stopped {
		t.Errorf("Status = %+v, want killed by SIGKILL", st)
	}
	rec.waitFor(t, "kill warning", msgHas("10-stubborn", "did not stop after SIGTERM"))
	if len(f.started) != 0 {
		t.Error("a stopped process was started again")
	}
}

// TestStopUsesStopTimeout stops with a context without deadline.
func TestStopUsesStopTimeout(t *testing.T) {
	_, log := newRecorder(t)
	s := New(WithLogger(log), WithStopTimeout(100*time.Millisecond))
	stopAtEnd(t, s)
	f := newFD3(t)
	spec := helperSpec(t, "stubborn", "ignore")
	spec.Prepare, spec.OnStart = f.prepare, f.onStart
	p, err := s.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	readLine(t, f.next().conn)
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, sig := exitStatus(p.Status().LastExit); sig != syscall.SIGKILL {
		t.Errorf("LastExit = %v, want SIGKILL", p.Status().LastExit)
	}
}

// TestRestart restarts a running process on request.
func TestRestart(t *testing.T) {
	_, log := newRecorder(t)
	s := New(WithLogger(log), WithInitialBackoff(time.Millisecond))
	stopAtEnd(t, s)
	f := newFD3(t)
	exits := make(chan Exited, 10)
	spec := helperSpec(t, "restartable", "term")
	spec.Prepare, spec.OnStart = f.prepare, f.onStart
	spec.OnExit = func(_ context.Context, e Exited) { exits <- e }
	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	first := f.next()
	readLine(t, first.conn)

	if err := p.Restart(ctxTimeout(t, waitLong())); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	second := f.next()
	if second.PID == first.PID || second.Restarts != 1 {
		t.Errorf("restart: %+v after %+v", second.Started, first.Started)
	}
	if e := recv(t, exits, "exit"); !e.Requested || !e.Restarting || e.Err != nil {
		t.Errorf("Exited = %+v, want a requested clean exit, restarting", e)
	}
	readLine(t, second.conn) // the new process got a fresh fd 3
	if st := p.Status(); st.PID != second.PID || st.Restarts != 1 || !st.Running {
		t.Errorf("Status = %+v", st)
	}
	if err := p.Stop(ctxTimeout(t, waitLong())); err != nil {
		t.Fatal(err)
	}
}

// TestStopDuringBackoff stops a process while its restart is pending.
func TestStopDuringBackoff(t *testing.T) {
	_, log := newRecorder(t)
	s := New(WithLogger(log), WithInitialBackoff(time.Hour))
	stopAtEnd(t, s)
	exits := make(chan Exited, 10)
	starts := make(chan Started, 10)
	spec := helperSpec(t, "crasher", "crash")
	spec.OnStart = func(_ context.Context, st Started) { starts <- st }
	spec.OnExit = func(_ context.Context, e Exited) { exits <- e }
	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	<-starts
	recv(t, exits, "exit")
	// Nothing runs: Restart has nothing to do.
	if err := p.Restart(ctxTimeout(t, waitLong())); err != nil {
		t.Errorf("Restart while waiting: %v", err)
	}
	if err := p.Stop(ctxTimeout(t, waitLong())); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	if len(starts) != 0 {
		t.Error("a stopped process was started again")
	}
}

// TestSupervisorStop stops everything at once.
func TestSupervisorStop(t *testing.T) {
	_, log := newRecorder(t)
	s := New(WithLogger(log), WithInitialBackoff(time.Hour))
	var procs []*Proc
	for _, mode := range []string{"term", "ignore"} {
		f := newFD3(t)
		spec := helperSpec(t, mode, mode)
		spec.Prepare, spec.OnStart = f.prepare, f.onStart
		p, err := s.Start(ctxTimeout(t, waitLong()), spec)
		if err != nil {
			t.Fatal(err)
		}
		readLine(t, f.next().conn)
		procs = append(procs, p)
	}
	exits := make(chan Exited, 1)
	spec := helperSpec(t, "crash", "crash")
	spec.OnExit = func(_ context.Context, e Exited) { exits <- e }
	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	recv(t, exits, "crash") // now waiting an hour to restart
	procs = append(procs, p)

	var names []string
	for _, p := range s.Procs() {
		names = append(names, p.Name())
	}
	if want := []string{"10-crash", "10-ignore", "10-term"}; !slices.Equal(names, want) {
		t.Errorf("Procs() = %q, want %q", names, want)
	}

	if err := s.Stop(ctxTimeout(t, 300*time.Millisecond)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, p := range procs {
		waitDone(t, p)
		if st := p.Status(); st.Running || !st.Stopped {
			t.Errorf("%s: Status = %+v", p.Name(), st)
		}
	}
	if len(s.Procs()) != 0 {
		t.Errorf("Procs() after Stop = %v", s.Procs())
	}
	if _, err := s.Start(context.Background(), helperSpec(t, "late", "sleep")); !errors.Is(err, ErrStopped) {
		t.Errorf("Start after Stop = %v, want ErrStopped", err)
	}
}

// TestStopKillsProcessGroup checks that a plugin's children die with it.
func TestStopKillsProcessGroup(t *testing.T) {
	_, log := newRecorder(t)
	s := New(WithLogger(log))
	stopAtEnd(t, s)
	f := newFD3(t)
	spec := helperSpec(t, "parent", "spawn")
	spec.Prepare, spec.OnStart = f.prepare, f.onStart
	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	line := readLine(t, f.next().conn)
	child, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	if alive(child) != nil {
		t.Fatalf("grandchild %d is not running", child)
	}
	if err := p.Stop(ctxTimeout(t, 200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// SIGKILL is sent before Stop returns; its delivery is asynchronous.
	deadline := time.Now().Add(waitLong())
	for alive(child) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived its plugin", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStopWithLeakedOutput stops a plugin whose descendant left the process
// group with the plugin's stdout: the output is cut off after the drain
// timeout instead of blocking Stop.
func TestStopWithLeakedOutput(t *testing.T) {
	_, log := newRecorder(t)
	s := New(WithLogger(log))
	s.drainTimeout = 50 * time.Millisecond
	stopAtEnd(t, s)
	f := newFD3(t)
	spec := helperSpec(t, "leaky", "detach")
	spec.Prepare, spec.OnStart = f.prepare, f.onStart
	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	line := readLine(t, f.next().conn)
	child, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	if err := p.Stop(ctxTimeout(t, waitLong())); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	if alive(child) != nil {
		t.Error("the detached grandchild was not running: the test proves nothing")
	}
}

// alive returns nil when pid is a live (not zombie) process.
func alive(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return err
	}
	// The state follows the parenthesized command name.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 && s[i+2] == 'Z' {
		return errors.New("zombie")
	}
	return nil
}

func TestStartFailures(t *testing.T) {
	_, log := newRecorder(t)
	s := New(WithLogger(log))
	stopAtEnd(t, s)
	ctx := ctxTimeout(t, waitLong())

	if _, err := s.Start(ctx, Spec{Path: "/bin/true"}); err == nil {
		t.Error("Start without a name succeeded")
	}
	if _, err := s.Start(ctx, Spec{Name: "x"}); err == nil {
		t.Error("Start without a path succeeded")
	}

	// Exec fails: the prepared files are closed and cleanup runs.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cleanups := 0
	starts := 0
	spec := Spec{
		Name: "missing", Index: "10", Path: "/nonexistent/10-missing",
		Prepare: func() ([]*os.File, func(), error) { return []*os.File{w}, func() { cleanups++ }, nil },
		OnStart: func(context.Context, Started) { starts++ },
	}
	if p, err := s.Start(ctx, spec); err == nil || p != nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start of a missing executable = %v, %v", p, err)
	}
	if cleanups != 1 || starts != 0 {
		t.Errorf("cleanup ran %d times, OnStart %d times; want 1 and 0", cleanups, starts)
	}
	if err := w.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("the prepared file was not closed: Close() = %v", err)
	}

	// Prepare fails.
	errPrepare := errors.New("boom")
	spec.Prepare = func() ([]*os.File, func(), error) { return nil, nil, errPrepare }
	if _, err := s.Start(ctx, spec); !errors.Is(err, errPrepare) {
		t.Errorf("Start with a failing Prepare = %v", err)
	}

	// Start with a done context.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Start(done, helperSpec(t, "x", "sleep")); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a cancelled context = %v", err)
	}

	if len(s.Procs()) != 0 {
		t.Errorf("failed starts left processes: %v", s.Procs())
	}
}

// TestNilEnvIsEmpty checks that a nil Env does not inherit the daemon's.
func TestNilEnvIsEmpty(t *testing.T) {
	t.Setenv("SUPERVISOR_TEST_LEAK", "leaked")
	_, log := newRecorder(t)
	s := New(WithLogger(log))
	stopAtEnd(t, s)
	f := newFD3(t)
	spec := helperSpec(t, "noenv", "report")
	spec.Prepare, spec.OnStart = f.prepare, f.onStart
	p, err := s.Start(ctxTimeout(t, waitLong()), spec)
	if err != nil {
		t.Fatal(err)
	}
	c := f.next().conn
	_ = c.SetReadDeadline(time.Now().Add(waitLong()))
	var r report
	if err := json.NewDecoder(c).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if len(r.Env) != 0 {
		t.Errorf("child environment = %q, want empty", r.Env)
	}
	if err := p.Stop(ctxTimeout(t, waitLong())); err != nil {
		t.Fatal(err)
	}
}
