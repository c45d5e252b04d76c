package server_test

import (
	"context"
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
	"github.com/nri-grpc/nri-grpc/server"
)

// BenchmarkReceivedCheck is what checking a runtime's request as it was
// received (Received: well-formed, valid UTF-8) adds to a CreateContainer
// dispatched to one in-process plugin: "unchecked" passes no encoding,
// "checked" passes the request's encoding (about 5.4 kB) with Received,
// as the bridge's and the AdaptationService's requests are.
func BenchmarkReceivedCheck(b *testing.B) {
	for _, checked := range []bool{false, true} {
		b.Run(map[bool]string{false: "unchecked", true: "checked"}[checked], func(b *testing.B) {
			ctx := context.Background()
			srv := benchServer(b, 1)
			var err error
			reqs := make([]*nriv1beta1.CreateContainerRequest, b.N)
			raws := make([][]byte, b.N)
			for i := range reqs {
				reqs[i] = fixture.CreateContainerRequest(i, 0)
				if raws[i], err = reqs[i].MarshalVT(); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(raws[0])))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				var opts []server.EventOption
				if checked {
					opts = append(opts, server.Received(raws[i]))
				}
				if _, err := srv.CreateContainer(ctx, reqs[i], opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
