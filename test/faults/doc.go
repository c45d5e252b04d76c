// Package faults runs nrid, the real daemon built from this checkout, against
// misbehaving plugins and under a long mixed load.
//
// The fault-injection suite (faults_test.go) starts one nrid process per
// test, registers two healthy plugins that record every call, drives pod
// lifecycles through AdaptationService as a runtime does, and adds one
// scripted plugin that hangs, answers slowly, answers garbage, oversized or
// invalid UTF-8 responses, crashes mid-call, returns every gRPC status code,
// sends huge strings, or re-registers in a loop. Each test asserts that the
// healthy plugins see every event exactly once and in each pod's order, stay
// registered, are never held up by events they do not share with the
// misbehaving plugin, and that nrid's goroutines, open files and peak memory
// come back to (or stay near) their baseline.
//
// The soak (soak_test.go) runs only when NRI_SOAK is set to a duration
// (`make soak SOAK=10m`): a continuous lifecycle load, a plugin registering
// and leaving in a loop, and nrid restarted every 20 seconds, with a sample of
// nrid's memory, goroutines and open files every 5 seconds.
//
// consistency_test.go holds the moments the set of pods or plugins changes
// under nrid: a runtime attach behind a hung call, events during an
// attach's snapshot, events a synchronizing plugin misses.
//
// TestMain builds ./cmd/nrid once into a temporary directory; NRID_BIN names
// a binary to use instead.
package faults
