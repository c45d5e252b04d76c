package bridge_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"

	"github.com/nri-grpc/nri-grpc/bridge"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// costEnv names the environment variable that runs
// TestValidationSubscriptionCost: the number of creations per round.
const costEnv = "NRI_VALIDATION_COST_N"

// benchResult is test/classic-runtime's answer to its bench op.
type benchResult struct {
	Nanos  []int64 `json:"nanos"`
	CPUNs  int64   `json:"cpu_ns"`
	Errors int     `json:"errors"`
}

// TestValidationSubscriptionCost measures what the bridge's subscription
// to ValidateContainerAdjustment costs a CreateContainer behind NRI v0.12.3
// (test/classic-runtime) with no validator registered: one gRPC plugin
// adjusting every container behind nrid, rounds alternating between a
// bridge subscribed (the default) and one kept off validation. It reports
// medians over the rounds of the p50 latency, the runtime's CPU and the
// CPU of this process (nrid, the bridge and the plugin) per creation. It
// runs only when NRI_VALIDATION_COST_N is set (creations per round):
//
//	NRI_VALIDATION_COST_N=3000 go test ./bridge -run TestValidationSubscriptionCost -v
func TestValidationSubscriptionCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(costEnv))
	if n <= 0 {
		t.Skip(costEnv + " is not set: a measurement, not a test")
	}
	const rounds = 5
	type sample struct{ p50, runtimeCPU, nridCPU float64 } // µs per creation
	got := map[bool][]sample{}
	for r := range 2 * rounds {
		subscribed := r%2 == 0
		if r/2%2 == 1 {
			subscribed = !subscribed // ABBA: neither goes first every time
		}
		res, nridCPU := costRound(t, subscribed, n)
		if res.Errors > 0 {
			t.Fatalf("%d creations failed", res.Errors)
		}
		lat := slices.Clone(res.Nanos)
		slices.Sort(lat)
		got[subscribed] = append(got[subscribed], sample{
			p50:        float64(lat[len(lat)/2]) / 1e3,
			runtimeCPU: float64(res.CPUNs) / float64(n) / 1e3,
			nridCPU:    float64(nridCPU) / float64(n) / 1e3,
		})
	}
	med := func(s []sample, f func(sample) float64) float64 {
		v := make([]float64, len(s))
		for i, x := range s {
			v[i] = f(x)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	for _, m := range []struct {
		what string
		f    func(sample) float64
	}{
		{"p50 latency", func(s sample) float64 { return s.p50 }},
		{"runtime CPU", func(s sample) float64 { return s.runtimeCPU }},
		{"nrid+plugin CPU", func(s sample) float64 { return s.nridCPU }},
	} {
		off, on := med(got[false], m.f), med(got[true], m.f)
		t.Logf("%-16s without %7.1f µs  with %7.1f µs  %+7.1f µs (%+.0f %%)", m.what, off, on, on-off, 100*(on-off)/off)
	}
}

// costRound starts nrid with one adjusting plugin, NRI v0.12.3 and the
// bridge (subscribed to validation or not), and returns the runtime's
// measurement of n creations and the CPU this process spent meanwhile.
func costRound(t *testing.T, subscribed bool, n int) (benchResult, int64) {
	var res benchResult
	var cpu int64
	t.Run(map[bool]string{true: "subscribed", false: "not-subscribed"}[subscribed], func(t *testing.T) {
		quiet := slog.New(slog.DiscardHandler)
		nd := startNrid(t, server.WithLogger(quiet))
		nd.grpcPlugin(t, "10", "adj", func(p *testplugin.Plugin) {
			p.Events = nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER)
			p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
					Env: []*nriv1beta1.KeyValue{{Key: "FROM_GRPC", Value: "1"}}}}, nil
			}
		})
		sock := filepath.Join(tempDir(t), "nri.sock")
		rt := startRuntimeV0123(t, sock, nil, nil)
		opts := []bridge.RuntimeOption{bridge.WithRuntimeSocket(sock), bridge.WithRuntimeLogger(quiet)}
		if !subscribed {
			opts = append(opts, bridge.WithoutValidationSubscription())
		}
		runRuntimeSide(t, nd.srv, opts...)
		rt.settled(t)
		req, err := (&v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: alphaCtr(1, 0)}).MarshalVT()
		if err != nil {
			t.Fatal(err)
		}
		warm := map[string]any{"op": "bench", "req": req, "n": min(n, 200)}
		if a := rt.do(t, warm); a.Err != "" {
			t.Fatal(a.Err)
		}
		alpha := alphaCtr(1, 0)
		alpha.Id = "measured"
		req, _ = (&v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: alpha}).MarshalVT()
		before := selfCPU()
		a := rt.do(t, map[string]any{"op": "bench", "req": req, "n": n})
		cpu = selfCPU() - before
		if a.Err != "" {
			t.Fatal(a.Err)
		}
		if err := json.Unmarshal(a.Rsp, &res); err != nil {
			t.Fatal(err)
		}
	})
	return res, cpu
}

// selfCPU is the CPU time this process has spent so far.
func selfCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
