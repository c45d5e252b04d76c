package main

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// hangBound detects a hang where the behaviour under test ends at once: it
// is far below the stop bound of the configuration these tests use.
const hangBound = 30 * time.Second

// TestStopEndsHealthWatches (issue 28, item 6): health Watch streams open
// on nrid's own health ("") and on a plugin's (nri.plugin/NN-name) do not
// hold nrid's graceful stop: each gets NOT_SERVING and ends with
// UNAVAILABLE "nrid is stopping", and nrid returns without reaching its
// stop bound (an hour here; before, it waited for the streams until then).
func TestStopEndsHealthWatches(t *testing.T) {
	n := startNrid(t, "[server]\nstop_timeout = \"1h\"\n")
	registerOn(t, n, "10", "alpha")
	cc := n.conn(t)
	type watch struct {
		service string
		stream  healthpb.Health_WatchClient
	}
	var watches []watch
	for _, service := range []string{"", PluginHealthPrefix + "10-alpha"} {
		stream, err := healthpb.NewHealthClient(cc).Watch(testCtx(t), &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatal(err)
		}
		for {
			rsp, err := stream.Recv()
			if err != nil {
				t.Fatalf("watching %q: %v", service, err)
			}
			if rsp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
				break
			}
		}
		watches = append(watches, watch{service, stream})
	}

	n.stopped = true
	n.cancel()
	for _, w := range watches {
		ended := make(chan error, 1)
		var last []healthpb.HealthCheckResponse_ServingStatus
		go func() {
			for {
				rsp, err := w.stream.Recv()
				if err != nil {
					ended <- err
					return
				}
				last = append(last, rsp.GetStatus())
			}
		}()
		select {
		case err := <-ended:
			if status.Code(err) != codes.Unavailable || status.Convert(err).Message() != "nrid is stopping" {
				t.Errorf("watch of %q ended with %v, want UNAVAILABLE \"nrid is stopping\"", w.service, err)
			}
			if len(last) == 0 || last[len(last)-1] != healthpb.HealthCheckResponse_NOT_SERVING {
				t.Errorf("watch of %q got %v at the stop, want NOT_SERVING last", w.service, last)
			}
		case <-time.After(hangBound):
			t.Fatalf("the watch of %q is still open %v after the stop began; log:\n%s", w.service, hangBound, n.logs.String())
		}
	}
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("nrid returned %v", err)
		}
	case <-time.After(hangBound):
		t.Fatalf("nrid did not stop within %v; log:\n%s", hangBound, n.logs.String())
	}
	if log := n.logs.String(); contains(log, "calls still running at the stop bound") {
		t.Errorf("the stop reached its bound:\n%s", log)
	}
}
