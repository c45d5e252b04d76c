package bridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"

	"github.com/nri-grpc/nri-grpc/bridge"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
)

// envPlugin registers a gRPC plugin on n that sets env KEY=1 on every
// container.
func envPlugin(t *testing.T, n *nrid, key string) {
	n.grpcPlugin(t, "10", "env", func(p *testplugin.Plugin) {
		p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Env: []*nriv1beta1.KeyValue{{Key: key, Value: "1"}}}}, nil
		}
	})
}

// createLoop creates n containers in pod 1 through the classic runtime,
// one after the other, and sends the env key each got (or the error).
func createLoop(ctx context.Context, rt *classicRuntime, n int, started chan<- struct{}) <-chan string {
	out := make(chan string, n)
	go func() {
		defer close(out)
		for i := range n {
			if i == n/4 {
				close(started)
			}
			rsp, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: alphaCtr(1, 10+i)})
			switch env := rsp.GetAdjust().GetEnv(); {
			case err != nil:
				out <- "error: " + err.Error()
			case len(env) != 1:
				out <- fmt.Sprintf("env %v", env)
			default:
				out <- env[0].GetKey()
			}
		}
	}()
	return out
}

// TestHandoverKeepsTheRuntimeConnection: a new nrid takes over the
// bridge's connection to a classic runtime (upstream pkg/adaptation) from
// the old one — through the encoding that crosses processes — while the
// runtime creates containers without pause: every creation succeeds, each
// is adjusted by the old nrid's plugin until the handover and by the new
// one's after it, none by neither, and the runtime never registers the
// bridge again (the new nrid is never configured or synchronized by it).
func TestHandoverKeepsTheRuntimeConnection(t *testing.T) {
	sock := filepath.Join(tempDir(t), "nri.sock")
	rt := startClassicRuntime(t, sock, []*v1alpha1.PodSandbox{alphaPod(1)}, []*v1alpha1.Container{alphaCtr(1, 0)})
	oldN, newN := startNrid(t), startNrid(t)
	envPlugin(t, oldN, "OLD")
	envPlugin(t, newN, "NEW")
	oldRS := attachBridge(t, oldN, sock)
	rt.settled()

	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	const total = 40
	started := make(chan struct{})
	results := createLoop(ctx, rt, total, started)
	<-started
	ho, err := oldRS.Detach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ho2 := crossProcesses(t, ho)
	if len(ho2.Pods) != 1 || len(ho2.Containers) < 1 || ho2.Info.Name != "classic-runtime" {
		t.Fatalf("handed over %d pods, %d containers, runtime %+v", len(ho2.Pods), len(ho2.Containers), ho2.Info)
	}
	// The state travels as the old server's encodings, unchanged.
	if !slices.EqualFunc(ho.Pods, ho2.Pods, bytes.Equal) || !slices.EqualFunc(ho.Containers, ho2.Containers, bytes.Equal) {
		t.Fatal("the state's encodings changed on the way")
	}
	adoptOn(ctx, t, newN, sock, ho2)

	var seq []string
	for r := range results {
		seq = append(seq, r)
	}
	switched := false
	for i, r := range seq {
		switch {
		case r == "NEW":
			switched = true
		case r == "OLD" && !switched:
		default:
			t.Fatalf("creation %d: %s (all: %v)", i, r, seq)
		}
	}
	if !switched || seq[0] != "OLD" {
		t.Fatalf("creations %v: want the old plugin's first, then the new one's", seq)
	}
	rsp, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: alphaCtr(1, 99)})
	if err != nil || len(rsp.GetAdjust().GetEnv()) != 1 || rsp.GetAdjust().GetEnv()[0].GetKey() != "NEW" {
		t.Fatalf("after the handover: %v, %v", rsp.GetAdjust().GetEnv(), err)
	}
	if n := len(oldN.log.Of("10-env", "CreateContainer")); n == 0 || n >= total {
		t.Fatalf("the old plugin adjusted %d of %d creations", n, total)
	}
}

// TestHandoverResume: a takeover that fails after Detach gives the
// connection back to the old nrid (Resume), which serves the runtime again
// on the same connection.
func TestHandoverResume(t *testing.T) {
	sock := filepath.Join(tempDir(t), "nri.sock")
	rt := startClassicRuntime(t, sock, []*v1alpha1.PodSandbox{alphaPod(1)}, nil)
	n := startNrid(t)
	envPlugin(t, n, "OLD")
	rs := attachBridge(t, n, sock)
	rt.settled()
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	ho, err := rs.Detach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Detach(ctx); err == nil {
		t.Fatal("a second Detach succeeded")
	}
	if err := rs.Resume(ctx, ho); err != nil {
		t.Fatal(err)
	}
	rsp, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: alphaCtr(1, 1)})
	if err != nil || len(rsp.GetAdjust().GetEnv()) != 1 || rsp.GetAdjust().GetEnv()[0].GetKey() != "OLD" {
		t.Fatalf("after Resume: %v, %v", rsp.GetAdjust().GetEnv(), err)
	}
	// And it can be handed over again.
	if ho, err = rs.Detach(ctx); err != nil {
		t.Fatalf("Detach after Resume: %v", err)
	}
	_ = ho.Conn.File.Close()
}

// TestHandoverCountsTheWaitInTheSocket: the runtime's first request after
// a takeover may have waited in the socket since the old nrid stopped
// reading, and the runtime's timeout for it ran meanwhile; the new nrid's
// hold on events (server.HoldEvents, for the old nrid's plugins) counts the
// event's budget from then. The handover says the old nrid stopped reading
// 59 minutes ago and the runtime's timeout is an hour: the middle of the
// budget has passed, so the event is not held for the absent plugin at all
// and the present one adjusts it. Counted from the read instead, the hold
// would last half an hour and the runtime (whose real timeout is 2 s) would
// give up on the bridge first.
func TestHandoverCountsTheWaitInTheSocket(t *testing.T) {
	sock := filepath.Join(tempDir(t), "nri.sock")
	rt := startClassicRuntime(t, sock, []*v1alpha1.PodSandbox{alphaPod(1)}, nil)
	oldN, newN := startNrid(t), startNrid(t)
	envPlugin(t, newN, "NEW")
	oldRS := attachBridge(t, oldN, sock)
	rt.settled()
	ctx, cancel := context.WithTimeout(context.Background(), wait())
	defer cancel()
	ho, err := oldRS.Detach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ho.Conn.Stopped.IsZero() || ho.Conn.Stopped.After(time.Now()) {
		t.Fatalf("the handover says the reader stopped at %v", ho.Conn.Stopped)
	}
	ho.Conn.Stopped = time.Now().Add(-59 * time.Minute)
	ho.Timeout = time.Hour
	ho2 := crossProcesses(t, ho)
	if !ho2.Conn.Stopped.Equal(ho.Conn.Stopped) {
		t.Fatalf("the moment the reader stopped did not cross the encoding: %v, sent %v", ho2.Conn.Stopped, ho.Conn.Stopped)
	}
	newN.srv.HoldEvents([]string{"20-gone"}, time.Now().Add(time.Hour))
	adoptOn(ctx, t, newN, sock, ho2)

	rsp, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: alphaPod(1), Container: alphaCtr(1, 1)})
	if err != nil || len(rsp.GetAdjust().GetEnv()) != 1 || rsp.GetAdjust().GetEnv()[0].GetKey() != "NEW" {
		t.Fatalf("the first creation after the handover: %v, %v", rsp.GetAdjust().GetEnv(), err)
	}
	if n := newN.srv.EventsHeld(); n != 0 {
		t.Fatalf("%d events held", n)
	}
}

// crossProcesses is ho after the encoding that crosses from the old nrid's
// process to the new one's.
func crossProcesses(t *testing.T, ho *bridge.Handover) *bridge.Handover {
	t.Helper()
	data, err := json.Marshal(ho)
	if err != nil {
		t.Fatal(err)
	}
	ho2, err := bridge.DecodeHandover(data, ho.Conn.File)
	if err != nil {
		t.Fatal(err)
	}
	return ho2
}

// adoptOn continues the connection handed over in ho on n, as the new
// nrid's runtime side, until the test ends.
func adoptOn(ctx context.Context, t *testing.T, n *nrid, sock string, ho *bridge.Handover) {
	t.Helper()
	rs, err := bridge.NewRuntimeSide(n.srv, bridge.WithRuntimeSocket(sock), bridge.WithRuntimeLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Adopt(ctx, ho); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rs.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
}
