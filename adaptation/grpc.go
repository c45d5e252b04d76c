package adaptation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/nri-grpc/nri-grpc/config"
	"github.com/nri-grpc/nri-grpc/node"
	"github.com/nri-grpc/nri-grpc/server"
)

// loadConfig reads nri-grpc's configuration: the file WithConfigFile named,
// else the one NRI_GRPC_CONFIG names, else nrid's defaults. What only nrid
// does is refused, naming the key: the bridge (the runtime is NRI here) and
// the restart gate (plugins re-register with the runtime's own restart).
func (r *Adaptation) loadConfig() (*config.Config, string, error) {
	path := r.configFile
	if path == "" {
		path = os.Getenv(EnvConfigFile)
	}
	if path == "" {
		return config.Default(), "nri-grpc's defaults", nil
	}
	cfg, err := config.Load(path, config.Overrides{})
	if err != nil {
		return nil, "", fmt.Errorf("nri-grpc configuration: %w", err)
	}
	var refused []error
	if cfg.Bridge.Configured() || cfg.Bridge.ClassicPluginDir != "" {
		refused = append(refused, errors.New("[bridge] is nrid's: inside the runtime, classic plugins use the runtime's own NRI socket and plugin path"))
	}
	if cfg.Server.StateDir != "" {
		refused = append(refused, errors.New("server.state_dir (nrid's restart gate) has no meaning inside the runtime: plugins re-register when the runtime restarts"))
	}
	if cfg.Runtime.Required {
		refused = append(refused, errors.New("runtime.required is nrid's: inside the runtime, the runtime is always attached"))
	}
	if len(refused) > 0 {
		return nil, "", fmt.Errorf("nri-grpc configuration %s: %w", path, errors.Join(refused...))
	}
	return cfg, path, nil
}

// endpoints are nri-grpc's serving side of the server: the node with its
// gRPC endpoints, metrics and tracing, and the gRPC plugins it launches.
type endpoints struct {
	n       *node.Node
	cfgFrom string
	serving bool
}

// newServer builds the node from cfg with the runtime's options on top:
// the runtime's name and version, timeouts, metrics and deprecations win
// over the configuration's.
func (r *Adaptation) newServer(ctx context.Context, cfg *config.Config, from string) (*server.Server, *endpoints, error) {
	n, err := node.New(ctx, cfg, node.WithLogger(r.log), node.WithServerOptions(r.serverOptions()...),
		node.WithMetrics(serverMetrics{r.metrics}))
	if err != nil {
		return nil, nil, fmt.Errorf("nri-grpc: %w", err)
	}
	n.RememberSelectors()
	return n.Server(), &endpoints{n: n, cfgFrom: from}, nil
}

// serverOptions are the server options the runtime's options make.
func (r *Adaptation) serverOptions() []server.Option {
	return []server.Option{
		server.WithLogger(r.log),
		server.WithRuntime(r.name, r.version),
		server.WithRegistrationTimeout(r.registrationTimeout),
		server.WithRequestTimeout(r.requestTimeout),
		server.WithDeprecationHook(r.deprecationHook()),
	}
}

// serve opens the configured endpoints and serves them until ctx ends.
func (e *endpoints) serve(ctx context.Context, wg *sync.WaitGroup) error {
	l, err := e.n.Listen()
	if err != nil {
		return fmt.Errorf("nri-grpc endpoints: %w", err)
	}
	wg.Go(func() {
		if err := e.n.Serve(ctx, l); err != nil {
			e.n.Logger().Error("nri-grpc endpoint failed", "error", err)
		}
	})
	e.n.SetServing(true)
	e.serving = true
	return nil
}

// stop stops the node: plugins are shut down, the endpoints close.
func (e *endpoints) stop(ctx context.Context) { e.n.Stop(ctx) }

// describe says what is served, for the log.
func (e *endpoints) describe() string {
	if !e.serving {
		return "no gRPC endpoint (external connections disabled)"
	}
	cfg := e.n.Config()
	s := cfg.Server.Socket
	if cfg.TCP.Address != "" {
		s += " and tcp " + cfg.TCP.Address
	}
	return s + " (configuration: " + e.cfgFrom + ")"
}
