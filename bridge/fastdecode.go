package bridge

import (
	"context"
	"fmt"
	"path"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/ttrpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/runtime/protoiface"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// vtDecoder is a message with a vtprotobuf decoder (both API versions).
type vtDecoder interface {
	proto.Message
	UnmarshalVT([]byte) error
}

// unsafeDecoder is a v1beta1 message with vtprotobuf's aliasing decoder.
type unsafeDecoder interface {
	vtDecoder
	UnmarshalVTUnsafe([]byte) error
}

// fastMsg makes proto.Unmarshal (what ttrpc's codec calls) use the
// message's UnmarshalVT: its reflection is the message's own, with a fast
// Unmarshal method. With raw set, it keeps the bytes it decoded and decodes
// with UnmarshalVTUnsafe, whose strings point into those bytes instead of
// being copied one by one: ttrpc hands every call a payload of its own
// (a copy made when it decodes its Request envelope) that nothing reuses or
// writes, and the server never writes into a handed-over encoding
// (server.WithEncodedRequest).
type fastMsg struct {
	m   vtDecoder
	raw *[]byte
}

func (f fastMsg) ProtoReflect() protoreflect.Message { return fastReflect{f.m.ProtoReflect(), f} }

type fastReflect struct {
	protoreflect.Message
	f fastMsg
}

func (r fastReflect) ProtoMethods() *protoiface.Methods {
	return &protoiface.Methods{
		Unmarshal: func(in protoiface.UnmarshalInput) (protoiface.UnmarshalOutput, error) {
			if u, ok := r.f.m.(unsafeDecoder); ok && r.f.raw != nil {
				*r.f.raw = in.Buf
				return protoiface.UnmarshalOutput{Flags: protoiface.UnmarshalInitialized}, u.UnmarshalVTUnsafe(in.Buf)
			}
			return protoiface.UnmarshalOutput{Flags: protoiface.UnmarshalInitialized}, r.f.m.UnmarshalVT(in.Buf)
		},
	}
}

// directRequest returns an empty v1beta1 request for the classic methods
// whose handlers only pass the request on to the server, nil for the
// others. Their requests are decoded straight into the v1beta1 message (the
// API versions share the wire format: test/wirecompat), never as v1alpha1,
// and the server gets the bytes too (server.WithEncodedRequest), so the
// first gRPC plugin is sent the runtime's own encoding: one decode and no
// encode on nrid's way in. UpdateContainer and UpdatePodSandbox are not
// among them: their answers need the classic arguments.
func directRequest(method string) unsafeDecoder {
	switch method {
	case "RunPodSandbox":
		return &nriv1beta1.RunPodSandboxRequest{}
	case "PostUpdatePodSandbox":
		return &nriv1beta1.PostUpdatePodSandboxRequest{}
	case "StopPodSandbox":
		return &nriv1beta1.StopPodSandboxRequest{}
	case "RemovePodSandbox":
		return &nriv1beta1.RemovePodSandboxRequest{}
	case "CreateContainer":
		return &nriv1beta1.CreateContainerRequest{}
	case "PostCreateContainer":
		return &nriv1beta1.PostCreateContainerRequest{}
	case "StartContainer":
		return &nriv1beta1.StartContainerRequest{}
	case "PostStartContainer":
		return &nriv1beta1.PostStartContainerRequest{}
	case "PostUpdateContainer":
		return &nriv1beta1.PostUpdateContainerRequest{}
	case "StopContainer":
		return &nriv1beta1.StopContainerRequest{}
	case "RemoveContainer":
		return &nriv1beta1.RemoveContainerRequest{}
	}
	return nil
}

// inboundKey is the context key of the call's inbound.
type inboundKey struct{}

// inbound is a classic request decoded straight into its v1beta1 message,
// and the bytes it was decoded from.
type inbound struct {
	req vtDecoder
	raw []byte
}

// vtServerInterceptor decodes every request the classic runtime sends with
// UnmarshalVT instead of protobuf reflection — straight into the v1beta1
// message for the methods of directRequest — and picks up the runtime's
// trace context.
func vtServerInterceptor(ctx context.Context, unmarshal ttrpc.Unmarshaler, info *ttrpc.UnaryServerInfo, method ttrpc.Method) (interface{}, error) {
	ctx = extractTrace(ctx)
	if req := directRequest(path.Base(info.FullMethod)); req != nil {
		in := &inbound{req: req}
		return method(context.WithValue(ctx, inboundKey{}, in), func(interface{}) error {
			// The classic request stays empty: the handlers take in.req.
			return unmarshal(fastMsg{m: req, raw: &in.raw})
		})
	}
	return method(ctx, func(v interface{}) error {
		if m, ok := v.(vtDecoder); ok {
			return unmarshal(fastMsg{m: m})
		}
		return unmarshal(v)
	})
}

// direct returns the request the interceptor decoded for this call and a
// context handing its encoding to the server; ok is false when the call has
// none (an event that reached the handler another way, such as classic
// StateChange).
func direct[T proto.Message](ctx context.Context) (context.Context, T, bool, error) {
	var zero T
	in, _ := ctx.Value(inboundKey{}).(*inbound)
	if in == nil {
		return ctx, zero, false, nil
	}
	req, ok := in.req.(T)
	if !ok {
		return ctx, zero, false, fmt.Errorf("bridge: decoded %T for a handler of %T", in.req, zero)
	}
	return server.WithEncodedRequest(ctx, req, in.raw), req, true, nil
}

// podRequest returns the v1beta1 request of a pod event: the one decoded
// directly, or mk of the converted classic pod.
func podRequest[T proto.Message](ctx context.Context, pod *v1alpha1.PodSandbox, mk func(*nriv1beta1.PodSandbox) T) (context.Context, T, error) {
	ctx, req, ok, err := direct[T](ctx)
	if ok || err != nil {
		return ctx, req, err
	}
	bp, err := podReq(pod)
	if err != nil {
		return ctx, req, err
	}
	return ctx, mk(bp), nil
}

// ctrRequest returns the v1beta1 request of a container event: the one
// decoded directly, or mk of the converted classic pod and container.
func ctrRequest[T proto.Message](ctx context.Context, pod *v1alpha1.PodSandbox, ctr *v1alpha1.Container,
	mk func(*nriv1beta1.PodSandbox, *nriv1beta1.Container) T) (context.Context, T, error) {
	ctx, req, ok, err := direct[T](ctx)
	if ok || err != nil {
		return ctx, req, err
	}
	bp, bc, err := ctrReq(pod, ctr)
	if err != nil {
		return ctx, req, err
	}
	return ctx, mk(bp, bc), nil
}
