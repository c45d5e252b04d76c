package bench

import (
	"context"
	"fmt"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/nri"
)

// sideFloor is the transport floor of one nri-grpc hop: the plugin process
// of the K=1 nri-grpc setup called directly by a bare grpc-go client, with
// what the protocol puts on every call (a deadline and the nri-instance-id,
// nri-node-name and nri-runtime-name metadata) and the request encoded by
// the call, as the server must. No server: no dispatch, merge, checks,
// state or records. Its distance to the nri-grpc row is everything the
// server adds to a hop; its ratio to classic bounds what any runtime built
// on grpc-go and this protocol can reach at K=1.
const sideFloor = "floor: bare grpc-go call"

// measureFloor measures n bare calls of CreateContainer to the first plugin
// of rt in each mode, recorded as "K=1 mode" rows of side sideFloor.
func (b *bencher) measureFloor(e *env, rt *grpcRT, n int) error {
	cc, err := grpc.NewClient("unix://"+filepath.Join(rt.pluginDir, "10-bench.sock"),
		append(flowctl.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())...)
	if err != nil {
		return err
	}
	defer func() { _ = cc.Close() }()
	md := metadata.Pairs(nri.MetadataInstanceID, "10-bench-1795651271153648081-1",
		nri.MetadataNodeName, "bench-node", nri.MetadataRuntimeName, "bench-runtime")
	for _, m := range modes {
		warm := warmOf(n)
		reqs := b.createRequests(n + warm)
		w, err := measure(rt.plugins, e.windowProfile("floor-"+m.name), n, warm, m.workers, func(i int) error {
			ctx, cancel := context.WithTimeout(context.Background(), longTimeout)
			defer cancel()
			rsp := &nriv1beta1.CreateContainerResponse{}
			if err := cc.Invoke(metadata.NewOutgoingContext(ctx, md), nriv1beta1.PluginService_CreateContainer_FullMethodName,
				reqs[i], rsp, grpc.WaitForReady(true)); err != nil {
				return err
			}
			return checkAdjusted(1, rsp.GetAdjust().GetAnnotations())
		})
		if err != nil {
			return err
		}
		b.res.window(key{scCreate, fmt.Sprintf("K=1 %s", m.name), sideFloor}, w)
	}
	return nil
}
