package grpcreg

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/codec"
)

// TestLongReasonsAreCut: however long the codec's error (one quoting the
// whole input, say), the answer quotes at most MaxReason bytes of it, cut
// between characters.
func TestLongReasonsAreCut(t *testing.T) {
	for _, reason := range []string{strings.Repeat("x", 1<<20), strings.Repeat("é", 1<<19), strings.Repeat("x", MaxReason+1)} {
		err := receive("/s/M", &nriv1beta1.GetStateRequest{}, func(m any) error {
			m.(*codec.Capture).Err = errors.New(reason)
			return nil
		})
		st := status.Convert(err)
		msg, ok := strings.CutPrefix(st.Message(), "malformed /s/M request: ")
		if st.Code() != codes.InvalidArgument || !ok {
			t.Fatalf("error %.200v, want INVALID_ARGUMENT malformed /s/M request", err)
		}
		if len(msg) > MaxReason || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "…") {
			t.Fatalf("reason of %d bytes cut to %d bytes: %q", len(reason), len(msg), msg)
		}
	}
	if got := truncate("short", MaxReason); got != "short" {
		t.Fatalf("a short reason became %q", got)
	}
}

// TestReceiveErrorsPassThrough: an error of the receive itself is returned
// unchanged, and a message that is not a protobuf message is received
// as it is.
func TestReceiveErrorsPassThrough(t *testing.T) {
	want := status.Error(codes.Canceled, "gone")
	if err := receive("/s/M", &nriv1beta1.GetStateRequest{}, func(any) error { return want }); err != want {
		t.Fatalf("error %v, want %v", err, want)
	}
	var got any
	raw := &struct{}{}
	if err := receive("/s/M", raw, func(m any) error { got = m; return nil }); err != nil || got != raw {
		t.Fatalf("a non-protobuf message was received as %T (%v)", got, err)
	}
}
