package bench

import (
	"fmt"
	"testing"

	api "github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// BenchmarkSyncDecodeFloor is the floor of synchronizing N containers to a
// Go plugin: decoding the state, as one in-process decode of the
// Synchronize pages a plugin receives (4 MiB each, as the server writes
// them), with nothing sent. v1beta1 is the generated vtprotobuf decoder a
// gRPC plugin uses; v1alpha1 is the decoder of classic's pkg/stub plugins
// (google.golang.org/protobuf), for comparison. The sync scenario's time
// cannot go below the v1beta1 number: a page is decoded only after it has
// arrived, and the next is sent only after the reply.
func BenchmarkSyncDecodeFloor(b *testing.B) {
	for _, n := range []int{10000} {
		st := newState(n)
		var pages [][]byte
		var page []byte
		flush := func() {
			if len(page) > 0 {
				pages = append(pages, page)
				page = nil
			}
		}
		add := func(field byte, raw []byte) {
			if len(page)+len(raw)+8 > 4<<20 {
				flush()
			}
			page = append(page, field<<3|2)
			page = appendVarint(page, uint64(len(raw)))
			page = append(page, raw...)
		}
		for _, p := range st.pods {
			add(1, p)
		}
		for _, c := range st.ctrs {
			add(2, c)
		}
		flush()
		b.Run(fmt.Sprintf("N=%d/v1beta1", n), func(b *testing.B) {
			b.SetBytes(int64(st.size))
			for b.Loop() {
				for _, pg := range pages {
					if err := (&nriv1beta1.SynchronizeRequest{}).UnmarshalVT(pg); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(fmt.Sprintf("N=%d/v1alpha1", n), func(b *testing.B) {
			b.SetBytes(int64(st.size))
			for b.Loop() {
				for _, pg := range pages {
					if err := proto.Unmarshal(pg, &api.SynchronizeRequest{}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}
