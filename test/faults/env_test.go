package faults_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/internal/testwait"
)

// The plugins of a fault test, in dispatch order: a healthy plugin before
// the misbehaving one and another after it.
const (
	firstName = "01-first"
	badName   = "10-bad"
	lastName  = "20-last"
)

// Size of the lifecycle load: pods, and how many run at once.
const (
	loadPods    = 8
	loadWorkers = 4
)

// env is one fault test's world: a real nrid, a runtime connection, the
// two healthy plugins registered and a baseline of nrid's usage taken after
// a warm-up load.
type env struct {
	t       *testing.T
	n       *nrid
	c       *client
	log     *testplugin.Log
	healthy []*testplugin.Plugin
	ids     map[string]string // instance id of each healthy plugin
	nextPod *atomic.Int64     // last pod number used; shared with the subtests' views
	base    usage
}

// newEnv starts nrid with cfg, registers the healthy plugins, runs a warm-up
// load and takes the baseline.
func newEnv(t *testing.T, cfg config) *env {
	t.Helper()
	n := startNrid(t, cfg)
	e := &env{t: t, n: n, c: n.dial(t), log: testplugin.NewLog(), ids: map[string]string{}, nextPod: new(atomic.Int64)}
	for _, p := range []*testplugin.Plugin{healthyPlugin("01", "first", e.log), healthyPlugin("20", "last", e.log)} {
		reg := register(t, n, p)
		e.healthy = append(e.healthy, p)
		e.ids[p.Full()] = reg.GetInstanceId()
	}
	runs := e.load(2)
	checkNoFailures(t, runs)
	e.checkHealthy(runs)
	e.base = n.settled(t)
	t.Logf("baseline: %v", e.base)
	return e
}

// with returns a view of the environment for a subtest.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// ctx returns a context bounded by the test binary's deadline.
func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Bound())
	e.t.Cleanup(cancel)
	return ctx
}

// pods returns k pod numbers never used before in this test.
func (e *env) pods(k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = int(e.nextPod.Add(1))
	}
	return out
}

// load runs the lifecycles of k new pods, loadWorkers at a time.
func (e *env) load(k int, omit ...string) []podRun {
	start := time.Now()
	runs := load(e.ctx(), e.c.adapt, e.pods(k), loadWorkers, omit...)
	e.t.Logf("load of %d pods: %v", k, time.Since(start).Round(time.Millisecond))
	return runs
}

// goLoad runs load in the background; the channel delivers its runs.
func (e *env) goLoad(k int, omit ...string) <-chan []podRun {
	pods := e.pods(k)
	ctx := e.ctx()
	out := make(chan []podRun, 1)
	go func() { out <- load(ctx, e.c.adapt, pods, loadWorkers, omit...) }()
	return out
}

// goLoadUntil runs lifecycles of new pods, loadWorkers at a time, until
// stop is closed; the channel delivers every run.
func (e *env) goLoadUntil(stop <-chan struct{}) <-chan []podRun {
	ctx := e.ctx()
	out := make(chan []podRun, 1)
	go func() {
		var (
			mu   sync.Mutex
			runs []podRun
			wg   sync.WaitGroup
		)
		for range loadWorkers {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					r := lifecycle(ctx, e.c.adapt, e.pods(1)[0])
					mu.Lock()
					runs = append(runs, r)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		out <- runs
	}()
	return out
}

// checkHealthy asserts that the healthy plugins received every event of
// runs that reached them exactly once and in each pod's order, and that
// they are still registered as the same instances, never told to shut down.
func (e *env) checkHealthy(runs []podRun) {
	e.t.Helper()
	checkDelivery(e.t, e.log, runs, firstName, lastName)
	listed, err := e.c.plugins(e.ctx())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range e.healthy {
		info := listed[p.Full()]
		switch {
		case info == nil:
			e.t.Errorf("healthy plugin %s is no longer registered", p.Full())
		case info.GetInstanceId() != e.ids[p.Full()]:
			e.t.Errorf("healthy plugin %s is instance %s, registered as %s", p.Full(), info.GetInstanceId(), e.ids[p.Full()])
		case info.GetState() != nriv1beta1.PluginState_PLUGIN_STATE_READY:
			e.t.Errorf("healthy plugin %s is %v", p.Full(), info.GetState())
		}
		if sd := p.Shutdowns(); len(sd) != 0 {
			e.t.Errorf("healthy plugin %s was told to shut down: %v", p.Full(), sd)
		}
	}
}

// attachRuntime attaches the runtime, with no pods, and returns once the
// attach took effect: nrid resynchronized the healthy plugins. (Events sent
// before that could be erased by the attach's older snapshot.)
func (e *env) attachRuntime() *attachment {
	e.t.Helper()
	a, err := attach(e.c, func() ([]*nriv1beta1.PodSandbox, []*nriv1beta1.Container) { return nil, nil })
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(a.detach)
	for _, p := range e.healthy {
		if err := e.log.WaitFor(e.ctx(), p.Full()+":Synchronize", 2); err != nil {
			e.t.Fatalf("the attach never resynchronized %s: %v", p.Full(), err)
		}
	}
	return a
}

// listed returns the registration of a plugin, nil if it is not listed.
func (e *env) listed(full string) *nriv1beta1.PluginInfo {
	e.t.Helper()
	listed, err := e.c.plugins(e.ctx())
	if err != nil {
		e.t.Fatal(err)
	}
	return listed[full]
}

// checkStays asserts that p is still registered as the instance reg, and
// was never told to shut down.
func (e *env) checkStays(p *testplugin.Plugin, reg *nriv1beta1.Registered) {
	e.t.Helper()
	info := e.listed(p.Full())
	if info == nil || info.GetInstanceId() != reg.GetInstanceId() {
		e.t.Errorf("%s should still be registered as %s; listed: %v", p.Full(), reg.GetInstanceId(), info)
	}
	if sd := p.Shutdowns(); len(sd) != 0 {
		e.t.Errorf("%s was told to shut down: %v", p.Full(), sd)
	}
}

// waitEvicted waits until p's registration session ended and nrid no
// longer lists it. When kind is not UNSPECIFIED, p must have been told so
// with Shutdown.
func (e *env) waitEvicted(p *testplugin.Plugin, kind nriv1beta1.ShutdownKind) {
	e.t.Helper()
	select {
	case err := <-p.SessionEnded():
		e.t.Logf("%s's session ended: %v", p.Full(), clipErr(err))
	case <-e.ctx().Done():
		e.t.Fatalf("%s was not disconnected", p.Full())
	}
	e.waitUnlisted(p.Full())
	if kind == nriv1beta1.ShutdownKind_SHUTDOWN_KIND_UNSPECIFIED {
		return
	}
	sd := p.Shutdowns()
	if !slices.ContainsFunc(sd, func(r *nriv1beta1.ShutdownRequest) bool { return r.GetKind() == kind }) {
		e.t.Errorf("%s was not told %v; shutdowns: %v", p.Full(), kind, sd)
	}
}

// waitUnlisted waits until nrid no longer lists the plugin.
func (e *env) waitUnlisted(full string) {
	e.t.Helper()
	ctx := e.ctx()
	for e.listed(full) != nil {
		select {
		case <-ctx.Done():
			e.t.Fatalf("%s is still listed: %v", full, e.listed(full))
		case <-time.After(20 * time.Millisecond): // poll interval, not a bound
		}
	}
}

// finish stops the misbehaving plugins, waits until nrid no longer lists
// them, and asserts that nrid's goroutines and open files came back to the
// baseline.
func (e *env) finish(bad ...*testplugin.Plugin) {
	e.t.Helper()
	for _, p := range bad {
		p.Stop()
		e.waitUnlisted(p.Full())
	}
	e.n.backToBaseline(e.t, e.base)
}

// badPlugin returns the misbehaving plugin's skeleton: "10-bad", between
// the healthy plugins, recording in the same log. It asks for a long
// timeout and concurrent calls, so that what it does wrong on purpose, not
// a loaded machine, decides the outcome; a test about timeouts sets
// Timeouts back to nil (nrid's 300 ms default).
func (e *env) badPlugin(events int32) *testplugin.Plugin {
	return &testplugin.Plugin{Name: "bad", Index: "10", Log: e.log, Events: events,
		Capabilities: &nriv1beta1.Capabilities{MaxConcurrentCalls: 4},
		Timeouts:     &nriv1beta1.Timeouts{Request: durationpb.New(time.Minute)}}
}
