package bench

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The dropin scenario: the pkg/adaptation drop-in
// (github.com/nri-grpc/nri-grpc/adaptation) driven exactly as containerd
// drives upstream pkg/adaptation, beside upstream in the same run, through
// one interface (adaptationAPI).

// scDropin is the scenario's name (-only dropin); scDropinMem keys its
// memory rows.
const (
	scDropin    = "dropin"
	scDropinMem = "dropin-memory"
)

// The dropin scenario's sides.
const (
	sideUpstream      = "upstream, classic plugins"
	sideDropinClassic = "drop-in, classic plugins"
	sideDropinGRPC    = "drop-in, gRPC plugins"
	sideMemUpstream   = "upstream"
	sideMemDropin     = "drop-in"
)

// Memory metrics of the dropin scenario (besides mRSS, mHWM, mLive: after).
const (
	mRSSBase   = "rss base"
	mRSSDelta  = "rss delta"
	mLiveDelta = "live delta"
)

// The dropin scenario's targets (issue 29): ratios against upstream
// pkg/adaptation with classic plugins, same run, medians of 3.
const (
	targetDropinClassic = 1.0 // calls/s, classic plugins, seq, at every K: at least
	targetDropinGRPC    = 1.2 // calls/s, gRPC plugins, seq, at every K: at least
	targetDropinConc16  = 3.0 // calls/s, gRPC plugins, 16 callers, at every K: at least
	targetDropinMemory  = 1.2 // the runtime process's VmRSS with the containers: at most
)

// dropinKs are the plugin counts of the dropin scenario, ascending.
func (b *bencher) dropinKs() []int { return slices.Sorted(maps.Keys(b.sz.dropin)) }

// dropin runs CreateContainer with K classic plugins on upstream and on the
// drop-in and K gRPC plugins on the drop-in, alternating run by run, then
// the memory of a runtime process with N containers on either.
func (b *bencher) dropin() error {
	if dropinStandIn {
		b.dropinNoGRPC = "the drop-in is a stand-in"
		b.logf("dropin: the drop-in is a STAND-IN (upstream pkg/adaptation on both sides; gRPC plugin rows skipped)")
	}
	for _, k := range b.dropinKs() {
		for run := 0; run < b.cfg.Runs; run++ {
			what := fmt.Sprintf("dropin K=%d", k)
			sides := []struct {
				side, impl string
				grpc       bool
			}{{sideUpstream, implUpstream, false}, {sideDropinClassic, implDropin, false}, {sideDropinGRPC, implDropin, true}}
			for _, s := range sides {
				if s.grpc && b.dropinNoGRPC != "" {
					continue
				}
				b.logf("%s run %d/%d: %s", what, run+1, b.cfg.Runs, s.side)
				err := b.dropinCreate(s.impl, s.side, s.grpc, k, run)
				if errors.Is(err, errNoGRPCSocket) {
					b.dropinNoGRPC = err.Error()
					b.logf("dropin: %v: its gRPC plugin rows are skipped", err)
					continue
				}
				if err != nil {
					return fmt.Errorf("%s, %s, run %d: %w", what, s.side, run+1, err)
				}
			}
		}
	}
	n := b.sz.dropinMemN
	for run := 0; run < b.cfg.Runs; run++ {
		for _, s := range []struct{ side, impl string }{{sideMemUpstream, implUpstream}, {sideMemDropin, implDropin}} {
			b.logf("dropin memory N=%d run %d/%d: %s", n, run+1, b.cfg.Runs, s.side)
			if err := b.dropinMemory(s.impl, s.side, n, run); err != nil {
				return fmt.Errorf("dropin memory N=%d, %s, run %d: %w", n, s.side, run+1, err)
			}
		}
	}
	return nil
}

// errNoGRPCSocket is the drop-in serving no gRPC socket after Start.
var errNoGRPCSocket = errors.New("the drop-in serves no gRPC socket at its configured [server] socket")

// adaptRT is an implementation of the pkg/adaptation API in the driver,
// with plugin processes.
type adaptRT struct {
	e       *env
	paths   adaptationPaths
	nri     runtimeNRI
	plugins procs
}

// newAdaptRT creates and starts impl as containerd does.
func newAdaptRT(e *env, impl string) (*adaptRT, error) {
	r := &adaptRT{e: e, paths: adaptationPathsIn(e.dir)}
	if err := r.paths.prepare(); err != nil {
		return nil, err
	}
	nri, err := newRuntimeNRI(impl, r.paths)
	if err != nil {
		return nil, err
	}
	if err := nri.Start(); err != nil {
		return nil, fmt.Errorf("%s: Start: %w", impl, err)
	}
	r.nri = nri
	return r, nil
}

// addClassic connects k classic plugins to the runtime's socket, one after
// the other, each dispatched to before the next.
func (r *adaptRT) addClassic(k int, events uint32) error {
	for i := 0; i < k; i++ {
		p, err := startClassicPlugin(r.e, r.paths.socket, i, events, &r.plugins)
		if err != nil {
			return err
		}
		if err := p.send("go"); err != nil {
			return err
		}
		if _, err := p.expect("synced"); err != nil {
			return err
		}
		if err := r.nri.waitPlugins(i + 1); err != nil {
			return err
		}
	}
	return nil
}

// addGRPC registers k gRPC plugins on the drop-in's gRPC socket, one after
// the other.
func (r *adaptRT) addGRPC(k int, events uint32) error {
	for i := 0; i < k; i++ {
		p, err := startGRPCPlugin(r.e, r.paths.grpcSocket, r.paths.pluginSocketDir, i, events, &r.plugins)
		if err != nil {
			return err
		}
		if err := connectGRPC(p); err != nil {
			return err
		}
		if err := r.nri.waitPlugins(i + 1); err != nil {
			return err
		}
	}
	return nil
}

func (r *adaptRT) close() {
	r.plugins.stop()
	if r.nri.adaptationAPI != nil {
		r.nri.Stop()
	}
}

// dropinCreate measures CreateContainer through impl with k plugins
// (classic, or gRPC on the drop-in), seq and conc16.
func (b *bencher) dropinCreate(impl, side string, grpcPlugins bool, k, run int) error {
	e, err := b.env(fmt.Sprintf("dropin-K%d-%s", k, side), run)
	if err != nil {
		return err
	}
	defer e.close()
	rt, err := newAdaptRT(e, impl)
	if err != nil {
		return err
	}
	defer rt.close()
	if grpcPlugins {
		if _, serr := os.Stat(rt.paths.grpcSocket); serr != nil {
			return fmt.Errorf("%w (%v)", errNoGRPCSocket, serr)
		}
		err = rt.addGRPC(k, maskCreate)
	} else {
		err = rt.addClassic(k, maskCreate)
	}
	if err != nil {
		return err
	}
	return b.createWindows(e, rt.plugins, k, b.sz.dropin[k], rt.nri.CreateContainer, func(mode string, w window) {
		b.res.window(key{scDropin, createConfig(k, mode), side}, w)
	})
}

// dropinMemConfig is the memory rows' configuration.
func dropinMemConfig(n int) string { return fmt.Sprintf("N=%d K=1", n) }

// dropinMemory measures a runtime process (the runtime role: impl alone in
// a process, started as containerd starts it) with one classic plugin
// subscribed to CreateContainer: its memory after Start and the plugin's
// connection (the baseline), and after n containers went through their
// create and start events; both after a collection that returns freed
// memory to the system.
func (b *bencher) dropinMemory(impl, side string, n, run int) error {
	e, err := b.env("dropin-memory-"+impl, run)
	if err != nil {
		return err
	}
	defer e.close()
	paths := adaptationPathsIn(e.dir)
	if err := paths.prepare(); err != nil {
		return err
	}
	var ps procs
	defer func() { ps.stop() }()
	rt, err := startProc("runtime "+impl, roleRuntime, e.cfg.Verbose, append([]string{"-impl", impl, "-dir", e.dir}, e.profArgs("runtime")...)...)
	if err != nil {
		return err
	}
	ps = append(ps, rt)
	if err := rt.send("go"); err != nil {
		return err
	}
	if _, err := rt.expect("started"); err != nil {
		return err
	}
	p, err := startClassicPlugin(e, paths.socket, 0, maskCreate, &ps)
	if err != nil {
		return err
	}
	if err := p.send("go"); err != nil {
		return err
	}
	if _, err := p.expect("synced"); err != nil {
		return err
	}
	if f, err := rt.request("settle"); err != nil {
		return err
	} else if len(f) == 0 || f[0] != "ok" {
		return fmt.Errorf("%s: %s", rt.name, strings.Join(f, " "))
	}
	base, err := runtimeMemory(rt, "")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := rt.send(fmt.Sprintf("create %d 1 %d", n, b.pods((n+1)/2))); err != nil {
		return err
	}
	f, err := rt.expect("created")
	if err != nil {
		return err
	}
	if len(f) == 0 || f[0] != "ok" {
		return fmt.Errorf("creating %d containers: %s", n, strings.Join(f, " "))
	}
	b.logf("dropin memory: %d containers created in %.1fs", n, time.Since(start).Seconds())
	after, err := runtimeMemory(rt, e.heapProfile("runtime"))
	if err != nil {
		return err
	}
	k := key{scDropinMem, dropinMemConfig(n), side}
	b.res.add(k, mRSSBase, float64(base.rss))
	b.res.add(k, mRSS, float64(after.rss))
	b.res.add(k, mRSSDelta, float64(after.rss-base.rss))
	b.res.add(k, mHWM, float64(after.hwm))
	b.res.add(k, mLive, float64(after.live))
	b.res.add(k, mLiveDelta, float64(after.live-base.live))
	return nil
}

// runtimeMemory asks the runtime role for its settled memory, in bytes,
// and to write its heap profile to heapProfile if set.
func runtimeMemory(p *proc, heapProfile string) (memory, error) {
	cmd := "mem"
	if heapProfile != "" {
		cmd += " " + heapProfile
	}
	if err := p.send(cmd); err != nil {
		return memory{}, err
	}
	f, err := p.expect("mem")
	if err != nil {
		return memory{}, err
	}
	if len(f) != 3 {
		return memory{}, fmt.Errorf("%s: bad mem answer %v", p.name, f)
	}
	var v [3]int64
	for i := range f {
		if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return memory{}, err
		}
	}
	return memory{rss: v[0] << 10, hwm: v[1] << 10, heap: -1, live: v[2]}, nil
}

// dropinReport prints the dropin scenario's two tables.
func (b *bencher) dropinReport(w io.Writer) {
	r := b.res
	title := "dropin — CreateContainer through the pkg/adaptation API, containerd's way: upstream pkg/adaptation and the drop-in, K plugins"
	if dropinStandIn {
		title += " [the drop-in is a STAND-IN: upstream pkg/adaptation]"
	} else if b.dropinNoGRPC != "" {
		title += " [no gRPC plugins: " + b.dropinNoGRPC + "]"
	}
	r.table(w, scDropin, title, callCols(), "vs "+sideUpstream, func(k key) string {
		if k.side == sideUpstream {
			return ""
		}
		ops, _ := r.ratio(scDropin, k.config, k.side, sideUpstream, mOps)
		cpu, _ := r.ratio(scDropin, k.config, k.side, sideUpstream, mCPU)
		return fmt.Sprintf("%s calls/s, %s CPU", fmtRatio(ops), fmtRatio(cpu))
	})
	r.table(w, scDropinMem, "dropin memory — the runtime process (the pkg/adaptation implementation alone, one classic plugin) before and after N containers were created and started; settled: after a GC that returned freed memory",
		[]column{
			{"VmRSS after (min..max)", mRSS, fmtBytes, true},
			{"VmRSS baseline", mRSSBase, fmtBytes, false},
			{"VmRSS − baseline", mRSSDelta, fmtBytes, false},
			{"VmHWM", mHWM, fmtBytes, false},
			{"live heap after", mLive, fmtBytes, false},
			{"live heap − baseline", mLiveDelta, fmtBytes, false},
		}, "vs "+sideMemUpstream, func(k key) string {
			if k.side == sideMemUpstream {
				return ""
			}
			v, _ := r.ratio(scDropinMem, k.config, k.side, sideMemUpstream, mRSS)
			d, _ := r.median(k, mRSSDelta)
			return fmt.Sprintf("%s VmRSS (%s per container)", fmtRatio(v), fmtBytes(d/float64(max(b.sz.dropinMemN, 1))))
		})
}

// dropinSummary adds the dropin targets: each calls/s target holds at
// every K (its mark judges the smallest ratio).
func (b *bencher) dropinSummary(add func(string)) {
	r := b.res
	ratios := func(side, mode string) (string, float64, bool) {
		var parts []string
		worst := math.Inf(1)
		for _, k := range b.dropinKs() {
			v, ok := r.ratio(scDropin, createConfig(k, mode), side, sideUpstream, mOps)
			if !ok {
				return "", 0, false
			}
			parts = append(parts, fmtRatio(v))
			worst = min(worst, v)
		}
		if len(parts) == 0 {
			return "", 0, false
		}
		return strings.Join(parts, "/"), worst, true
	}
	ks := make([]string, 0, len(b.sz.dropin))
	for _, k := range b.dropinKs() {
		ks = append(ks, strconv.Itoa(k))
	}
	kk := "K=" + strings.Join(ks, "/")
	var items []string
	if s, v, ok := ratios(sideDropinClassic, "seq"); ok {
		item := fmt.Sprintf("classic %s %s %s", kk, s, mark(v >= targetDropinClassic))
		if c, _, ok := ratios(sideDropinClassic, "conc16"); ok {
			item += fmt.Sprintf(" (conc16 %s)", c)
		}
		items = append(items, item)
	}
	if s, v, ok := ratios(sideDropinGRPC, "seq"); ok {
		items = append(items, fmt.Sprintf("gRPC seq %s %s", s, mark(v >= targetDropinGRPC)))
	}
	if s, v, ok := ratios(sideDropinGRPC, "conc16"); ok {
		items = append(items, fmt.Sprintf("gRPC conc16 %s %s", s, mark(v >= targetDropinConc16)))
	}
	n := b.sz.dropinMemN
	if v, ok := r.ratio(scDropinMem, dropinMemConfig(n), sideMemDropin, sideMemUpstream, mRSS); ok {
		up, _ := r.median(key{scDropinMem, dropinMemConfig(n), sideMemUpstream}, mRSS)
		in, _ := r.median(key{scDropinMem, dropinMemConfig(n), sideMemDropin}, mRSS)
		items = append(items, fmt.Sprintf("RSS N=%d %.0f/%.0f MB %s %s", n, in/(1<<20), up/(1<<20), fmtRatio(v), mark(v <= targetDropinMemory)))
	}
	if len(items) == 0 {
		return
	}
	s := "dropin " + strings.Join(items, ", ")
	if dropinStandIn {
		s += " [STAND-IN: upstream on both sides]"
	} else if b.dropinNoGRPC != "" && len(b.dropinKs()) > 0 {
		s += " [gRPC plugins not measured: the drop-in serves no gRPC socket]"
	}
	add(s)
}
