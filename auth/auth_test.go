package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/nri-grpc/nri-grpc/interceptor"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/server"
)

func TestParseTokens(t *testing.T) {
	tok, err := ParseTokens([]byte("# ci tokens\n\nci  0123456789abcdef0123\n  deploy fedcba9876543210xyz  \n"), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	if tok.Len() != 2 {
		t.Fatalf("%d tokens", tok.Len())
	}
	for in, want := range map[string]string{"0123456789abcdef0123": "ci", "fedcba9876543210xyz": "deploy"} {
		if name, ok := tok.Lookup(in); !ok || name != want {
			t.Errorf("Lookup(%q) = %q, %v", in, name, ok)
		}
	}
	for _, bad := range []string{"", "0123456789abcdef012", "0123456789abcdef01234", "ci"} {
		if name, ok := tok.Lookup(bad); ok {
			t.Errorf("Lookup(%q) = %q", bad, name)
		}
	}
	var none *Tokens
	if _, ok := none.Lookup("0123456789abcdef0123"); ok {
		t.Error("nil tokens accepted a token")
	}
	for doc, want := range map[string]string{
		"ci\n":                                     "tokens:1: want",
		"ok 0123456789abcdef\nci short\n":          "tokens:2: the token of \"ci\" is shorter",
		"bad/name 0123456789abcdef\n":              "tokens:1: token name",
		"a 0123456789abcdef\na 1123456789abcdef\n": "tokens:2: token name \"a\" is already used on line 1",
		"a 0123456789abcdef\nb 0123456789abcdef\n": "tokens:2: the token of \"b\" is the same as the one on line 1",
		"a 0123456789abcdef extra\n":               "tokens:1: want",
	} {
		if _, err := ParseTokens([]byte(doc), "tokens"); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", doc, err, want)
		}
	}
}

func TestLoadTokensRefusesWorldReadable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	if err := os.WriteFile(path, []byte("ci 0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTokens(path); err == nil || !strings.Contains(err.Error(), "others") {
		t.Fatalf("got %v", err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if tok, err := LoadTokens(path); err != nil || tok.Len() != 1 {
		t.Fatalf("got %v, %v", tok, err)
	}
}

// tlsCtx builds the context of a call over TLS with a verified client
// certificate whose CN is cn ("" for no certificate) and the given
// authorization header ("" for none).
func tlsCtx(cn, authz string) context.Context {
	var state tls.ConnectionState
	if cn != "" {
		cert := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
		state.VerifiedChains = [][]*x509.Certificate{{cert}}
	}
	ctx := peer.NewContext(context.Background(), &peer.Peer{
		Addr:     &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1},
		AuthInfo: credentials.TLSInfo{State: state},
	})
	if authz != "" {
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", authz))
	}
	return ctx
}

func TestIdentify(t *testing.T) {
	tokens, err := ParseTokens([]byte("ci 0123456789abcdef\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	a := New(WithTokens(tokens), WithKnown(func(id string) bool { return id == "cert:ops" }))
	for _, c := range []struct {
		ctx  context.Context
		want string
		code codes.Code
	}{
		{tlsCtx("ops", ""), "cert:ops", codes.OK},
		{tlsCtx("stranger", ""), "cert:stranger", codes.OK}, // authenticated; the policy refuses it
		{tlsCtx("stranger", "Bearer 0123456789abcdef"), "token:ci", codes.OK},
		{tlsCtx("ops", "Bearer 0123456789abcdef"), "cert:ops", codes.OK}, // a known certificate wins
		{tlsCtx("", "bearer 0123456789abcdef"), "token:ci", codes.OK},
		{tlsCtx("", ""), "", codes.Unauthenticated},
		{tlsCtx("ops", "Bearer wrong-token-wrong-token"), "", codes.Unauthenticated},
		{tlsCtx("", "Basic abc"), "", codes.Unauthenticated},
		{peer.NewContext(context.Background(), &peer.Peer{AuthInfo: peercred.Info{UID: 1000, PID: 7}}), "uid:1000", codes.OK},
		{peer.NewContext(context.Background(), &peer.Peer{}), "", codes.Unauthenticated},
		{context.Background(), "", codes.Unauthenticated},
	} {
		id, err := a.Identify(c.ctx)
		if status.Code(err) != c.code || id.Name != c.want {
			t.Errorf("got %q, %v; want %q, %v", id.Name, err, c.want, c.code)
		}
	}
	// Unix identities carry the uid for the server's endpoint checks.
	id, _ := a.Identify(peer.NewContext(context.Background(), &peer.Peer{AuthInfo: peercred.Info{UID: 1000}}))
	if !id.Unix || id.UID != 1000 {
		t.Errorf("%+v", id)
	}
	ctx, err := a.Authenticate(tlsCtx("ops", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := server.IdentityFromContext(ctx); !ok || got.Name != "cert:ops" {
		t.Errorf("the identity is not attached: %+v", got)
	}
	if got := a.Caller(ctx); got != "cert:ops" {
		t.Errorf("Caller = %q", got)
	}
	if _, err := a.Authenticate(tlsCtx("", "")); status.Code(err) != codes.Unauthenticated {
		t.Errorf("no certificate, no token: %v", err)
	}
}

// The Authenticator is what the interceptor chain takes.
var _ interceptor.Authenticator = (*Authenticator)(nil)

func TestAccess(t *testing.T) {
	var got []string
	check := Access(func(id server.Identity, method string) error {
		got = append(got, id.Name+" "+method)
		if id.Name != "cert:ops" {
			return status.Error(codes.PermissionDenied, "no")
		}
		return nil
	})
	ops := server.ContextWithIdentity(context.Background(), server.Identity{Name: "cert:ops"})
	other := server.ContextWithIdentity(context.Background(), server.Identity{Name: "cert:other"})
	if err := check(ops, "/s/M"); err != nil {
		t.Error(err)
	}
	if err := check(other, "/s/M"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the check's refusal: %v", err)
	}
	if err := check(context.Background(), "/s/M"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("no identity: %v", err)
	}
	if strings.Join(got, ",") != "cert:ops /s/M,cert:other /s/M" {
		t.Errorf("the check saw %q", got)
	}
}
