package node_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nri-grpc/nri-grpc/config"
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/node"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/server"
)

// hello adds an environment variable to every container.
type hello struct{}

func (hello) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return plugin.NewAdjustment().AddEnv("HELLO", req.GetContainer().GetName()).Response(), nil
}

// A runtime that embeds the server: a node serves plugins on a unix
// socket, exactly as nrid does, and the runtime's own process drives the
// events through node.Server. Here a plugin (the SDK's, over gRPC on the
// socket) adjusts a container the runtime creates.
func Example() {
	dir, err := os.MkdirTemp("", "node-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The configuration nrid would read from nrid.toml (config.Load).
	cfg := config.Default()
	cfg.Server.Socket = filepath.Join(dir, "nri.sock")
	cfg.Server.PluginSocketDir = filepath.Join(dir, "plugins")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := node.New(ctx, cfg, node.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	l, err := n.Listen()
	if err != nil {
		log.Fatal(err)
	}
	serveCtx, endServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- n.Serve(serveCtx, l) }()

	// The runtime attaches with its pods and containers (none yet) and
	// the node reports SERVING.
	srv := n.Server()
	if err := srv.SetRuntime(ctx, server.RuntimeInfo{Name: "example-runtime", Version: "1.0"}, nil, nil, nil); err != nil {
		log.Fatal(err)
	}
	n.SetServing(true)

	// A plugin registers over the socket.
	p, err := plugin.New(hello{}, plugin.WithName("hello"), plugin.WithIndex("10"),
		plugin.WithServerAddress("unix://"+cfg.Server.Socket), plugin.WithSocketDir(cfg.Server.PluginSocketDir),
		plugin.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	pluginCtx, stopPlugin := context.WithCancel(ctx)
	pluginDone := make(chan error, 1)
	go func() { pluginDone <- p.Run(pluginCtx) }()
	waitReady(ctx, srv, "10-hello")

	// The runtime's events.
	pod := &nriv1beta1.PodSandbox{Id: "pod-1", Name: "web", Uid: "uid-1", Namespace: "default"}
	if err := srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}); err != nil {
		log.Fatal(err)
	}
	ctr := &nriv1beta1.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "nginx"}
	rsp, err := srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		log.Fatal(err)
	}
	for _, env := range rsp.GetAdjust().GetEnv() {
		fmt.Printf("%s=%s\n", env.GetKey(), env.GetValue())
	}

	// The stop: health NOT_SERVING, the plugins get Shutdown, the gRPC
	// servers stop gracefully within the bound.
	stopCtx, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelStop()
	n.Stop(stopCtx)
	stopPlugin()
	if err := <-pluginDone; err != nil {
		log.Fatal(err)
	}
	endServe()
	fmt.Println("serve:", <-served)
	_, err = os.Stat(cfg.Server.Socket)
	fmt.Println("socket removed:", os.IsNotExist(err))
	// Output:
	// HELLO=nginx
	// serve: <nil>
	// socket removed: true
}

// waitReady waits until the plugin full ("10-hello") is registered and
// ready for events.
func waitReady(ctx context.Context, srv *server.Server, full string) {
	for {
		changed := srv.PluginsChanged()
		for _, pi := range srv.Plugins() {
			if pi.GetPlugin().GetIndex()+"-"+pi.GetPlugin().GetName() == full && pi.GetState() == nriv1beta1.PluginState_PLUGIN_STATE_READY {
				return
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			log.Fatal(ctx.Err())
		}
	}
}
