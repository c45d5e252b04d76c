package utf8check_test

import (
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/internal/utf8check"
)

func TestCheckFindsTheField(t *testing.T) {
	bad := string([]byte{'a', 0xff, 'b'})
	for _, tc := range []struct {
		name string
		m    func() *nriv1beta1.CreateContainerResponse
		want string
	}{
		{"valid", func() *nriv1beta1.CreateContainerResponse {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Env: []*nriv1beta1.KeyValue{{Key: "K", Value: "v ü 日本"}}, Annotations: map[string]string{"k": "v"}}}
		}, ""},
		{"env value", func() *nriv1beta1.CreateContainerResponse {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
				Env: []*nriv1beta1.KeyValue{{Key: "A", Value: "ok"}, {Key: "K", Value: bad}}}}
		}, "adjust.env[1].value"},
		{"annotation value", func() *nriv1beta1.CreateContainerResponse {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{"k": bad}}}
		}, `adjust.annotations["k"]`},
		{"annotation key", func() *nriv1beta1.CreateContainerResponse {
			return &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{Annotations: map[string]string{bad: "v"}}}
		}, "adjust.annotations[key]"},
		{"update container id", func() *nriv1beta1.CreateContainerResponse {
			return &nriv1beta1.CreateContainerResponse{Update: []*nriv1beta1.ContainerUpdate{{ContainerId: bad}}}
		}, "update[0].container_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := utf8check.Check(tc.m()); got != tc.want {
				t.Fatalf("Check = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckRealisticRequestIsValid(t *testing.T) {
	req := &nriv1beta1.CreateContainerRequest{Pod: fixture.Pod(1), Container: fixture.Container(1, 0)}
	if got := utf8check.Check(req); got != "" {
		t.Fatalf("fixture request flagged at %q", got)
	}
}

// BenchmarkCheckCreateContainerRequest measures the walk over the realistic
// 5.5 kB request (the largest message checked on a hot path).
func BenchmarkCheckCreateContainerRequest(b *testing.B) {
	req := &nriv1beta1.CreateContainerRequest{Pod: fixture.Pod(1), Container: fixture.Container(1, 0)}
	b.ReportAllocs()
	for b.Loop() {
		if utf8check.Check(req) != "" {
			b.Fatal("flagged")
		}
	}
}

// BenchmarkCheckAdjustment measures a typical plugin response.
func BenchmarkCheckAdjustment(b *testing.B) {
	rsp := &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{
		Env:         []*nriv1beta1.KeyValue{{Key: "A", Value: "1"}, {Key: "B", Value: "2"}},
		Annotations: map[string]string{"devices.noderesource.dev/x": "y"},
	}}
	b.ReportAllocs()
	for b.Loop() {
		if utf8check.Check(rsp) != "" {
			b.Fatal("flagged")
		}
	}
}
