// Package grpcreg registers gRPC services so that a request the server
// cannot decode is answered INVALID_ARGUMENT, as the caller's fault,
// instead of INTERNAL.
//
// grpc-go decodes a request inside the generated handler (its dec
// callback, or the stream's RecvMsg) and, when the codec fails, writes the
// status INTERNAL "grpc: failed to unmarshal the received message" to the
// client there and then: neither an interceptor nor the handler can change
// it afterwards, and the server's own logs count the caller's bad input as
// a server fault. A service registered here receives every request into a
// codec.Capture instead. With the server's codec from internal/codec
// (codec.ServerOption) a decoding failure then leaves the receive
// successful and its error in the capture, and the wrapped handler answers
// INVALID_ARGUMENT "malformed <method> request: <reason>", the reason cut to
// MaxReason bytes; a request over its type's own limit, which the codec
// refuses before decoding (codec.TooLargeError), is answered
// RESOURCE_EXHAUSTED "request: RegisterPluginRequest of N bytes is over its
// limit of M bytes". Every other failure of a receive (the end of a stream, a
// cancelled call, a message over the size limit, a transport error) is left
// as grpc-go reports it.
//
// On a server with another codec the services work as if registered
// directly, and decoding failures stay INTERNAL. A stream interceptor that
// wraps the ServerStream sees the *codec.Capture in its RecvMsg: a
// proto.Message whose ProtoReflect is the request's, but not the request's
// Go type.
package grpcreg

import (
	"context"
	"errors"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nri-grpc/nri-grpc/internal/codec"
)

// MaxReason is the most bytes of a decoding error's text that an
// INVALID_ARGUMENT answer quotes.
const MaxReason = 128

// Register registers the service desc describes, served by impl, on r, with
// the decoding failures of its requests answered INVALID_ARGUMENT. desc is
// not modified: r gets a copy whose handlers are wrapped.
func Register(r grpc.ServiceRegistrar, desc *grpc.ServiceDesc, impl any) {
	r.RegisterService(wrap(desc), impl)
}

// Registrar returns a grpc.ServiceRegistrar that registers services on r
// as Register does, for the generated registration functions (which also
// check the implementation):
//
//	nriv1beta1.RegisterRuntimeServiceServer(grpcreg.Registrar(g), impl)
func Registrar(r grpc.ServiceRegistrar) grpc.ServiceRegistrar { return registrar{r} }

type registrar struct{ r grpc.ServiceRegistrar }

func (g registrar) RegisterService(desc *grpc.ServiceDesc, impl any) { Register(g.r, desc, impl) }

// wrap copies desc with every handler wrapped.
func wrap(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	d := *desc
	d.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		m.Handler = unary(fullMethod(desc.ServiceName, m.MethodName), m.Handler)
		d.Methods[i] = m
	}
	d.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, s := range desc.Streams {
		s.Handler = streaming(fullMethod(desc.ServiceName, s.StreamName), s.Handler)
		d.Streams[i] = s
	}
	return &d
}

func fullMethod(service, method string) string { return "/" + service + "/" + method }

// unary wraps a unary method's handler: its request is decoded through
// receive.
func unary(method string, h grpc.MethodHandler) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
		return h(srv, ctx, func(m any) error { return receive(method, m, dec) }, in)
	}
}

// streaming wraps a streaming method's handler: its stream's messages are
// decoded through receive.
func streaming(method string, h grpc.StreamHandler) grpc.StreamHandler {
	return func(srv any, ss grpc.ServerStream) error {
		return h(srv, &serverStream{ServerStream: ss, method: method})
	}
}

// serverStream is a stream whose RecvMsg answers decoding failures
// INVALID_ARGUMENT.
type serverStream struct {
	grpc.ServerStream
	method string
}

func (s *serverStream) RecvMsg(m any) error { return receive(s.method, m, s.ServerStream.RecvMsg) }

// receive receives m with recv, through a codec.Capture: a decoding
// failure the codec left there becomes INVALID_ARGUMENT, any other error of
// recv is returned as it is.
func receive(method string, m any, recv func(any) error) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return recv(m)
	}
	c := &codec.Capture{Message: pm}
	if err := recv(c); err != nil {
		return err
	}
	if tl := (*codec.TooLargeError)(nil); errors.As(c.Err, &tl) {
		return status.Errorf(codes.ResourceExhausted, "request: %v", tl)
	}
	if c.Err != nil {
		return status.Errorf(codes.InvalidArgument, "malformed %s request: %s", method, truncate(c.Err.Error(), MaxReason))
	}
	return nil
}

// truncate cuts s to at most n bytes, at a character boundary, marking the
// cut with an ellipsis.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	i := n - len(ellipsis)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + ellipsis
}
