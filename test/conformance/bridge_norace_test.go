//go:build !race

package conformance_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
