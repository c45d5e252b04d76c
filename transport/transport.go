// Package transport connects an nri-grpc server to its plugins and
// identifies its callers.
//
// A Dialer is the server's server.Dialer: it dials the endpoints remote
// plugins register at, a unix socket in the plugin socket directory that
// the registrant's uid owns and serves (checked through the connection's
// peer credentials, SO_PEERCRED), or, with WithTLS, a TCP endpoint whose
// TLS certificate matches the registrant. UnixCredentials are the
// credentials of the server's unix socket: they identify callers by their
// peer credentials (server.UnixPeer) and watch how their connections end
// (server.ConnWatcher).
//
// What a registrant may learn is its own request's faults: an endpoint
// that is malformed or outside the plugin socket directory is refused
// precisely, before anything is dialed. Everything that depends on the
// state of the node (whether a file exists, what it is, who owns it, who
// listens on it, whether a port is open, what it answers in TLS, whether it
// speaks gRPC) fails the connection with one error, the same for every
// cause, and the cause goes to the server's log only (DialRequest.Log):
// otherwise a registrant could use the server to probe files and ports it
// cannot reach itself.
//
// Every connection, the first and each reconnection, goes through the same
// checking dialer (grpc.WithContextDialer): a unix endpoint is resolved
// beneath the plugin socket directory without following symbolic links,
// must be a socket owned by the registrant's uid, and is connected to
// through the descriptor that was checked; the process listening on it
// must have the registrant's uid (SO_PEERCRED of the connection). A TCP
// endpoint is connected to and its TLS handshake made inside the dialer
// too, so that a refused connection, a timeout, a handshake failure and a
// certificate of someone else all look the same to gRPC and to the
// registrant.
package transport

import (
	"context"
	"crypto/tls"
	"log/slog"

	"google.golang.org/grpc/credentials"

	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/server"
)

// The peer credentials of UnixCredentials are what the server reads.
var (
	_ server.UnixPeer    = peercred.Info{}
	_ server.ConnWatcher = peercred.Info{}
	_ server.Dialer      = (*Dialer)(nil)
)

// UnixCredentials returns the gRPC transport credentials of a server's unix
// socket (grpc.Creds): no encryption; each connection's AuthInfo carries the
// peer's unix credentials, read from the connected socket during the
// handshake (server.UnixPeer), and watches how the peer ends its streams
// and the connection (server.ConnWatcher). Connections that are not unix
// sockets are refused.
func UnixCredentials() credentials.TransportCredentials { return peercred.Credentials{} }

// Dialer dials remote plugins' endpoints for a server (server.WithDialer).
// Create it with NewDialer; it is safe for concurrent use.
type Dialer struct {
	tls *tls.Config
}

// Option configures a Dialer.
type Option func(*Dialer)

// WithTLS enables TCP plugin endpoints ("dns:///host:port",
// "tcp://host:port" or "host:port"): cfg is the client TLS configuration
// they are dialed with, its certificate (plugins require one from the
// server) and the roots that verify theirs. A plugin whose registrant
// authenticated with a client certificate ("cert:CN") must serve a
// certificate with the same common name. Without this option, or with a
// nil cfg, TCP endpoints are refused.
func WithTLS(cfg *tls.Config) Option { return func(d *Dialer) { d.tls = cfg } }

// NewDialer returns a Dialer of unix endpoints and, with WithTLS, of TCP
// endpoints.
func NewDialer(opts ...Option) *Dialer {
	d := &Dialer{}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Dial implements server.Dialer: it refuses a malformed endpoint, one
// outside req.SocketDir, a unix endpoint for a registrant without unix
// credentials (PERMISSION_DENIED) and a TCP endpoint without WithTLS, and
// otherwise returns the connection, which connects on its first call.
func (d *Dialer) Dial(_ context.Context, req server.DialRequest) (server.PluginConn, error) {
	log := req.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if isNetworkEndpoint(req.Endpoint) {
		return d.dialTCP(req, log)
	}
	return dialUnix(req, log)
}
