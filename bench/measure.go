package bench

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// window is one measured stretch of operations.
type window struct {
	ops  int
	wall time.Duration
	lat  []time.Duration // sorted
	cpu  time.Duration   // driver + every process of the setup
	self time.Duration   // the driver alone: the runtime side
	cs   int64           // context switches of the driver and every process
}

func (w window) opsPerSec() float64 { return float64(w.ops) / w.wall.Seconds() }

func (w window) pct(p float64) time.Duration {
	if len(w.lat) == 0 {
		return 0
	}
	i := int(p*float64(len(w.lat))+0.5) - 1
	return w.lat[max(0, min(i, len(w.lat)-1))]
}

func (w window) cpuPerOp() time.Duration { return w.cpu / time.Duration(max(w.ops, 1)) }

func (w window) selfPerOp() time.Duration { return w.self / time.Duration(max(w.ops, 1)) }

// cpuMeter reads the CPU of the driver and of a set of processes.
type cpuMeter struct{ ps procs }

// read returns the CPU used so far by the driver and the processes
// together, and by the driver alone.
func (m cpuMeter) read() (total, self time.Duration, err error) {
	c, err := m.ps.cpu()
	self = selfCPU()
	return c + self, self, err
}

// measure runs op(0..n-1) with workers goroutines taking operations in
// order, after warm operations that are not measured (they use indices
// n..n+warm-1: callers build n+warm requests). profile, when set, is the
// driver's CPU profile of the window.
func measure(ps procs, profile string, n, warm, workers int, op func(i int) error) (window, error) {
	if warm > 0 {
		if _, err := run(n, n+warm, workers, op); err != nil {
			return window{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	runtime.GC()
	m := cpuMeter{ps}
	c0, s0, err := m.read()
	if err != nil {
		return window{}, err
	}
	var prof *os.File
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return window{}, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close() // StartCPUProfile's error is the one to report
			return window{}, err
		}
		prof = f
	}
	cs0 := ps.ctxSwitches()
	start := time.Now()
	lat, err := run(0, n, workers, op)
	wall := time.Since(start)
	cs := ps.ctxSwitches() - cs0
	if prof != nil {
		pprof.StopCPUProfile()
		if cerr := prof.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("CPU profile: %w", cerr)
		}
	}
	if err != nil {
		return window{}, err
	}
	c1, s1, err := m.read()
	if err != nil {
		return window{}, err
	}
	slices.Sort(lat)
	return window{ops: n, wall: wall, lat: lat, cpu: c1 - c0, self: s1 - s0, cs: cs}, nil
}

// run calls op(from..to-1) from workers goroutines and returns each call's
// latency.
func run(from, to, workers int, op func(i int) error) ([]time.Duration, error) {
	lat := make([]time.Duration, to-from)
	var (
		next     atomic.Int64
		failed   atomic.Bool
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	next.Store(int64(from))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				t := time.Now()
				if err := op(i); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("operation %d: %w", i, err) })
					failed.Store(true)
					return
				}
				lat[i-from] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	return lat, firstErr
}
