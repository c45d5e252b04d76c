package adaptation_test

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"

	"github.com/nri-grpc/nri-grpc/adaptation"
)

// TestStopLeavesNothingRunning: after Stop, every goroutine Start started
// has ended (a runtime embeds the drop-in for its whole life, and may stop
// and start it again), and the sockets are gone.
func TestStopLeavesNothingRunning(t *testing.T) {
	base := goruntime.NumGoroutine()
	dir := tempDir(t)
	if err := os.Mkdir(filepath.Join(dir, "plugins.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	rt := &runtime{}
	sock := filepath.Join(dir, "nri.sock")
	for round := range 2 { // started, stopped, started again
		// A subtest per round: its plugins (in this process) stop at its end.
		t.Run("round", func(t *testing.T) { startAndStop(t, round, dir, sock, rt) })
	}
	waitGoroutines(t, base)
}

// startAndStop starts the drop-in with a classic and a gRPC plugin, creates
// a container and stops it.
func startAndStop(t *testing.T, round int, dir, sock string, rt *runtime) {
	{
		a, err := adaptation.New("rt", "1", rt.dropInSyncFn, adaptation.UpdateFn(rt.updateFn),
			adaptation.WithSocketPath(sock), adaptation.WithPluginPath(filepath.Join(dir, "none")),
			adaptation.WithConfigFile(writeConfig(t, dir, "")))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		e := &env{nriAPI: a, sock: sock, rt: rt}
		stubPlugin(t, e, "alpha", "10", &injector{base: newBase(), tag: "alpha"})
		startGRPCPlugin(t, e, dir, "grpc", "20", grpcInjector{})
		p := pod("1")
		if _, err := a.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: p, Container: ctr(p, "1")}); err != nil {
			t.Fatal(err)
		}
		a.Stop()
		for _, s := range []string{sock, filepath.Join(dir, "nri-grpc.sock")} {
			if _, err := os.Stat(s); !os.IsNotExist(err) {
				t.Fatalf("round %d: socket %s left behind (%v)", round, s, err)
			}
		}
	}
}

// waitGoroutines waits until no more goroutines run than base.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(wait())
	for {
		n := goruntime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Stop, %d before Start:\n%s", n, base, buf[:goruntime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
