package faults_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
	"github.com/nri-grpc/nri-grpc/nri"
)

// The soak's rhythm.
const (
	soakRestartEvery = 20 * time.Second // nrid is restarted this often
	soakSampleEvery  = 5 * time.Second  // one sample line this often
	soakWarmUp       = 10 * time.Second // samples of a process younger than this are not a reference
	soakWorkers      = 3                // lifecycles run at once
	soakGrowth       = 0.10             // most a measure may grow within a process, or across processes
)

// TestSoak (NRI_SOAK=duration, `make soak`) runs nrid for that long under
// a continuous lifecycle load through AdaptationService with three healthy
// plugins, a fourth plugin registering and leaving in a loop, and nrid
// restarted gracefully every 20 seconds on the same sockets (the runtime
// attaches again and the plugins register again). Every 5 seconds it prints
// a sample: elapsed time, nrid's generation and pid, resident memory,
// goroutines, open files, lifecycles done, events retried because nrid was
// restarting, plugin churns, and failures. Samples are taken with the load
// paused for a moment, so that they count what nrid keeps, not what is in
// flight.
//
// It fails if an event fails other than with UNAVAILABLE while nrid
// restarts (those are retried once nrid is back and counted apart), if a
// healthy plugin loses its registration, if memory, goroutines or open files
// grow more than 10 % between a process's first sample after its warm-up
// and its last, or if a process's first sample after warm-up is more than
// 10 % above the first process's.
func TestSoak(t *testing.T) {
	v := os.Getenv("NRI_SOAK")
	if v == "" {
		t.Skip("the soak runs only with NRI_SOAK set to a duration: make soak SOAK=10m")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("NRI_SOAK=%q is not a positive duration", v)
	}
	if d > testwait.Bound() {
		t.Fatalf("NRI_SOAK=%v does not fit in the test timeout; run with -timeout %v", d, d+5*time.Minute)
	}
	cfg := defaultConfig()
	cfg.requestTimeout = "2s"
	cfg.registrationTimeout = "5s"
	cfg.maxTimeout = "1m"
	cfg.logLevel = "info" // debug logs every call: gigabytes in ten minutes
	s := &soak{t: t, changed: make(chan struct{}), live: newLiveState(), start: time.Now()}
	s.n = startNrid(t, cfg)
	s.run(d)
}

// soak is the state of a soak run.
type soak struct {
	t     *testing.T
	n     *nrid
	start time.Time
	live  *liveState

	mu      sync.Mutex
	cur     *generation // nil while nrid restarts
	changed chan struct{}
	over    atomic.Bool

	// pause is held for reading by each lifecycle and each churn, and for
	// writing while a sample is taken.
	pause sync.RWMutex

	lifecycles, retried, churns, throttled, failures atomic.Int64
	errMu                                            sync.Mutex
	errs                                             []string
	samples                                          []sample
}

// generation is one nrid process and what is connected to it.
type generation struct {
	n        int
	pid      int
	started  time.Time
	c        *client
	att      *attachment
	plugins  []*testplugin.Plugin
	ids      map[string]string
	logs     []*testplugin.Log
	stopping atomic.Bool // set before nrid is told to stop
}

// sample is one measure of nrid.
type sample struct {
	gen        int
	age        time.Duration // of the process
	rss        int64
	goroutines int
	fds        int
}

// run drives the soak for d: workers, churn, and the generations of nrid,
// each sampled every soakSampleEvery and restarted after soakRestartEvery.
func (s *soak) run(d time.Duration) {
	stopLoad := make(chan struct{})
	var wg sync.WaitGroup
	for range soakWorkers {
		wg.Go(func() { s.worker(stopLoad) })
	}
	wg.Go(func() { s.churn(stopLoad) })
	wg.Go(func() { s.dropLogs(stopLoad) })

	end := s.start.Add(d)
	for gen := 1; ; gen++ {
		if gen > 1 {
			s.n.start()
		}
		g := s.connect(gen)
		s.publish(g)
		for k := 1; ; k++ {
			at := g.started.Add(time.Duration(k) * soakSampleEvery)
			if at.After(end) {
				at = end
			}
			time.Sleep(time.Until(at)) // the soak's clock, not a wait for an event
			s.sample(g)
			if time.Since(g.started) >= soakRestartEvery || !time.Now().Before(end) {
				break
			}
		}
		last := !time.Now().Before(end)
		if last {
			// Let the lifecycles in flight finish on this nrid.
			s.over.Store(true)
			close(stopLoad)
			s.publish(g) // wakes whoever waits for a generation
			wg.Wait()
		}
		s.endGeneration(g)
		if last {
			break
		}
	}
	s.report()
}

// connect dials the new nrid, registers the healthy plugins and attaches
// the runtime with its current state. It returns once the attach took
// effect (the plugins were resynchronized): an event sent before could be
// erased by the attach's older snapshot.
func (s *soak) connect(n int) *generation {
	t := s.t
	c, err := dialSocket(s.n.sock)
	if err != nil {
		t.Fatal(err)
	}
	g := &generation{n: n, pid: s.n.pid(), started: time.Now(), c: c, ids: map[string]string{}}
	for _, name := range []string{"01-alpha", "20-beta", "40-gamma"} {
		log := testplugin.NewLog()
		p := healthyPlugin(name[:2], name[3:], log)
		reg := register(t, s.n, p)
		g.plugins = append(g.plugins, p)
		g.logs = append(g.logs, log)
		g.ids[p.Full()] = reg.GetInstanceId()
	}
	if g.att, err = attach(c, s.live.snapshot); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	for i, p := range g.plugins {
		if err := g.logs[i].WaitFor(ctx, p.Full()+":Synchronize", 2); err != nil {
			t.Fatalf("generation %d: the attach never resynchronized %s: %v", n, p.Full(), err)
		}
	}
	return g
}

// endGeneration checks that the healthy plugins kept their registrations,
// then stops nrid gracefully and closes what was connected to it.
func (s *soak) endGeneration(g *generation) {
	t := s.t
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	listed, err := g.c.plugins(ctx)
	if err != nil {
		t.Errorf("generation %d: %v", g.n, err)
	}
	for _, p := range g.plugins {
		if info := listed[p.Full()]; info.GetInstanceId() != g.ids[p.Full()] {
			t.Errorf("generation %d: healthy plugin %s lost its registration (listed: %v)", g.n, p.Full(), info)
		}
		if sd := p.Shutdowns(); len(sd) != 0 {
			t.Errorf("generation %d: healthy plugin %s was told to shut down: %v", g.n, p.Full(), sd)
		}
	}
	g.stopping.Store(true)
	s.publish(nil)
	s.n.stop()
	for _, p := range g.plugins {
		p.Stop()
	}
	g.att.detach()
	_ = g.c.cc.Close()
}

// publish makes g the generation workers use (nil: none, nrid restarts).
func (s *soak) publish(g *generation) {
	s.mu.Lock()
	s.cur = g
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// current returns the generation to use, other than old: it waits while
// nrid restarts. It returns nil once the soak is over.
func (s *soak) current(old *generation) *generation {
	for {
		s.mu.Lock()
		g, ch := s.cur, s.changed
		s.mu.Unlock()
		if s.over.Load() {
			return nil
		}
		if g != nil && g != old && !g.stopping.Load() {
			return g
		}
		<-ch
	}
}

// worker runs lifecycles until stop is closed.
func (s *soak) worker(stop <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	defer cancel()
	for {
		select {
		case <-stop:
			return
		default:
		}
		s.pause.RLock()
		ok := s.lifecycle(ctx, int(s.live.nextPod.Add(1)))
		s.pause.RUnlock()
		if ok {
			s.lifecycles.Add(1)
		}
	}
}

// lifecycle drives one pod through its lifecycle. An event that fails with
// UNAVAILABLE because nrid restarts is sent again to the next nrid.
func (s *soak) lifecycle(ctx context.Context, n int) bool {
	g := s.current(nil)
	if g == nil {
		return false
	}
	skip := map[string]bool{}
	for _, m := range lifecycleMethods {
		if skip[m] {
			continue
		}
		for {
			_, err := senders[m](ctx, g.c.adapt, n)
			if err == nil {
				s.live.apply(m, n)
				break
			}
			if status.Code(err) == codes.Unavailable && g.stopping.Load() {
				s.retried.Add(1)
				if g = s.current(g); g == nil {
					return false
				}
				continue
			}
			s.fail("generation %d, pod %d: %s: %v", g.n, n, m, clipErr(err))
			for _, later := range skipAfter[m] {
				skip[later] = true
			}
			break
		}
	}
	return true
}

// churn registers a plugin, keeps it a moment, stops it, and again, until
// stop is closed.
func (s *soak) churn(stop <-chan struct{}) {
	mask := nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_CREATE_CONTAINER,
		nriv1beta1.Event_EVENT_STOP_CONTAINER, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX)
	for {
		select {
		case <-stop:
			return
		default:
		}
		g := s.current(nil)
		if g == nil {
			return
		}
		s.pause.RLock()
		p := &testplugin.Plugin{Name: "churn", Index: "30", Events: mask}
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
		_, err := p.Start(ctx, s.n.sock, s.n.plugins)
		cancel()
		pace := 200 * time.Millisecond // the plugin's own rhythm
		switch {
		case err == nil:
			s.churns.Add(1)
			time.Sleep(pace)
			p.Stop()
		case status.Code(err) == codes.ResourceExhausted:
			s.throttled.Add(1) // nrid's registration rate limit
		case g.stopping.Load():
			s.retried.Add(1)
		default:
			s.fail("generation %d: churn registration: %v", g.n, clipErr(err))
		}
		s.pause.RUnlock()
		time.Sleep(pace)
	}
}

// sample pauses the load, waits for nrid's usage to settle, measures it and
// prints the sample line.
func (s *soak) sample(g *generation) {
	t := s.t
	s.pause.Lock()
	u := s.n.settled(t)
	rss, _, err := s.n.procMem()
	s.pause.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	sm := sample{gen: g.n, age: time.Since(g.started), rss: rss, goroutines: u.goroutines, fds: u.fds}
	s.samples = append(s.samples, sm)
	t.Logf("soak: elapsed=%-5v gen=%d pid=%d rss=%.1fMB goroutines=%d fds=%d lifecycles=%d retried=%d churns=%d throttled=%d failures=%d",
		time.Since(s.start).Round(time.Second), g.n, g.pid, float64(rss)/1e6, u.goroutines, u.fds,
		s.lifecycles.Load(), s.retried.Load(), s.churns.Load(), s.throttled.Load(), s.failures.Load())
}

// dropLogs empties the healthy plugins' call logs every second until stop
// is closed: the soak does not read them after the attach, and they would
// grow for its whole length.
func (s *soak) dropLogs(stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		g := s.cur
		s.mu.Unlock()
		if g != nil {
			for _, l := range g.logs {
				l.Reset()
			}
		}
	}
}

// fail records an unexpected failure.
func (s *soak) fail(format string, args ...any) {
	s.failures.Add(1)
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if len(s.errs) < 10 {
		s.errs = append(s.errs, fmt.Sprintf(format, args...))
	}
}

// report checks the failures and the samples.
func (s *soak) report() {
	t := s.t
	t.Logf("soak: %d lifecycles, %d events retried across restarts, %d churns (%d throttled), %d failures",
		s.lifecycles.Load(), s.retried.Load(), s.churns.Load(), s.throttled.Load(), s.failures.Load())
	for _, e := range s.errs {
		t.Errorf("unexpected failure: %s", e)
	}
	if n := s.failures.Load(); n > int64(len(s.errs)) {
		t.Errorf("%d unexpected failures in all", n)
	}
	if s.lifecycles.Load() == 0 {
		t.Error("no lifecycle completed")
	}
	// Within each process: its first sample after warm-up against its last.
	var first *sample // of the first process with a reference
	byGen := map[int][]sample{}
	var gens []int
	for _, sm := range s.samples {
		if _, ok := byGen[sm.gen]; !ok {
			gens = append(gens, sm.gen)
		}
		byGen[sm.gen] = append(byGen[sm.gen], sm)
	}
	for _, gen := range gens {
		var ref *sample
		for i := range byGen[gen] {
			if byGen[gen][i].age >= soakWarmUp {
				ref = &byGen[gen][i]
				break
			}
		}
		if ref == nil {
			continue
		}
		last := byGen[gen][len(byGen[gen])-1]
		checkGrowth(t, fmt.Sprintf("process %d, from %v to %v of age", gen, ref.age.Round(time.Second), last.age.Round(time.Second)), *ref, last)
		if first == nil {
			first = ref
		} else {
			checkGrowth(t, fmt.Sprintf("process %d against process %d, after warm-up", gen, first.gen), *first, *ref)
		}
	}
}

// checkGrowth fails the test when a measure of b is more than soakGrowth
// above a's.
func checkGrowth(t *testing.T, what string, a, b sample) {
	t.Helper()
	over := func(x, y float64) bool { return y > x*(1+soakGrowth) }
	if over(float64(a.rss), float64(b.rss)) {
		t.Errorf("%s: resident memory grew from %.1f MB to %.1f MB", what, float64(a.rss)/1e6, float64(b.rss)/1e6)
	}
	if over(float64(a.goroutines), float64(b.goroutines)) {
		t.Errorf("%s: goroutines grew from %d to %d", what, a.goroutines, b.goroutines)
	}
	if over(float64(a.fds), float64(b.fds)) {
		t.Errorf("%s: open files grew from %d to %d", what, a.fds, b.fds)
	}
}

// liveState is the runtime's pods and containers, for the snapshot of an
// attach.
type liveState struct {
	nextPod atomic.Int64
	mu      sync.Mutex
	pods    map[int]bool
	ctrs    map[int]bool
}

func newLiveState() *liveState { return &liveState{pods: map[int]bool{}, ctrs: map[int]bool{}} }

// apply records the effect of a successful event of pod n.
func (l *liveState) apply(method string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch method {
	case "RunPodSandbox":
		l.pods[n] = true
	case "CreateContainer":
		l.ctrs[n] = true
	case "RemoveContainer":
		delete(l.ctrs, n)
	case "RemovePodSandbox":
		delete(l.pods, n)
	}
}

// snapshot returns the pods and containers that exist.
func (l *liveState) snapshot() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var pods []*nriv1beta1.PodSandbox
	var ctrs []*nriv1beta1.Container
	for n := range l.pods {
		pods = append(pods, fixture.Pod(n))
	}
	for n := range l.ctrs {
		ctrs = append(ctrs, running(n))
	}
	return pods, ctrs
}
