//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkCreateToRunning measures a pod plus a container, from
// RunPodSandbox to the container reported running, through containerd in
// two setups that run side by side:
//
//   - classic: one classic plugin connected to containerd's NRI socket
//     (the classic setup);
//   - nrid: nrid's bridge on containerd's NRI socket and one gRPC plugin
//     behind it.
//
// Both plugins inject one env var in CreateContainer (checked on a warm-up
// pod) and log every event. Each iteration creates one pod in each setup,
// alternating which goes first, so that both see the same machine load;
// teardown is outside the timer. It reports the median of each setup
// ("classic-ms", "nrid-ms") and their ratio ("ratio"); ns/op is the time of
// both. `make e2e-bench` runs it 5 times (-count 5).
func BenchmarkCreateToRunning(b *testing.B) {
	classic := NewEnv(b, EnvOptions{NoNrid: true})
	classic.StartClassicPlugin(classic.NRISock, "10", "bench", "-env", "E2E_BENCH=classic")
	nrid := NewEnv(b, EnvOptions{NridLogLevel: "info"}) // nrid's default level
	nrid.StartGRPCPlugin("10", "bench", "-env", "E2E_BENCH=grpc")
	for _, s := range []struct {
		e    *Env
		want string
	}{{classic, "classic"}, {nrid, "grpc"}} {
		// A warm-up pod outside the measurement: the first pod pays for
		// the image's unpack and the plugin's first call.
		warm := s.e.RunPod("warmup")
		id := s.e.Run(warm, "c")
		if got := SpecEnv(s.e.Inspect(id).Spec)["E2E_BENCH"]; got != s.want {
			b.Fatalf("E2E_BENCH = %q, want %q: the plugin did not adjust the container", got, s.want)
		}
		s.e.StopRemovePod(warm)
	}

	var tc, tn []time.Duration
	measure := func(e *Env, i int, out *[]time.Duration) {
		start := time.Now()
		pod := e.RunPod(fmt.Sprintf("b%d", i))
		e.Run(pod, "c")
		*out = append(*out, time.Since(start))
		b.StopTimer()
		e.StopRemovePod(pod)
		b.StartTimer()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			measure(classic, i, &tc)
			measure(nrid, i, &tn)
		} else {
			measure(nrid, i, &tn)
			measure(classic, i, &tc)
		}
	}
	b.StopTimer()
	mc, mn := median(tc), median(tn)
	b.ReportMetric(float64(mc.Microseconds())/1000, "classic-ms")
	b.ReportMetric(float64(mn.Microseconds())/1000, "nrid-ms")
	b.ReportMetric(float64(mn)/float64(mc), "ratio")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
