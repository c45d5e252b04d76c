package adaptation_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"

	nri "github.com/nri-grpc/nri-grpc/adaptation"
)

// Example embeds NRI in a runtime exactly as with upstream's pkg/adaptation
// (only the import differs): a SyncFn listing the runtime's state, an
// UpdateFn applying plugins' updates, then the events. A builtin plugin
// stands in for the plugins that would connect to the classic socket and,
// with an nri-grpc configuration, to the gRPC socket.
func Example() {
	dir, _ := os.MkdirTemp("", "nri-example-")
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "nri-grpc.toml")
	_ = os.WriteFile(cfg, []byte("[server]\nsocket = \""+filepath.Join(dir, "nri-grpc.sock")+"\"\n"+
		"plugin_socket_dir = \""+filepath.Join(dir, "plugins.d")+"\"\n"), 0o600)

	syncFn := func(ctx context.Context, cb nri.SyncCB) error {
		_, err := cb(ctx, nil, nil) // the runtime's pods and containers
		return err
	}
	updateFn := func(context.Context, []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) { return nil, nil }
	hello := &builtin.BuiltinPlugin{Base: "hello", Index: "10", Handlers: builtin.BuiltinHandlers{
		CreateContainer: func(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
			a := &api.ContainerAdjustment{}
			a.AddEnv("HELLO", req.GetContainer().GetName())
			return &api.CreateContainerResponse{Adjust: a}, nil
		},
	}}
	a, err := nri.New("example-runtime", "v1.0", syncFn, updateFn,
		nri.WithSocketPath(filepath.Join(dir, "nri.sock")),
		nri.WithPluginPath(filepath.Join(dir, "plugins")),
		nri.WithBuiltinPlugins(hello),
		nri.WithConfigFile(cfg))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := a.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer a.Stop()

	pod := &nri.PodSandbox{Id: "pod1", Name: "web", Namespace: "default"}
	ctr := &nri.Container{Id: "ctr1", PodSandboxId: "pod1", Name: "nginx"}
	_ = a.RunPodSandbox(context.Background(), &nri.RunPodSandboxRequest{Pod: pod})
	rsp, err := a.CreateContainer(context.Background(), &nri.CreateContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, kv := range rsp.GetAdjust().GetEnv() {
		fmt.Printf("%s=%s\n", kv.GetKey(), kv.GetValue())
	}
	// Output: HELLO=nginx
}
