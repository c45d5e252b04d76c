package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/internal/sockets"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
	"github.com/nri-grpc/nri-grpc/server"
)

// unreachableText is the error of every failed connection attempt: it says
// nothing about the cause.
const unreachableText = "nrid could not connect to the plugin's endpoint; the reason is in nrid's log"

// errUnreachable is what the checking dialer returns for every failure;
// the cause is logged.
var errUnreachable = unreachableError{}

// unreachableError is errUnreachable's type.
type unreachableError struct{}

func (unreachableError) Error() string { return unreachableText }

// Temporary marks the failure as transient to gRPC's transport, as a
// network error would be: the channel retries with backoff.
func (unreachableError) Temporary() bool { return true }

// checkingDialer is the dialer of one plugin connection
// (grpc.WithContextDialer): connect makes and checks a connection and
// returns a detailed error; dial logs that error and returns
// errUnreachable.
type checkingDialer struct {
	log     *slog.Logger
	connect func(ctx context.Context) (net.Conn, error)
}

func (d *checkingDialer) dial(ctx context.Context, _ string) (net.Conn, error) {
	c, err := d.connect(ctx)
	if err != nil {
		level := slog.LevelWarn
		if errors.Is(ctx.Err(), context.Canceled) {
			// The connection was closed while connecting: the registration
			// gave up (and logged why) or the plugin is gone.
			level = slog.LevelDebug
		}
		reason := untrusted.Cut(strings.ToValidUTF8(err.Error(), "\uFFFD"), server.MaxMessageLen)
		d.log.Log(ctx, level, "could not connect to a plugin's endpoint", "reason", reason)
		return nil, errUnreachable
	}
	return c, nil
}

// pluginConn is a plugin's connection made through a checkingDialer.
type pluginConn struct {
	*grpc.ClientConn
}

// Unreachable implements server.PluginConn: UNAVAILABLE or
// DEADLINE_EXCEEDED while the channel is not ready (connecting, failed, or
// lost). A plugin that answers with an error, or does not answer a call on
// a ready connection, is not unreachable: that is the plugin's own doing.
func (c *pluginConn) Unreachable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return c.GetState() != connectivity.Ready
	}
	return false
}

// dialUnix prepares the connection to a unix endpoint in req.SocketDir,
// owned and served by the registrant's uid.
func dialUnix(req server.DialRequest, log *slog.Logger) (server.PluginConn, error) {
	id := req.Identity
	if !id.Unix {
		return nil, status.Errorf(codes.PermissionDenied,
			"identity %q has no unix credentials to check the unix socket's owner against", id.Name)
	}
	path, err := unixPath(req.Endpoint, req.SocketDir)
	if err != nil {
		return nil, err
	}
	dir := filepath.Clean(req.SocketDir)
	rel := strings.TrimPrefix(path, dir+string(filepath.Separator))
	uid := id.UID
	d := &checkingDialer{log: log}
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
	return newClient("unix://"+path, req.Options, d, peercred.Credentials{})
}

// dialTCP prepares the connection to a TCP endpoint over TLS: the plugin's
// certificate must chain to the configured roots, name the endpoint's host
// and, when the registrant authenticated with a client certificate, carry
// the same common name. Which hosts an identity may name is the
// Authorizer's decision, made before.
func (d *Dialer) dialTCP(req server.DialRequest, log *slog.Logger) (server.PluginConn, error) {
	if d.tls == nil {
		return nil, fmt.Errorf("%s is a network address; this server dials TCP endpoints only with TLS configured (nrid: [tcp])",
			untrusted.Quote(req.Endpoint))
	}
	host, port, err := SplitTCPEndpoint(req.Endpoint)
	if err != nil {
		return nil, err
	}
	id := req.Identity
	hostport := net.JoinHostPort(host, port)
	cfg := d.tls.Clone()
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
	cd := &checkingDialer{log: log}
	cd.connect = func(ctx context.Context) (net.Conn, error) {
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
	return newClient("passthrough:///"+hostport, req.Options, cd, tlsDialed{})
}

// newClient makes the gRPC connection to a plugin's endpoint; it connects
// on the first call. The checking dialer, the credentials and the absence
// of a proxy come after the server's options, so that none of those
// replaces them.
func newClient(target string, serverOpts []grpc.DialOption, d *checkingDialer, creds credentials.TransportCredentials) (server.PluginConn, error) {
	opts := append(append([]grpc.DialOption(nil), serverOpts...),
		grpc.WithTransportCredentials(creds), grpc.WithContextDialer(d.dial), grpc.WithNoProxy())
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, err
	}
	return &pluginConn{ClientConn: cc}, nil
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
