package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

func TestRuntimeValidatesBridge(t *testing.T) {
	for v, want := range map[string]bool{
		"":                              false, // v0.10 and v0.11 announce no version; older ones refuse the event
		"v0.9.0":                        false,
		"v0.10.0":                       false, // never announced, but validates without the closed-plugin guarantee being checked
		"v0.11.0":                       false,
		"v0.12.0":                       true,
		"v0.12.1":                       true,
		"v0.12.2":                       true,
		"v0.12.3":                       true,
		"v0.12.3+incompatible":          true,
		"v0.12.2-31-g8ec8b28":           true,  // git-described, between v0.12.2 and v0.12.3
		"v0.12.4-0.20261001000000-abcd": false, // suffixed v0.12.4: not told from later commits
		"v0.12.4":                       true,
		"v0.12.4-3-gabcdef0":            false, // after v0.12.4: may carry v0.12.5's change
		"v0.12.5-0.20261022000000-abcd": false,
		"v0.12.5":                       false, // skips closed validators
		"v0.12.10":                      false,
		"v0.13.0":                       false,
		"v1.0.0":                        false,
		"0.12.3":                        false,
		"0.0.0-unknown":                 false,
		"(devel)":                       false,
		"v0.12":                         false,
		"v0.012.3":                      false,
		"v0.12.-3":                      false,
		"v0.12.3.4":                     false,
		"unknown":                       false,
	} {
		if got := runtimeValidatesBridge(v); got != want {
			t.Errorf("runtimeValidatesBridge(%q) = %v, want %v", v, got, want)
		}
	}
}

func rejection(msg string) error {
	st, err := status.New(codes.FailedPrecondition, msg).WithDetails(&errdetails.ErrorInfo{
		Reason: nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED.String(), Domain: nri.ErrorDomain})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// TestDeferredRejectionOnlyForValidators: only a validator's rejection
// (the server's structured outcome, not its words) is deferred, and only
// while relaying.
func TestDeferredRejectionOnlyForValidators(t *testing.T) {
	var v verdicts
	rejected := rejection("validator \"20-v\" rejected container adjustment, reason: no")
	if v.deferRejection("c", rejected) {
		t.Fatal("deferred while not relaying")
	}
	v.setRelay(true)
	conflict, _ := status.New(codes.FailedPrecondition, "validator \"x\" rejected container adjustment").WithDetails(&errdetails.ErrorInfo{
		Reason: nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_CONFLICT.String(), Domain: nri.ErrorDomain})
	for _, err := range []error{
		conflict.Err(),
		status.Error(codes.FailedPrecondition, "validator \"x\" rejected container adjustment, reason: words alone"),
		fmt.Errorf("plain"),
	} {
		if v.deferRejection("c", err) {
			t.Errorf("deferred %v", err)
		}
	}
	if !v.deferRejection("c", rejected) {
		t.Fatal("a validator's rejection was not deferred")
	}
	vd, ok := v.take("c")
	if !ok || !vd.reject || vd.reason != status.Convert(rejected).Message() {
		t.Fatalf("verdict %+v %v", vd, ok)
	}
	if _, ok := v.take("c"); ok {
		t.Fatal("a verdict was given twice")
	}
	long := strings.Repeat("é", maxReasonLen)
	if !v.deferRejection("long", rejection(long)) {
		t.Fatal("not deferred")
	}
	if vd, _ := v.take("long"); len(vd.reason) > maxReasonLen+64 || !strings.Contains(vd.reason, "clipped") {
		t.Fatalf("reason of %d bytes: %.80s…", len(vd.reason), vd.reason)
	}
}

// TestVerdictsBounded: at most maxVerdicts are remembered, the oldest
// forgotten first.
func TestVerdictsBounded(t *testing.T) {
	var v verdicts
	for i := range 3 * maxVerdicts {
		v.accepted(fmt.Sprint(i))
	}
	if v.len() != maxVerdicts {
		t.Fatalf("%d verdicts remembered", v.len())
	}
	if _, ok := v.take("0"); ok {
		t.Fatal("the oldest verdict was kept")
	}
	last := fmt.Sprint(3*maxVerdicts - 1)
	if _, ok := v.take(last); !ok {
		t.Fatal("the newest verdict was forgotten")
	}
	v.accepted("new")
	v.accepted("newer")
	if n := v.len(); n > maxVerdicts {
		t.Fatalf("%d verdicts remembered", n)
	}
	for _, id := range []string{"new", "newer", fmt.Sprint(3*maxVerdicts - 2)} {
		if _, ok := v.take(id); !ok {
			t.Fatalf("verdict %s was forgotten", id)
		}
	}
}

func validateRequest(t *testing.T, id string) []byte {
	t.Helper()
	req := &v1alpha1.ValidateContainerAdjustmentRequest{
		Pod:       &v1alpha1.PodSandbox{Id: "pod", Name: "p"},
		Container: &v1alpha1.Container{Id: id, PodSandboxId: "pod", Name: "c"},
		Adjust:    &v1alpha1.ContainerAdjustment{Annotations: map[string]string{"a": "b"}},
		Plugins:   []*v1alpha1.PluginInstance{{Name: "nri-grpc", Index: "00"}},
	}
	b, err := req.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestValidateAnswersTheVerdict: the runtime's validation gets the verdict
// of its container: accepted, rejected with nri-grpc's message, and
// rejected when the bridge has none (a handover, a forgotten verdict).
func TestValidateAnswersTheVerdict(t *testing.T) {
	h := newClassicHandlers(&RuntimeSide{log: slog.New(slog.DiscardHandler)})
	h.verdicts.accepted("ok")
	h.verdicts.setRelay(true)
	h.verdicts.deferRejection("bad", rejection(`validator "20-v" rejected container adjustment, reason: no`))
	for id, want := range map[string]string{
		"ok":      "",
		"bad":     `validator "20-v" rejected container adjustment, reason: no`,
		"unknown": `nri-grpc has no verdict on container "unknown"`,
	} {
		out, err := h.serve(context.Background(), "ValidateContainerAdjustment", validateRequest(t, id))
		if err != nil {
			t.Fatal(err)
		}
		rsp := &v1alpha1.ValidateContainerAdjustmentResponse{}
		if err := rsp.UnmarshalVT(out); err != nil {
			t.Fatal(err)
		}
		if rsp.GetReject() != (want != "") || !strings.HasPrefix(rsp.GetReason(), want) {
			t.Errorf("%s: reject %v reason %q, want %q", id, rsp.GetReject(), rsp.GetReason(), want)
		}
	}
	if h.verdicts.len() != 0 {
		t.Fatalf("%d verdicts left", h.verdicts.len())
	}
	if _, err := h.serve(context.Background(), "ValidateContainerAdjustment", []byte{0xff}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("undecodable request: %v", err)
	}
}

// TestValidatedContainerID reads the id as decoding would: the last id of
// merged container occurrences.
func TestValidatedContainerID(t *testing.T) {
	b := validateRequest(t, "first")
	second, _ := (&v1alpha1.ValidateContainerAdjustmentRequest{Container: &v1alpha1.Container{Name: "no id"}}).MarshalVT()
	third, _ := (&v1alpha1.ValidateContainerAdjustmentRequest{Container: &v1alpha1.Container{Id: "third"}}).MarshalVT()
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{b, "first"},
		{append(append([]byte{}, b...), second...), "first"},
		{append(append(append([]byte{}, b...), second...), third...), "third"},
		{nil, ""},
	} {
		id, err := validatedContainerID(tc.b)
		if err != nil || id != tc.want {
			t.Errorf("id %q, %v; want %q", id, err, tc.want)
		}
		full := &v1alpha1.ValidateContainerAdjustmentRequest{}
		if err := full.UnmarshalVT(tc.b); err != nil || full.GetContainer().GetId() != id {
			t.Errorf("decoding says %q (%v), the scan %q", full.GetContainer().GetId(), err, id)
		}
	}
}

// TestVerdictsHandedOver: the subscription and the verdicts not asked for
// yet go to the next owner of the connection, in order.
func TestVerdictsHandedOver(t *testing.T) {
	var old verdicts
	old.setRelay(true)
	for i := range maxVerdicts + 3 {
		old.accepted(fmt.Sprint(i))
	}
	old.deferRejection("bad", rejection("no"))
	if _, ok := old.take("5"); !ok {
		t.Fatal("verdict 5 missing")
	}
	ho := old.handover()
	if !ho.Relay || len(ho.Verdicts) != maxVerdicts-1 || ho.Verdicts[len(ho.Verdicts)-1].Container != "bad" {
		t.Fatalf("handover: relay %v, %d verdicts, last %+v", ho.Relay, len(ho.Verdicts), ho.Verdicts[len(ho.Verdicts)-1])
	}
	var next verdicts
	next.adopt(ho)
	if !next.relaying() || next.len() != maxVerdicts-1 {
		t.Fatalf("adopted: relay %v, %d verdicts", next.relaying(), next.len())
	}
	if vd, ok := next.take("bad"); !ok || !vd.reject || vd.reason != "no" {
		t.Fatalf("adopted rejection %+v %v", vd, ok)
	}
	if _, ok := next.take("4"); !ok {
		t.Fatal("adopted acceptance missing")
	}
	// The oldest adopted verdict is forgotten first.
	next.accepted("x")
	next.accepted("y")
	if _, ok := next.take(ho.Verdicts[0].Container); ok {
		t.Fatal("the oldest adopted verdict was kept")
	}
}
