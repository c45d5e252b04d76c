package adaptation

import (
	"context"
	"fmt"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// setState hands the runtime's pods and containers to srv: their encodings
// are the v1beta1 objects' (the server keeps encodings, and checks them).
func (r *Adaptation) setState(ctx context.Context, srv *server.Server, pods []*PodSandbox, ctrs []*Container) error {
	encPods := make([][]byte, len(pods))
	for i, p := range pods {
		b, err := p.MarshalVT()
		if err != nil {
			return fmt.Errorf("encoding pod %q: %w", p.GetId(), err)
		}
		encPods[i] = b
	}
	encCtrs := make([][]byte, len(ctrs))
	for i, c := range ctrs {
		b, err := c.MarshalVT()
		if err != nil {
			return fmt.Errorf("encoding container %q: %w", c.GetId(), err)
		}
		encCtrs[i] = b
	}
	return srv.SetRuntimeEncoded(ctx, server.RuntimeInfo{Name: r.name, Version: r.version}, runtimeUpdates{r}, encPods, encCtrs)
}

// runtimeUpdates applies what plugins ask for outside of an event through
// the runtime's UpdateFn (server.Runtime).
type runtimeUpdates struct{ r *Adaptation }

// UpdateContainers implements server.Runtime. Upstream's UpdateFn takes no
// evictions: they are reported failed, and logged.
func (u runtimeUpdates) UpdateContainers(ctx context.Context, plugin string, updates []*nriv1beta1.ContainerUpdate,
	evictions []*nriv1beta1.ContainerEviction) ([]*nriv1beta1.ContainerUpdate, []*nriv1beta1.ContainerEviction, error) {
	if len(evictions) > 0 {
		u.r.log.Warn("the runtime's UpdateFn cannot evict; evictions failed", "plugin", plugin, "count", len(evictions))
	}
	if len(updates) == 0 {
		return nil, evictions, nil
	}
	in, err := convertAll[ContainerUpdate](updates)
	if err != nil {
		return nil, nil, err
	}
	failed, err := u.r.updateFn(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	out, err := convertAll[nriv1beta1.ContainerUpdate](failed)
	if err != nil {
		return nil, nil, err
	}
	return out, evictions, nil
}
