package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
)

// conn is how the server reaches one plugin instance, remote or
// in-process (rpc.go's call uses it).
type conn interface {
	// inProcess returns the implementation of an in-process plugin, nil
	// for a remote one.
	inProcess() nriv1beta1.PluginServiceServer
	// invoke calls method of a remote plugin: in is the request or its
	// encoding (*codec.Raw), out is filled with the answer.
	invoke(ctx context.Context, method string, in any, out proto.Message) error
	// remote reports whether calls cross a connection (and so benefit from
	// pre-encoding).
	remote() bool
	close() error
}

// remoteConn calls a plugin over gRPC, through the connection a Dialer
// made.
type remoteConn struct {
	cc PluginConn
}

func (c *remoteConn) inProcess() nriv1beta1.PluginServiceServer { return nil }

func (c *remoteConn) invoke(ctx context.Context, method string, in any, out proto.Message) error {
	return c.cc.Invoke(ctx, method, in, out, codec.CallOption())
}

func (c *remoteConn) remote() bool { return true }

func (c *remoteConn) close() error { return c.cc.Close() }

// inProcessConn calls a Go implementation of PluginService directly. The
// implementation receives the server's request objects and must not modify
// or retain them.
type inProcessConn struct {
	impl nriv1beta1.PluginServiceServer
}

func (c *inProcessConn) inProcess() nriv1beta1.PluginServiceServer { return c.impl }

func (c *inProcessConn) invoke(context.Context, string, any, proto.Message) error {
	return status.Error(codes.Internal, "an in-process plugin has no connection")
}

func (c *inProcessConn) remote() bool { return false }

func (c *inProcessConn) close() error { return nil }
