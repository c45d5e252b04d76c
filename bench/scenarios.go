package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	api "github.com/containerd/nri/pkg/api"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Scenario names, for -only.
const (
	scCreate    = "create"
	scLifecycle = "lifecycle"
	scSync      = "sync"
	scBridge    = "bridge"
	scRSS       = "rss"
	scIsolation = "isolation"
)

// Scenarios lists every scenario in the order they run.
var Scenarios = []string{scCreate, scLifecycle, scSync, scBridge, scRSS, scIsolation, scDropin, scWasm}

// sizes are the operation counts of one mode.
type sizes struct {
	createSeq  map[int]int // calls per window (seq and conc16) by K: the plugin counts
	lifecycles int         // lifecycles per window
	bridge     int         // calls per window
	syncN      []int
	rssN       []int
	rssSettle  time.Duration
	dropin     map[int]int // the dropin scenario's calls per window by K
	dropinMemN int         // the dropin scenario's containers for its memory
	wasm       map[int]int // the wasm scenario's calls per window by K (K=0: the baseline)
}

var (
	fullSizes = sizes{
		createSeq:  map[int]int{1: 4000, 3: 1500, 8: 600, 16: 250},
		lifecycles: 400,
		bridge:     3000,
		syncN:      []int{100, 1000, 10000, 50000},
		rssN:       []int{0, 1000, 10000, 50000},
		rssSettle:  2 * time.Second,
		dropin:     map[int]int{1: 4000, 3: 1500, 8: 600},
		dropinMemN: 10000,
		wasm:       map[int]int{0: 4000, 1: 4000, 3: 1500, 8: 600},
	}
	quickSizes = sizes{
		createSeq:  map[int]int{1: 1000, 3: 400, 8: 160, 16: 60},
		lifecycles: 100,
		bridge:     1000,
		syncN:      []int{100, 1000, 10000}, // N=50,000 in full mode only
		rssN:       []int{0, 1000, 10000},
		rssSettle:  500 * time.Millisecond,
		dropin:     map[int]int{1: 300, 3: 120, 8: 50},
		dropinMemN: 2000,
		wasm:       map[int]int{0: 300, 1: 300}, // K = 3 and 8 in full mode only: each upstream load compiles the module
	}
)

// warmOf is the number of unmeasured operations before a window.
func warmOf(n int) int { return max(4, min(50, n/10)) }

// modes of a window: one caller, or 16 on distinct pods.
var modes = []struct {
	name    string
	workers int
}{{"seq", 1}, {"conc16", 16}}

// bencher runs the scenarios.
type bencher struct {
	cfg      *Config
	nridBin  string // nrid executable; "" for the nrid role
	nridDesc string
	sz       sizes
	res      *results
	pod      int // next pod number: every operation gets fresh pods
	// dropinNoGRPC says why the dropin scenario measured no gRPC plugins
	// ("" when it did).
	dropinNoGRPC string
	// wasmSkipped says why the wasm scenario measured nothing ("" when it
	// ran).
	wasmSkipped string
	logf        func(format string, args ...any)
}

func (b *bencher) pods(n int) int {
	base := b.pod
	b.pod += n
	return base
}

// sides alternates classic and nri-grpc for one run of a configuration.
func (b *bencher) alternate(what string, run int, classic, grpc func(run int) error) error {
	b.logf("%s run %d/%d: %s", what, run+1, b.cfg.Runs, sideClassic)
	if err := classic(run); err != nil {
		return fmt.Errorf("%s, %s, run %d: %w", what, sideClassic, run+1, err)
	}
	b.logf("%s run %d/%d: %s", what, run+1, b.cfg.Runs, sideGRPC)
	if err := grpc(run); err != nil {
		return fmt.Errorf("%s, %s, run %d: %w", what, sideGRPC, run+1, err)
	}
	return nil
}

func (b *bencher) env(tag string, run int) (*env, error) {
	return newEnv(b.cfg, fmt.Sprintf("%s-run%d", tag, run+1))
}

// create: CreateContainer with K plugins subscribed to it, sequential and
// with 16 concurrent callers on distinct pods.
func (b *bencher) create() error {
	for _, k := range b.createKs() {
		for run := 0; run < b.cfg.Runs; run++ {
			if err := b.alternate(fmt.Sprintf("create K=%d", k), run,
				func(run int) error { return b.createClassic(k, run) },
				func(run int) error { return b.createGRPC(k, run) }); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkAdjusted(k int, annotations map[string]string) error {
	if len(annotations) != k {
		return fmt.Errorf("adjustment carries %d annotations, want one per plugin (%d)", len(annotations), k)
	}
	return nil
}

// createWindows measures CreateContainer through create (pkg/adaptation's
// method: upstream's or the drop-in's) in every mode, n calls a window
// after the warm-up, each answer carrying the adjustment of the k plugins;
// record gets each mode's window.
func (b *bencher) createWindows(e *env, plugins procs, k, n int,
	create func(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error), record func(mode string, w window)) error {
	ctx := context.Background()
	for _, m := range modes {
		warm := warmOf(n)
		base := b.pods(n + warm)
		reqs := make([]*api.CreateContainerRequest, n+warm)
		for i := range reqs {
			pod, ctr := podContainer(base + i)
			reqs[i] = &api.CreateContainerRequest{Pod: alphaPod(pod), Container: alphaCtr(ctr)}
		}
		w, err := measure(plugins, e.windowProfile(m.name), n, warm, m.workers, func(i int) error {
			rsp, err := create(ctx, reqs[i])
			if err != nil {
				return err
			}
			return checkAdjusted(k, rsp.GetAdjust().GetAnnotations())
		})
		if err != nil {
			return err
		}
		record(m.name, w)
	}
	return nil
}

func (b *bencher) createClassic(k, run int) error {
	e, err := b.env(fmt.Sprintf("create-K%d-classic", k), run)
	if err != nil {
		return err
	}
	defer e.close()
	rt, err := newClassicRT(e, nil, nil, false)
	if err != nil {
		return err
	}
	defer rt.close()
	if err := rt.addPlugins(k, maskCreate); err != nil {
		return err
	}
	return b.createWindows(e, rt.plugins, k, b.sz.createSeq[k], rt.a.CreateContainer, func(mode string, w window) {
		b.res.window(key{scCreate, fmt.Sprintf("K=%d %s", k, mode), sideClassic}, w)
	})
}

func (b *bencher) createGRPC(k, run int) error {
	e, err := b.env(fmt.Sprintf("create-K%d-nri-grpc", k), run)
	if err != nil {
		return err
	}
	defer e.close()
	rt, err := newGRPCRT(e, nil, nil, false)
	if err != nil {
		return err
	}
	defer rt.close()
	if err := rt.addPlugins(k, maskCreate); err != nil {
		return err
	}
	if err := b.measureCreates(e, rt, k, b.sz.createSeq[k], scCreate, sideGRPC); err != nil {
		return err
	}
	if k == 1 {
		if err := b.measureFloor(e, rt, b.sz.createSeq[k]); err != nil {
			return err
		}
	}
	ctx := context.Background()
	if !b.cfg.AdaptationService {
		return nil
	}
	as, err := rt.adaptation()
	if err != nil {
		return err
	}
	for _, m := range modes {
		n := b.sz.createSeq[k]
		warm := warmOf(n)
		base := b.pods(n + warm)
		reqs := make([]*nriv1beta1.AdaptationServiceCreateContainerRequest, n+warm)
		for i := range reqs {
			pod, ctr := podContainer(base + i)
			reqs[i] = &nriv1beta1.AdaptationServiceCreateContainerRequest{Pod: pod, Container: ctr}
		}
		w, err := measure(rt.plugins, e.windowProfile("as-"+m.name), n, warm, m.workers, func(i int) error {
			rsp, err := as.CreateContainer(ctx, reqs[i])
			if err != nil {
				return err
			}
			return checkAdjusted(k, rsp.GetAdjust().GetAnnotations())
		})
		if err != nil {
			return err
		}
		b.res.window(key{scCreate, fmt.Sprintf("K=%d %s", k, m.name), sideAS}, w)
	}
	return nil
}

// createRequests builds n CreateContainer requests, each on a pod of its
// own that no earlier window used.
func (b *bencher) createRequests(n int) []*nriv1beta1.CreateContainerRequest {
	base := b.pods(n)
	reqs := make([]*nriv1beta1.CreateContainerRequest, n)
	for i := range reqs {
		pod, ctr := podContainer(base + i)
		reqs[i] = &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr}
	}
	return reqs
}

// measureCreates measures n CreateContainer calls through rt's embedded
// server in each mode, k plugins adjusting each, and records the windows
// as scenario's "K=k mode" rows on side.
func (b *bencher) measureCreates(e *env, rt *grpcRT, k, n int, scenario, side string) error {
	ctx := context.Background()
	for _, m := range modes {
		warm := warmOf(n)
		reqs := b.createRequests(n + warm)
		w, err := measure(rt.plugins, e.windowProfile(m.name), n, warm, m.workers, func(i int) error {
			rsp, err := rt.srv.CreateContainer(ctx, reqs[i])
			if err != nil {
				return err
			}
			return checkAdjusted(k, rsp.GetAdjust().GetAnnotations())
		})
		if err != nil {
			return err
		}
		b.res.window(key{scenario, fmt.Sprintf("K=%d %s", k, m.name), side}, w)
	}
	return nil
}

// lifecycle: a pod with one container through its 11 events, with K
// plugins subscribed to all of them; sequential and 16 pods at once.
func (b *bencher) lifecycle() error {
	for run := 0; run < b.cfg.Runs; run++ {
		if err := b.alternate(fmt.Sprintf("lifecycle K=%d", b.cfg.LifecycleK), run, b.lifecycleClassic, b.lifecycleGRPC); err != nil {
			return err
		}
	}
	return nil
}

func (b *bencher) lifecycleConfig(mode string) string {
	return fmt.Sprintf("K=%d %s", b.cfg.LifecycleK, mode)
}

type alphaLife struct {
	pod *api.PodSandbox
	ctr *api.Container
	res *api.LinuxResources
}

func (b *bencher) lifecycleClassic(run int) error {
	k := b.cfg.LifecycleK
	e, err := b.env("lifecycle-classic", run)
	if err != nil {
		return err
	}
	defer e.close()
	rt, err := newClassicRT(e, nil, nil, false)
	if err != nil {
		return err
	}
	defer rt.close()
	if err := rt.addPlugins(k, maskLifecycle); err != nil {
		return err
	}
	ctx := context.Background()
	a := rt.a
	for _, m := range modes {
		n := b.sz.lifecycles
		warm := warmOf(n)
		base := b.pods(n + warm)
		ls := make([]alphaLife, n+warm)
		for i := range ls {
			pod, ctr := podContainer(base + i)
			ls[i] = alphaLife{alphaPod(pod), alphaCtr(ctr), convert(updateResources(ctr), &api.LinuxResources{})}
		}
		w, err := measure(rt.plugins, e.windowProfile(m.name), n, warm, m.workers, func(i int) error {
			l := ls[i]
			if err := a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: l.pod}); err != nil {
				return err
			}
			rsp, err := a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: l.pod, Container: l.ctr})
			if err != nil {
				return err
			}
			if err := checkAdjusted(k, rsp.GetAdjust().GetAnnotations()); err != nil {
				return err
			}
			if err := a.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: l.pod, Container: l.ctr}); err != nil {
				return err
			}
			if err := a.StartContainer(ctx, &api.StartContainerRequest{Pod: l.pod, Container: l.ctr}); err != nil {
				return err
			}
			if err := a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: l.pod, Container: l.ctr}); err != nil {
				return err
			}
			if _, err := a.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: l.pod, Container: l.ctr, LinuxResources: l.res}); err != nil {
				return err
			}
			if err := a.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: l.pod, Container: l.ctr}); err != nil {
				return err
			}
			if _, err := a.StopContainer(ctx, &api.StopContainerRequest{Pod: l.pod, Container: l.ctr}); err != nil {
				return err
			}
			if err := a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: l.pod, Container: l.ctr}); err != nil {
				return err
			}
			if err := a.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: l.pod}); err != nil {
				return err
			}
			return a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: l.pod})
		})
		if err != nil {
			return err
		}
		b.res.window(key{scLifecycle, b.lifecycleConfig(m.name), sideClassic}, w)
	}
	return nil
}

type betaLife struct {
	pod *nriv1beta1.PodSandbox
	ctr *nriv1beta1.Container
	res *nriv1beta1.LinuxResources
}

// notified turns the plugin errors of a notification into an error.
func notified(what string) func([]*nriv1beta1.PluginError, error) error {
	return func(errs []*nriv1beta1.PluginError, err error) error {
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s: plugin errors %v", what, errs)
		}
		return nil
	}
}

func (b *bencher) lifecycleGRPC(run int) error {
	k := b.cfg.LifecycleK
	e, err := b.env("lifecycle-nri-grpc", run)
	if err != nil {
		return err
	}
	defer e.close()
	rt, err := newGRPCRT(e, nil, nil, false)
	if err != nil {
		return err
	}
	defer rt.close()
	if err := rt.addPlugins(k, maskLifecycle); err != nil {
		return err
	}
	ctx := context.Background()
	s := rt.srv
	for _, m := range modes {
		n := b.sz.lifecycles
		warm := warmOf(n)
		base := b.pods(n + warm)
		ls := make([]betaLife, n+warm)
		for i := range ls {
			pod, ctr := podContainer(base + i)
			ls[i] = betaLife{pod, ctr, updateResources(ctr)}
		}
		w, err := measure(rt.plugins, e.windowProfile(m.name), n, warm, m.workers, func(i int) error {
			l := ls[i]
			if err := s.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: l.pod}); err != nil {
				return err
			}
			rsp, err := s.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: l.pod, Container: l.ctr})
			if err != nil {
				return err
			}
			if err := checkAdjusted(k, rsp.GetAdjust().GetAnnotations()); err != nil {
				return err
			}
			if err := notified("PostCreateContainer")(s.PostCreateContainer(ctx, &nriv1beta1.PostCreateContainerRequest{Pod: l.pod, Container: l.ctr})); err != nil {
				return err
			}
			if err := s.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: l.pod, Container: l.ctr}); err != nil {
				return err
			}
			if err := notified("PostStartContainer")(s.PostStartContainer(ctx, &nriv1beta1.PostStartContainerRequest{Pod: l.pod, Container: l.ctr})); err != nil {
				return err
			}
			if _, err := s.UpdateContainer(ctx, &nriv1beta1.UpdateContainerRequest{Pod: l.pod, Container: l.ctr, LinuxResources: l.res}); err != nil {
				return err
			}
			if err := notified("PostUpdateContainer")(s.PostUpdateContainer(ctx, &nriv1beta1.PostUpdateContainerRequest{Pod: l.pod, Container: l.ctr})); err != nil {
				return err
			}
			stop, err := s.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: l.pod, Container: l.ctr})
			if err := notified("StopContainer")(stop.GetPluginErrors(), err); err != nil {
				return err
			}
			if err := notified("RemoveContainer")(s.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: l.pod, Container: l.ctr})); err != nil {
				return err
			}
			if err := notified("StopPodSandbox")(s.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: l.pod})); err != nil {
				return err
			}
			return notified("RemovePodSandbox")(s.RemovePodSandbox(ctx, &nriv1beta1.RemovePodSandboxRequest{Pod: l.pod}))
		})
		if err != nil {
			return err
		}
		b.res.window(key{scLifecycle, b.lifecycleConfig(m.name), sideGRPC}, w)
	}
	return nil
}

// sync: a new plugin registering with N existing containers: the time
// until it is synchronized (it decoded the whole state and the runtime
// dispatches to it) and the Synchronize bytes the runtime encoded.
func (b *bencher) sync() error {
	for _, n := range b.sz.syncN {
		st := newState(n)
		for run := 0; run < b.cfg.Runs; run++ {
			if err := b.alternate(fmt.Sprintf("sync N=%d", n), run,
				func(run int) error { return b.syncClassic(st, n, run) },
				func(run int) error { return b.syncGRPC(st, n, run) }); err != nil {
				return err
			}
		}
	}
	return nil
}

func syncConfig(n int) string { return fmt.Sprintf("N=%d", n) }

// timed measures the CPU and wall time of f, with a driver profile.
func timed(ps procs, profile string, f func() error) (wall, cpu time.Duration, err error) {
	runtime.GC()
	m := cpuMeter{ps}
	c0, _, err := m.read()
	if err != nil {
		return 0, 0, err
	}
	var prof *os.File
	if profile != "" {
		pf, err := os.Create(profile)
		if err != nil {
			return 0, 0, err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			_ = pf.Close() // StartCPUProfile's error is the one to report
			return 0, 0, err
		}
		prof = pf
	}
	start := time.Now()
	err = f()
	wall = time.Since(start)
	if prof != nil {
		pprof.StopCPUProfile()
		if cerr := prof.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("CPU profile: %w", cerr)
		}
	}
	if err != nil {
		return 0, 0, err
	}
	c1, _, err := m.read()
	return wall, c1 - c0, err
}

func expectSynced(p *proc, want int) error {
	f, err := p.expect("synced")
	if err != nil {
		return err
	}
	if len(f) != 1 || f[0] != fmt.Sprint(want) {
		return fmt.Errorf("the plugin synchronized %v objects, want %d", f, want)
	}
	return nil
}

func (b *bencher) recordSync(n int, side string, st *state, wall, cpu time.Duration, bytes int64) {
	k := key{scSync, syncConfig(n), side}
	b.res.add(k, mTime, wall.Seconds())
	b.res.add(k, mSCPU, cpu.Seconds())
	b.res.add(k, mBytes, float64(bytes))
	b.res.add(k, mState, float64(st.size))
}

func (b *bencher) syncClassic(st *state, n, run int) error {
	e, err := b.env(fmt.Sprintf("sync-N%d-classic", n), run)
	if err != nil {
		return err
	}
	defer e.close()
	pods, ctrs := st.alpha()
	rt, err := newClassicRT(e, pods, ctrs, true)
	if err != nil {
		return err
	}
	defer rt.close()
	p, err := rt.startPlugin(0, maskCreate)
	if err != nil {
		return err
	}
	wall, cpu, err := timed(rt.plugins, e.windowProfile("sync"), func() error {
		if err := p.send("go"); err != nil {
			return err
		}
		if err := expectSynced(p, len(pods)+len(ctrs)); err != nil {
			return err
		}
		rt.settled()
		return nil
	})
	if err != nil {
		return err
	}
	b.recordSync(n, sideClassic, st, wall, cpu, rt.syncBytes.Load())
	return nil
}

func (b *bencher) syncGRPC(st *state, n, run int) error {
	e, err := b.env(fmt.Sprintf("sync-N%d-nri-grpc", n), run)
	if err != nil {
		return err
	}
	defer e.close()
	pods, ctrs := st.beta()
	rt, err := newGRPCRT(e, pods, ctrs, true)
	if err != nil {
		return err
	}
	defer rt.close()
	p, err := rt.startPlugin(0, maskCreate)
	if err != nil {
		return err
	}
	wall, cpu, err := timed(rt.plugins, e.windowProfile("sync"), func() error {
		if err := p.send("go"); err != nil {
			return err
		}
		if err := expectSynced(p, len(pods)+len(ctrs)); err != nil {
			return err
		}
		_, err := p.expect("registered")
		return err
	})
	if err != nil {
		return err
	}
	b.recordSync(n, sideGRPC, st, wall, cpu, rt.syncBytes.n.Load())
	return nil
}

// bridge: a classic runtime's CreateContainer through nrid to one gRPC
// plugin, against the same runtime with one classic plugin.
func (b *bencher) bridge() error {
	for run := 0; run < b.cfg.Runs; run++ {
		b.logf("bridge run %d/%d: %s", run+1, b.cfg.Runs, sideDirect)
		if err := b.bridgeRun(run, false); err != nil {
			return fmt.Errorf("bridge, %s, run %d: %w", sideDirect, run+1, err)
		}
		b.logf("bridge run %d/%d: %s", run+1, b.cfg.Runs, sideBridge)
		if err := b.bridgeRun(run, true); err != nil {
			return fmt.Errorf("bridge, %s, run %d: %w", sideBridge, run+1, err)
		}
	}
	return nil
}

// startNrid starts nrid attached to a classic runtime and waits until the
// runtime dispatches to it.
func (b *bencher) startNrid(e *env, rt *classicRT) (nrid *proc, sock, dir string, err error) {
	if b.nridBin != "" {
		nrid, sock, dir, err = startRealNrid(e, b.nridBin, rt.sock)
		if err != nil {
			return nil, "", "", err
		}
		rt.plugins = append(rt.plugins, nrid)
		rt.settled()
		return nrid, sock, dir, nil
	}
	sock = filepath.Join(e.dir, "nrid.sock")
	dir = filepath.Join(e.dir, "nrid-plugins")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, "", "", err
	}
	args := append([]string{"-runtime-socket", rt.sock, "-socket", sock, "-dir", dir}, e.profArgs("nrid")...)
	nrid, err = startProc("nrid", roleNrid, e.cfg.Verbose, args...)
	if err != nil {
		return nil, "", "", err
	}
	rt.plugins = append(rt.plugins, nrid)
	if err := nrid.send("go"); err != nil {
		return nil, "", "", err
	}
	if _, err := nrid.expect("attached"); err != nil {
		return nil, "", "", err
	}
	rt.settled()
	return nrid, sock, dir, nil
}

func (b *bencher) bridgeRun(run int, viaNrid bool) error {
	side, tag := sideDirect, "bridge-direct"
	if viaNrid {
		side, tag = sideBridge, "bridge-nrid"
	}
	e, err := b.env(tag, run)
	if err != nil {
		return err
	}
	defer e.close()
	rt, err := newClassicRT(e, nil, nil, false)
	if err != nil {
		return err
	}
	defer rt.close()
	if viaNrid {
		_, sock, dir, err := b.startNrid(e, rt)
		if err != nil {
			return err
		}
		p, err := startGRPCPlugin(e, sock, dir, 0, maskCreate, &rt.plugins)
		if err != nil {
			return err
		}
		if err := connectGRPC(p); err != nil {
			return err
		}
	} else if err := rt.addPlugins(1, maskCreate); err != nil {
		return err
	}
	ctx := context.Background()
	n := b.sz.bridge
	warm := warmOf(n)
	base := b.pods(n + warm)
	reqs := make([]*api.CreateContainerRequest, n+warm)
	for i := range reqs {
		pod, ctr := podContainer(base + i)
		reqs[i] = &api.CreateContainerRequest{Pod: alphaPod(pod), Container: alphaCtr(ctr)}
	}
	w, err := measure(rt.plugins, e.windowProfile("seq"), n, warm, 1, func(i int) error {
		rsp, err := rt.a.CreateContainer(ctx, reqs[i])
		if err != nil {
			return err
		}
		return checkAdjusted(1, rsp.GetAdjust().GetAnnotations())
	})
	if err != nil {
		return err
	}
	b.res.window(key{scBridge, "K=1 seq", side}, w)
	return nil
}

// rss: the resident memory of nrid attached to a classic runtime with N
// containers, which the server caches.
func (b *bencher) rss() error {
	states := map[int]*state{}
	for _, n := range b.sz.rssN {
		states[n] = newState(n)
	}
	for run := 0; run < b.cfg.Runs; run++ {
		for _, n := range b.sz.rssN {
			b.logf("rss N=%d run %d/%d", n, run+1, b.cfg.Runs)
			if err := b.rssRun(states[n], n, run); err != nil {
				return fmt.Errorf("rss N=%d, run %d: %w", n, run+1, err)
			}
		}
	}
	return nil
}

func (b *bencher) rssRun(st *state, n, run int) error {
	e, err := b.env(fmt.Sprintf("rss-N%d", n), run)
	if err != nil {
		return err
	}
	defer e.close()
	pods, ctrs := st.alpha()
	rt, err := newClassicRT(e, pods, ctrs, false)
	if err != nil {
		return err
	}
	defer rt.close()
	nrid, _, _, err := b.startNrid(e, rt)
	if err != nil {
		return err
	}
	time.Sleep(b.sz.rssSettle)
	m, err := nrid.memory()
	if err != nil {
		return err
	}
	k := key{scRSS, fmt.Sprintf("N=%d", n), "nrid"}
	b.res.add(k, mRSS, float64(m.rss))
	b.res.add(k, mHWM, float64(m.hwm))
	if m.heap >= 0 {
		b.res.add(k, mHeap, float64(m.heap))
		b.res.add(k, mLive, float64(m.live))
	}
	b.res.add(k, mState, float64(st.size))
	return nil
}
