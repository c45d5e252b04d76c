package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/testplugin"
)

// TestRestartGateRemembersSelectors: nrid records the selectors of the
// registered plugins; after a restart, a required plugin that did not come
// back stays required only for the pods its selectors selected.
func TestRestartGateRemembersSelectors(t *testing.T) {
	state := tempDir(t)
	cfg := gateConfig(state, "100ms")
	first := startNrid(t, cfg)
	p := &testplugin.Plugin{Name: "sys", Index: "10", Log: testplugin.NewLog(),
		FailurePolicy: &nriv1beta1.FailurePolicy{FailRequest: true},
		Selectors:     []*nriv1beta1.EventSelector{{Namespaces: []string{"kube-system"}}}}
	if _, err := p.Start(testCtx(t), first.sock, first.plugins); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	first.logs.wait(t, reLog(`restart gate: recorded the registered plugins" .*plugins=\[10-sys\]`), first.done)
	first.stop(t)
	data, err := os.ReadFile(filepath.Join(state, rosterFile))
	if err != nil || !strings.Contains(string(data), `"selectors":[{"namespaces":["kube-system"]}]`) {
		t.Fatalf("roster %s (%v) lacks the selectors", data, err)
	}

	second := startNrid(t, cfg)
	second.logs.wait(t, reLog(`restart gate: bound passed without these plugins.* were_required=\[10-sys\]`), second.done)
	cc := second.conn(t)
	waitHealth(t, cc, healthpb.HealthCheckResponse_SERVING)
	if _, err := createContainer(t, cc, 1); err != nil { // fixture pods are in "production"
		t.Fatalf("a pod 10-sys never selected: %v", err)
	}
	sys := fixture.Pod(2)
	sys.Namespace = "kube-system"
	_, err = nriv1beta1.NewAdaptationServiceClient(cc).CreateContainer(testCtx(t), &nriv1beta1.AdaptationServiceCreateContainerRequest{
		Pod: sys, Container: fixture.Container(2, 0)})
	wantCode(t, "CreateContainer of a kube-system pod without 10-sys", err, codes.Unavailable, `required plugins ["10-sys"] not present`)
}

// TestConfiguredSelectors: a required [[plugin]] entry with selectors makes
// its absent plugin required only for the pods they select.
func TestConfiguredSelectors(t *testing.T) {
	cfg := "[[plugin]]\nname = \"10-sys\"\nrequired = true\nselectors = [{ namespaces = [\"kube-system\"] }]\n"
	n := startNrid(t, cfg)
	cc := n.conn(t)
	if _, err := createContainer(t, cc, 1); err != nil { // fixture pods are in "production"
		t.Fatalf("a pod 10-sys does not select: %v", err)
	}
	sys := fixture.Pod(2)
	sys.Namespace = "kube-system"
	_, err := nriv1beta1.NewAdaptationServiceClient(cc).CreateContainer(testCtx(t), &nriv1beta1.AdaptationServiceCreateContainerRequest{
		Pod: sys, Container: fixture.Container(2, 0)})
	wantCode(t, "CreateContainer of a kube-system pod without 10-sys", err, codes.Unavailable, `"10-sys"`)
}
