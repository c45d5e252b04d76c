package server

import (
	"context"
	"io"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
)

// Dialing a plugin's endpoint.
//
// The server does not dial by itself: a Dialer (WithDialer; package
// transport has nrid's) turns the endpoint a plugin registered into a
// connection, under its endpoint policy. Without a Dialer only in-process
// plugins register.
//
// What the registrant may learn is its own request's faults: the Dialer
// refuses an endpoint that is malformed, outside the plugin socket
// directory or outside its policy precisely, before anything is dialed.
// Everything that depends on the state of the node (whether a file exists,
// who listens on it, whether a port is open, what it answers) gets one
// refusal, unreachableMessage, the same for every cause, and the cause goes
// to the server's log only: otherwise a registrant could use the server to
// probe files and ports it cannot reach itself.

// Dialer connects the server to the endpoints of remote plugins. It must be
// safe for concurrent use.
type Dialer interface {
	// Dial prepares the connection to the plugin that req.Identity
	// registered at req.Endpoint, without waiting for it: the server's
	// first call (Configure) makes the first connection. Every connection
	// attempt, the first and each reconnection, must apply the endpoint
	// policy, log its failure's cause to req.Log and fail with an error
	// that names no cause.
	//
	// An error refuses the registration as INVALID_ARGUMENT,
	// REGISTRATION_REFUSAL_INVALID_ENDPOINT, field "endpoint", with the
	// message "endpoint: " and the error's text; an error that carries a
	// gRPC status (status.FromError) keeps its code, and its message follows
	// "endpoint: ".
	Dial(ctx context.Context, req DialRequest) (PluginConn, error)
}

// DialRequest is what a Dialer is asked to connect to.
type DialRequest struct {
	// Endpoint is the endpoint as the plugin registered it (at most
	// MaxEndpointLen bytes of UTF-8).
	Endpoint string
	// Identity is the registrant's identity: its uid for a unix socket's
	// owner, its certificate ("cert:CN") for a TLS endpoint.
	Identity Identity
	// SocketDir is the plugin socket directory (WithPluginSocketDir), the
	// only directory unix endpoints may be in.
	SocketDir string
	// Options are the server's dial options (message size limits, codec,
	// flow control, then WithDialOptions): the Dialer applies them before
	// its own, so that none of them replaces its dialer or credentials.
	Options []grpc.DialOption
	// Log is where the Dialer logs why a connection failed; it carries the
	// plugin's full name, the registrant's identity and the endpoint.
	Log *slog.Logger
}

// PluginConn is a connection to a remote plugin that a Dialer made: the
// server calls the plugin through it and closes it when the plugin goes.
type PluginConn interface {
	grpc.ClientConnInterface
	io.Closer
	// Unreachable reports whether err, the failure of a call on this
	// connection, came from having no connection to the plugin (connecting,
	// failed or lost) rather than from the plugin: a plugin that answers
	// with an error, or does not answer a call on a ready connection, is not
	// unreachable.
	Unreachable(err error) bool
}

// WithDialer sets how the server connects to remote plugins' endpoints
// (default: none, and registrations with an endpoint are refused). nrid
// uses transport.NewDialer: unix sockets in the plugin socket directory
// served by the registrant's uid, and TCP with TLS when configured.
func WithDialer(d Dialer) Option { return func(o *options) { o.dialer = d } }

// unreachableMessage is the status message of every registration refused
// because the server could not connect: it says nothing about the cause.
const unreachableMessage = "endpoint: nrid could not connect to the plugin's endpoint; the reason is in nrid's log"

// unreachableRefusal is the refusal of a registration whose endpoint the
// server could not connect to, whatever the cause: UNAVAILABLE,
// REGISTRATION_REFUSAL_CONFIGURE_FAILED (retryable: the cause may be
// transient), field "endpoint".
func unreachableRefusal() error {
	return refusal(codes.Unavailable, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_CONFIGURE_FAILED, "endpoint", "%s", unreachableMessage)
}

// dialPlugin prepares the connection to the endpoint of the remote plugin
// full ("NN-name") that id registered, through the Dialer. Nothing is
// dialed until the first call (Configure), and every failure to connect
// then is unreachableRefusal.
func (s *Server) dialPlugin(ctx context.Context, full, endpoint string, id Identity) (*conn, error) {
	if s.opts.dialer == nil {
		return nil, refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint",
			"endpoint: this server dials no plugin endpoints (it has no Dialer); only in-process plugins register with it")
	}
	opts := append([]grpc.DialOption{
		grpc.WithDisableRetry(),
		grpc.WithIdleTimeout(0),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(s.opts.maxMessageSize), grpc.MaxCallRecvMsgSize(s.opts.maxMessageSize)),
		codec.DialOption(),
	}, flowctl.DialOptions()...)
	opts = append(opts, s.opts.dialOptions...)
	pc, err := s.opts.dialer.Dial(ctx, DialRequest{
		Endpoint:  endpoint,
		Identity:  id,
		SocketDir: s.opts.pluginSocketDir,
		Options:   opts,
		Log:       s.log.With("plugin", full, "identity", clip(id.Name), "endpoint", clip(endpoint)),
	})
	if err != nil {
		code, msg := codes.InvalidArgument, err.Error()
		if st, ok := status.FromError(err); ok {
			code, msg = st.Code(), st.Message()
		}
		return nil, refusal(code, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint",
			"endpoint: %s", clip(msg))
	}
	return &conn{cc: pc}, nil
}

// connUnreachable reports whether err, the failure of a call to p, came
// from having no connection to the plugin (PluginConn.Unreachable).
func connUnreachable(p *plugin, err error) bool {
	return p.c.cc != nil && p.c.cc.Unreachable(err)
}
