// Package bridge connects nri-grpc to classic NRI (v1alpha1 over ttrpc and
// the multiplexed socket), in both directions:
//
//   - the runtime side (RuntimeSide) attaches to a classic runtime's NRI
//     socket (containerd, CRI-O) as ONE v1alpha1 plugin and relays every
//     event to the server;
//   - the plugin side (PluginSide) accepts classic plugins on a ttrpc socket,
//     or launches them the classic way, and registers each in-process in the
//     server as a plugin of its own.
//
// Messages cross by their bytes: v1beta1 keeps v1alpha1's field numbers and
// wire types (test/wirecompat), so a classic request is decoded straight
// into its v1beta1 message, and a v1beta1 message holding only fields
// v1alpha1 has is encoded as the classic message; no v1alpha1 copy is made
// on the way, and no field-by-field code can drift. The bridge has no
// dispatch or merge logic of its own: the server decides, the bridge
// translates.
//
// RuntimeOption and PluginOption have the shape of server.Option and
// plugin.Option: they only record values; NewRuntimeSide and NewPluginSide
// validate them and name the offending option in their error.
package bridge

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// vtMessage is a message with vtprotobuf's coder.
type vtMessage interface {
	MarshalVT() ([]byte, error)
	UnmarshalVT([]byte) error
}

// unsafeDecoder is a v1beta1 message with vtprotobuf's aliasing decoder,
// whose strings point into the bytes decoded instead of being copied one
// by one: the bytes must never change afterwards.
type unsafeDecoder interface {
	proto.Message
	UnmarshalVTUnsafe([]byte) error
}

// encoded is a message already encoded, for ttrpc's client, which encodes
// only proto.Messages (with protobuf's reflection): the bytes are the
// unknown fields of an empty message, which protobuf writes out as they
// are. Decoding into an empty message keeps the answer's bytes the same way
// (answerBytes).
func encoded(b []byte) *emptypb.Empty {
	m := &emptypb.Empty{}
	if len(b) > 0 {
		m.ProtoReflect().SetUnknown(b)
	}
	return m
}

// answerBytes returns the encoding an empty message was decoded from: its
// own copy, which nothing else refers to.
func answerBytes(m *emptypb.Empty) []byte { return m.ProtoReflect().GetUnknown() }

// The nine notification events' requests (RunPodSandboxRequest …
// RemoveContainerRequest) are {pod = 1, container = 2} in both API
// versions; classic NRI before the dedicated methods sent them as a
// StateChangeEvent {event = 1, pod = 2, container = 3}, which v1beta1 does
// not carry. The bridge moves the pod and container between the two by
// their bytes.
const (
	requestPod           protowire.Number = 1
	requestContainer     protowire.Number = 2
	stateChangeEvent     protowire.Number = 1
	stateChangePod       protowire.Number = 2
	stateChangeContainer protowire.Number = 3
)

// toStateChange encodes the StateChangeEvent of event from the encoding of
// its notification request.
func toStateChange(event int32, req []byte) ([]byte, error) {
	out := protowire.AppendTag(make([]byte, 0, len(req)+8), stateChangeEvent, protowire.VarintType)
	out = protowire.AppendVarint(out, uint64(event))
	out, err := appendRenumbered(out, req, requestPod, stateChangePod)
	if err == nil {
		out, err = appendRenumbered(out, req, requestContainer, stateChangeContainer)
	}
	if err != nil {
		return nil, fmt.Errorf("bridge: StateChange of event %d: %w", event, err)
	}
	return out, nil
}

// fromStateChange returns the event of a StateChangeEvent and the encoding
// of its notification request: the pod, and the container if withContainer
// says the event's request has one.
func fromStateChange(sc []byte, withContainer func(event int32) bool) (int32, []byte, error) {
	var event int32
	err := eachField(sc, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != stateChangeEvent || typ != protowire.VarintType {
			return nil
		}
		x, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return protowire.ParseError(n)
		}
		event = int32(x)
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("bridge: StateChange: %w", err)
	}
	req, err := appendRenumbered(nil, sc, stateChangePod, requestPod)
	if err == nil && withContainer(event) {
		req, err = appendRenumbered(req, sc, stateChangeContainer, requestContainer)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("bridge: StateChange: %w", err)
	}
	return event, req, nil
}

// appendRenumbered appends to out every occurrence of length-delimited
// field from of the message b, as field to.
func appendRenumbered(out, b []byte, from, to protowire.Number) ([]byte, error) {
	err := eachBytes(b, from, func(v []byte) error {
		out = protowire.AppendBytes(protowire.AppendTag(out, to, protowire.BytesType), v)
		return nil
	})
	return out, err
}

// eachField calls f with every field of the protobuf message b, in order:
// its number, wire type and encoded value.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		if err := f(n, typ, b[:l]); err != nil {
			return err
		}
		b = b[l:]
	}
	return nil
}

// eachBytes calls f with every occurrence of length-delimited field num of
// the protobuf message b, in order.
func eachBytes(b []byte, num protowire.Number, f func([]byte) error) error {
	return eachField(b, func(n protowire.Number, typ protowire.Type, v []byte) error {
		if n != num || typ != protowire.BytesType {
			return nil
		}
		v, _ = protowire.ConsumeBytes(v)
		return f(v)
	})
}

// rawMessage is a message already encoded, for classicwire's Call.
type rawMessage []byte

// MarshalVT returns the encoding.
func (m *rawMessage) MarshalVT() ([]byte, error) { return *m, nil }

// UnmarshalVT keeps a copy of b.
func (m *rawMessage) UnmarshalVT(b []byte) error {
	*m = append((*m)[:0], b...)
	return nil
}
