package faults_test

import (
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// oversizeRegistration is a RegisterPluginRequest just under nrid's 4 MiB
// maximum message size, so gRPC receives it whole: a 4 MiB plugin name.
func oversizeRegistration(e *env) *nriv1beta1.RegisterPluginRequest {
	return &nriv1beta1.RegisterPluginRequest{PluginName: strings.Repeat("n", 4<<20-4096), PluginIdx: "30",
		Endpoint: "unix://" + e.n.plugins + "/huge.sock"}
}

// registerOversize sends one oversize registration and checks its refusal:
// RESOURCE_EXHAUSTED naming the rule (the registration's own limit), in a
// short message.
func registerOversize(t *testing.T, e *env) {
	stream, err := e.c.rt.RegisterPlugin(e.ctx(), oversizeRegistration(e))
	if err == nil {
		_, err = stream.Recv()
	}
	msg := status.Convert(err).Message()
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(msg, "RegisterPluginRequest") || len(msg) > 256 {
		t.Errorf("a 4 MiB registration: %v (%d bytes), want RESOURCE_EXHAUSTED naming the registration's limit, short",
			clipErr(err), len(msg))
	}
}

// TestOversizeRegistrationMemory (issue 28 item 8a): a registration just
// under nrid's 4 MiB message limit is refused by the registration's own,
// much smaller limit before it is decoded, so it costs nrid little memory:
// one, then ten at once. Reports the peak RSS growth (VmHWM) of each.
func TestOversizeRegistrationMemory(t *testing.T) {
	cfg := defaultConfig()
	cfg.registerRate = 0 // eleven registrations in a row
	e := newEnv(t, cfg)

	before := e.n.peak(t)
	registerOversize(t, e)
	one := e.n.peak(t)
	t.Logf("one 4 MiB registration: peak RSS %.1f MB -> %.1f MB (%+.1f MB)", float64(before)/1e6, float64(one)/1e6, float64(one-before)/1e6)

	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); registerOversize(t, e) }()
	}
	wg.Wait()
	ten := e.n.peak(t)
	t.Logf("ten 4 MiB registrations at once: peak RSS %.1f MB -> %.1f MB (%+.1f MB)", float64(one)/1e6, float64(ten)/1e6, float64(ten-one)/1e6)

	if grew := one - before; grew > 6e6 {
		t.Errorf("one 4 MiB registration raised nrid's peak RSS by %.1f MB, want at most 6 MB (about the message gRPC receives)", float64(grew)/1e6)
	}
	if grew := ten - one; grew > 50e6 {
		t.Errorf("ten 4 MiB registrations at once raised nrid's peak RSS by %.1f MB, want at most 50 MB", float64(grew)/1e6)
	}
	runs := e.load(2)
	checkNoFailures(t, runs)
	e.checkHealthy(runs)
}
