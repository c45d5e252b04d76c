package testplugin

import (
	"log/slog"
	"sync"
	"testing"
)

// Logger returns a debug-level logger writing through t.Log until the test
// ends: goroutines of a server that outlive the test (gRPC handlers, which
// grpc.Server.Stop does not wait for) then log nowhere instead of racing
// with the end of the test.
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testWriter hands each log line to t.Log while the test runs.
type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(b[:len(b)-1]))
	}
	return len(b), nil
}
