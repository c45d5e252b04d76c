package conformance_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// base is what both gRPC setups share: a real server on a unix socket
// serving RuntimeService (unless external connections are disabled) and
// AdaptationService, plugins that are internal/testplugin gRPC servers on
// their own unix sockets registering over that socket, and a log of the
// server's messages shown when the scenario fails.
type base struct {
	t         conformance.T
	o         conformance.Options
	srv       *server.Server
	sock      string
	pluginDir string
	calls     *conformance.CallLog
	applied   *conformance.AppliedLog
}

// syncBuffer collects the server's log lines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newBase(t conformance.T, o conformance.Options) (*base, error) {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	pluginDir := filepath.Join(dir, "p")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := conformance.ServerOptions(o, pluginDir, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	srv, err := server.New(opts...)
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "nri.sock")
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(peercred.Credentials{}), codec.ServerOption())
	if !o.DisableExternalConnections {
		nriv1beta1.RegisterRuntimeServiceServer(g, srv.RuntimeService())
	}
	nriv1beta1.RegisterAdaptationServiceServer(g, srv.AdaptationService())
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), conformance.Wait)
		defer cancel()
		_ = srv.Shutdown(ctx)
		g.Stop()
	})
	return &base{
		t: t, o: o, srv: srv, sock: sock, pluginDir: pluginDir,
		calls: conformance.NewCallLog(), applied: conformance.NewAppliedLog(),
	}, nil
}

func (b *base) Log() *conformance.CallLog        { return b.calls }
func (b *base) Applied() *conformance.AppliedLog { return b.applied }

func (b *base) Shutdown(ctx context.Context) error { return b.srv.Shutdown(ctx) }

func (b *base) DryRun(ctx context.Context, req *nriv1beta1.DryRunRequest) (*nriv1beta1.DryRunResponse, error) {
	return b.srv.DryRun(ctx, req)
}

// apply is the runtime's side of updates and evictions requested outside
// of events: recorded, and failed as Options.FailUpdates says.
func (b *base) apply(plugin string, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction) {
	b.applied.Add(conformance.Applied{Plugin: plugin, Update: updates, Evict: evictions})
	return conformance.FailedUpdates(b.o, updates, evictions)
}

func (b *base) StartPlugin(t conformance.T, spec *conformance.PluginSpec) conformance.Plugin {
	t.Helper()
	p, err := b.TryStartPlugin(t, spec)
	if err != nil {
		t.Fatalf("starting plugin %s: %v", spec.Full(), err)
	}
	return p
}

func (b *base) TryStartPlugin(t conformance.T, spec *conformance.PluginSpec) (conformance.Plugin, error) {
	p, err := conformance.StartTestPlugin(t, spec, b.calls, b.sock, b.pluginDir)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// waitAttached waits until the server uses an attached runtime's state.
func (b *base) waitAttached(t conformance.T) {
	t.Helper()
	select {
	case <-b.srv.RuntimeAttached():
	case <-time.After(conformance.Wait):
		t.Fatal("the runtime did not attach")
	}
}
