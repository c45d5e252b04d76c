package main

import (
	"context"
	"fmt"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/nri-grpc/nri-grpc/internal/version"
)

// runHealth checks nrid's gRPC health: exit status 0 when SERVING. With
// -live any answer counts (nrid is up, even if its runtime is not attached
// yet): use it for liveness probes, the default for readiness probes.
func runHealth(ctx context.Context, g *globals, args []string) error {
	fs := g.flags("health", "health [-service S] [-live]")
	service := fs.String("service", "", `service to check ("" is the whole server)`)
	live := fs.Bool("live", false, "succeed on any answer (liveness), not only SERVING (readiness)")
	if err := parse(fs, g, args); err != nil {
		return err
	}
	c, err := g.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	cctx, cancel := g.callContext(ctx)
	defer cancel()
	rsp, err := healthpb.NewHealthClient(c.cc).Check(cctx, &healthpb.HealthCheckRequest{Service: *service})
	if err != nil {
		return err
	}
	if g.json() {
		err = printJSON(g.stdout, rsp)
	} else {
		_, err = fmt.Fprintln(g.stdout, rsp.GetStatus())
	}
	if err != nil {
		return err
	}
	if rsp.GetStatus() != healthpb.HealthCheckResponse_SERVING && !*live {
		return quietError{1}
	}
	return nil
}

// runVersion prints nrictl's build: version, commit, whether the tree was
// modified, Go version and protocol (internal/version).
func runVersion(_ context.Context, g *globals, args []string) error {
	fs := g.flags("version", "version")
	if err := parse(fs, g, args); err != nil {
		return err
	}
	info := version.Get()
	if g.json() {
		fields := info.Fields()
		fields["nrictl"] = info.String()
		v, err := structpb.NewStruct(fields)
		if err != nil {
			return err
		}
		return printJSON(g.stdout, v)
	}
	return info.Write(g.stdout, "nrictl")
}
