// Package supervisor discovers pre-launched plugins and keeps their processes
// running.
//
// Discover lists the executables of a plugin directory together with their
// drop-in configuration. A Supervisor starts processes from a Spec, restarts
// them with exponential backoff and jitter when they exit, sends their
// standard output and standard error line by line to a log/slog logger, and
// stops them with SIGTERM, escalating to SIGKILL.
//
// The package knows nothing about either protocol. The caller decides the
// complete environment and the inherited file descriptors of each process:
// nrid's gRPC plugins get their endpoint in environment variables; the bridge
// launches classic v1alpha1 plugins the classic way, with a fresh socketpair
// made by Spec.Prepare handed over as file descriptor 3.
//
// Every process runs in its own process group and, on Linux, gets SIGKILL
// when the daemon dies (Pdeathsig). Signals go to the whole group, and when a
// plugin process exits, whatever is left of its group is killed before the
// plugin is restarted.
package supervisor

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Defaults of the Supervisor options.
const (
	DefaultInitialBackoff = 100 * time.Millisecond // WithInitialBackoff
	DefaultMaxBackoff     = 30 * time.Second       // WithMaxBackoff
	DefaultBackoffReset   = 10 * time.Second       // WithBackoffReset
	DefaultStopTimeout    = 10 * time.Second       // WithStopTimeout
)

// ErrStopped is returned when starting a process on a stopped Supervisor, or
// when a process is stopped before its first start completed.
var ErrStopped = errors.New("supervisor: stopped")

// Supervisor keeps a set of processes running. Create it with New; its
// methods are safe for concurrent use.
type Supervisor struct {
	log            *slog.Logger
	initialBackoff time.Duration
	maxBackoff     time.Duration
	backoffReset   time.Duration
	stopTimeout    time.Duration

	// Test hooks: the restart delay timer, the jitter source, the output
	// drain timeout.
	after        func(time.Duration) <-chan time.Time
	randN        func(int64) int64
	drainTimeout time.Duration

	mu      sync.Mutex
	stopped bool
	procs   map[*Proc]struct{}
}

// Option configures a Supervisor.
type Option func(*Supervisor)

// WithLogger sets the logger for the supervisor's own messages and for the
// output of the supervised processes. The default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(s *Supervisor) {
		if l != nil {
			s.log = l
		}
	}
}

// WithInitialBackoff sets the delay before the first restart after a crash
// (DefaultInitialBackoff); each further consecutive restart doubles it, up to
// the maximum. Non-positive values are ignored.
func WithInitialBackoff(d time.Duration) Option {
	return func(s *Supervisor) {
		if d > 0 {
			s.initialBackoff = d
		}
	}
}

// WithMaxBackoff caps the restart delay (DefaultMaxBackoff). Non-positive
// values are ignored; a maximum below the initial delay is raised to it.
func WithMaxBackoff(d time.Duration) Option {
	return func(s *Supervisor) {
		if d > 0 {
			s.maxBackoff = d
		}
	}
}

// WithBackoffReset sets how long a process must have run for its exit to
// count as a fresh failure (DefaultBackoffReset): the restart delay then goes
// back to the initial delay. Non-positive values are ignored.
func WithBackoffReset(d time.Duration) Option {
	return func(s *Supervisor) {
		if d > 0 {
			s.backoffReset = d
		}
	}
}

// WithStopTimeout sets how long Proc.Stop and Proc.Restart wait after SIGTERM
// before sending SIGKILL when their context has no deadline
// (DefaultStopTimeout). Non-positive values are ignored.
func WithStopTimeout(d time.Duration) Option {
	return func(s *Supervisor) {
		if d > 0 {
			s.stopTimeout = d
		}
	}
}

// New returns a Supervisor that supervises nothing yet.
func New(opts ...Option) *Supervisor {
	s := &Supervisor{
		log:            slog.Default(),
		initialBackoff: DefaultInitialBackoff,
		maxBackoff:     DefaultMaxBackoff,
		backoffReset:   DefaultBackoffReset,
		stopTimeout:    DefaultStopTimeout,
		after:          time.After,
		randN:          rand.Int64N,
		drainTimeout:   drainTimeout,
		procs:          make(map[*Proc]struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	s.maxBackoff = max(s.maxBackoff, s.initialBackoff)
	return s
}

// Start starts a process from spec and supervises it until Proc.Stop or
// Stop. The first start happens before Start returns: when Prepare or the
// start itself fails, Start returns the error and supervises nothing. When it
// succeeds, Start returns after the first OnStart call has returned. Later
// failures, including failed restarts, are retried with backoff.
//
// ctx bounds the call, not the process's lifetime; its values are passed on
// to the hooks' contexts.
func (s *Supervisor) Start(ctx context.Context, spec Spec) (*Proc, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := newProc(ctx, s, spec)

	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil, ErrStopped
	}
	s.procs[p] = struct{}{}
	s.mu.Unlock()

	// The process is started from the supervising goroutine, never from the
	// caller's: Pdeathsig fires when the forking thread ends, and the caller
	// may have locked its goroutine to a thread that ends early.
	first := make(chan error, 1)
	go p.run(first)
	if err := <-first; err != nil {
		s.forget(p) // now rather than when the goroutine ends
		return nil, err
	}
	return p, nil
}

// Stop stops every supervised process as Proc.Stop does, concurrently and
// with the same ctx, and makes later Start calls fail with ErrStopped. It
// returns when all processes have ended, with the errors of the Proc.Stop
// calls joined.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	procs := make([]*Proc, 0, len(s.procs))
	for p := range s.procs {
		procs = append(procs, p)
	}
	s.mu.Unlock()

	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.Stop(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Procs returns the processes under supervision, sorted by full name. A
// process leaves the list when its supervision has ended.
func (s *Supervisor) Procs() []*Proc {
	s.mu.Lock()
	procs := make([]*Proc, 0, len(s.procs))
	for p := range s.procs {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	slices.SortFunc(procs, func(a, b *Proc) int { return cmp.Compare(a.name, b.name) })
	return procs
}

func (s *Supervisor) forget(p *Proc) {
	s.mu.Lock()
	delete(s.procs, p)
	s.mu.Unlock()
}

// backoff computes restart delays: exponential from initial to max, with
// jitter, reset after a long enough run.
type backoff struct {
	initial, max, reset time.Duration
	randN               func(int64) int64
	next                time.Duration // un-jittered delay of the next restart
}

func (s *Supervisor) newBackoff() *backoff {
	return &backoff{
		initial: s.initialBackoff,
		max:     s.maxBackoff,
		reset:   s.backoffReset,
		randN:   s.randN,
		next:    s.initialBackoff,
	}
}

// delay returns how long to wait before the next restart, given how long the
// ended process ran (0 when it could not be started). The result is drawn
// uniformly from [d/2, d], where d is the current exponential delay, so it
// never exceeds the maximum.
func (b *backoff) delay(ran time.Duration) time.Duration {
	if ran >= b.reset {
		b.next = b.initial
	}
	d := b.next
	if b.next > b.max/2 {
		b.next = b.max
	} else {
		b.next *= 2
	}
	half := d / 2
	return half + time.Duration(b.randN(int64(d-half)+1))
}
