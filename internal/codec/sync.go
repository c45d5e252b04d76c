package codec

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// decodeSync decodes a Synchronize page with one buffer per pod and per
// container: each object's encoding is copied into a slice of its own and
// decoded with the aliasing decoder, so the object's strings point into
// that copy instead of being allocated one by one. A page of 10,000
// containers' state holds about 300,000 strings: this is most of what
// decoding it allocates, and of the garbage collector's work after.
//
// What a plugin keeps of one object keeps that object's encoding (a few
// kB) alive, and nothing of any other object: a plugin that keeps a small
// part of many objects (one string of each) for long should copy it
// (strings.Clone). The objects' bytes are never written to.
//
// The other fields (more, epoch, reason, unknown fields) are decoded by the
// generated decoder, as are malformed pages, which it refuses with its own
// error.
func decodeSync(b []byte, m *nriv1beta1.SynchronizeRequest) error {
	var (
		rest []byte
		pods []*nriv1beta1.PodSandbox
		ctrs []*nriv1beta1.Container
	)
	for in := b; len(in) > 0; {
		num, typ, n := protowire.ConsumeTag(in)
		if n < 0 {
			return m.UnmarshalVT(b) // malformed: the generated decoder's error
		}
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			v, vn := protowire.ConsumeBytes(in[n:])
			if vn < 0 {
				return m.UnmarshalVT(b)
			}
			own := append([]byte(nil), v...)
			if num == 1 {
				p := &nriv1beta1.PodSandbox{}
				if err := p.UnmarshalVTUnsafe(own); err != nil {
					return fmt.Errorf("pods[%d]: %w", len(pods), err)
				}
				pods = append(pods, p)
			} else {
				c := &nriv1beta1.Container{}
				if err := c.UnmarshalVTUnsafe(own); err != nil {
					return fmt.Errorf("containers[%d]: %w", len(ctrs), err)
				}
				ctrs = append(ctrs, c)
			}
			in = in[n+vn:]
			continue
		}
		vn := protowire.ConsumeFieldValue(num, typ, in[n:])
		if vn < 0 {
			return m.UnmarshalVT(b)
		}
		rest = append(rest, in[:n+vn]...)
		in = in[n+vn:]
	}
	if err := m.UnmarshalVT(rest); err != nil {
		return err
	}
	m.Pods = append(m.Pods, pods...)
	m.Containers = append(m.Containers, ctrs...)
	return nil
}
