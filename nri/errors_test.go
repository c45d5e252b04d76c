package nri_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

// viaProto sends err's status through its wire form: the google.rpc.Status
// a gRPC server puts in the grpc-status-details-bin trailer.
func viaProto(t *testing.T, err error) error {
	t.Helper()
	b, merr := proto.Marshal(status.Convert(err).Proto())
	if merr != nil {
		t.Fatal(merr)
	}
	var sp spb.Status
	if uerr := proto.Unmarshal(b, &sp); uerr != nil {
		t.Fatal(uerr)
	}
	return status.FromProto(&sp).Err()
}

// viaGRPC returns the error a gRPC client gets from a server whose handler
// returns err.
func viaGRPC(t *testing.T, err error) error {
	t.Helper()
	lis := bufconn.Listen(1 << 16)
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error { return err }))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	cc, cerr := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if cerr != nil {
		t.Fatal(cerr)
	}
	t.Cleanup(func() { _ = cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := cc.Invoke(ctx, nriv1beta1.AdaptationService_CreateContainer_FullMethodName, &emptypb.Empty{}, &emptypb.Empty{})
	if got == nil {
		t.Fatal("the call succeeded")
	}
	return got
}

func TestDispatchFailureRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code    codes.Code
		outcome nriv1beta1.DispatchOutcome
		plugins []string
	}{
		{codes.PermissionDenied, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_VETOED, []string{"10-gpu"}},
		{codes.FailedPrecondition, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_CONFLICT, []string{"10-a", "20-b"}},
		{codes.FailedPrecondition, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED, []string{"90-validator"}},
		{codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE, []string{"10-x", "20-y", "30-z"}},
		{codes.Internal, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_ERROR, nil},
	} {
		orig := nri.DispatchError(tc.code, tc.outcome, tc.plugins, "plugins said no")
		for _, path := range []struct {
			name string
			err  error
		}{
			{"in-process", orig},
			{"wrapped", fmt.Errorf("bridge: %w", orig)},
			{"proto-encoded", viaProto(t, orig)},
			{"over gRPC", viaGRPC(t, orig)},
		} {
			what := tc.outcome.String() + " " + path.name
			if got := nri.OutcomeOf(path.err); got != tc.outcome {
				t.Errorf("%s: OutcomeOf = %v, want %v", what, got, tc.outcome)
			}
			if got := nri.PluginsOf(path.err); !slices.Equal(got, tc.plugins) {
				t.Errorf("%s: PluginsOf = %q, want %q", what, got, tc.plugins)
			}
			if st := status.Convert(path.err); st.Code() != tc.code {
				t.Errorf("%s: code %v, want %v", what, st.Code(), tc.code)
			}
		}
	}
}

// TestDispatchErrorWireFormat pins the detail docs/PROTOCOL.md promises to
// runtimes in other languages.
func TestDispatchErrorWireFormat(t *testing.T) {
	t.Parallel()
	err := nri.DispatchError(codes.FailedPrecondition, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_CONFLICT, []string{"10-a", "20-b"}, "conflict")
	st := status.Convert(err)
	if st.Message() != "conflict" || len(st.Details()) != 1 {
		t.Fatalf("status = %v, details %v", st, st.Details())
	}
	info, ok := st.Details()[0].(*errdetails.ErrorInfo)
	if !ok {
		t.Fatalf("detail %T, want ErrorInfo", st.Details()[0])
	}
	if info.GetDomain() != "nri.v1beta1" || info.GetReason() != "DISPATCH_OUTCOME_CONFLICT" || info.GetMetadata()["plugins"] != "10-a,20-b" {
		t.Errorf("ErrorInfo = %v", info)
	}
}

func TestOutcomeOfOtherErrors(t *testing.T) {
	t.Parallel()
	withInfo := func(info *errdetails.ErrorInfo) error {
		st, err := status.New(codes.PermissionDenied, "x").WithDetails(info)
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	if got := nri.OutcomeOf(nil); got != nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_OK {
		t.Errorf("OutcomeOf(nil) = %v", got)
	}
	if got := nri.PluginsOf(nil); got != nil {
		t.Errorf("PluginsOf(nil) = %q", got)
	}
	for name, err := range map[string]error{
		"plain error":  errors.New("boom"),
		"context":      context.DeadlineExceeded,
		"bare status":  status.Error(codes.Unavailable, "gone"),
		"other domain": withInfo(&errdetails.ErrorInfo{Domain: "example.com", Reason: "DISPATCH_OUTCOME_VETOED", Metadata: map[string]string{"plugins": "10-x"}}),
		"registration refusal": withInfo(&errdetails.ErrorInfo{Domain: nri.ErrorDomain,
			Reason: nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_NOT_PERMITTED.String()}),
	} {
		if got := nri.OutcomeOf(err); got != nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_ERROR {
			t.Errorf("%s: OutcomeOf = %v, want DISPATCH_OUTCOME_ERROR", name, got)
		}
		if got := nri.PluginsOf(err); got != nil {
			t.Errorf("%s: PluginsOf = %q, want nil", name, got)
		}
	}
}
