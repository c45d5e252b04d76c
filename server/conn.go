package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
)

// conn is how the server calls one plugin instance, remote or in-process.
type conn interface {
	// invoke calls method with req and returns the answer, a message made by
	// newRsp for remote plugins. raw, when not nil, is req already encoded: a
	// remote connection sends it as it is.
	invoke(ctx context.Context, method string, req proto.Message, raw []byte, newRsp func() proto.Message) (proto.Message, error)
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

func (c *remoteConn) invoke(ctx context.Context, method string, req proto.Message, raw []byte, newRsp func() proto.Message) (proto.Message, error) {
	var in any = req
	if raw != nil {
		in = &codec.Raw{Data: raw}
	}
	rsp := newRsp()
	if err := c.cc.Invoke(ctx, method, in, rsp, codec.CallOption()); err != nil {
		return nil, err
	}
	return rsp, nil
}

func (c *remoteConn) remote() bool { return true }

func (c *remoteConn) close() error { return c.cc.Close() }

// inProcessConn calls a Go implementation of PluginService directly. The
// implementation receives the server's request objects and must not modify
// or retain them.
type inProcessConn struct {
	impl nriv1beta1.PluginServiceServer
}

func (c *inProcessConn) remote() bool { return false }

func (c *inProcessConn) close() error { return nil }

// result turns a handler's answer into invoke's: errors become statuses as
// gRPC would make them, and a nil answer an empty one.
func result[T proto.Message](newRsp func() proto.Message, got T, err error) (proto.Message, error) {
	if err != nil {
		if _, ok := status.FromError(err); !ok {
			err = status.Error(codes.Unknown, err.Error())
		}
		return nil, err
	}
	if !got.ProtoReflect().IsValid() {
		return newRsp(), nil
	}
	return got, nil
}

func (c *inProcessConn) invoke(ctx context.Context, method string, req proto.Message, _ []byte, newRsp func() proto.Message) (rsp proto.Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			rsp, err = nil, status.Errorf(codes.Internal, "in-process plugin panicked: %v", r)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	s := c.impl
	switch method {
	case nriv1beta1.PluginService_Configure_FullMethodName:
		r, err := s.Configure(ctx, req.(*nriv1beta1.ConfigureRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_Synchronize_FullMethodName:
		r, err := s.Synchronize(ctx, req.(*nriv1beta1.SynchronizeRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_Shutdown_FullMethodName:
		r, err := s.Shutdown(ctx, req.(*nriv1beta1.ShutdownRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_RunPodSandbox_FullMethodName:
		r, err := s.RunPodSandbox(ctx, req.(*nriv1beta1.RunPodSandboxRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_UpdatePodSandbox_FullMethodName:
		r, err := s.UpdatePodSandbox(ctx, req.(*nriv1beta1.UpdatePodSandboxRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_PostUpdatePodSandbox_FullMethodName:
		r, err := s.PostUpdatePodSandbox(ctx, req.(*nriv1beta1.PostUpdatePodSandboxRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_StopPodSandbox_FullMethodName:
		r, err := s.StopPodSandbox(ctx, req.(*nriv1beta1.StopPodSandboxRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_RemovePodSandbox_FullMethodName:
		r, err := s.RemovePodSandbox(ctx, req.(*nriv1beta1.RemovePodSandboxRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_CreateContainer_FullMethodName:
		r, err := s.CreateContainer(ctx, req.(*nriv1beta1.CreateContainerRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_PostCreateContainer_FullMethodName:
		r, err := s.PostCreateContainer(ctx, req.(*nriv1beta1.PostCreateContainerRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_StartContainer_FullMethodName:
		r, err := s.StartContainer(ctx, req.(*nriv1beta1.StartContainerRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_PostStartContainer_FullMethodName:
		r, err := s.PostStartContainer(ctx, req.(*nriv1beta1.PostStartContainerRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_UpdateContainer_FullMethodName:
		r, err := s.UpdateContainer(ctx, req.(*nriv1beta1.UpdateContainerRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_PostUpdateContainer_FullMethodName:
		r, err := s.PostUpdateContainer(ctx, req.(*nriv1beta1.PostUpdateContainerRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_StopContainer_FullMethodName:
		r, err := s.StopContainer(ctx, req.(*nriv1beta1.StopContainerRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_RemoveContainer_FullMethodName:
		r, err := s.RemoveContainer(ctx, req.(*nriv1beta1.RemoveContainerRequest))
		return result(newRsp, r, err)
	case nriv1beta1.PluginService_ValidateContainerAdjustment_FullMethodName:
		r, err := s.ValidateContainerAdjustment(ctx, req.(*nriv1beta1.ValidateContainerAdjustmentRequest))
		return result(newRsp, r, err)
	}
	return nil, status.Errorf(codes.Unimplemented, "in-process plugin: unknown method %s", method)
}
