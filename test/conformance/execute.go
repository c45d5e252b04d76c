package conformance

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Result is the outcome of a scenario run by [Execute].
type Result string

// The results.
const (
	Pass Result = "PASS"
	Fail Result = "FAIL"
	Skip Result = "SKIP"
	// Warn: passed, with warnings ([Warnf]).
	Warn Result = "WARN"
)

// ScenarioReport is one scenario's entry in a [Report].
type ScenarioReport struct {
	ScenarioInfo
	Result Result `json:"result"`
	// Messages are the scenario's log, error, fatal and skip messages, in
	// order.
	Messages []string `json:"messages,omitempty"`
	// Duration is how long the scenario and its cleanups took.
	Duration time.Duration `json:"duration_ns"`
}

// Report is what [Execute] returns: one entry per scenario, in catalog
// order.
type Report struct {
	Scenarios []ScenarioReport `json:"scenarios"`
}

// Failed reports whether a scenario failed.
func (r Report) Failed() bool {
	return slices.ContainsFunc(r.Scenarios, func(s ScenarioReport) bool { return s.Result == Fail })
}

// Count returns how many scenarios had result res.
func (r Report) Count(res Result) int {
	n := 0
	for _, s := range r.Scenarios {
		if s.Result == res {
			n++
		}
	}
	return n
}

// Parallel bounds how many scenarios Execute runs at once (default:
// GOMAXPROCS, at least 2).
func Parallel(n int) RunOption { return func(c *runConfig) { c.parallel = n } }

// Bound is the time one scenario may take under Execute, cleanups
// excluded (default 4*Wait). A scenario still running then is reported
// failed; its goroutine is abandoned after its cleanups ran.
func Bound(d time.Duration) RunOption { return func(c *runConfig) { c.bound = d } }

// Select makes Run and Execute run only the scenarios keep returns true
// for (the others are left out of the report).
func Select(keep func(ScenarioInfo) bool) RunOption {
	return func(c *runConfig) { c.keep = append(c.keep, keep) }
}

// Execute runs the scenarios against the path setup describes without
// the testing package and returns the report. Scenarios run in parallel,
// at most Parallel at a time, each within Bound; ctx ends the run (the
// scenarios not started are reported skipped).
func Execute(ctx context.Context, setup Setup, opts ...RunOption) Report {
	cfg := runConfig{parallel: max(2, runtime.GOMAXPROCS(0)), bound: 4 * Wait}
	for _, o := range opts {
		o(&cfg)
	}
	var list []*scenario
	for _, g := range groups {
		for _, sc := range scenarios {
			if sc.Group == g && cfg.selected(sc.ScenarioInfo) {
				list = append(list, sc)
			}
		}
	}
	checks := make([]Check, len(list))
	for i, sc := range list {
		checks[i] = Check{ScenarioInfo: sc.ScenarioInfo, Run: func(ctx context.Context, t T) {
			// As under Run: the scenario's context is bounded by 2*Wait.
			ctx, cancel := context.WithTimeout(ctx, 2*Wait)
			defer cancel()
			s := &S{T: t, ctx: ctx, setup: setup}
			if !sc.manual {
				s.env = s.MustEnv(sc.opts)
			}
			sc.run(s)
		}}
	}
	return ExecuteChecks(ctx, checks, opts...)
}

// Check is a check ExecuteChecks runs: a scenario of its own, outside the
// catalog (cmd/nritest's checks of a plugin binary).
type Check struct {
	ScenarioInfo
	// Run runs the check in its own goroutine; ctx ends after Bound.
	Run func(ctx context.Context, t T)
}

// ExecuteChecks runs checks as Execute runs scenarios (Select does not
// apply) and returns the report, in the order of checks. With Parallel(1)
// they run one after the other, in order.
func ExecuteChecks(ctx context.Context, checks []Check, opts ...RunOption) Report {
	cfg := runConfig{parallel: max(2, runtime.GOMAXPROCS(0)), bound: 4 * Wait}
	for _, o := range opts {
		o(&cfg)
	}
	rep := Report{Scenarios: make([]ScenarioReport, len(checks))}
	sem := make(chan struct{}, max(1, cfg.parallel))
	var wg sync.WaitGroup
	for i, sc := range checks {
		rep.Scenarios[i].ScenarioInfo = sc.ScenarioInfo
		if why := cfg.skipReason(sc.ScenarioInfo); why != "" {
			rep.Scenarios[i].Result, rep.Scenarios[i].Messages = Skip, []string{why}
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			rep.Scenarios[i].Result, rep.Scenarios[i].Messages = Skip, []string{"not run: " + ctx.Err().Error()}
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			rep.Scenarios[i] = executeOne(ctx, sc, cfg.bound)
		}()
	}
	wg.Wait()
	return rep
}

// executeOne runs one check in its own goroutine, then its cleanups.
func executeOne(ctx context.Context, sc Check, bound time.Duration) ScenarioReport {
	start := time.Now()
	t := &runT{name: sc.Group + "/" + sc.Name}
	sctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc.Run(sctx, t)
	}()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Errorf("the scenario did not end within %v", bound)
	case <-ctx.Done():
		t.Errorf("the scenario was interrupted: %v", ctx.Err())
	}
	t.runCleanups(bound)
	r := ScenarioReport{ScenarioInfo: sc.ScenarioInfo, Result: Pass, Duration: time.Since(start)}
	t.mu.Lock()
	defer t.mu.Unlock()
	r.Messages = t.msgs
	switch {
	case t.failed:
		r.Result = Fail
	case t.skipped:
		r.Result = Skip
	case t.warned:
		r.Result = Warn
	}
	return r
}

// runT is T outside the testing package.
type runT struct {
	name     string
	mu       sync.Mutex
	msgs     []string
	failed   bool
	skipped  bool
	warned   bool
	cleanups []func()
}

var _ T = (*runT)(nil)

func (t *runT) Name() string { return t.name }
func (t *runT) Helper()      {}

func (t *runT) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

func (t *runT) add(msg string, fail, skip bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.msgs = append(t.msgs, msg)
	t.failed = t.failed || fail
	t.skipped = t.skipped || skip
}

func (t *runT) Log(args ...any)                 { t.add(sprintln(args...), false, false) }
func (t *runT) Logf(format string, args ...any) { t.add(fmt.Sprintf(format, args...), false, false) }
func (t *runT) Error(args ...any)               { t.add(sprintln(args...), true, false) }
func (t *runT) Errorf(format string, args ...any) {
	t.add(fmt.Sprintf(format, args...), true, false)
}
func (t *runT) Fatal(args ...any)                 { t.Error(args...); runtime.Goexit() }
func (t *runT) Fatalf(format string, args ...any) { t.Errorf(format, args...); runtime.Goexit() }
func (t *runT) Skip(args ...any)                  { t.add(sprintln(args...), false, true); runtime.Goexit() }
func (t *runT) Skipf(format string, args ...any) {
	t.add(fmt.Sprintf(format, args...), false, true)
	runtime.Goexit()
}

func (t *runT) Fail() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}

func (t *runT) FailNow() { t.Fail(); runtime.Goexit() }

func (t *runT) SkipNow() {
	t.mu.Lock()
	t.skipped = true
	t.mu.Unlock()
	runtime.Goexit()
}

func (t *runT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *runT) Skipped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.skipped
}

// runCleanups runs the cleanups, last first, each in its own goroutine
// (a Fatal in a cleanup ends only that cleanup) and each within bound.
func (t *runT) runCleanups(bound time.Duration) {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			f()
		}()
		select {
		case <-done:
		case <-time.After(bound):
			t.Errorf("a cleanup did not end within %v", bound)
		}
	}
}

// Warnf records a warning: under Execute the check's result is WARN
// unless it failed or was skipped; under go test it is logged.
func Warnf(t T, format string, args ...any) {
	t.Helper()
	if rt, ok := t.(*runT); ok {
		rt.mu.Lock()
		rt.warned = true
		rt.mu.Unlock()
	}
	t.Logf("warning: "+format, args...)
}

// sprintln formats like testing's Log: operands separated by spaces.
func sprintln(args ...any) string {
	s := fmt.Sprintln(args...)
	return s[:len(s)-1]
}
