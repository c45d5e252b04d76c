// Package tlsconf builds the server's TLS configurations from the files
// its configuration names ([tcp] cert_file, key_file, client_ca_file), and
// logs the handshakes its TCP listener refuses. Package node uses it for
// nrid and every other embedder.
package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"google.golang.org/grpc/credentials"
)

// ServerTLS returns the TLS configuration of nrid's TCP listener: TLS 1.3,
// the server certificate and key, and client certificates verified against
// the CA bundle in clientCAFile. With requireCert, a client without a
// certificate fails the handshake; without it a client may connect without
// one and must then present a bearer token.
func ServerTLS(certFile, keyFile, clientCAFile string, requireCert bool) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("TLS needs cert_file and key_file")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
	}
	if requireCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if clientCAFile == "" {
		if requireCert {
			return nil, fmt.Errorf("client certificates are required but client_ca_file is not set")
		}
		cfg.ClientAuth = tls.NoClientCert
		return cfg, nil
	}
	if cfg.ClientCAs, err = loadPool(clientCAFile, "client CA"); err != nil {
		return nil, err
	}
	return cfg, nil
}

// loadPool reads a PEM bundle of CA certificates.
func loadPool(file, what string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: %s holds no PEM certificate", what, file)
	}
	return pool, nil
}

// PluginClientTLS returns the TLS configuration nrid dials TCP plugin
// endpoints with: TLS 1.3, nrid's certificate and key (plugins require a
// client certificate, so it must allow client authentication), and the CA
// bundle in caFile as the roots of the plugins' certificates (the system's
// roots when caFile is empty).
func PluginClientTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("client certificate for plugins: %w", err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
	if caFile == "" {
		return cfg, nil
	}
	if cfg.RootCAs, err = loadPool(caFile, "plugin CA"); err != nil {
		return nil, err
	}
	return cfg, nil
}

// LogHandshakeFailures wraps a server's transport credentials so that every
// refused handshake (no client certificate, an unknown CA, not TLS at all)
// is logged with the peer's address: such clients never reach the
// interceptors. Connections closed before a handshake (port probes) are
// logged at DEBUG, the rest at WARN.
func LogHandshakeFailures(c credentials.TransportCredentials, log *slog.Logger) credentials.TransportCredentials {
	return &loggingCreds{TransportCredentials: c, log: log}
}

type loggingCreds struct {
	credentials.TransportCredentials
	log *slog.Logger
}

// ServerHandshake implements credentials.TransportCredentials.
func (c *loggingCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		lvl := slog.LevelWarn
		if errors.Is(err, io.EOF) {
			lvl = slog.LevelDebug
		}
		c.log.Log(context.Background(), lvl, "TLS handshake refused", "peer", conn.RemoteAddr().String(), "reason", err.Error())
	}
	return out, info, err
}

// Clone implements credentials.TransportCredentials.
func (c *loggingCreds) Clone() credentials.TransportCredentials {
	return &loggingCreds{TransportCredentials: c.TransportCredentials.Clone(), log: c.log}
}
