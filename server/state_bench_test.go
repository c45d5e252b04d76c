package server

import (
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// benchState is a state of n containers, two per pod.
func benchState(n int) *state {
	s := newState()
	for i := range n / 2 {
		s.setPod(fixture.Pod(i))
		s.recordContainer(fixture.Container(i, 0), nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING)
		s.recordContainer(fixture.Container(i, 1), nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING)
	}
	return s
}

// BenchmarkSynchronizePages is the server's work to page 10,000
// containers for a remote plugin (4 MiB pages): written from the stored
// encodings ("encoded"), against encoding the decoded objects as the server
// did when it kept objects ("objects", what MarshalVT of each page costs).
func BenchmarkSynchronizePages(b *testing.B) {
	s := benchState(10000)
	b.Run("encoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pages, total, err := paginate(s.encoded(), 4<<20)
			if err != nil {
				b.Fatal(err)
			}
			for i, pg := range pages {
				_ = pg.encode(i < len(pages)-1, 1, nriv1beta1.SyncReason_SYNC_REASON_REGISTRATION)
			}
			b.SetBytes(int64(total))
		}
	})
	b.Run("objects", func(b *testing.B) {
		pages, _, err := paginate(s.encoded(), 4<<20)
		if err != nil {
			b.Fatal(err)
		}
		reqs := make([]*nriv1beta1.SynchronizeRequest, len(pages))
		for i, pg := range pages {
			reqs[i] = pg.request(i < len(pages)-1, 1, nriv1beta1.SyncReason_SYNC_REASON_REGISTRATION)
		}
		b.ReportAllocs()
		for b.Loop() {
			var total int
			for _, r := range reqs {
				raw, err := r.MarshalVT()
				if err != nil {
					b.Fatal(err)
				}
				total += len(raw)
			}
			b.SetBytes(int64(total))
		}
	})
}

// BenchmarkRecordContainer is what storing a container costs on the event
// path (encode, index, rank): "same" keeps the state the object carries,
// "raised" also writes the state the event implies into the encoding.
func BenchmarkRecordContainer(b *testing.B) {
	for _, tc := range []struct {
		name    string
		implied nriv1beta1.ContainerState
	}{
		{"same", nriv1beta1.ContainerState_CONTAINER_STATE_CREATED},
		{"raised", nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := benchState(100)
			c := fixture.Container(1000, 0)
			b.ReportAllocs()
			for b.Loop() {
				s.recordContainer(c, tc.implied)
				s.deleteContainer(c.Id)
			}
		})
	}
}
