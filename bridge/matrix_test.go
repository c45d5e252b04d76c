package bridge_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"

	"github.com/nri-grpc/nri-grpc/bridge"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
	"github.com/nri-grpc/nri-grpc/supervisor"
)

// TestVersionMatrix: {classic runtime, gRPC runtime} × {old classic plugin,
// current classic plugin, gRPC plugin}: each pair runs one pod lifecycle and
// the plugin's adjustment reaches the runtime.
func TestVersionMatrix(t *testing.T) {
	oldDir := tempDir(t)
	buildOldPlugin(t, oldDir, "10-old")
	plugins := map[string]func(t *testing.T, n *nrid) (key string){
		"old-classic": func(t *testing.T, n *nrid) string {
			ps, err := bridge.NewPluginSide(n.srv, bridge.WithPluginLogger(testLogger(t)))
			if err != nil {
				t.Fatal(err)
			}
			sup := supervisor.New(supervisor.WithLogger(testLogger(t)))
			t.Cleanup(func() { _ = sup.Stop(context.Background()) })
			conf := tempDir(t)
			if err := os.WriteFile(filepath.Join(conf, "old.conf"), []byte(filepath.Join(conf, "events")), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := ps.Launch(context.Background(), sup, oldDir, conf); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the old plugin", func() bool { return readyPlugins(n.srv) == 1 })
			return "classic-old"
		},
		"classic": func(t *testing.T, n *nrid) string {
			sock := servePluginSide(t, n)
			startStub(t, sock, "10", &classicPlugin{name: "10-current", log: n.log,
				create: func(*v1alpha1.PodSandbox, *v1alpha1.Container) (*v1alpha1.ContainerAdjustment, []*v1alpha1.ContainerUpdate, error) {
					a := &v1alpha1.ContainerAdjustment{}
					a.AddAnnotation("classic-current", "1")
					return a, nil, nil
				}})
			waitFor(t, "the classic plugin", func() bool { return readyPlugins(n.srv) == 1 })
			return "classic-current"
		},
		"grpc": func(t *testing.T, n *nrid) string {
			n.grpcPlugin(t, "10", "grpc", func(p *testplugin.Plugin) {
				p.OnCreateContainer = func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
					return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"grpc": "1"}}}, nil
				}
			})
			return "grpc"
		},
	}
	for _, rtKind := range []string{"classic-runtime", "grpc-runtime"} {
		for _, plKind := range []string{"old-classic", "classic", "grpc"} {
			t.Run(rtKind+"/"+plKind, func(t *testing.T) {
				n := startNrid(t)
				key := plugins[plKind](t, n)
				var annotations map[string]string
				if rtKind == "classic-runtime" {
					sock := filepath.Join(tempDir(t), "nri.sock")
					rt := startClassicRuntime(t, sock, nil, nil)
					attachBridge(t, n, sock)
					rt.settled()
					annotations = classicLifecycle(t, rt)
				} else {
					annotations = grpcLifecycle(t, n)
				}
				if annotations[key] == "" {
					t.Fatalf("the runtime did not get the plugin's annotation %q: %v", key, annotations)
				}
			})
		}
	}
}

// classicLifecycle runs a pod lifecycle through the classic runtime and
// returns the annotations its CreateContainer got.
func classicLifecycle(t *testing.T, rt *classicRuntime) map[string]string {
	t.Helper()
	ctx := context.Background()
	pod, ctr := alphaPod(7), alphaCtr(7, 0)
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	check("RunPodSandbox", rt.a.RunPodSandbox(ctx, &v1alpha1.RunPodSandboxRequest{Pod: pod}))
	rsp, err := rt.a.CreateContainer(ctx, &v1alpha1.CreateContainerRequest{Pod: pod, Container: ctr})
	check("CreateContainer", err)
	check("PostCreateContainer", rt.a.PostCreateContainer(ctx, &v1alpha1.PostCreateContainerRequest{Pod: pod, Container: ctr}))
	check("StartContainer", rt.a.StartContainer(ctx, &v1alpha1.StartContainerRequest{Pod: pod, Container: ctr}))
	_, err = rt.a.StopContainer(ctx, &v1alpha1.StopContainerRequest{Pod: pod, Container: ctr})
	check("StopContainer", err)
	check("RemoveContainer", rt.a.RemoveContainer(ctx, &v1alpha1.RemoveContainerRequest{Pod: pod, Container: ctr}))
	check("StopPodSandbox", rt.a.StopPodSandbox(ctx, &v1alpha1.StopPodSandboxRequest{Pod: pod}))
	check("RemovePodSandbox", rt.a.RemovePodSandbox(ctx, &v1alpha1.RemovePodSandboxRequest{Pod: pod}))
	return rsp.GetAdjust().GetAnnotations()
}

// grpcLifecycle runs a pod lifecycle through the server's Go API.
func grpcLifecycle(t *testing.T, n *nrid) map[string]string {
	t.Helper()
	ctx := context.Background()
	pod, ctr := fixture.Pod(7), fixture.Container(7, 0)
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	check("RunPodSandbox", n.srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}))
	rsp, err := n.srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr})
	check("CreateContainer", err)
	_, err = n.srv.PostCreateContainer(ctx, &nriv1beta1.PostCreateContainerRequest{Pod: pod, Container: ctr})
	check("PostCreateContainer", err)
	check("StartContainer", n.srv.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: pod, Container: ctr}))
	_, err = n.srv.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: pod, Container: ctr})
	check("StopContainer", err)
	_, err = n.srv.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: ctr})
	check("RemoveContainer", err)
	_, err = n.srv.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: pod})
	check("StopPodSandbox", err)
	_, err = n.srv.RemovePodSandbox(ctx, &nriv1beta1.RemovePodSandboxRequest{Pod: pod})
	check("RemovePodSandbox", err)
	return rsp.GetAdjust().GetAnnotations()
}
