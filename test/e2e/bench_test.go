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
	m := benchSetups(b, []benchSetup{{"classic", classic, "classic"}, {"nrid", nrid, "grpc"}})
	b.ReportMetric(float64(m[1])/float64(m[0]), "ratio")
}

// BenchmarkDropInCreateToRunning is BenchmarkCreateToRunning for stock
// containerd and containerd with nri-grpc's drop-in (EnvOptions.DropIn),
// side by side, each with the same classic plugin (e2e-classic-plugin,
// pkg/stub) on its own NRI socket: "stock-ms", "dropin-ms" and their ratio
// ("dropin-ratio"); and a third containerd with the drop-in and one gRPC
// plugin (e2e-grpc-plugin) instead: "dropin-grpc-ms", "dropin-grpc-ratio"
// (against stock).
func BenchmarkDropInCreateToRunning(b *testing.B) {
	stock := NewEnv(b, EnvOptions{NoNrid: true})
	stock.StartClassicPlugin(stock.NRISock, "10", "bench", "-env", "E2E_BENCH=classic")
	dropIn := NewEnv(b, EnvOptions{DropIn: true})
	dropIn.StartClassicPlugin(dropIn.NRISock, "10", "bench", "-env", "E2E_BENCH=classic")
	dropInGRPC := NewEnv(b, EnvOptions{DropIn: true})
	dropInGRPC.StartGRPCPlugin("10", "bench", "-env", "E2E_BENCH=grpc")
	m := benchSetups(b, []benchSetup{{"stock", stock, "classic"}, {"dropin", dropIn, "classic"}, {"dropin-grpc", dropInGRPC, "grpc"}})
	b.ReportMetric(float64(m[1])/float64(m[0]), "dropin-ratio")
	b.ReportMetric(float64(m[2])/float64(m[0]), "dropin-grpc-ratio")
}

// benchSetup is one containerd of a create-to-running benchmark and the
// E2E_BENCH value its plugin injects.
type benchSetup struct {
	name string
	e    *Env
	want string
}

// benchSetups measures pod plus container create-to-running in every
// setup, one pod per setup per iteration, the order rotating, and reports
// each setup's median as NAME-ms; it returns the medians.
func benchSetups(b *testing.B, setups []benchSetup) []time.Duration {
	b.Helper()
	for _, s := range setups {
		// A warm-up pod outside the measurement: the first pod pays for
		// the image's unpack and the plugin's first call.
		warm := s.e.RunPod("warmup")
		id := s.e.Run(warm, "c")
		if got := SpecEnv(s.e.Inspect(id).Spec)["E2E_BENCH"]; got != s.want {
			b.Fatalf("%s: E2E_BENCH = %q, want %q: the plugin did not adjust the container", s.name, got, s.want)
		}
		s.e.StopRemovePod(warm)
	}
	times := make([][]time.Duration, len(setups))
	measure := func(k, i int) {
		e := setups[k].e
		start := time.Now()
		pod := e.RunPod(fmt.Sprintf("b%d", i))
		e.Run(pod, "c")
		times[k] = append(times[k], time.Since(start))
		b.StopTimer()
		e.StopRemovePod(pod)
		b.StartTimer()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range setups {
			measure((i+j)%len(setups), i)
		}
	}
	b.StopTimer()
	medians := make([]time.Duration, len(setups))
	for k, s := range setups {
		medians[k] = median(times[k])
		b.ReportMetric(float64(medians[k].Microseconds())/1000, s.name+"-ms")
	}
	return medians
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
