// Package codec is the gRPC codec of nri-grpc: it marshals messages that have
// vtprotobuf-generated fast paths (every nri.v1beta1 message) without
// reflection, passes pre-encoded messages through untouched, and falls back
// to the standard protobuf runtime for everything else (health, reflection,
// well-known types).
//
// A received SynchronizeRequest is decoded object by object, each pod and
// container aliasing a copy of its own encoding (decodeSync): its strings
// are not allocated one by one.
//
// The codec is installed per server and per connection (ServerOption,
// DialOption), never registered process-wide, so embedding nri-grpc does not
// change the encoding of a host program's other gRPC traffic.
//
// Measured on the project's 2-core machine with a realistic 5.5 kB
// CreateContainerRequest (see codec_bench_test.go and docs/PERFORMANCE.md):
// the fast path marshals about 3x faster with one allocation instead of
// about 160.
package codec

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"

	// The standard proto codec, used as the fallback, registers itself here.
	_ "google.golang.org/grpc/encoding/proto"
)

// Name is the codec's name, and so the gRPC content-subtype it speaks. It is
// the standard "proto": peers see ordinary protobuf-over-gRPC.
const Name = "proto"

// vtMessage is implemented by messages with vtprotobuf fast paths.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT(dAtA []byte) (int, error)
	UnmarshalVT(dAtA []byte) error
}

// Raw is a message that is already encoded. Sending a *Raw writes its bytes
// as they are, so a request that goes unchanged to several plugins is encoded
// once. Raw can only be sent, never received.
type Raw struct {
	// Data is the encoded message.
	Data []byte
}

// Codec is the nri-grpc gRPC codec. The zero value is ready to use.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// fallback is the standard protobuf codec.
func fallback() encoding.CodecV2 { return encoding.GetCodecV2(Name) }

// Marshal encodes v.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *Raw:
		return mem.BufferSlice{mem.SliceBuffer(m.Data)}, nil
	case vtMessage:
		size := m.SizeVT()
		if mem.IsBelowBufferPoolingThreshold(size) {
			buf := make([]byte, size)
			if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
				return nil, fmt.Errorf("codec: marshal %T: %w", v, err)
			}
			return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
		}
		pool := mem.DefaultBufferPool()
		buf := pool.Get(size)
		if _, err := m.MarshalToSizedBufferVT((*buf)[:size]); err != nil {
			pool.Put(buf)
			return nil, fmt.Errorf("codec: marshal %T: %w", v, err)
		}
		return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
	}
	return fallback().Marshal(v)
}

// Capture is a message to receive that keeps its own decoding error.
//
// grpc-go answers a failing Unmarshal itself, with INTERNAL, as it
// receives (the server writes that status before any handler code can
// change it), although a request that does not decode is the caller's
// fault. Receiving into a *Capture instead makes Unmarshal succeed and
// leaves the error in Err, for the receiver to answer as it sees fit (see
// internal/grpcreg). Only this codec does that: another codec decodes into
// the embedded message but fails as usual.
//
// The embedded message is what is decoded into. It also makes a *Capture a
// proto.Message itself, so that whatever sees it between the receive and
// the codec (a stats handler, an interceptor's wrapped stream, another
// codec) still sees a protobuf message.
type Capture struct {
	proto.Message
	// Err is why decoding failed, nil if it did not.
	Err error
}

// Unmarshal decodes data into v. Decoded strings and bytes never alias data.
// Into a *Capture, it always succeeds and leaves the decoding error in the
// Capture.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	if c, ok := v.(*Capture); ok {
		c.Err = decode(data, c.Message)
		return nil
	}
	err := decode(data, v)
	if _, vt := v.(vtMessage); vt && err != nil {
		return fmt.Errorf("codec: unmarshal %T: %w", v, err)
	}
	return err
}

// Limits of the requests that are always small, tighter than the
// connection's maximum message size: a request over its limit is refused
// from its size alone, before it is copied into one buffer and decoded
// (the decoding would copy it again), so an oversize one costs the
// receiver little more than what gRPC received. docs/PROTOCOL.md
// ("Limits") has them.
const (
	// MaxRegisterPluginRequest bounds a RegisterPluginRequest: the largest
	// one nrid accepts — 16 selectors of three 64-entry lists of 253 bytes
	// and a 4096-byte label selector each, every other field at its bound
	// — encodes in about 855 kB; the rest is room for fields to come.
	MaxRegisterPluginRequest = 1 << 20
	// MaxStatusRequest bounds a SetPluginStatusRequest and a
	// RequestResyncRequest (a reason of at most 1024 bytes).
	MaxStatusRequest = 16 << 10
)

// TooLargeError is a request over its type's limit (MaxRegisterPluginRequest,
// MaxStatusRequest), refused before decoding.
type TooLargeError struct {
	// Type is the request's message name ("RegisterPluginRequest").
	Type string
	// Size is the request's encoded size, Limit its type's limit, in bytes.
	Size, Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s of %d bytes is over its limit of %d bytes", e.Type, e.Size, e.Limit)
}

// limitOf returns the limit of a request of v's type, 0 for none.
func limitOf(v any) (string, int) {
	switch v.(type) {
	case *nriv1beta1.RegisterPluginRequest:
		return "RegisterPluginRequest", MaxRegisterPluginRequest
	case *nriv1beta1.SetPluginStatusRequest:
		return "SetPluginStatusRequest", MaxStatusRequest
	case *nriv1beta1.RequestResyncRequest:
		return "RequestResyncRequest", MaxStatusRequest
	}
	return "", 0
}

// decode decodes data into v, with the fast path when v has one.
func decode(data mem.BufferSlice, v any) error {
	if name, limit := limitOf(v); limit > 0 {
		if n := data.Len(); n > limit {
			return &TooLargeError{Type: name, Size: n, Limit: limit}
		}
	}
	m, ok := v.(vtMessage)
	if !ok {
		if _, raw := v.(*Raw); raw {
			return fmt.Errorf("codec: cannot decode into *codec.Raw")
		}
		return fallback().Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	if s, ok := v.(*nriv1beta1.SynchronizeRequest); ok {
		return decodeSync(buf.ReadOnlyData(), s)
	}
	return m.UnmarshalVT(buf.ReadOnlyData())
}

// Name returns "proto".
func (Codec) Name() string { return Name }

// Encode returns the encoding of m, using the fast path when m has one. It is
// what Marshal sends, as one slice.
func Encode(m proto.Message) ([]byte, error) {
	if vt, ok := m.(vtMessage); ok {
		buf := make([]byte, vt.SizeVT())
		if _, err := vt.MarshalToSizedBufferVT(buf); err != nil {
			return nil, fmt.Errorf("codec: marshal %T: %w", m, err)
		}
		return buf, nil
	}
	return proto.Marshal(m)
}

// ServerOption makes a gRPC server use the codec for every call.
func ServerOption() grpc.ServerOption { return grpc.ForceServerCodecV2(Codec{}) }

// CallOption makes one gRPC call use the codec.
func CallOption() grpc.CallOption { return grpc.ForceCodecV2(Codec{}) }

// DialOption makes every call of a gRPC client connection use the codec.
func DialOption() grpc.DialOption { return grpc.WithDefaultCallOptions(CallOption()) }
