package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
	"github.com/nri-grpc/nri-grpc/internal/flowctl"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// Dialing a plugin's endpoint.
//
// What the registrant may learn is its own request's faults: an endpoint
// that is malformed, outside the plugin socket directory or outside its
// policy is refused precisely, before anything is dialed. Everything that
// depends on the state of the node (whether a file exists, what it is, who
// owns it, who listens on it, whether a port is open, what it answers in
// TLS, whether it speaks gRPC) gets one refusal, unreachableMessage, the
// same for every cause, and the cause goes to nrid's log only: otherwise a
// registrant could use nrid to probe files and ports it cannot reach
// itself.
//
// Every connection, the first and each reconnection, goes through the same
// checking dialer (grpc.WithContextDialer): a unix endpoint is resolved
// beneath the plugin socket directory without following symbolic links,
// must be a socket owned by the registrant's uid, and is connected to
// through the descriptor that was checked (sockets.DialBeneath); the
// process listening on it must have the registrant's uid (SO_PEERCRED of
// the connection). A TCP endpoint is connected to and its TLS handshake made
// inside the dialer too, so that a refused connection, a timeout, a
// handshake failure and a certificate of someone else all look the same to
// gRPC and to the registrant.

// unreachableText is the error of every failed connection attempt, and
// unreachableMessage the status message of every registration refused
// because nrid could not connect: they say nothing about the cause.
const (
	unreachableText    = "nrid could not connect to the plugin's endpoint; the reason is in nrid's log"
	unreachableMessage = "endpoint: " + unreachableText
)

// errUnreachable is what the checking dialer returns for every failure;
// the cause is logged.
var errUnreachable = unreachableError{}

// unreachableError is errUnreachable's type.
type unreachableError struct{}

func (unreachableError) Error() string { return unreachableText }

// Temporary marks the failure as transient to gRPC's transport, as a
// network error would be: the channel retries with backoff.
func (unreachableError) Temporary() bool { return true }

// unreachableRefusal is the refusal of a registration whose endpoint nrid
// could not connect to, whatever the cause: UNAVAILABLE,
// REGISTRATION_REFUSAL_CONFIGURE_FAILED (retryable: the cause may be
// transient), field "endpoint".
func unreachableRefusal() error {
	return refusal(codes.Unavailable, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_CONFIGURE_FAILED, "endpoint", "%s", unreachableMessage)
}

// endpointDialer is the checking dialer of one plugin connection: connect
// makes and checks a connection and returns a detailed error; dial, the
// grpc.WithContextDialer function, logs that error and returns
// errUnreachable.
type endpointDialer struct {
	s        *Server
	endpoint string // as registered
	identity string // the registrant's
	plugin   atomic.Pointer[string]
	connect  func(ctx context.Context) (net.Conn, error)
}

// bind names the plugin the connection is for, in the log.
func (d *endpointDialer) bind(full string) { d.plugin.Store(&full) }

func (d *endpointDialer) pluginName() string {
	if p := d.plugin.Load(); p != nil {
		return *p
	}
	return ""
}

func (d *endpointDialer) dial(ctx context.Context, _ string) (net.Conn, error) {
	c, err := d.connect(ctx)
	if err != nil {
		level := slog.LevelWarn
		if errors.Is(ctx.Err(), context.Canceled) {
			// The connection was closed while connecting: the registration
			// gave up (and logged why) or the plugin is gone.
			level = slog.LevelDebug
		}
		d.s.log.Log(ctx, level, "could not connect to a plugin's endpoint", "plugin", d.pluginName(), "identity", clip(d.identity),
			"endpoint", clip(d.endpoint), "reason", clip(err.Error()))
		return nil, errUnreachable
	}
	return c, nil
}

// dialedConn is a remote plugin's connection made through an
// endpointDialer.
type dialedConn struct {
	remoteConn
	d *endpointDialer
}

// unreachable reports whether a call failed because there was no
// connection to the plugin: UNAVAILABLE or DEADLINE_EXCEEDED while the
// channel is not ready (connecting, failed, or lost). A plugin that answers
// with an error, or does not answer a call on a ready connection, is not
// unreachable: that is the plugin's own doing, and its status is passed on.
func (c *dialedConn) unreachable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return c.cc.GetState() != connectivity.Ready
	}
	return false
}

// bindConn names p in the log lines of its connection's dialer. It is
// called before the first call to the plugin, which makes the first
// connection.
func bindConn(p *plugin) {
	if dc, ok := p.c.(*dialedConn); ok {
		dc.d.bind(p.full)
	}
}

// connUnreachable reports whether err, the failure of a call to p, came
// from having no connection to the plugin (see dialedConn.unreachable).
func connUnreachable(p *plugin, err error) bool {
	dc, ok := p.c.(*dialedConn)
	return ok && dc.unreachable(err)
}

// dialPlugin prepares the connection to a remote plugin's endpoint under
// the endpoint policy: a unix socket inside the plugin socket directory,
// owned by and served by the registrant's uid, or, with WithPluginTLS, a
// TCP endpoint whose certificate matches the registrant. Malformed
// endpoints are refused here; nothing is dialed until the first call
// (Configure), and every failure to connect then is unreachableRefusal.
func (s *Server) dialPlugin(endpoint string, id Identity) (conn, error) {
	if isNetworkEndpoint(endpoint) {
		return s.dialTCPPlugin(endpoint, id)
	}
	if !id.Unix {
		return nil, refusal(codes.PermissionDenied, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint",
			"endpoint: identity %q has no unix credentials to check the unix socket's owner against", id.Name)
	}
	path, err := s.checkEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	dir := filepath.Clean(s.opts.pluginSocketDir)
	rel := strings.TrimPrefix(path, dir+string(filepath.Separator))
	uid := id.UID
	d := &endpointDialer{s: s, endpoint: endpoint, identity: id.Name}
	d.connect = func(ctx context.Context) (net.Conn, error) {
		c, err := sockets.DialBeneath(ctx, dir, rel, sockets.OwnedBy(uid))
		if err != nil {
			return nil, err
		}
		info, err := peercred.Of(c)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		if info.UID != uid {
			_ = c.Close()
			return nil, fmt.Errorf("%s is served by uid %d (pid %d), the registrant is uid %d", path, info.UID, info.PID, uid)
		}
		return c, nil
	}
	return s.newPluginClient("unix://"+path, d, peercred.Credentials{})
}

// dialTCPPlugin prepares the connection to a plugin's TCP endpoint
// ("dns:///host:port", "tcp://host:port" or "host:port") over TLS: the
// plugin's certificate must chain to the configured roots, name the
// endpoint's host and, when the registrant authenticated with a client
// certificate, carry the same common name. Which hosts an identity may name
// is the Authorizer's decision, made before.
func (s *Server) dialTCPPlugin(endpoint string, id Identity) (conn, error) {
	if s.opts.pluginTLS == nil {
		return nil, refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint",
			"endpoint: %s is a network address; this server dials TCP endpoints only with TLS configured (nrid: [tcp])", untrusted.Quote(endpoint))
	}
	host, port, err := SplitTCPEndpoint(endpoint)
	if err != nil {
		return nil, refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint",
			"endpoint: %v", err)
	}
	hostport := net.JoinHostPort(host, port)
	cfg := s.opts.pluginTLS.Clone()
	cfg.ServerName = host
	cfg.NextProtos = []string{"h2"}
	if cn, ok := strings.CutPrefix(id.Name, "cert:"); ok {
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || cs.PeerCertificates[0].Subject.CommonName != cn {
				got := ""
				if len(cs.PeerCertificates) > 0 {
					got = cs.PeerCertificates[0].Subject.CommonName
				}
				return fmt.Errorf("the certificate is for %q, the registrant is %q", got, id.Name)
			}
			return nil
		}
	}
	d := &endpointDialer{s: s, endpoint: endpoint, identity: id.Name}
	d.connect = func(ctx context.Context) (net.Conn, error) {
		var nd net.Dialer
		raw, err := nd.DialContext(ctx, "tcp", hostport)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", hostport, err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			_ = tc.Close()
			return nil, fmt.Errorf("%s negotiated application protocol %q in TLS, not HTTP/2 (\"h2\"): not a gRPC server", hostport, p)
		}
		return tc, nil
	}
	return s.newPluginClient("passthrough:///"+hostport, d, tlsDialed{})
}

// newPluginClient makes the gRPC connection to a plugin's endpoint; it
// connects on the first call. The checking dialer, the credentials and the
// absence of a proxy come last, so that no option given to the server
// replaces them.
func (s *Server) newPluginClient(target string, d *endpointDialer, creds credentials.TransportCredentials) (conn, error) {
	opts := append([]grpc.DialOption{
		grpc.WithDisableRetry(),
		grpc.WithIdleTimeout(0),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(s.opts.maxMessageSize), grpc.MaxCallRecvMsgSize(s.opts.maxMessageSize)),
		codec.DialOption(),
	}, flowctl.DialOptions()...)
	opts = append(opts, s.opts.dialOptions...)
	opts = append(opts, grpc.WithTransportCredentials(creds), grpc.WithContextDialer(d.dial), grpc.WithNoProxy())
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint",
			"endpoint: %v", err)
	}
	return &dialedConn{remoteConn: remoteConn{cc: cc}, d: d}, nil
}

// isNetworkEndpoint reports whether endpoint names a TCP address rather
// than a unix socket.
func isNetworkEndpoint(endpoint string) bool {
	return endpoint != "" && !strings.HasPrefix(endpoint, "unix:") && !strings.HasPrefix(endpoint, "/")
}

// SplitTCPEndpoint returns the host and port of a TCP plugin endpoint:
// "dns:///host:port", "tcp://host:port" or "host:port", the host a name or
// an IP address (IPv6 in brackets), the port a number from 1 to 65535. The
// unspecified addresses (0.0.0.0, ::) are refused: they name no plugin and
// would reach the node itself. The server dials exactly this host and port;
// an Authorizer that restricts TCP hosts should check what this returns.
func SplitTCPEndpoint(endpoint string) (host, port string, err error) {
	bad := func() (string, string, error) {
		return "", "", fmt.Errorf("%s is not \"dns:///host:port\", \"tcp://host:port\" or \"host:port\"", untrusted.Quote(endpoint))
	}
	hostport := endpoint
	for _, prefix := range []string{"dns:///", "tcp://"} {
		if rest, ok := strings.CutPrefix(endpoint, prefix); ok {
			hostport = rest
			break
		}
	}
	host, port, err = net.SplitHostPort(hostport)
	if err != nil || host == "" || strings.Contains(hostport, "/") {
		return bad()
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", "", fmt.Errorf("%s: the port %s is not a number from 1 to 65535", untrusted.Quote(endpoint), untrusted.Quote(port))
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Unmap().IsUnspecified() {
			return "", "", fmt.Errorf("%s: %s is the unspecified address, not a plugin's", untrusted.Quote(endpoint), host)
		}
		return host, port, nil
	}
	if !validHostName(host) {
		return "", "", fmt.Errorf("%s: %s is neither an IP address nor a host name", untrusted.Quote(endpoint), untrusted.Quote(host))
	}
	return host, port, nil
}

// validHostName accepts host names: at most 253 bytes of dot-separated
// labels of letters, digits, '-' and '_', each 1 to 63 bytes long.
func validHostName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// checkEndpoint applies the endpoint policy to a unix endpoint and returns
// the socket path: "unix://" and an absolute path, inside the plugin socket
// directory after cleaning, short enough for a socket address. It looks at
// the string only; the dialer resolves the path without following symbolic
// links.
func (s *Server) checkEndpoint(endpoint string) (string, error) {
	bad := func(format string, args ...any) error {
		return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_ENDPOINT, "endpoint",
			"endpoint: "+format, args...)
	}
	if endpoint == "" {
		return "", bad("must not be empty for a remote plugin")
	}
	if !strings.HasPrefix(endpoint, "unix://") {
		return "", bad("%q is not a unix:// target; only unix sockets in %s are allowed", endpoint, s.opts.pluginSocketDir)
	}
	path := strings.TrimPrefix(endpoint, "unix://")
	if !filepath.IsAbs(path) {
		return "", bad("%q is not an absolute path", path)
	}
	clean := filepath.Clean(path)
	dir := filepath.Clean(s.opts.pluginSocketDir)
	if !strings.HasPrefix(clean, dir+string(filepath.Separator)) {
		return "", bad("%q is outside the plugin socket directory %s", clean, dir)
	}
	if len(clean) > sockets.MaxPathLen {
		return "", bad("%q is longer than the %d bytes a unix socket path may have", clean, sockets.MaxPathLen)
	}
	return clean, nil
}

// tlsDialed are transport credentials for connections the checking dialer
// already made TLS (and verified): the handshake only reports the TLS state,
// so that every failure happened in the dialer and looks the same.
type tlsDialed struct{}

var _ credentials.TransportCredentials = tlsDialed{}

// errNotTLS is a connection the checking dialer did not make.
var errNotTLS = errors.New("plugin connection: not a TLS connection made by the checking dialer")

// ClientHandshake implements credentials.TransportCredentials.
func (tlsDialed) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return nil, nil, errNotTLS
	}
	return conn, credentials.TLSInfo{
		State:          tc.ConnectionState(),
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity},
	}, nil
}

// ServerHandshake implements credentials.TransportCredentials; these
// credentials are for dialing only.
func (tlsDialed) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errNotTLS
}

// Info implements credentials.TransportCredentials.
func (tlsDialed) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

// Clone implements credentials.TransportCredentials.
func (tlsDialed) Clone() credentials.TransportCredentials { return tlsDialed{} }

// OverrideServerName implements credentials.TransportCredentials.
func (tlsDialed) OverrideServerName(string) error { return nil }
