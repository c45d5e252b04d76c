package server_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/node"
	"github.com/nri-grpc/nri-grpc/plugin"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/transport"
)

// labeler adds a label to every container.
type labeler struct{}

func (labeler) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return plugin.NewAdjustment().AddAnnotation("example.com/pod", req.GetPod().GetName()).Response(), nil
}

// The bare server core on a gRPC server of the embedder's own, with the
// public wire setup a node uses (node.GRPCServerOptions, node.Services):
// without a configuration file, policy, health or metrics. A plugin
// registers over the unix socket and the embedder's process sends the
// runtime's events.
func Example() {
	dir, err := os.MkdirTemp("", "server-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	socket, pluginDir := filepath.Join(dir, "nri.sock"), filepath.Join(dir, "plugins")
	if err := os.Mkdir(pluginDir, 0o700); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	quiet := slog.New(slog.DiscardHandler)
	srv, err := server.New(server.WithLogger(quiet), server.WithPluginSocketDir(pluginDir),
		server.WithDialer(transport.NewDialer()))
	if err != nil {
		log.Fatal(err)
	}
	// Peer credentials identify the plugins (server.UnixPeer); add
	// interceptor.ServerOptions for authentication and access control.
	g := grpc.NewServer(append(node.GRPCServerOptions(0), grpc.Creds(transport.UnixCredentials()))...)
	if err := node.NewServices(srv).Register(g); err != nil {
		log.Fatal(err)
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(l) }()

	if err := srv.SetRuntime(ctx, server.RuntimeInfo{Name: "example-runtime", Version: "1.0"}, nil, nil, nil); err != nil {
		log.Fatal(err)
	}
	p, err := plugin.New(labeler{}, plugin.WithName("labeler"), plugin.WithIndex("20"),
		plugin.WithServerAddress("unix://"+socket), plugin.WithSocketDir(pluginDir), plugin.WithLogger(quiet))
	if err != nil {
		log.Fatal(err)
	}
	pluginCtx, stopPlugin := context.WithCancel(ctx)
	pluginDone := make(chan error, 1)
	go func() { pluginDone <- p.Run(pluginCtx) }()
	waitReady(ctx, srv, "20-labeler")

	pod := &nriv1beta1.PodSandbox{Id: "pod-1", Name: "web", Uid: "uid-1", Namespace: "default"}
	if err := srv.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: pod}); err != nil {
		log.Fatal(err)
	}
	rsp, err := srv.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: pod,
		Container: &nriv1beta1.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "nginx"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rsp.GetAdjust().GetAnnotations())

	// The stop: the plugins get Shutdown, then the gRPC server stops.
	if err := srv.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	stopPlugin()
	if err := <-pluginDone; err != nil {
		log.Fatal(err)
	}
	g.GracefulStop()
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		log.Fatal(err)
	}
	// Output:
	// map[example.com/pod:web]
}

// waitReady waits until the plugin full is registered and ready for
// events.
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
