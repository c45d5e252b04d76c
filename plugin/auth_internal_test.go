package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
)

type createOnly struct{}

func (createOnly) CreateContainer(context.Context, *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return nil, nil
}

func withPeer(info credentials.AuthInfo) context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: info})
}

// TestAuthenticate covers the identity rules of incoming calls, TLS
// included.
func TestAuthenticate(t *testing.T) {
	p, err := New(createOnly{}, WithName("x"), WithIndex("10"))
	if err != nil {
		t.Fatal(err)
	}
	verified := credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{}}}}
	check := func(ctx context.Context, want codes.Code) {
		t.Helper()
		if got := status.Code(p.authenticate(ctx)); got != want {
			t.Errorf("authenticate: %v, want %v", got, want)
		}
	}
	check(withPeer(peercred.Info{UID: 0}), codes.OK)
	check(withPeer(peercred.Info{UID: 1000}), codes.PermissionDenied) // server uid unknown yet
	p.serverUID.Store(1000)
	check(withPeer(peercred.Info{UID: 1000}), codes.OK)
	check(withPeer(peercred.Info{UID: 1001}), codes.PermissionDenied)
	check(withPeer(verified), codes.OK)
	check(withPeer(credentials.TLSInfo{}), codes.Unauthenticated)
	check(context.Background(), codes.Unauthenticated)
	p.opts.debugAccess = true
	check(withPeer(peercred.Info{UID: 1001}), codes.OK)
}

func TestToStatus(t *testing.T) {
	for err, want := range map[error]codes.Code{
		context.DeadlineExceeded:                    codes.DeadlineExceeded,
		context.Canceled:                            codes.Canceled,
		status.Error(codes.NotFound, "x"):           codes.NotFound,
		errorsJoin(status.Error(codes.Aborted, "")): codes.Aborted,
		errString("plain"):                          codes.FailedPrecondition,
	} {
		if got := status.Code(toStatus(err)); got != want {
			t.Errorf("toStatus(%v) = %v, want %v", err, got, want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

type wrapped struct{ err error }

func (w wrapped) Error() string { return "wrapped: " + w.err.Error() }
func (w wrapped) Unwrap() error { return w.err }

func errorsJoin(err error) error { return wrapped{err} }

func TestRetryable(t *testing.T) {
	for err, want := range map[error][2]bool{
		nil:                                       {true, false},
		status.Error(codes.Unavailable, "down"):   {true, false},
		status.Error(codes.Unimplemented, "old"):  {false, false},
		status.Error(codes.PermissionDenied, "x"): {false, false},
	} {
		retry, long := retryable(err)
		if [2]bool{retry, long} != want {
			t.Errorf("retryable(%v) = %v %v, want %v", err, retry, long, want)
		}
	}
	st, err := status.New(codes.PermissionDenied, "taken").WithDetails(&errdetails.ErrorInfo{
		Domain: errorDomain, Reason: nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_IDENTITY_MISMATCH.String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if retry, long := retryable(st.Err()); !retry || !long {
		t.Errorf("IDENTITY_MISMATCH: retry %v long %v, want both", retry, long)
	}
	b := backoff{min: 100, max: 1000}
	for range 10 {
		if d := b.next(); d < 50 || d > 1000 {
			t.Errorf("backoff delay %d out of [50, 1000]", d)
		}
	}
	b.reset()
	if d := b.next(); d > 100 {
		t.Errorf("after reset: %d", d)
	}
}
