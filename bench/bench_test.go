package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	api "github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// The go test entry points: the same setups as nribench, one configuration
// per benchmark, with b.N operations, plus custom metrics:
//
//	cpu-µs/op     CPU of the driver and every plugin process per operation
//	rt-cpu-µs/op  CPU of the driver (the runtime side) alone
//	p50-µs        median latency
//
// nribench is the deliverable (both sides in one run, ratios, medians of
// 3); these are for profiling one configuration:
//
//	go test ./bench -run '^$' -bench 'CreateContainer/K=1/nri-grpc' -cpuprofile /tmp/cpu.pprof
//
// (-cpuprofile profiles the test process: the runtime side. The plugin
// processes are profiled with NRIBENCH_PLUGIN_PROFILE=dir.)

func TestMain(m *testing.M) {
	RoleMain()
	nrilog.Set(quietNRILog{})
	os.Exit(m.Run())
}

func testConfig() *Config {
	return &Config{CPUProfileDir: os.Getenv("NRIBENCH_PLUGIN_PROFILE"), Runs: 1}
}

// report adds the custom metrics of a window.
func report(b *testing.B, w window) {
	b.ReportMetric(float64(w.cpuPerOp().Nanoseconds())/1e3, "cpu-µs/op")
	b.ReportMetric(float64(w.selfPerOp().Nanoseconds())/1e3, "rt-cpu-µs/op")
	b.ReportMetric(float64(w.pct(0.5).Nanoseconds())/1e3, "p50-µs")
}

// benchWindow runs b.N operations as one measured window.
func benchWindow(b *testing.B, ps procs, workers int, op func(i int) error) {
	b.Helper()
	b.ResetTimer()
	w, err := measure(ps, "", b.N, 0, workers, op)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	report(b, w)
}

func setupClassic(b *testing.B, k int, events uint32) *classicRT {
	b.Helper()
	e, err := newEnv(testConfig(), fmt.Sprintf("test-%s-classic", b.Name()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.close)
	rt, err := newClassicRT(e, nil, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rt.close)
	if err := rt.addPlugins(k, events); err != nil {
		b.Fatal(err)
	}
	return rt
}

func setupGRPC(b *testing.B, k int, events uint32) *grpcRT {
	b.Helper()
	e, err := newEnv(testConfig(), fmt.Sprintf("test-%s-nri-grpc", b.Name()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.close)
	rt, err := newGRPCRT(e, nil, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rt.close)
	if err := rt.addPlugins(k, events); err != nil {
		b.Fatal(err)
	}
	return rt
}

func benchCreate(b *testing.B, k, workers int) {
	ctx := context.Background()
	b.Run(fmt.Sprintf("K=%d/classic", k), func(b *testing.B) {
		rt := setupClassic(b, k, maskCreate)
		reqs := make([]*api.CreateContainerRequest, b.N)
		for i := range reqs {
			pod, ctr := podContainer(i)
			reqs[i] = &api.CreateContainerRequest{Pod: alphaPod(pod), Container: alphaCtr(ctr)}
		}
		benchWindow(b, rt.plugins, workers, func(i int) error {
			_, err := rt.a.CreateContainer(ctx, reqs[i])
			return err
		})
	})
	b.Run(fmt.Sprintf("K=%d/nri-grpc", k), func(b *testing.B) {
		rt := setupGRPC(b, k, maskCreate)
		reqs := make([]*nriv1beta1.CreateContainerRequest, b.N)
		for i := range reqs {
			pod, ctr := podContainer(i)
			reqs[i] = &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr}
		}
		benchWindow(b, rt.plugins, workers, func(i int) error {
			_, err := rt.srv.CreateContainer(ctx, reqs[i])
			return err
		})
	})
}

// BenchmarkCreateContainer is CreateContainer with K = 1, 3, 8, 16 plugins, one
// caller.
func BenchmarkCreateContainer(b *testing.B) {
	for _, k := range []int{1, 3, 8, 16} {
		benchCreate(b, k, 1)
	}
}

// BenchmarkCreateContainerConc16 is CreateContainer with 16 concurrent
// callers on distinct pods.
func BenchmarkCreateContainerConc16(b *testing.B) {
	for _, k := range []int{1, 3, 8, 16} {
		benchCreate(b, k, 16)
	}
}

// BenchmarkLifecycle is the 11-call pod lifecycle with 3 plugins, one pod
// at a time.
func BenchmarkLifecycle(b *testing.B) {
	cfg := testConfig()
	cfg.LifecycleK = 3
	sz := quickSizes
	b.Run("classic", func(b *testing.B) {
		bb := &bencher{cfg: cfg, sz: sz, res: newResults(), logf: func(string, ...any) {}}
		bb.sz.lifecycles = b.N
		if err := bb.lifecycleClassic(0); err != nil {
			b.Fatal(err)
		}
		reportKey(b, bb.res, key{scLifecycle, bb.lifecycleConfig("seq"), sideClassic})
	})
	b.Run("nri-grpc", func(b *testing.B) {
		bb := &bencher{cfg: cfg, sz: sz, res: newResults(), logf: func(string, ...any) {}}
		bb.sz.lifecycles = b.N
		if err := bb.lifecycleGRPC(0); err != nil {
			b.Fatal(err)
		}
		reportKey(b, bb.res, key{scLifecycle, bb.lifecycleConfig("seq"), sideGRPC})
	})
}

func reportKey(b *testing.B, r *results, k key) {
	cpu, _ := r.median(k, mCPU)
	p50, _ := r.median(k, mP50)
	b.ReportMetric(cpu*1e6, "cpu-µs/op")
	b.ReportMetric(p50*1e6, "p50-µs")
}

// BenchmarkSync is a plugin registering with 1,000 existing containers.
func BenchmarkSync(b *testing.B) {
	const n = 1000
	st := newState(n)
	for _, side := range []string{sideClassic, sideGRPC} {
		b.Run(side, func(b *testing.B) {
			bb := &bencher{cfg: testConfig(), res: newResults(), logf: func(string, ...any) {}}
			var total time.Duration
			for i := 0; i < b.N; i++ {
				var err error
				if side == sideClassic {
					err = bb.syncClassic(st, n, 0)
				} else {
					err = bb.syncGRPC(st, n, 0)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			k := key{scSync, syncConfig(n), side}
			for _, t := range bb.res.vals[k][mTime] {
				total += time.Duration(t * float64(time.Second))
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "sync-µs/op")
			bytes, _ := bb.res.median(k, mBytes)
			b.ReportMetric(bytes/float64(st.size), "bytes/state")
		})
	}
}

// TestQuickSmoke runs every scenario with tiny counts: the whole machinery
// end to end (plugin processes on both sides, nrid, the bridge).
func TestQuickSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	cfg := &Config{Runs: 1, LifecycleK: 2, AdaptationService: true}
	// Every shape of the full mode, with tiny counts: K = 1, 3, 8, 16; N = 0
	// (rss) and two sizes of state (not 1,000 and up: sizes, not shapes).
	b := &bencher{cfg: cfg, res: newResults(), logf: t.Logf, sz: sizes{
		createSeq:  map[int]int{1: 20, 3: 10, 8: 5, 16: 3},
		lifecycles: 8,
		bridge:     20,
		syncN:      []int{20, 100},
		rssN:       []int{0, 100},
		dropin:     map[int]int{1: 20, 3: 10, 8: 5},
		dropinMemN: 100,
	}}
	for name, f := range map[string]func() error{scCreate: b.create, scLifecycle: b.lifecycle, scSync: b.sync, scBridge: b.bridge, scRSS: b.rss, scIsolation: b.isolation, scDropin: b.dropin} {
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var out testWriter
	b.report(&out)
	t.Log("\n" + string(out))
	for _, want := range []string{"how cost grows — CreateContainer", "K=16", "how cost grows — state", "N=100", "RSS/state",
		"dropin — CreateContainer", sideUpstream, sideDropinClassic, "dropin memory", "N=100 K=1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	s := b.summary()
	if s == "summary: nothing measured" {
		t.Fatal(s)
	}
	t.Log(s)
	if !strings.Contains(s, "dropin classic K=1/3/8") || !strings.Contains(s, "RSS N=100") {
		t.Errorf("the summary lacks the dropin targets: %s", s)
	}
	// The gRPC rows are skipped only when the drop-in serves no gRPC socket
	// (or is a stand-in); then the report says so.
	if b.dropinNoGRPC != "" {
		t.Logf("dropin: no gRPC plugins: %s", b.dropinNoGRPC)
		if !strings.Contains(s, "gRPC plugins not measured") && !dropinStandIn {
			t.Errorf("the summary does not say the gRPC plugins were not measured: %s", s)
		}
	} else if !strings.Contains(s, "gRPC seq") || !strings.Contains(s, "gRPC conc16") {
		t.Errorf("the summary lacks the drop-in's gRPC plugins: %s", s)
	}
	files, err := b.writePlots(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Errorf("plots %q, want 5", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if d := checkSVG(t, data); len(d.points) == 0 {
			t.Errorf("%s: no points", f)
		}
	}
}

type testWriter []byte

func (w *testWriter) Write(b []byte) (int, error) { *w = append(*w, b...); return len(b), nil }

// TestWasmScenario runs the wasm scenario with tiny counts at K = 0 and 1:
// the module built, loaded by upstream pkg/adaptation and by the drop-in
// (every answer carrying the plugin's adjustment), the runtime processes'
// memory, and the rows and summary item they make.
func TestWasmScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a WASM module, which both sides compile")
	}
	b := &bencher{cfg: &Config{Runs: 1}, res: newResults(), logf: t.Logf, sz: sizes{wasm: map[int]int{0: 10, 1: 10}}}
	if err := b.wasm(); err != nil {
		t.Fatal(err)
	}
	if b.wasmSkipped != "" {
		t.Fatalf("skipped: %s", b.wasmSkipped)
	}
	for _, side := range []string{sideWasmUpstream, sideWasmDropin} {
		for _, cfg := range []string{"K=0 seq", "K=0 conc16", "K=1 seq", "K=1 conc16"} {
			if v, ok := b.res.median(key{scWasm, cfg, side}, mOps); !ok || v <= 0 {
				t.Errorf("%s, %s: calls/s %v (measured: %v)", side, cfg, v, ok)
			}
		}
		base, ok0 := b.res.median(key{scWasmLoad, "K=0", side}, mRSS)
		one, ok1 := b.res.median(key{scWasmLoad, "K=1", side}, mRSS)
		if !ok0 || !ok1 || one <= base {
			t.Errorf("%s: VmRSS %v with no plugin, %v with one: want it to grow", side, base, one)
		}
		if v, ok := b.res.median(key{scWasmLoad, "K=1", side}, mStart); !ok || v <= 0 {
			t.Errorf("%s: Start %v (measured: %v)", side, v, ok)
		}
	}
	var out testWriter
	b.report(&out)
	t.Log("\n" + string(out))
	for _, want := range []string{"wasm — CreateContainer", "wasm load — Start", sideWasmUpstream, sideWasmDropin, "K=1 conc16", "Start +", "VmRSS +"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if s := b.summary(); !strings.Contains(s, "wasm K=1 ") || !strings.Contains(s, "RSS per plugin") {
		t.Errorf("the summary lacks the wasm item: %s", s)
	}
}
