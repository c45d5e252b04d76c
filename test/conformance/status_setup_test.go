package conformance_test

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// grpcBridged is the path of gRPC plugins behind the bridge: classic NRI's
// runtime (pkg/adaptation) → the bridge's runtime side → nri-grpc's server
// ← gRPC plugins registered over its RuntimeService. It runs the plugin
// status and event selector scenarios with plugins that report their own
// status and declare their own selectors; the other scenarios run behind
// the bridge with classic plugins (TestClassicBridged) and with gRPC
// plugins on the direct paths.
func grpcBridged(t conformance.T, o conformance.Options) (conformance.Env, error) {
	e, err := newClassicEnv(t, o, modeBridged)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	pluginDir := e.grpcDir
	sock := filepath.Join(dir, "nri.sock")
	lis, err := sockets.Listen(sock, sockets.DefaultListenOptions)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.Creds(peercred.Credentials{}), codec.ServerOption())
	nriv1beta1.RegisterRuntimeServiceServer(g, e.srv.RuntimeService())
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(func() {
		g.Stop()
		_ = os.RemoveAll(dir)
	})
	b := &base{t: t, o: o, srv: e.srv, sock: sock, pluginDir: pluginDir, calls: e.calls, applied: e.applied}
	return &grpcBridgedEnv{classicEnv: e, b: b}, nil
}

// grpcBridgedEnv is a bridged classic env whose plugins are gRPC plugins.
type grpcBridgedEnv struct {
	*classicEnv
	b *base
}

func (e *grpcBridgedEnv) StartPlugin(t conformance.T, spec *conformance.PluginSpec) conformance.Plugin {
	return e.b.StartPlugin(t, spec)
}

func (e *grpcBridgedEnv) TryStartPlugin(t conformance.T, spec *conformance.PluginSpec) (conformance.Plugin, error) {
	return e.b.TryStartPlugin(t, spec)
}

// PlainError: nri-grpc's dispatch errors reach the classic runtime as gRPC
// statuses and come back unchanged; registration refusals come from
// nri-grpc itself.
func (e *grpcBridgedEnv) PlainError(reason string) bool { return reason == "" }

// TestGRPCBridged runs the plugin status and event selector scenarios on
// the bridged path with gRPC plugins.
func TestGRPCBridged(t *testing.T) {
	conformance.Run(t, grpcBridged, conformance.SkipScenarios(func(s conformance.ScenarioInfo) string {
		if s.Group != conformance.StatusGroup && s.Group != conformance.SelectorsGroup {
			return "grpc-bridged runs the " + conformance.StatusGroup + " and " + conformance.SelectorsGroup +
				" scenarios only (the others run behind the bridge in TestClassicBridged)"
		}
		return ""
	}))
}
