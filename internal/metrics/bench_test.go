package metrics_test

import (
	"testing"
	"time"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/metrics"
)

// TestPluginCallDoesNotAllocate holds the hot path to zero allocations once
// the series of a plugin × event × outcome are resolved.
func TestPluginCallDoesNotAllocate(t *testing.T) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	call := func() {
		m.PluginCall("10-plugin", nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.CallOutcome_CALL_OUTCOME_OK, 300*time.Microsecond)
	}
	call()
	if n := testing.AllocsPerRun(1000, call); n != 0 {
		t.Fatalf("PluginCall allocates %g times per call in steady state", n)
	}
}

// BenchmarkPluginCall measures the dispatch-path cost of recording a call,
// with several plugins, events and outcomes in steady state.
func BenchmarkPluginCall(b *testing.B) {
	m := metrics.New(metrics.WithoutRuntimeCollectors())
	plugins := []string{"10-resources", "20-devices", "30-logger", "40-validator"}
	events := []nriv1beta1.Event{
		nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_CREATE_CONTAINER,
		nriv1beta1.Event_EVENT_START_CONTAINER, nriv1beta1.Event_EVENT_STOP_CONTAINER,
	}
	outcomes := []nriv1beta1.CallOutcome{nriv1beta1.CallOutcome_CALL_OUTCOME_OK, nriv1beta1.CallOutcome_CALL_OUTCOME_VETO}
	for _, p := range plugins {
		for _, e := range events {
			for _, o := range outcomes {
				m.PluginCall(p, e, o, time.Millisecond)
			}
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m.PluginCall(plugins[i%4], events[(i/4)%4], outcomes[(i/16)%2], 250*time.Microsecond)
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				m.PluginCall(plugins[i%4], events[(i/4)%4], outcomes[(i/16)%2], 250*time.Microsecond)
				i++
			}
		})
	})
}
