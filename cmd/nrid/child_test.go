package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
)

// childMain runs in a child process started by startChild, as another uid.
// It reports on stdout, one JSON childResult per line.
//
// Modes:
//   - "dial": calls health, RegisterPlugin (NRID_PLUGIN, NRID_IDX,
//     NRID_ENDPOINT), AdminService.ListPlugins and
//     AdaptationService.RunPodSandbox, reports each outcome, and exits.
//   - "plugin": registers a testplugin (NRID_PLUGIN, NRID_IDX; NRID_FAIL=1
//     asks for the failure policy fail; its CreateContainer returns an env
//     variable and an OCI hook, or, with NRID_RESPONSES (a JSON array of
//     CreateContainerResponse in protojson), its k-th call returns the k-th
//     of those), reports the outcome, and serves until its stdin closes.
func childMain(mode string) int {
	out := json.NewEncoder(os.Stdout)
	report := func(call string, err error, extra ...func(*childResult)) {
		r := childResult{Call: call, Code: status.Code(err).String()}
		if err != nil {
			r.Msg = status.Convert(err).Message()
			r.Reason = testplugin.Reason(err)
		}
		for _, f := range extra {
			f(&r)
		}
		_ = out.Encode(r)
	}
	sock, dir := os.Getenv("NRID_SOCK"), os.Getenv("NRID_PLUGIN_DIR")
	name, idx := os.Getenv("NRID_PLUGIN"), os.Getenv("NRID_IDX")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout())
	defer cancel()

	switch mode {
	case "dial":
		cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()), codec.DialOption())
		if err != nil {
			report("dial", err)
			return 1
		}
		defer cc.Close()
		rsp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		report("health", err, func(r *childResult) { r.Msg = rsp.GetStatus().String() })

		endpoint := os.Getenv("NRID_ENDPOINT")
		if endpoint == "" {
			endpoint = "unix://" + filepath.Join(dir, "child.sock")
		}
		stream, err := nriv1beta1.NewRuntimeServiceClient(cc).RegisterPlugin(ctx, &nriv1beta1.RegisterPluginRequest{
			PluginName: name, PluginIdx: idx, Endpoint: endpoint, NriVersion: "child",
		})
		if err == nil {
			_, err = stream.Recv()
		}
		report("register", err)

		_, err = nriv1beta1.NewAdminServiceClient(cc).ListPlugins(ctx, &nriv1beta1.ListPluginsRequest{})
		report("admin", err)

		_, err = nriv1beta1.NewAdaptationServiceClient(cc).RunPodSandbox(ctx, &nriv1beta1.AdaptationServiceRunPodSandboxRequest{
			Pod: &nriv1beta1.PodSandbox{Id: "p"},
		})
		report("runtime", err)
		return 0

	case "plugin":
		var canned []*nriv1beta1.CreateContainerResponse
		if v := os.Getenv("NRID_RESPONSES"); v != "" {
			var raw []string
			if err := json.Unmarshal([]byte(v), &raw); err != nil {
				report("responses", err)
				return 1
			}
			for _, r := range raw {
				m := &nriv1beta1.CreateContainerResponse{}
				if err := protojson.Unmarshal([]byte(r), m); err != nil {
					report("responses", err)
					return 1
				}
				canned = append(canned, m)
			}
		}
		var calls atomic.Int64
		p := &testplugin.Plugin{
			Name: name, Index: idx,
			OnCreateContainer: func(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
				if k := calls.Add(1) - 1; k < int64(len(canned)) {
					return canned[k], nil
				}
				return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
					Env:   []*nriv1beta1.KeyValue{{Key: "FROM_CHILD", Value: "1"}},
					Hooks: &nriv1beta1.Hooks{Prestart: []*nriv1beta1.Hook{{Path: "/usr/bin/true"}}},
				}}, nil
			},
		}
		if os.Getenv("NRID_FAIL") == "1" {
			p.FailurePolicy = &nriv1beta1.FailurePolicy{FailRequest: true}
		}
		reg, err := p.Start(ctx, sock, dir)
		report("register", err, func(r *childResult) {
			r.Identity = reg.GetIdentity()
			r.Fail = reg.GetFailurePolicy().GetFailRequest()
		})
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
		p.Stop()
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", mode)
	return 2
}
