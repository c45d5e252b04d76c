package conformance

// T is what scenarios and setups need of a test: the methods of
// *testing.T they use, so that the same scenarios run under `go test`
// ([Run], with *testing.T) and without the testing package ([Execute],
// used by cmd/nritest).
//
// Fatal, Fatalf, FailNow, Skip, Skipf and SkipNow end the calling
// goroutine (runtime.Goexit), as testing's do: call them only from the
// goroutine running the scenario.
type T interface {
	// Name returns the scenario's name ("Group/Name" under Execute).
	Name() string
	// Helper marks the caller as a helper (ignored outside go test).
	Helper()
	// Cleanup registers f to run, last registered first, when the
	// scenario ends.
	Cleanup(f func())
	// Log and Logf record a message.
	Log(args ...any)
	Logf(format string, args ...any)
	// Error and Errorf record a message and mark the scenario failed.
	Error(args ...any)
	Errorf(format string, args ...any)
	// Fatal and Fatalf are Error and Errorf followed by FailNow.
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	// Fail marks the scenario failed; FailNow also ends it.
	Fail()
	FailNow()
	// Failed reports whether the scenario failed.
	Failed() bool
	// Skip and Skipf record a message and end the scenario as skipped.
	Skip(args ...any)
	Skipf(format string, args ...any)
	SkipNow()
	// Skipped reports whether the scenario was skipped.
	Skipped() bool
}
