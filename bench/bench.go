package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	nrilog "github.com/containerd/nri/pkg/log"
)

// Config configures a benchmark run.
type Config struct {
	// Quick uses small operation counts: the whole run takes under a minute.
	Quick bool
	// Runs is the number of runs of every configuration; results are their
	// medians.
	Runs int
	// Only restricts the run to these scenarios (see Scenarios).
	Only []string
	// CPUProfileDir, when set, receives CPU profiles: the driver's for every
	// measured window and every role process's from its start to its end.
	CPUProfileDir string
	// AdaptationService adds rows driving nri-grpc through AdaptationService
	// (the gRPC hop a runtime that does not embed the server pays).
	AdaptationService bool
	// LifecycleK is the number of plugins in the lifecycle scenario.
	LifecycleK int
	// Nrid is the nrid of the bridge and rss scenarios: "" or "build" builds
	// cmd/nrid from this tree once per run (the go command must be there);
	// "role" uses the nrid role of this binary (server + bridge runtime
	// side, no configuration, interceptors or metrics); anything else is the
	// path of an nrid executable.
	Nrid string
	// PlotDir, when set, receives SVG plots of how cost grows, drawn from
	// the medians: create-calls.svg, create-cpu.svg, sync-time.svg,
	// sync-bytes.svg, rss.svg (those of the scenarios that ran).
	PlotDir string
	// Verbose passes the role processes' stderr through and logs progress.
	Verbose bool
	// Out receives the tables and the summary; Log the progress.
	Out, Log io.Writer
}

// Run runs the selected scenarios and prints their tables and the summary.
func Run(cfg Config) error {
	if cfg.Runs < 1 {
		cfg.Runs = 1
	}
	if cfg.LifecycleK < 1 {
		cfg.LifecycleK = 3
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	for _, s := range cfg.Only {
		if !slices.Contains(Scenarios, s) {
			return fmt.Errorf("unknown scenario %q (have %s)", s, strings.Join(Scenarios, ", "))
		}
	}
	if cfg.CPUProfileDir != "" {
		if err := os.MkdirAll(cfg.CPUProfileDir, 0o755); err != nil {
			return err
		}
	}
	nrilog.Set(quietNRILog{})
	b := &bencher{cfg: &cfg, sz: fullSizes, res: newResults()}
	if cfg.Quick {
		b.sz = quickSizes
	}
	start := time.Now()
	b.logf = func(format string, args ...any) {
		fmt.Fprintf(cfg.Log, "[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	m := describeMachine()
	b.logf("machine: %s", m)
	tmp, err := os.MkdirTemp("", "nribench-")
	if err != nil {
		return err
	}
	defer func() {
		if err := os.RemoveAll(tmp); err != nil {
			b.logf("removing %s: %v", tmp, err)
		}
	}()
	if len(cfg.Only) == 0 || slices.Contains(cfg.Only, scBridge) || slices.Contains(cfg.Only, scRSS) {
		b.nridBin, b.nridDesc = nridBinary(&cfg, tmp, b.logf)
	}
	load0 := loadAvg()
	for _, sc := range []struct {
		name string
		run  func() error
	}{{scCreate, b.create}, {scLifecycle, b.lifecycle}, {scSync, b.sync}, {scBridge, b.bridge}, {scRSS, b.rss}, {scIsolation, b.isolation}, {scDropin, b.dropin}, {scWasm, b.wasm}} {
		if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, sc.name) {
			continue
		}
		if err := sc.run(); err != nil {
			return err
		}
	}
	mode := "full"
	if cfg.Quick {
		mode = "quick"
	}
	fmt.Fprintf(cfg.Out, "nribench (%s mode, %d run(s), medians): %s\n", mode, cfg.Runs, m)
	fmt.Fprintf(cfg.Out, "load average before %s, after %s; took %.0fs\n", load0, loadAvg(), time.Since(start).Seconds())
	if b.nridDesc != "" {
		fmt.Fprintf(cfg.Out, "nrid: %s\n", b.nridDesc)
	}
	b.report(cfg.Out)
	fmt.Fprintln(cfg.Out)
	fmt.Fprintln(cfg.Out, b.summary())
	if cfg.PlotDir != "" {
		files, err := b.writePlots(cfg.PlotDir)
		if err != nil {
			return fmt.Errorf("plots: %w", err)
		}
		b.logf("plots: %s", strings.Join(files, ", "))
	}
	return nil
}

// describeMachine is nproc, the CPU model, memory and the Go version.
func describeMachine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		for _, line := range strings.Split(string(b), "\n") {
			if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
				mem = fmt.Sprintf(", %.1f GiB", float64(kb)/(1<<20))
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s)%s, %s, GOMAXPROCS %d", runtime.NumCPU(), model, mem, runtime.Version(), runtime.GOMAXPROCS(0))
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// report prints a table per scenario.
func (b *bencher) report(w io.Writer) {
	r := b.res
	vsClassic := func(scenario string) func(k key) string {
		return func(k key) string {
			if k.side == sideClassic {
				return ""
			}
			ops, _ := r.ratio(scenario, k.config, k.side, sideClassic, mOps)
			cpu, _ := r.ratio(scenario, k.config, k.side, sideClassic, mCPU)
			return fmt.Sprintf("%s calls/s, %s CPU", fmtRatio(ops), fmtRatio(cpu))
		}
	}
	callCols := callCols()
	r.table(w, scCreate, "create — CreateContainer with K plugins subscribed to it (seq: 1 caller; conc16: 16 callers on distinct pods)",
		callCols, "vs "+sideClassic, vsClassic(scCreate))
	if b.cfg.AdaptationService {
		b.hopTable(w)
	}
	lifeCols := []column{
		{"lifecycles/s (min..max)", mOps, fmtRate, true},
		{"p50", mP50, fmtDur, false},
		{"p99", mP99, fmtDur, false},
		{"CPU/lifecycle", mCPU, fmtDur, false},
		{"of which runtime", mCPURt, fmtDur, false},
		{"ctxsw/lifecycle", mCS, fmtRate, false},
	}
	r.table(w, scLifecycle, "lifecycle — RunPodSandbox … RemovePodSandbox (11 calls), K plugins subscribed to all of them",
		lifeCols, "vs "+sideClassic, func(k key) string {
			if k.side == sideClassic {
				return ""
			}
			ops, _ := r.ratio(scLifecycle, k.config, k.side, sideClassic, mOps)
			cpu, _ := r.ratio(scLifecycle, k.config, k.side, sideClassic, mCPU)
			return fmt.Sprintf("%s lifecycles/s, %s CPU", fmtRatio(ops), fmtRatio(cpu))
		})
	r.table(w, scSync, "sync — a new plugin registering with N existing containers (N/2 pods): time until synchronized, bytes encoded",
		[]column{
			{"time (min..max)", mTime, fmtDur, true},
			{"CPU", mSCPU, fmtDur, false},
			{"bytes encoded", mBytes, fmtBytes, false},
			{"state size", mState, fmtBytes, false},
		}, "vs "+sideClassic, func(k key) string {
			bytes, _ := r.median(k, mBytes)
			st, _ := r.median(k, mState)
			s := fmt.Sprintf("bytes %s of state", fmtRatio3(bytes/st))
			if k.side == sideClassic {
				return s
			}
			t, _ := r.ratio(scSync, k.config, k.side, sideClassic, mTime)
			return fmt.Sprintf("%s time, %s", fmtRatio(t), s)
		})
	r.table(w, scBridge, "bridge — CreateContainer from a classic runtime (pkg/adaptation), one plugin",
		callCols, "vs "+sideDirect, func(k key) string {
			if k.side != sideBridge {
				return ""
			}
			p50, _ := r.ratio(scBridge, k.config, sideBridge, sideDirect, mP50)
			cpu, _ := r.ratio(scBridge, k.config, sideBridge, sideDirect, mCPU)
			return fmt.Sprintf("%s p50, %s CPU", fmtRatio(p50), fmtRatio(cpu))
		})
	r.table(w, scRSS, "rss — nrid attached through the bridge to a classic runtime with N containers, which its server caches",
		[]column{
			{"VmRSS (min..max)", mRSS, fmtBytes, true},
			{"VmHWM", mHWM, fmtBytes, false},
			{"Go heap in use", mHeap, fmtBytes, false},
			{"live heap after GC", mLive, fmtBytes, false},
			{"state size (encoded)", mState, fmtBytes, false},
		}, "RSS/state", func(k key) string {
			rss, _ := r.median(k, mRSS)
			st, _ := r.median(k, mState)
			if st <= 0 {
				return "-"
			}
			return fmtRatio(rss / st)
		})
	r.table(w, scIsolation, "isolation — CreateContainer, 2 healthy plugins, alone and beside misbehaving plugins that do not subscribe to it (one pending in a hung Synchronize, one hanging on its events, one re-registering 5 times a second)",
		callCols, "vs "+sideHealthy, func(k key) string {
			if k.side != sideHostile {
				return ""
			}
			added, err := r.isolationAdded(k.config)
			if err != nil {
				return ""
			}
			return fmt.Sprintf("p99 %s", signed(added.Seconds()))
		})
	b.dropinReport(w)
	b.wasmReport(w)
	b.scalingReport(w)
}

// callCols are the columns of a table of calls.
func callCols() []column {
	return []column{
		{"calls/s (min..max)", mOps, fmtRate, true},
		{"p50", mP50, fmtDur, false},
		{"p99", mP99, fmtDur, false},
		{"CPU/call", mCPU, fmtDur, false},
		{"of which runtime", mCPURt, fmtDur, false},
		{"ctxsw/call", mCS, fmtRate, false},
	}
}

// hopTable reports what the AdaptationService hop adds to the embedded API.
func (b *bencher) hopTable(w io.Writer) {
	r := b.res
	var lines []string
	for _, k := range r.keys(scCreate) {
		if k.side != sideAS {
			continue
		}
		emb := key{scCreate, k.config, sideGRPC}
		p50a, ok1 := r.median(k, mP50)
		p50e, ok2 := r.median(emb, mP50)
		cpua, ok3 := r.median(k, mCPU)
		cpue, ok4 := r.median(emb, mCPU)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %-11s p50 %+8s   CPU/call %+8s", k.config, signed(p50a-p50e), signed(cpua-cpue)))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\nAdaptationService hop — what driving nri-grpc over gRPC adds to the embedded API (same runs, medians)\n")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

func signed(sec float64) string {
	if sec < 0 {
		return "-" + fmtDur(-sec)
	}
	return "+" + fmtDur(sec)
}

func mark(pass bool) string {
	if pass {
		return "✓"
	}
	return "✗"
}

// The targets of the issue: ratios against classic NRI in the same run,
// medians of 3 (and the isolation target, isolationTarget).
const (
	targetCreateK1     = 1.5   // CreateContainer calls/s, seq, K=1: at least
	targetCreateK8     = 1.6   // CreateContainer calls/s, seq, K=8: at least
	targetConc16K3     = 5.0   // CreateContainer calls/s, 16 callers, K=3: at least
	targetLifecycleSeq = 1.3   // lifecycles/s, K=3, seq: at least
	targetLifecycleC16 = 5.0   // lifecycles/s, K=3, 16 pods: at least
	targetSyncTime     = 0.25  // time to synchronize 10,000 containers: at most
	targetSyncBytes    = 1.001 // Synchronize bytes encoded / state size: at most (bytes = state)
	targetBridgeP50    = 1.4   // bridge p50 / direct classic p50: at most
	targetASK1         = 1.0   // calls/s through AdaptationService, seq, K=1: at least
	targetRSSState     = 2.0   // nrid VmRSS with 10,000 containers / encoded state: at most
	targetLifecycleK   = 3     // the plugins of the lifecycle targets
)

// summary is the one line of ratios against the targets.
func (b *bencher) summary() string {
	r := b.res
	var parts []string
	add := func(s string) { parts = append(parts, s) }
	ratio := func(sc, cfg, metric string) (float64, bool) { return r.ratio(sc, cfg, sideGRPC, sideClassic, metric) }

	if v, ok := ratio(scCreate, "K=1 seq", mOps); ok {
		item := fmt.Sprintf("create K=1 %s %s", fmtRatio(v), mark(v >= targetCreateK1))
		if f, ok := r.ratio(scCreate, "K=1 seq", sideFloor, sideClassic, mOps); ok {
			item += fmt.Sprintf(" (transport floor %s)", fmtRatio(f))
		}
		add(item)
	}
	if v, ok := ratio(scCreate, "K=8 seq", mOps); ok {
		add(fmt.Sprintf("K=8 %s %s", fmtRatio(v), mark(v >= targetCreateK8)))
	}
	if v, ok := ratio(scCreate, "K=3 conc16", mOps); ok {
		add(fmt.Sprintf("conc16 K=3 %s %s", fmtRatio(v), mark(v >= targetConc16K3)))
	}
	b.summaryLifecycle(add)
	if t, ok := ratio(scSync, "N=10000", mTime); ok {
		k := key{scSync, "N=10000", sideGRPC}
		bytes, _ := r.median(k, mBytes)
		st, _ := r.median(k, mState)
		by := bytes / st
		add(fmt.Sprintf("sync10k %s time %s bytes %s state %s", fmtRatio3(t), mark(t <= targetSyncTime), fmtRatio3(by), mark(by <= targetSyncBytes)))
	}
	if v, ok := r.ratio(scBridge, "K=1 seq", sideBridge, sideDirect, mP50); ok {
		add(fmt.Sprintf("bridge p50 %s direct %s", fmtRatio(v), mark(v <= targetBridgeP50)))
	}
	if v, ok := r.ratio(scCreate, "K=1 seq", sideAS, sideClassic, mOps); ok {
		add(fmt.Sprintf("AdaptationService K=1 %s %s", fmtRatio(v), mark(v >= targetASK1)))
	}
	if added, err := r.isolationAdded("K=2 seq"); err == nil {
		s := fmt.Sprintf("isolation p99 %s", signed(added.Seconds()))
		if c, err := r.isolationAdded("K=2 conc16"); err == nil {
			s += fmt.Sprintf(" (conc16 %s)", signed(c.Seconds()))
			added = max(added, c)
		}
		add(fmt.Sprintf("%s %s", s, mark(added <= isolationTarget)))
	}
	b.dropinSummary(add)
	b.wasmSummary(add)
	k := key{scRSS, "N=10000", "nrid"}
	if v, ok := r.median(k, mRSS); ok {
		s := fmt.Sprintf("nrid RSS 10k %.0f MB", v/(1<<20))
		if st, ok := r.median(k, mState); ok && st > 0 {
			s += fmt.Sprintf(" = %.1fx state %s", v/st, mark(v/st <= targetRSSState))
		}
		add(s)
	}
	if len(parts) == 0 {
		return "summary: nothing measured"
	}
	s := "summary: " + strings.Join(parts, ", ")
	if met, missed := strings.Count(s, "✓"), strings.Count(s, "✗"); met+missed > 0 {
		s += fmt.Sprintf("; %d of %d targets met", met, met+missed)
	}
	if b.cfg.Runs < 3 {
		s += fmt.Sprintf(" [%d run(s): targets are judged on medians of 3]", b.cfg.Runs)
	}
	return s
}

// summaryLifecycle adds the lifecycle ratios, with marks when the run has
// the targets' plugin count.
func (b *bencher) summaryLifecycle(add func(string)) {
	r := b.res
	lk := fmt.Sprintf("K=%d", b.cfg.LifecycleK)
	seq, ok := r.ratio(scLifecycle, lk+" seq", sideGRPC, sideClassic, mOps)
	if !ok {
		return
	}
	conc, cok := r.ratio(scLifecycle, lk+" conc16", sideGRPC, sideClassic, mOps)
	if b.cfg.LifecycleK != targetLifecycleK {
		s := fmt.Sprintf("lifecycle %s %s", lk, fmtRatio(seq))
		if cok {
			s += fmt.Sprintf(" conc16 %s", fmtRatio(conc))
		}
		add(s + fmt.Sprintf(" (targets are for K=%d)", targetLifecycleK))
		return
	}
	s := fmt.Sprintf("lifecycle %s %s", fmtRatio(seq), mark(seq >= targetLifecycleSeq))
	if cok {
		s += fmt.Sprintf(" conc16 %s %s", fmtRatio(conc), mark(conc >= targetLifecycleC16))
	}
	add(s)
}
