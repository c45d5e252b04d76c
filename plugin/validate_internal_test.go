package plugin

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// TestValidatorErrorAfterDeadlineIsNoRejection: a validator's error is a
// rejection, unless the call's context ended first: then the answer is the
// context's status, so that a timing-out validator is a timeout to the
// server even when this answer reaches it before its own deadline fires.
func TestValidatorErrorAfterDeadlineIsNoRejection(t *testing.T) {
	p := &Plugin{full: "20-v", log: slog.New(slog.DiscardHandler)}
	p.h.validate = func(ctx context.Context, _ *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("not here")
	}
	s := &service{p: p}
	rsp, err := s.ValidateContainerAdjustment(context.Background(), &nriv1beta1.ValidateContainerAdjustmentRequest{})
	if err != nil || !rsp.GetReject() || rsp.GetReason() != "not here" {
		t.Fatalf("a validator's error: %v, %v; want a rejection", rsp, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ctx.Done()
	rsp, err = s.ValidateContainerAdjustment(ctx, &nriv1beta1.ValidateContainerAdjustmentRequest{})
	if status.Code(err) != codes.DeadlineExceeded || rsp.GetReject() {
		t.Fatalf("after the deadline: %v, %v; want DEADLINE_EXCEEDED", rsp, err)
	}
}
