package codec

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/fixture"
)

func syncPage(t *testing.T, pods, ctrs int) []byte {
	t.Helper()
	req := &nriv1beta1.SynchronizeRequest{More: true, Epoch: 7, Reason: nriv1beta1.SyncReason_SYNC_REASON_PLUGIN_REQUESTED}
	for i := range pods {
		req.Pods = append(req.Pods, fixture.Pod(i))
	}
	for i := range ctrs {
		req.Containers = append(req.Containers, fixture.Container(i/2, i%2))
	}
	b, err := req.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeSyncIsUnmarshalVT: the per-object decoding of a Synchronize
// page gives exactly what the generated decoder gives, unknown fields and
// fields after the objects included.
func TestDecodeSyncIsUnmarshalVT(t *testing.T) {
	for _, tc := range []struct {
		name string
		page []byte
	}{
		{"empty", nil},
		{"pods and containers", syncPage(t, 3, 5)},
		{"containers only", syncPage(t, 0, 2)},
		{"an unknown field and a scalar repeated after the objects", protowire.AppendVarint(
			protowire.AppendTag(protowire.AppendString(protowire.AppendTag(syncPage(t, 1, 1), 77, protowire.BytesType), "x"),
				1000, protowire.VarintType), 9)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := &nriv1beta1.SynchronizeRequest{}
			if err := want.UnmarshalVT(tc.page); err != nil {
				t.Fatal(err)
			}
			got := &nriv1beta1.SynchronizeRequest{}
			if err := decodeSync(tc.page, got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(want, got) {
				t.Fatalf("decodeSync differs from UnmarshalVT:\nwant %v\ngot  %v", want, got)
			}
		})
	}
}

// TestDecodeSyncCopiesThePage: nothing decoded points into the page's
// buffer, which the codec returns to gRPC's pool: overwriting it leaves the
// decoded objects as they were.
func TestDecodeSyncCopiesThePage(t *testing.T) {
	page := syncPage(t, 2, 4)
	want := &nriv1beta1.SynchronizeRequest{}
	if err := want.UnmarshalVT(page); err != nil {
		t.Fatal(err)
	}
	got := &nriv1beta1.SynchronizeRequest{}
	if err := decodeSync(page, got); err != nil {
		t.Fatal(err)
	}
	for i := range page {
		page[i] = 'X'
	}
	if !proto.Equal(want, got) {
		t.Fatal("the decoded page changed when its buffer was overwritten: it aliases the buffer")
	}
}

// TestDecodeSyncRefusesMalformedPages: a truncated page, an object with a
// bad length and an object that does not decode are errors, as for the
// generated decoder.
func TestDecodeSyncRefusesMalformedPages(t *testing.T) {
	page := syncPage(t, 1, 1)
	badObject := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte{0x0a, 0x7f})
	for name, b := range map[string][]byte{
		"truncated":        page[:len(page)-20],
		"length past end":  append(protowire.AppendTag(nil, 1, protowire.BytesType), 0x7f, 1, 2),
		"object truncated": badObject,
		"bad tag":          {0x80},
		"pods as a varint": protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1),
	} {
		t.Run(name, func(t *testing.T) {
			if err := decodeSync(b, &nriv1beta1.SynchronizeRequest{}); err == nil {
				t.Fatal("decoded")
			}
			if err := (&nriv1beta1.SynchronizeRequest{}).UnmarshalVT(b); err == nil {
				t.Fatal("the generated decoder takes it: the case tests nothing")
			}
		})
	}
}
