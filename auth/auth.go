// Package auth establishes who calls an NRI server (nrid, or a program
// embedding package server), for the authentication step of the
// interceptor chain (package interceptor). Identities:
//
//   - "uid:N" on a unix socket, from the peer credentials (SO_PEERCRED)
//     read during the handshake (peercred.Credentials).
//   - "cert:CN" on TCP, which is always TLS: the subject common name of the
//     verified client certificate (mTLS).
//   - "token:NAME" for a bearer token of the Tokens (WithTokens), on TCP: a
//     valid token upgrades a client whose certificate the policy does not
//     know (WithKnown), or a client without a certificate (when the TLS
//     configuration lets one connect).
//   - "launch:NN-name" is not established here: the server binds the
//     registration of a plugin it launched to the launch slot whose socket
//     the plugin registers (server.Launch).
//
// An Authenticator attaches the identity to the call's context with
// server.ContextWithIdentity, where the server and the policy read it. It
// logs nothing: the interceptor chain logs refusals.
package auth

import (
	"context"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/server"
)

// Authenticator turns a call's transport credentials (and bearer token)
// into a server.Identity. It implements interceptor.Authenticator and is
// safe for concurrent use.
type Authenticator struct {
	tokens *Tokens
	known  func(identity string) bool
}

// Option configures an Authenticator.
type Option func(*Authenticator)

// WithTokens sets the bearer tokens accepted on TCP. The default is none.
func WithTokens(t *Tokens) Option {
	return func(a *Authenticator) { a.tokens = t }
}

// WithKnown tells which identities the policy grants anything
// (policy.Policy.Known): a valid token wins over a certificate identity
// that is not known. Without it, every certificate identity counts as
// known, so tokens only serve clients without a certificate.
func WithKnown(known func(identity string) bool) Option {
	return func(a *Authenticator) { a.known = known }
}

// New returns an Authenticator.
func New(opts ...Option) *Authenticator {
	a := &Authenticator{}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Authenticate attaches the caller's identity to ctx, or refuses the call
// with UNAUTHENTICATED.
func (a *Authenticator) Authenticate(ctx context.Context) (context.Context, error) {
	id, err := a.Identify(ctx)
	if err != nil {
		return nil, err
	}
	return server.ContextWithIdentity(ctx, id), nil
}

// Caller returns the name of the identity Authenticate attached ("" if
// none).
func (a *Authenticator) Caller(ctx context.Context) string {
	id, _ := server.IdentityFromContext(ctx)
	return id.Name
}

// Access adapts a per-method check of server identities (such as
// policy.Policy.AuthorizeCall) to interceptor.WithAccess. A call without
// an identity is refused with UNAUTHENTICATED.
func Access(check func(id server.Identity, fullMethod string) error) func(ctx context.Context, fullMethod string) error {
	return func(ctx context.Context, fullMethod string) error {
		id, ok := server.IdentityFromContext(ctx)
		if !ok {
			return status.Error(codes.Unauthenticated, "the caller is not authenticated")
		}
		return check(id, fullMethod)
	}
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
