package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

var wantServices = []string{
	"grpc.health.v1.Health",
	"nri.v1beta1.AdaptationService",
	"nri.v1beta1.AdminService",
	"nri.v1beta1.PluginService",
	"nri.v1beta1.RuntimeService",
}

// startNrid runs nrid on a fresh socket and returns the socket path once
// nrid answers health checks.
func startNrid(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "nrid.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--socket", sock}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("nrid returned %v", err)
		}
	})
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	rsp, err := healthpb.NewHealthClient(conn).Check(wctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("health check: %v", err)
	}
	if rsp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health status %v", rsp.GetStatus())
	}
	return sock
}

func TestReflectionListsEveryService(t *testing.T) {
	sock := startNrid(t)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := reflectionv1.NewServerReflectionClient(conn).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionv1.ServerReflectionRequest{
		MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	rsp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range rsp.GetListServicesResponse().GetService() {
		if !strings.HasPrefix(s.GetName(), "grpc.reflection.") {
			got = append(got, s.GetName())
		}
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(wantServices, ",") {
		t.Fatalf("reflection lists %v, want %v", got, wantServices)
	}
}

// grpcurl runs the grpcurl binary named by $GRPCURL (make test builds it).
func grpcurl(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("GRPCURL")
	if bin == "" {
		t.Skip("GRPCURL is not set; `make test` sets it")
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestGrpcurlListAndDescribe(t *testing.T) {
	sock := startNrid(t)
	protoset, err := filepath.Abs("../../gen/go/nri/v1beta1/nri.binpb")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range [][]string{
		{"-unix", "-plaintext", sock},                        // reflection
		{"-protoset", protoset, "-unix", "-plaintext", sock}, // the built descriptor set
	} {
		list := grpcurl(t, append(src[:len(src):len(src)], "list")...)
		for _, svc := range wantServices[1:] {
			if !strings.Contains(list, svc) {
				t.Errorf("grpcurl %v list: %s missing from\n%s", src, svc, list)
			}
			desc := grpcurl(t, append(src[:len(src):len(src)], "describe", svc)...)
			if !strings.Contains(desc, "is a service:") || !strings.Contains(desc, "rpc ") {
				t.Errorf("grpcurl describe %s:\n%s", svc, desc)
			}
		}
		desc := grpcurl(t, append(src[:len(src):len(src)], "describe", "nri.v1beta1.CreateContainerRequest")...)
		if !strings.Contains(desc, "Container being created") {
			t.Errorf("describe does not show the proto comments:\n%s", desc)
		}
	}
	health := grpcurl(t, "-unix", "-plaintext", sock, "grpc.health.v1.Health/Check")
	if !strings.Contains(health, "SERVING") {
		t.Errorf("health check: %s", health)
	}
}
