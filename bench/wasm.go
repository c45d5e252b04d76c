package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nri-grpc/nri-grpc/internal/wasmbuild"
)

// The wasm scenario: CreateContainer with K WebAssembly plugins (K copies of
// the benchmark's module, bench/wasmplugin) in the plugin path of upstream
// pkg/adaptation and of the drop-in, driven through adaptationAPI as the
// dropin scenario drives them; then the runtime process's memory with the K
// modules loaded.

// scWasm is the scenario's name (-only wasm); scWasmLoad keys its start
// and memory rows.
const (
	scWasm     = "wasm"
	scWasmLoad = "wasm-load"
)

// The wasm scenario's sides.
const (
	sideWasmUpstream = "upstream, WASM plugins"
	sideWasmDropin   = "drop-in, WASM plugins"
)

// mStart is the time Start took, in seconds.
const mStart = "start"

// targetWasmK8 is the drop-in's CreateContainer calls/s over upstream's with
// 8 WASM plugins, seq, medians: at least (issue 31: not slower per call).
const targetWasmK8 = 1.0

// wasmPluginPkg is the benchmark's WASM plugin, built for every run.
const wasmPluginPkg = "./bench/wasmplugin"

// wasmSides are the scenario's sides, in the order each run measures them.
var wasmSides = []struct{ side, impl string }{{sideWasmUpstream, implUpstream}, {sideWasmDropin, implDropin}}

// wasmKs are the plugin counts of the wasm scenario, ascending; K=0 is each
// side's baseline.
func (b *bencher) wasmKs() []int { return slices.Sorted(maps.Keys(b.sz.wasm)) }

// wasmLoadConfig is a start and memory row's configuration.
func wasmLoadConfig(k int) string { return fmt.Sprintf("K=%d", k) }

// wasm builds the benchmark's module, then for every K and run measures
// each side: CreateContainer in the driver, then Start and memory in a
// runtime process of its own. Without a module (no go command, or not in
// this module) it is skipped and the report says why.
func (b *bencher) wasm() error {
	if len(b.sz.wasm) == 0 {
		return nil
	}
	dir, err := os.MkdirTemp("", "nribench-wasm-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "bench.wasm")
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	err = wasmbuild.Build(ctx, wasmPluginPkg, path)
	cancel()
	var module []byte
	if err == nil {
		module, err = os.ReadFile(path)
	}
	if err != nil {
		b.wasmSkipped = "the WASM plugin could not be built: " + firstLine(err.Error())
		b.logf("wasm: %v: the scenario is skipped", err)
		return nil
	}
	b.logf("wasm: %s built in %.1fs", wasmPluginPkg, time.Since(t0).Seconds())
	for _, k := range b.wasmKs() {
		for run := 0; run < b.cfg.Runs; run++ {
			for _, s := range wasmSides {
				what := fmt.Sprintf("wasm K=%d run %d/%d: %s", k, run+1, b.cfg.Runs, s.side)
				b.logf("%s", what)
				if err := b.wasmCreate(s.impl, s.side, module, k, run); err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
				if err := b.wasmMemory(s.impl, s.side, module, k, run); err != nil {
					return fmt.Errorf("%s, memory: %w", what, err)
				}
			}
		}
	}
	return nil
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// installWasm puts k copies of module (its code) in the runtime's plugin
// path as pre-launched plugins NN-benchNN (mode 0755), each with its
// configuration NN-benchNN.conf in the plugin configuration path: the
// annotation and env variable of its index (adjustKey), so the k merge
// without conflicts.
func installWasm(p adaptationPaths, module []byte, k int) error {
	for i := 0; i < k; i++ {
		idx := fmt.Sprintf("%02d", i)
		name := idx + "-bench" + idx
		if err := os.WriteFile(filepath.Join(p.pluginPath, name), module, 0o755); err != nil {
			return err
		}
		annotation, env := adjustKey(idx)
		conf, err := json.Marshal(map[string]string{"annotation": annotation, "env": env})
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(p.pluginConfigPath, name+".conf"), conf, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// wasmEnv is a setup whose runtime paths are prepared with k copies of
// module in the plugin path; the caller closes it.
func (b *bencher) wasmEnv(tag string, module []byte, k, run int) (*env, adaptationPaths, error) {
	e, err := b.env(tag, run)
	if err != nil {
		return nil, adaptationPaths{}, err
	}
	paths := adaptationPathsIn(e.dir)
	if err := paths.prepare(); err != nil {
		e.close()
		return nil, adaptationPaths{}, err
	}
	if err := installWasm(paths, module, k); err != nil {
		e.close()
		return nil, adaptationPaths{}, err
	}
	return e, paths, nil
}

// wasmCreate starts impl with k copies of module in its plugin path, timing
// Start (both implementations load, compile, instantiate, configure and
// synchronize pre-launched plugins before Start returns), then measures
// CreateContainer, seq and conc16; every answer must carry the k plugins'
// adjustments.
func (b *bencher) wasmCreate(impl, side string, module []byte, k, run int) error {
	e, paths, err := b.wasmEnv(fmt.Sprintf("wasm-K%d-%s", k, impl), module, k, run)
	if err != nil {
		return err
	}
	defer e.close()
	nri, err := newRuntimeNRI(impl, paths)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := nri.Start(); err != nil {
		return fmt.Errorf("%s: Start: %w", impl, err)
	}
	b.res.add(key{scWasmLoad, wasmLoadConfig(k), side}, mStart, time.Since(t0).Seconds())
	defer nri.Stop()
	return b.createWindows(e, nil, k, b.sz.wasm[k], nri.CreateContainer, func(mode string, w window) {
		b.res.window(key{scWasm, createConfig(k, mode), side}, w)
	})
}

// wasmMemory measures a runtime process (the runtime role) started with k
// copies of module in its plugin path: VmRSS and the live heap after Start,
// settled (after a collection that returned freed memory to the system).
func (b *bencher) wasmMemory(impl, side string, module []byte, k, run int) error {
	e, _, err := b.wasmEnv(fmt.Sprintf("wasm-memory-K%d-%s", k, impl), module, k, run)
	if err != nil {
		return err
	}
	defer e.close()
	rt, err := startProc("runtime "+impl, roleRuntime, e.cfg.Verbose, append([]string{"-impl", impl, "-dir", e.dir}, e.profArgs("runtime")...)...)
	if err != nil {
		return err
	}
	defer rt.stop()
	if err := rt.send("go"); err != nil {
		return err
	}
	if _, err := rt.expect("started"); err != nil {
		return err
	}
	m, err := runtimeMemory(rt, e.heapProfile("runtime"))
	if err != nil {
		return err
	}
	kk := key{scWasmLoad, wasmLoadConfig(k), side}
	b.res.add(kk, mRSS, float64(m.rss))
	b.res.add(kk, mHWM, float64(m.hwm))
	b.res.add(kk, mLive, float64(m.live))
	return nil
}

// wasmPerPlugin is what one more plugin costs a side at k plugins, from the
// medians: (metric at k − metric at K=0) / k, over scenario rows named by
// config(k); ok is false when either was not measured or k is 0.
func (b *bencher) wasmPerPlugin(scenario string, config func(int) string, side, metric string, k int) (float64, bool) {
	if k == 0 {
		return 0, false
	}
	at, ok1 := b.res.median(key{scenario, config(k), side}, metric)
	base, ok2 := b.res.median(key{scenario, config(0), side}, metric)
	if !ok1 || !ok2 {
		return 0, false
	}
	return (at - base) / float64(k), true
}

// wasmReport prints the wasm scenario's two tables.
func (b *bencher) wasmReport(w io.Writer) {
	r := b.res
	title := "wasm — CreateContainer through the pkg/adaptation API with K WASM plugins (the same module K times, in process), upstream pkg/adaptation and the drop-in"
	if b.wasmSkipped != "" {
		fmt.Fprintf(w, "\n%s: skipped, %s\n", title, b.wasmSkipped)
		return
	}
	r.table(w, scWasm, title, callCols(), "vs upstream; per plugin", func(k key) string {
		n, mode, ok := parseCreateConfig(k.config)
		if !ok {
			return ""
		}
		s := ""
		if k.side == sideWasmDropin {
			ops, _ := r.ratio(scWasm, k.config, k.side, sideWasmUpstream, mOps)
			cpu, _ := r.ratio(scWasm, k.config, k.side, sideWasmUpstream, mCPU)
			s = fmt.Sprintf("%s calls/s, %s CPU; ", fmtRatio(ops), fmtRatio(cpu))
		}
		cfg := func(k int) string { return createConfig(k, mode) }
		p50, ok1 := b.wasmPerPlugin(scWasm, cfg, k.side, mP50, n)
		cpu, ok2 := b.wasmPerPlugin(scWasm, cfg, k.side, mCPU, n)
		if !ok1 || !ok2 {
			return strings.TrimSuffix(s, "; ")
		}
		return s + fmt.Sprintf("p50 %s, CPU %s", signed(p50), signed(cpu))
	})
	r.table(w, scWasmLoad, "wasm load — Start with K WASM plugins in the plugin path (load, compile, instantiate, Configure, Synchronize; in the driver), and a runtime process of its own after Start with them (settled: after a GC that returned freed memory)",
		[]column{
			{"Start (min..max)", mStart, fmtDur, true},
			{"VmRSS", mRSS, fmtBytes, false},
			{"VmHWM", mHWM, fmtBytes, false},
			{"live heap", mLive, fmtBytes, false},
		}, "per plugin (− K=0, ÷ K)", func(k key) string {
			n, err := strconv.Atoi(strings.TrimPrefix(k.config, "K="))
			if err != nil || n == 0 {
				return ""
			}
			cfg := wasmLoadConfig
			start, _ := b.wasmPerPlugin(scWasmLoad, cfg, k.side, mStart, n)
			rss, _ := b.wasmPerPlugin(scWasmLoad, cfg, k.side, mRSS, n)
			live, _ := b.wasmPerPlugin(scWasmLoad, cfg, k.side, mLive, n)
			return fmt.Sprintf("Start %s, VmRSS %s, live heap %s", signed(start), signedBytes(rss), signedBytes(live))
		})
}

// parseCreateConfig parses createConfig's "K=<k> <mode>".
func parseCreateConfig(s string) (k int, mode string, ok bool) {
	ks, mode, ok := strings.Cut(s, " ")
	if !ok {
		return 0, "", false
	}
	k, err := strconv.Atoi(strings.TrimPrefix(ks, "K="))
	return k, mode, err == nil
}

// signedBytes is a byte count with its sign.
func signedBytes(v float64) string {
	if v < 0 {
		return "-" + fmtBytes(-v)
	}
	return "+" + fmtBytes(v)
}

// wasmSummary adds the wasm items: the drop-in's calls/s over upstream's at
// the largest K (the target at K=8), each side's cost per call per plugin
// there, and the memory per loaded plugin.
func (b *bencher) wasmSummary(add func(string)) {
	ks := b.wasmKs()
	if b.wasmSkipped != "" || len(ks) == 0 || ks[len(ks)-1] == 0 {
		return
	}
	k := ks[len(ks)-1]
	cfg := createConfig(k, "seq")
	v, ok := b.res.ratio(scWasm, cfg, sideWasmDropin, sideWasmUpstream, mOps)
	if !ok {
		return
	}
	s := fmt.Sprintf("wasm K=%d %s", k, fmtRatio(v))
	if k == 8 {
		s += " " + mark(v >= targetWasmK8)
	}
	seq := func(k int) string { return createConfig(k, "seq") }
	in, ok1 := b.wasmPerPlugin(scWasm, seq, sideWasmDropin, mP50, k)
	up, ok2 := b.wasmPerPlugin(scWasm, seq, sideWasmUpstream, mP50, k)
	if ok1 && ok2 {
		s += fmt.Sprintf(" (per plugin p50 %s/%s)", signed(in), signed(up))
	}
	rin, ok1 := b.wasmPerPlugin(scWasmLoad, wasmLoadConfig, sideWasmDropin, mRSS, k)
	rup, ok2 := b.wasmPerPlugin(scWasmLoad, wasmLoadConfig, sideWasmUpstream, mRSS, k)
	if ok1 && ok2 {
		s += fmt.Sprintf(" RSS per plugin %s/%s", signedBytes(rin), signedBytes(rup))
	}
	add(s)
}
