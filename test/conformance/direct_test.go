package conformance_test

import (
	"context"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/test/conformance"
)

// directEnv drives the server through its Go API: the runtime is embedded.
type directEnv struct {
	*base
	rt *directRuntime
}

// directRuntime is the embedding runtime's side of unsolicited updates.
type directRuntime struct{ b *base }

func (r *directRuntime) UpdateContainers(_ context.Context, plugin string, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	fu, fe := r.b.apply(plugin, updates, evictions)
	return fu, fe, nil
}

// direct is the setup of the direct path: server.Server's Go API, plugins
// registering over a real RuntimeService socket.
func direct(t conformance.T, o conformance.Options) (conformance.Env, error) {
	b, err := newBase(t, o)
	if err != nil {
		return nil, err
	}
	e := &directEnv{base: b, rt: &directRuntime{b: b}}
	e.SetState(t, nil, nil)
	return e, nil
}

func (e *directEnv) Runtime() conformance.Runtime { return conformance.ServerRuntime(e.srv) }

func (e *directEnv) SetState(t conformance.T, pods []*nriv1beta1.PodSandbox, ctrs []*nriv1beta1.Container) {
	t.Helper()
	info := server.RuntimeInfo{Name: e.o.RuntimeName, Version: e.o.RuntimeVersion}
	if err := e.srv.SetRuntime(context.Background(), info, e.rt, pods, ctrs); err != nil {
		t.Fatal(err)
	}
}

func TestDirect(t *testing.T) { conformance.Run(t, direct) }
