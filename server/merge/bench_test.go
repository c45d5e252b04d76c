package merge_test

import (
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/server/merge"
)

// benchCreate runs NewCreate, one Apply per response and Result on fresh
// copies of the fixture request (copied in batches, outside the timer).
func benchCreate(b *testing.B, rsps []createRsp, record bool, opts ...merge.CreateOption) {
	const batch = 512
	base := fixture.CreateContainerRequest(1, 0)
	reqs := make([]*nriv1beta1.CreateContainerRequest, batch)
	names := []string{"00-a", "10-b", "20-c", "30-d"}
	var changes []*nriv1beta1.FieldChange
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%batch == 0 {
			b.StopTimer()
			for j := range reqs {
				reqs[j] = base.CloneVT()
			}
			b.StartTimer()
		}
		c := merge.NewCreate(reqs[i%batch], opts...)
		var ch *[]*nriv1beta1.FieldChange
		if record {
			changes = changes[:0]
			ch = &changes
		}
		for k, rsp := range rsps {
			if _, err := c.Apply(names[k], rsp, ch); err != nil {
				b.Fatal(err)
			}
		}
		_ = c.Result()
	}
}

// BenchmarkCreateApply measures merging CreateContainer responses for the
// realistic fixture request (about 5.5 kB encoded).
func BenchmarkCreateApply(b *testing.B) {
	typical := fixture.CreateContainerResponse()
	second := adj(annotation("logger.example.com/seen", "true"), hooks("/usr/libexec/oci-log-hook"))
	third := withUpdates(adj(env("NRI_GPU", "0"), device("/dev/nri-gpu0", 0), cdi("vendor.com/gpu=0"),
		resAdj(memLimit(2<<30))), upd("ctr-1", true, cpuset("0-1")))

	b.Run("empty", func(b *testing.B) {
		req := fixture.CreateContainerRequest(1, 0)
		empty := &nriv1beta1.CreateContainerResponse{}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c := merge.NewCreate(req)
			if _, err := c.Apply("00-a", empty, nil); err != nil {
				b.Fatal(err)
			}
			_ = c.Result()
		}
	})
	b.Run("apply-empty-only", func(b *testing.B) {
		c := merge.NewCreate(fixture.CreateContainerRequest(1, 0))
		empty := &nriv1beta1.CreateContainerResponse{Adjust: &nriv1beta1.ContainerAdjustment{}}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := c.Apply("00-a", empty, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("typical", func(b *testing.B) { benchCreate(b, []createRsp{typical}, false) })
	b.Run("typical-no-pristine", func(b *testing.B) {
		benchCreate(b, []createRsp{typical}, false, merge.WithoutPristine())
	})
	b.Run("typical-recorded", func(b *testing.B) { benchCreate(b, []createRsp{typical}, true) })
	b.Run("three-plugins", func(b *testing.B) { benchCreate(b, []createRsp{typical, second, third}, false) })
	b.Run("clone-only", func(b *testing.B) { benchCreate(b, nil, false, merge.WithoutPristine()) })
}
