package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"
)

const (
	// killWait bounds the wait for a process to end after SIGKILL; a process
	// stuck in uninterruptible sleep must not hang the daemon's shutdown.
	killWait = 5 * time.Second
	// drainTimeout bounds the wait for the end of a process's output after
	// it exited (a descendant that left the process group may hold the
	// pipes open).
	drainTimeout = 2 * time.Second
)

// Spec describes a process to supervise.
type Spec struct {
	// Name is the plugin name, for example "foo". Required.
	Name string
	// Index is the plugin index, for example "10". Optional; when set, the
	// full name used in logs is "<Index>-<Name>".
	Index string
	// Path is the executable; it is used as is, without a PATH search, and
	// is also the process's argv[0]. Required.
	Path string
	// Args are the arguments after argv[0].
	Args []string
	// Env is the complete environment of the process; nothing is inherited
	// from the daemon, and nil means an empty environment. Classic plugins
	// get only NRI_PLUGIN_NAME, NRI_PLUGIN_IDX and NRI_PLUGIN_SOCKET=3. When a
	// variable appears more than once, the last value wins.
	Env []string
	// Prepare, when set, is called before every start, the first one and each
	// restart. The returned files are inherited by the process as file
	// descriptors 3, 4, and so on; the supervisor closes its copies right
	// after the start attempt. cleanup, which may be nil, is called once that
	// process has exited and its output has been drained, or at once when it
	// could not be started. An error counts as a failed start.
	//
	// The bridge creates a fresh socketpair here, returns the peer end and
	// keeps its own end for OnStart.
	Prepare func() (extraFiles []*os.File, cleanup func(), err error)
	// OnStart, when set, is called after each successful start with the new
	// process's PID. It is called from the same goroutine as, and right
	// after, the Prepare call whose files that process inherited, and calls
	// of one Proc never overlap: what Prepare made (kept in the caller's
	// closure) belongs to this process. ctx carries the values of Start's
	// context and is done once this process has exited. OnStart should
	// return promptly: start a goroutine for long work.
	OnStart func(ctx context.Context, s Started)
	// OnExit, when set, is called after each process that OnStart was called
	// for has exited, after cleanup.
	OnExit func(ctx context.Context, e Exited)
}

func (s Spec) validate() error {
	if s.Name == "" {
		return errors.New("supervisor: Spec.Name is empty")
	}
	if s.Path == "" {
		return fmt.Errorf("supervisor: Spec.Path of %s is empty", s.fullName())
	}
	return nil
}

func (s Spec) fullName() string {
	if s.Index == "" {
		return s.Name
	}
	return s.Index + "-" + s.Name
}

// Started describes one start of a supervised process.
type Started struct {
	// PID is the process ID, which is also its process group ID.
	PID int
	// Restarts is how many times the process had been restarted before this
	// start: 0 for the first start.
	Restarts int
}

// Exited describes the end of one started process.
type Exited struct {
	// PID is the ID the process had.
	PID int
	// Err is nil for exit status 0, an *exec.ExitError otherwise.
	Err error
	// Ran is how long the process ran.
	Ran time.Duration
	// Requested is true when the process ended after Stop or Restart
	// signalled it.
	Requested bool
	// Restarting is true when the supervisor will start the process again.
	Restarting bool
}

// Status is a snapshot of a supervised process, for example for
// AdminService.
type Status struct {
	// PID is the ID of the running process, 0 when none runs.
	PID int
	// Running is true while a started process has not exited.
	Running bool
	// Restarts counts successful starts after the first one, whether they
	// followed a crash, an exit or Restart.
	Restarts int
	// LastExit is how the last process ended or the last start failed: nil
	// for exit status 0 (or when nothing has ended yet), an *exec.ExitError
	// for other exits, or the error of the failed start.
	LastExit error
	// StartedAt is when the current or last process started.
	StartedAt time.Time
	// ExitedAt is when the last process ended or the last start failed; zero
	// when nothing has ended yet.
	ExitedAt time.Time
	// Stopped is true once supervision has ended: after Stop, nothing will
	// be started again.
	Stopped bool
}

// Proc is one supervised process, restarted whenever it exits until Stop.
// Its methods are safe for concurrent use.
type Proc struct {
	sup  *Supervisor
	spec Spec
	name string
	log  *slog.Logger

	// ctx carries the values of Start's context; it is cancelled when
	// supervision ends.
	ctx    context.Context
	cancel context.CancelFunc
	stopCh chan struct{} // closed by the first Stop
	done   chan struct{} // closed when supervision has ended

	mu       sync.Mutex
	stopping bool
	cur      *incarnation // the started process that has not been reaped
	starts   int
	status   Status
}

// incarnation is one started process.
type incarnation struct {
	cmd     *exec.Cmd
	pid     int
	started time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	cleanup func()
	outputs []*os.File // read ends of the stdout and stderr pipes
	pumps   sync.WaitGroup
	reaped  chan struct{} // closed once err and ended are set

	// Guarded by Proc.mu.
	exited    bool // the process has exited; no more signals to its group
	doomed    bool // started after Stop: killed at once, OnStart not called
	requested bool // Stop or Restart signalled it

	err   error
	ended time.Time
}

func newProc(ctx context.Context, s *Supervisor, spec Spec) *Proc {
	spec.Args = slices.Clone(spec.Args)
	spec.Env = slices.Clone(spec.Env)
	name := spec.fullName()
	p := &Proc{
		sup:    s,
		spec:   spec,
		name:   name,
		log:    s.log.With("plugin", name),
		stopCh: make(chan struct{}),
		done:   make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return p
}

// Name returns the full name of the process's plugin, "<index>-<name>" (or
// just the name when the Spec had no index).
func (p *Proc) Name() string { return p.name }

// Done returns a channel that is closed when supervision has ended: after
// Stop, once the last process has exited and its hooks have returned.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Status returns a snapshot of the process's state.
func (p *Proc) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// Stop ends supervision: nothing will be started again. It sends SIGTERM to
// the running process's group, waits until it exits or ctx is done (a ctx
// without deadline gets the supervisor's stop timeout), then sends SIGKILL.
// It returns nil once supervision has ended, also when SIGKILL was needed, and
// an error only if the process did not end even after SIGKILL. Stop may be
// called more than once.
func (p *Proc) Stop(ctx context.Context) error {
	p.mu.Lock()
	if !p.stopping {
		p.stopping = true
		close(p.stopCh)
	}
	if inc := p.cur; inc != nil {
		inc.requested = true
		p.signalLocked(inc, syscall.SIGTERM)
	}
	p.mu.Unlock()

	return p.terminate(ctx, p.done, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if inc := p.cur; inc != nil && !inc.exited {
			p.log.WarnContext(ctx, "plugin did not stop after SIGTERM, killing it", "pid", inc.pid)
			p.signalLocked(inc, syscall.SIGKILL)
		}
	})
}

// Restart ends the running process as Stop does (SIGTERM, then SIGKILL when
// ctx is done) and returns once it has exited; the supervisor then starts it
// again after the backoff delay, as after a crash. For example, nrid restarts
// a launched plugin that did not register in time. Restart does nothing when
// no process is running, and returns ErrStopped after Stop.
func (p *Proc) Restart(ctx context.Context) error {
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return ErrStopped
	}
	inc := p.cur
	if inc == nil {
		p.mu.Unlock()
		return nil
	}
	inc.requested = true
	p.signalLocked(inc, syscall.SIGTERM)
	p.mu.Unlock()

	return p.terminate(ctx, inc.reaped, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !inc.exited {
			p.log.WarnContext(ctx, "plugin did not stop after SIGTERM, killing it", "pid", inc.pid)
			p.signalLocked(inc, syscall.SIGKILL)
		}
	})
}

// terminate waits for done until ctx is done (or the stop timeout passed,
// when ctx has no deadline), then calls kill and waits for done once more.
func (p *Proc) terminate(ctx context.Context, done <-chan struct{}, kill func()) error {
	grace := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		grace, cancel = context.WithTimeout(ctx, p.sup.stopTimeout)
		defer cancel()
	}
	select {
	case <-done:
		return nil
	case <-grace.Done():
	}
	kill()
	select {
	case <-done:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("supervisor: %s did not end within %v of SIGKILL", p.name, killWait)
	}
}

// signalLocked sends sig to the process group of inc, unless the process
// has exited: its group ID could then be reused. Callers hold p.mu.
func (p *Proc) signalLocked(inc *incarnation, sig syscall.Signal) {
	if inc.exited {
		return
	}
	if err := syscall.Kill(-inc.pid, sig); err != nil {
		// The process left its group (setsid, setpgid): signal it alone.
		_ = inc.cmd.Process.Signal(sig)
	}
}

func (p *Proc) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// run is the supervising goroutine: it starts the process, waits for it to
// exit and starts it again after a backoff delay, until Stop. The result of
// the first start is sent on first.
func (p *Proc) run(first chan<- error) {
	defer close(p.done)
	defer p.sup.forget(p)
	defer p.cancel()
	defer func() {
		p.mu.Lock()
		p.status.Stopped = true
		p.mu.Unlock()
	}()

	b := p.sup.newBackoff()
	for n := 0; ; n++ {
		var ran time.Duration
		inc, err := p.launch()
		switch {
		case err != nil && n == 0:
			first <- err
			return
		case errors.Is(err, ErrStopped):
			return
		case err != nil:
			p.mu.Lock()
			p.status.LastExit = err
			p.status.ExitedAt = time.Now()
			p.mu.Unlock()
			p.log.WarnContext(p.ctx, "plugin failed to start", "err", err)
		default:
			p.mu.Lock()
			doomed := inc.doomed
			p.mu.Unlock()
			if doomed {
				if n == 0 {
					first <- ErrStopped
				}
			} else {
				restarts := p.Status().Restarts
				p.log.InfoContext(p.ctx, "plugin started", "pid", inc.pid, "restarts", restarts)
				if p.spec.OnStart != nil {
					p.spec.OnStart(inc.ctx, Started{PID: inc.pid, Restarts: restarts})
				}
				if n == 0 {
					first <- nil
				}
			}
			p.finish(inc, doomed)
			ran = inc.ended.Sub(inc.started)
		}

		if p.isStopping() {
			return
		}
		d := b.delay(ran)
		p.log.InfoContext(p.ctx, "restarting plugin after backoff", "delay", d)
		select {
		case <-p.sup.after(d):
		case <-p.stopCh:
			return
		}
	}
}

// launch prepares and starts one process.
func (p *Proc) launch() (*incarnation, error) {
	if p.isStopping() {
		return nil, ErrStopped
	}

	var files []*os.File
	cleanup := func() {}
	if p.spec.Prepare != nil {
		f, c, err := p.spec.Prepare()
		if err != nil {
			return nil, fmt.Errorf("prepare %s: %w", p.name, err)
		}
		files = f
		if c != nil {
			cleanup = c
		}
	}
	defer func() {
		for _, f := range files {
			if f != nil {
				_ = f.Close()
			}
		}
	}()

	outR, outW, err := os.Pipe()
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("start %s: stdout pipe: %w", p.name, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_, _ = outR.Close(), outW.Close()
		cleanup()
		return nil, fmt.Errorf("start %s: stderr pipe: %w", p.name, err)
	}

	env := slices.Clone(p.spec.Env)
	if env == nil {
		env = []string{} // nil would inherit the daemon's environment
	}
	cmd := &exec.Cmd{
		Path:        p.spec.Path,
		Args:        append([]string{p.spec.Path}, p.spec.Args...),
		Env:         env,
		Stdout:      outW,
		Stderr:      errW,
		ExtraFiles:  files,
		SysProcAttr: sysProcAttr(),
	}
	err = cmd.Start()
	_, _ = outW.Close(), errW.Close()
	if err != nil {
		_, _ = outR.Close(), errR.Close()
		cleanup()
		return nil, fmt.Errorf("start %s: %w", p.name, err)
	}

	inc := &incarnation{
		cmd:     cmd,
		pid:     cmd.Process.Pid,
		started: time.Now(),
		cleanup: cleanup,
		outputs: []*os.File{outR, errR},
		reaped:  make(chan struct{}),
	}
	inc.ctx, inc.cancel = context.WithCancel(p.ctx)

	p.mu.Lock()
	p.cur = inc
	p.starts++
	p.status.PID = inc.pid
	p.status.Running = true
	p.status.Restarts = p.starts - 1
	p.status.StartedAt = inc.started
	if p.stopping {
		// Stop came while this process was being started.
		inc.doomed = true
		inc.requested = true
		p.signalLocked(inc, syscall.SIGKILL)
	}
	p.mu.Unlock()

	inc.pumps.Add(2)
	go p.pump(inc, outR, "stdout")
	go p.pump(inc, errR, "stderr")
	go p.wait(inc)
	return inc, nil
}

// wait reaps the process. Before reaping, it kills whatever is left of the
// process group, while the unreaped process still holds the group ID.
func (p *Proc) wait(inc *incarnation) {
	waited := waitExited(inc.pid)
	p.mu.Lock()
	if waited {
		_ = syscall.Kill(-inc.pid, syscall.SIGKILL)
	}
	inc.exited = true
	p.mu.Unlock()
	// Without waitExited (not on Linux), a signal may race with the reaping
	// below; the race is as old as kill(2) and its window is tiny.
	inc.err = inc.cmd.Wait()
	inc.ended = time.Now()
	close(inc.reaped)
}

// finish waits for inc to be reaped, records its exit, drains its output,
// runs its cleanup and reports the exit.
func (p *Proc) finish(inc *incarnation, doomed bool) {
	<-inc.reaped
	p.mu.Lock()
	p.cur = nil
	p.status.PID = 0
	p.status.Running = false
	p.status.LastExit = inc.err
	p.status.ExitedAt = inc.ended
	requested := inc.requested
	restarting := !p.stopping
	p.mu.Unlock()

	inc.cancel()
	p.drain(inc)
	inc.cleanup()

	ran := inc.ended.Sub(inc.started)
	status := "exit status 0"
	if inc.err != nil {
		status = inc.err.Error()
	}
	level := slog.LevelWarn
	if requested {
		level = slog.LevelInfo
	}
	p.log.Log(p.ctx, level, "plugin exited", "pid", inc.pid, "status", status, "ran", ran, "requested", requested)

	if !doomed && p.spec.OnExit != nil {
		p.spec.OnExit(p.ctx, Exited{
			PID:        inc.pid,
			Err:        inc.err,
			Ran:        ran,
			Requested:  requested,
			Restarting: restarting,
		})
	}
}

// drain waits for the output of inc to end, and cuts it off after
// drainTimeout.
func (p *Proc) drain(inc *incarnation) {
	drained := make(chan struct{})
	go func() {
		inc.pumps.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(p.sup.drainTimeout):
		for _, f := range inc.outputs {
			_ = f.Close()
		}
		<-drained
	}
}
