package node

import (
	"google.golang.org/grpc"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/apidesc"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/internal/grpcreg"
	"github.com/nri-grpc/nri-grpc/server"
)

// The wire setup, for an embedder that serves a bare server.Server on gRPC
// servers of its own: the same setup a Node uses for its endpoints.

// GRPCServerOptions are the wire options of every gRPC server that serves
// the server's services: the codec (vtprotobuf fast paths; with
// Services.Register, a request that does not decode is INVALID_ARGUMENT,
// not INTERNAL), the message size limits (maxMessageSize, or
// server.DefaultMaxMessageSize for 0: give the server core the same with
// server.WithMaxMessageSize) and fixed HTTP/2 flow-control windows.
// Credentials (transport.UnixCredentials on a unix socket, TLS on TCP) and
// interceptors (interceptor.ServerOptions) are the embedder's to add.
func GRPCServerOptions(maxMessageSize int) []grpc.ServerOption {
	if maxMessageSize <= 0 {
		maxMessageSize = server.DefaultMaxMessageSize
	}
	opts := []grpc.ServerOption{
		codec.ServerOption(),
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.MaxSendMsgSize(maxMessageSize),
	}
	return append(opts, flowctl.ServerOptions()...)
}

// Services are the server's gRPC services. Create them once per server and
// register the same Services on every gRPC server that serves them: the
// AdaptationService holds the one attached runtime.
type Services struct {
	// Runtime is RuntimeService: plugins register.
	Runtime nriv1beta1.RuntimeServiceServer
	// Adaptation is AdaptationService: a runtime attaches and sends its
	// events.
	Adaptation nriv1beta1.AdaptationServiceServer
	// Admin is AdminService: operators (nrictl, grpcurl).
	Admin nriv1beta1.AdminServiceServer
}

// NewServices returns srv's services; adminOpts configure the
// AdminService (server.WithoutRedaction).
func NewServices(srv *server.Server, adminOpts ...server.AdminOption) Services {
	return Services{Runtime: srv.RuntimeService(), Adaptation: srv.AdaptationService(), Admin: srv.AdminService(adminOpts...)}
}

// Register registers the services on g, so that a request that does not
// decode is answered INVALID_ARGUMENT (with GRPCServerOptions' codec), and
// gRPC server reflection, which lists what g serves (the services
// registered before or after, health included) and describes every
// nri.v1beta1 symbol. A nil service is not registered.
func (s Services) Register(g *grpc.Server) error {
	reg := grpcreg.Registrar(g)
	if s.Runtime != nil {
		nriv1beta1.RegisterRuntimeServiceServer(reg, s.Runtime)
	}
	if s.Adaptation != nil {
		nriv1beta1.RegisterAdaptationServiceServer(reg, s.Adaptation)
	}
	if s.Admin != nil {
		nriv1beta1.RegisterAdminServiceServer(reg, s.Admin)
	}
	return apidesc.RegisterReflection(g, g)
}
