package node

import (
	"crypto/tls"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/nri-grpc/nri-grpc/auth"
	"github.com/nri-grpc/nri-grpc/interceptor"
	"github.com/nri-grpc/nri-grpc/server"
	"github.com/nri-grpc/nri-grpc/tlsconf"
	"github.com/nri-grpc/nri-grpc/transport"
)

// newGRPC builds the gRPC servers: the unix socket's and, with serverTLS
// ([tcp]), the TCP listener's. Both serve one instance of each service:
// the AdaptationService holds the one attached runtime.
func (n *Node) newGRPC(tokens *auth.Tokens, serverTLS *tls.Config) error {
	cfg, s := n.cfg, n.cfg.Server
	var adminOpts []server.AdminOption
	if !cfg.Observability.RedactValues {
		adminOpts = append(adminOpts, server.WithoutRedaction())
	}
	services := NewServices(n.srv, adminOpts...)
	n.health = newStoppingHealth(health.NewServer(), n.o.name+" is stopping")

	chain := interceptor.ServerOptions(
		interceptor.WithLogger(n.log),
		interceptor.WithAuthenticator(auth.New(auth.WithTokens(tokens), auth.WithKnown(n.policy.Known))),
		interceptor.WithAccess(auth.Access(n.policy.AuthorizeCall)),
		interceptor.WithPublic(healthpb.Health_ServiceDesc.ServiceName), // health is open to everybody
		interceptor.WithRegisterRate(s.RegisterRate, s.RegisterBurst),
		interceptor.WithUnary(n.srv.SimulationGuard()),
	)
	common := GRPCServerOptions(s.MaxMessageSize)
	// Tracing's stats handler first: it sees every call, refused ones too.
	common = append(common, n.tracer.ServerOptions()...)
	common = append(common, chain...)

	newGRPC := func(extra ...grpc.ServerOption) (*grpc.Server, error) {
		g := grpc.NewServer(append(append([]grpc.ServerOption(nil), common...), extra...)...)
		healthpb.RegisterHealthServer(g, n.health)
		// Requests that do not decode are the caller's fault:
		// INVALID_ARGUMENT. Reflection lists what g serves, nothing else;
		// describing a symbol (nri.v1beta1.PluginService, which plugins
		// serve) still works for every nri.v1beta1 file.
		if err := services.Register(g); err != nil {
			return nil, err
		}
		return g, nil
	}
	var err error
	if n.unix, err = newGRPC(grpc.Creds(transport.UnixCredentials())); err != nil {
		return err
	}
	if serverTLS != nil {
		n.tcp, err = newGRPC(grpc.Creds(tlsconf.LogHandshakeFailures(credentials.NewTLS(serverTLS), n.log)),
			grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}))
		if err != nil {
			return err
		}
	}
	for name := range n.unix.GetServiceInfo() {
		n.services = append(n.services, name)
	}
	return nil
}
