package codec_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// The marshalling-path decision: the standard protobuf runtime against the
// vtprotobuf-generated fast paths, for the realistic CreateContainerRequest
// (about 5.5 kB) and a typical plugin reply.
//
//	go test -run '^$' -bench . -benchmem ./internal/codec/

func BenchmarkMarshal(b *testing.B) {
	msgs := map[string]proto.Message{
		"CreateContainerRequest":  fixture.CreateContainerRequest(1, 0),
		"CreateContainerResponse": fixture.CreateContainerResponse(),
	}
	for name, m := range msgs {
		vt := m.(interface{ MarshalVT() ([]byte, error) })
		b.Run(name+"/proto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := proto.Marshal(m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/vtproto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := vt.MarshalVT(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	req, _ := proto.Marshal(fixture.CreateContainerRequest(1, 0))
	rsp, _ := proto.Marshal(fixture.CreateContainerResponse())
	type vtm interface {
		proto.Message
		UnmarshalVT([]byte) error
	}
	cases := []struct {
		name string
		data []byte
		new  func() vtm
	}{
		{"CreateContainerRequest", req, func() vtm { return &nriv1beta1.CreateContainerRequest{} }},
		{"CreateContainerResponse", rsp, func() vtm { return &nriv1beta1.CreateContainerResponse{} }},
	}
	for _, c := range cases {
		b.Run(c.name+"/proto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := proto.Unmarshal(c.data, c.new()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/vtproto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.new().UnmarshalVT(c.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
