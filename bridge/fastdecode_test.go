package bridge

import (
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/protobuf/proto"

	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

// TestFastDecodeMatchesProtoUnmarshal: what ttrpc's codec decodes through
// fastMsg equals what proto.Unmarshal decodes.
func TestFastDecodeMatchesProtoUnmarshal(t *testing.T) {
	b, err := fixture.CreateContainerRequest(1, 0).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.CreateContainerRequest{}
	if err := proto.Unmarshal(b, want); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.CreateContainerRequest{}
	if err := proto.Unmarshal(b, fastMsg{got}); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) || got.GetContainer().GetId() == "" {
		t.Fatal("the fast path decoded something else")
	}
	if err := proto.Unmarshal([]byte{0x0a, 0xff}, fastMsg{&v1alpha1.CreateContainerRequest{}}); err == nil {
		t.Fatal("garbage decoded without error")
	}
}
