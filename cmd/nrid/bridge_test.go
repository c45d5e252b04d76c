package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/containerd/nri/pkg/adaptation"
	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
)

// classicAnnotator is an upstream pkg/stub plugin adding one annotation.
type classicAnnotator struct{}

func (classicAnnotator) CreateContainer(context.Context, *v1alpha1.PodSandbox, *v1alpha1.Container) (*v1alpha1.ContainerAdjustment, []*v1alpha1.ContainerUpdate, error) {
	a := &v1alpha1.ContainerAdjustment{}
	a.AddAnnotation("classic", "1")
	return a, nil, nil
}

// TestBridgeBothSidesFromConfig: nrid's [bridge] section attaches to a
// classic runtime (upstream pkg/adaptation) and serves classic plugins;
// a classic plugin and a gRPC plugin both adjust a container the classic
// runtime creates, and health follows the runtime side.
func TestBridgeBothSidesFromConfig(t *testing.T) {
	dir := tempDir(t)
	rtSock := filepath.Join(dir, "nri.sock")
	classicSock := filepath.Join(dir, "classic.sock")
	a := startClassicRuntime(t, dir, rtSock)

	n := startNrid(t, fmt.Sprintf("[runtime]\nrequired = true\n[bridge]\nruntime_socket = %q\nplugin_socket = %q\n", rtSock, classicSock))
	cc := n.conn(t)
	ctx := testCtx(t)
	watch, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if st.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}

	st, err := stub.New(classicAnnotator{}, stub.WithPluginName("classic"), stub.WithPluginIdx("20"), stub.WithSocketPath(classicSock))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	gp := &testplugin.Plugin{Name: "grpc", Index: "10", Events: 1 << (uint32(nriv1beta1.Event_EVENT_CREATE_CONTAINER) - 1),
		OnCreateContainer: func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"grpc": "1"}}}, nil
		}}
	if _, err := gp.Start(ctx, n.sock, n.plugins); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gp.Stop)
	n.logs.wait(t, reLog(`plugin registered[^\n]*plugin=20-classic`), n.done)

	a.BlockPluginSync().Unblock()
	rsp, err := a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{
		Pod:       &v1alpha1.PodSandbox{Id: "pod0", Name: "pod0", Namespace: "default"},
		Container: &v1alpha1.Container{Id: "ctr0", PodSandboxId: "pod0", Name: "ctr0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := rsp.GetAdjust().GetAnnotations()
	if got["grpc"] != "1" || got["classic"] != "1" {
		t.Fatalf("the classic runtime got annotations %v, want both plugins'", got)
	}
}

// startClassicRuntime starts upstream pkg/adaptation as an empty classic
// runtime ("containerd" v2.4.2) on socket, with its plugin directories in
// dir.
func startClassicRuntime(t *testing.T, dir, socket string) *adaptation.Adaptation {
	t.Helper()
	a, err := adaptation.New("containerd", "v2.4.2",
		func(ctx context.Context, cb adaptation.SyncCB) error { _, err := cb(ctx, nil, nil); return err },
		func(context.Context, []*v1alpha1.ContainerUpdate) ([]*v1alpha1.ContainerUpdate, error) {
			return nil, nil
		},
		adaptation.WithSocketPath(socket), adaptation.WithPluginPath(filepath.Join(dir, "none")),
		adaptation.WithPluginConfigPath(filepath.Join(dir, "none")))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	return a
}
