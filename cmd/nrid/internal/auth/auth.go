// Package auth authenticates nrid's callers and assembles nrid's gRPC
// interceptor chain.
//
// Identities:
//   - "uid:N" on the unix socket, from the peer credentials (SO_PEERCRED)
//     read during the handshake (peercred.Credentials).
//   - "cert:CN" on TCP, which is always TLS: the subject common name of the
//     verified client certificate (mTLS).
//   - "token:NAME" for a bearer token from the tokens file, on TCP: a valid
//     token upgrades a client whose certificate the policy does not know,
//     or (with client_auth = "optional") a client without a certificate.
//   - "launch:NN-name" for a plugin nrid launched: the server binds the
//     registration to the launch slot whose socket the plugin registers
//     (server.Launch); LaunchIdentity names it and the policy only accepts
//     it from processes of an owner uid.
//
// The authenticated identity is attached to the call's context with
// server.ContextWithIdentity, where the server and the policy read it.
package auth

import (
	"context"
	"log/slog"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/server"
)

// LaunchIdentity is the identity of the pre-launched plugin full ("NN-name").
func LaunchIdentity(full string) string { return "launch:" + full }

// Authenticator turns a call's transport credentials (and bearer token)
// into a server.Identity. It is safe for concurrent use.
type Authenticator struct {
	tokens *Tokens
	known  func(identity string) bool
	log    *slog.Logger
}

// Config configures an Authenticator.
type Config struct {
	// Tokens are the bearer tokens accepted on TCP (nil: none).
	Tokens *Tokens
	// Known reports whether the policy grants an identity anything (nil:
	// every certificate identity counts as known, so tokens only serve
	// clients without a certificate).
	Known func(identity string) bool
	// Log receives one line per refused authentication.
	Log *slog.Logger
}

// New returns an Authenticator.
func New(c Config) *Authenticator {
	a := &Authenticator{tokens: c.Tokens, known: c.Known, log: c.Log}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a
}

// Authenticate is the auth.AuthFunc of the interceptor chain: it attaches
// the caller's identity, or refuses the call with UNAUTHENTICATED.
func (a *Authenticator) Authenticate(ctx context.Context) (context.Context, error) {
	id, err := a.Identify(ctx)
	if err != nil {
		method, _ := grpc.Method(ctx)
		addr := ""
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			addr = p.Addr.String()
		}
		a.log.Warn("authentication refused", "method", method, "peer", addr, "reason", status.Convert(err).Message())
		return nil, err
	}
	return server.ContextWithIdentity(ctx, id), nil
}

// Identify returns the identity of the caller of a server-side call.
func (a *Authenticator) Identify(ctx context.Context) (server.Identity, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return server.Identity{}, status.Error(codes.Unauthenticated, "no peer information")
	}
	switch info := p.AuthInfo.(type) {
	case peercred.Info:
		// Bearer tokens are not consulted on the unix socket: the kernel's
		// word on the uid is stronger than any token.
		return server.Identity{Name: info.String(), UID: info.UID, Unix: true}, nil
	case credentials.TLSInfo:
		return a.identifyTLS(ctx, info)
	case nil:
		return server.Identity{}, status.Error(codes.Unauthenticated, "the connection carries no credentials: use the unix socket or TLS")
	default:
		return server.Identity{}, status.Errorf(codes.Unauthenticated, "unsupported transport credentials %q", info.AuthType())
	}
}

func (a *Authenticator) identifyTLS(ctx context.Context, info credentials.TLSInfo) (server.Identity, error) {
	certID := ""
	if chains := info.State.VerifiedChains; len(chains) > 0 && len(chains[0]) > 0 {
		cn := chains[0][0].Subject.CommonName
		if cn == "" {
			return server.Identity{}, status.Error(codes.Unauthenticated, "the client certificate has no subject common name")
		}
		certID = "cert:" + cn
	}
	tokenID := ""
	tok, present, err := bearer(ctx)
	if err != nil {
		return server.Identity{}, err
	}
	if present {
		name, ok := a.tokens.Lookup(tok)
		if !ok {
			// A wrong token is refused even with a good certificate: bad
			// credentials are never silently ignored.
			return server.Identity{}, status.Error(codes.Unauthenticated, "invalid bearer token")
		}
		tokenID = "token:" + name
	}
	switch {
	case certID != "" && (tokenID == "" || a.known == nil || a.known(certID)):
		return server.Identity{Name: certID}, nil
	case tokenID != "":
		return server.Identity{Name: tokenID}, nil
	}
	return server.Identity{}, status.Error(codes.Unauthenticated, "TCP clients need a verified client certificate or a bearer token")
}

// bearer returns the bearer token of the call's "authorization" metadata.
func bearer(ctx context.Context) (token string, present bool, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	switch len(vals) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", false, status.Error(codes.Unauthenticated, "more than one authorization header")
	}
	scheme, tok, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		return "", false, status.Error(codes.Unauthenticated, `the authorization header must be "Bearer <token>"`)
	}
	return strings.TrimSpace(tok), true, nil
}
