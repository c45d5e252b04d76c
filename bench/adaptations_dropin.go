package bench

import (
	"context"
	"fmt"

	api "github.com/containerd/nri/pkg/api"

	dropin "github.com/nri-grpc/nri-grpc/adaptation"
)

// dropinStandIn is true when the "drop-in" side of the dropin scenario is
// upstream pkg/adaptation too (the same code on both sides of the
// interface: an A/A run, which shows the measurement's noise): set it to
// measure the harness itself. Its gRPC-plugin rows are then skipped, and
// the report and summary say so.
const dropinStandIn = false

var (
	_ adaptationAPI  = (*dropin.Adaptation)(nil)
	_ dropin.Metrics = (*pluginCounter)(nil)
)

func init() {
	dropin.SetPluginRequestTimeout(longTimeout)
	dropin.SetPluginRegistrationTimeout(longTimeout)
}

// newDropinNRI is the drop-in, github.com/nri-grpc/nri-grpc/adaptation,
// created exactly as newUpstreamNRI creates upstream (the same callbacks and
// options), plus its configuration file (WithConfigFile): where its gRPC
// plugins register.
func newDropinNRI(p adaptationPaths) (runtimeNRI, error) {
	if dropinStandIn {
		return newUpstreamNRI(p)
	}
	syncFn := func(ctx context.Context, cb dropin.SyncCB) error {
		_, err := cb(ctx, nil, nil)
		return err
	}
	updateFn := func(context.Context, []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) { return nil, nil }
	plugins := newPluginCounter()
	a, err := dropin.New("bench-runtime", "v1.0.0", syncFn, updateFn,
		dropin.WithSocketPath(p.socket),
		dropin.WithPluginPath(p.pluginPath),
		dropin.WithPluginConfigPath(p.pluginConfigPath),
		dropin.WithMetrics(plugins),
		dropin.WithConfigFile(p.config),
	)
	if err != nil {
		return runtimeNRI{}, fmt.Errorf("drop-in: %w", err)
	}
	return runtimeNRI{adaptationAPI: a, plugins: plugins}, nil
}
