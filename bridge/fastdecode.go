package bridge

import (
	"context"

	"github.com/containerd/ttrpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/runtime/protoiface"
)

// vtDecoder is a message with a vtprotobuf decoder (both API versions).
type vtDecoder interface {
	proto.Message
	UnmarshalVT([]byte) error
}

// fastMsg makes proto.Unmarshal (what ttrpc's codec calls) use the
// message's UnmarshalVT: its reflection is the message's own, with a fast
// Unmarshal method.
type fastMsg struct{ m vtDecoder }

func (f fastMsg) ProtoReflect() protoreflect.Message { return fastReflect{f.m.ProtoReflect(), f.m} }

type fastReflect struct {
	protoreflect.Message
	m vtDecoder
}

func (r fastReflect) ProtoMethods() *protoiface.Methods {
	return &protoiface.Methods{
		Unmarshal: func(in protoiface.UnmarshalInput) (protoiface.UnmarshalOutput, error) {
			return protoiface.UnmarshalOutput{Flags: protoiface.UnmarshalInitialized}, r.m.UnmarshalVT(in.Buf)
		},
	}
}

// vtServerInterceptor decodes every request the classic runtime sends with
// UnmarshalVT instead of protobuf reflection, and picks up the runtime's
// trace context.
func vtServerInterceptor(ctx context.Context, unmarshal ttrpc.Unmarshaler, _ *ttrpc.UnaryServerInfo, method ttrpc.Method) (interface{}, error) {
	return method(extractTrace(ctx), func(v interface{}) error {
		if m, ok := v.(vtDecoder); ok {
			return unmarshal(fastMsg{m})
		}
		return unmarshal(v)
	})
}
