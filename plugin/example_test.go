package plugin_test

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
	"syscall"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/plugin"
)

// hello adds an environment variable to every container.
type hello struct{}

func (hello) CreateContainer(_ context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return plugin.NewAdjustment().AddEnv("HELLO", req.GetContainer().GetName()).Response(), nil
}

// A plugin that adds an environment variable to every container, run until
// SIGINT or SIGTERM.
func Example() {
	p, err := plugin.New(hello{}, plugin.WithName("hello"), plugin.WithIndex("10"))
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := p.Run(ctx); err != nil && !errors.Is(err, plugin.ErrReplaced) {
		log.Fatal(err)
	}
}

// Building an adjustment that overrides an environment variable an
// earlier plugin set (remove, then set), moves a mount and pins CPUs.
func ExampleAdjustment() {
	adjust := plugin.NewAdjustment().
		RemoveEnv("LOG_LEVEL").AddEnv("LOG_LEVEL", "debug").
		RemoveMount("/data").
		AddMount(&nriv1beta1.Mount{Source: "/srv/data", Destination: "/data", Type: "bind", Options: []string{"rbind", "ro"}}).
		SetLinuxCPUSetCPUs("2-3")
	_ = adjust.Response() // the CreateContainerResponse to return
}
