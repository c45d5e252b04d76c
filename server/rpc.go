package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/utf8check"
)

// rpc is one PluginService method with its request and response types:
// how a remote plugin is called (by name) and an in-process one (by method
// value), so that a call is typed from end to end.
type rpc[Req, Rsp proto.Message] struct {
	method string                                                                  // full gRPC method name
	newRsp func() Rsp                                                              // an empty response
	local  func(nriv1beta1.PluginServiceServer, context.Context, Req) (Rsp, error) // the in-process call
}

// newRPC describes the PluginService method method whose in-process form
// is local.
func newRPC[Req proto.Message, R any, Rsp interface {
	*R
	proto.Message
}](method string, local func(nriv1beta1.PluginServiceServer, context.Context, Req) (Rsp, error)) rpc[Req, Rsp] {
	return rpc[Req, Rsp]{method: method, local: local, newRsp: func() Rsp { return Rsp(new(R)) }}
}

// The PluginService methods that are not lifecycle events (events.go has
// those).
var (
	rpcConfigure = newRPC(nriv1beta1.PluginService_Configure_FullMethodName,
		nriv1beta1.PluginServiceServer.Configure)
	rpcSynchronize = newRPC(nriv1beta1.PluginService_Synchronize_FullMethodName,
		nriv1beta1.PluginServiceServer.Synchronize)
	rpcShutdown = newRPC(nriv1beta1.PluginService_Shutdown_FullMethodName,
		nriv1beta1.PluginServiceServer.Shutdown)
)

var errClosed = status.Error(codes.Unavailable, "plugin connection closed")

// call makes one call of m to plugin p under its concurrency limit, within
// d: req is sent as raw when raw is not nil and p is remote. The answer is
// checked for invalid UTF-8, which the fast decoder lets through.
func call[Req, Rsp proto.Message](ctx context.Context, p *plugin, m rpc[Req, Rsp], d time.Duration, req Req, raw []byte) (Rsp, error) {
	var zero Rsp
	cctx, cancel := p.callContext(ctx, d)
	defer cancel()
	select {
	case p.sem <- struct{}{}:
	case <-cctx.Done():
		return zero, status.FromContextError(cctx.Err()).Err()
	case <-p.closed:
		return zero, errClosed
	}
	defer func() { <-p.sem }()
	var (
		rsp Rsp
		err error
	)
	switch {
	case p.c.enc != nil && raw != nil:
		rsp, err = callEncoded(cctx, p.c, m, req, raw)
	case p.c.impl != nil:
		rsp, err = callLocal(cctx, p.c.impl, m, req)
	default:
		rsp, err = callRemote(cctx, p.c.cc, m, req, raw)
	}
	if err != nil {
		return zero, atDeadline(ctx, cctx, err)
	}
	// A plugin's invalid UTF-8 must not reach a runtime (whose protobuf-go
	// client could not decode the answer) or nrid's own clients.
	if field := utf8check.Check(rsp); field != "" {
		return zero, protocolError{status.Newf(codes.Internal, "the plugin's response is malformed: %s is not valid UTF-8", field)}
	}
	return rsp, nil
}

// atDeadline reports a CANCELLED answer that came at or after the call's
// deadline as DEADLINE_EXCEEDED: the plugin (or its gRPC library: tonic's
// timeout answers CANCELLED "Timeout expired") gave up because the deadline
// passed, and its answer beat nrid's own timer to the transport, which
// happens under load. It is a timeout, with the timeout's consequences,
// not "the plugin gave up on this call". The plugin's timer starts when it
// receives the call, so it cannot fire before nrid's deadline: a CANCELLED
// before the deadline is the plugin's own and stays an availability
// failure. The caller's own cancellation is left as it is.
func atDeadline(ctx, cctx context.Context, err error) error {
	if status.Code(err) != codes.Canceled || ctx.Err() != nil {
		return err
	}
	if dl, ok := cctx.Deadline(); !ok || time.Now().Before(dl) {
		return err
	}
	return status.Error(codes.DeadlineExceeded, "the plugin answered CANCELLED at its call's deadline: "+clip(status.Convert(err).Message()))
}

// callRemote sends req, or raw when it is not nil, over cc.
func callRemote[Req, Rsp proto.Message](ctx context.Context, cc PluginConn, m rpc[Req, Rsp], req Req, raw []byte) (Rsp, error) {
	var in any = req
	if raw != nil {
		in = &codec.Raw{Data: raw}
	}
	rsp := m.newRsp()
	if err := cc.Invoke(ctx, m.method, in, rsp, codec.CallOption()); err != nil {
		var zero Rsp
		return zero, err
	}
	return rsp, nil
}

// callEncoded calls an in-process plugin that takes requests encoded with
// raw, the encoding of req; a method it does not take so is called with
// req (callLocal).
func callEncoded[Req, Rsp proto.Message](ctx context.Context, c *conn, m rpc[Req, Rsp], req Req, raw []byte) (Rsp, error) {
	rsp := m.newRsp()
	taken := true
	err := inProcess(ctx, func() (err error) {
		taken, err = c.enc.InvokeEncoded(ctx, m.method, raw, rsp)
		return err
	})
	if !taken {
		return callLocal(ctx, c.impl, m, req)
	}
	if err != nil {
		var zero Rsp
		return zero, err
	}
	return rsp, nil
}

// callLocal calls an in-process plugin as gRPC would (inProcess), a nil
// answer being an empty one.
func callLocal[Req, Rsp proto.Message](ctx context.Context, impl nriv1beta1.PluginServiceServer, m rpc[Req, Rsp], req Req) (Rsp, error) {
	var rsp Rsp
	if err := inProcess(ctx, func() (err error) { rsp, err = m.local(impl, ctx, req); return err }); err != nil {
		var zero Rsp
		return zero, err
	}
	if !rsp.ProtoReflect().IsValid() {
		return m.newRsp(), nil
	}
	return rsp, nil
}

// inProcess runs call, a call of an in-process plugin, as gRPC would: not
// at all once ctx ended, and a panic and a plain error become statuses.
func inProcess(ctx context.Context, call func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(codes.Internal, "in-process plugin panicked: %v", r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	if err := call(); err != nil {
		if _, ok := status.FromError(err); !ok {
			return status.Error(codes.Unknown, err.Error())
		}
		return err
	}
	return nil
}
