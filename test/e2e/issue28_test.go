//go:build e2e

package e2e

import (
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// e2eRejectReason is the reason e2e-grpc-plugin -reject gives.
const e2eRejectReason = "e2e: containers named so are not allowed"

// TestValidationRejectionShapeThroughContainerd (issue 28 item 7): a gRPC
// validator behind the bridge that registers after the bridge attached to
// containerd, and the same validator known when containerd configures the
// bridge (nrid restarted with server.state_dir: the restart gate attaches
// once the plugin is back), give the CRI client the same error: the classic
// runtime's validation rejection naming the bridge and quoting nri-grpc's
// message, which names the validator — CRI code Unknown, not the bridge's
// CreateContainer status wrapped (FailedPrecondition).
func TestValidationRejectionShapeThroughContainerd(t *testing.T) {
	nridOnly(t, "the shape of a rejection relayed by the bridge (validator 00-nri-grpc); with the drop-in the rejection is containerd's own: TestDropInClassicSpecsIdentical compares it with stock containerd's")
	e := NewEnv(t, EnvOptions{NridStateDir: true})
	pod := e.RunPod("p1")
	// Before any validator: accepted.
	e.Create(pod, "c0")

	// Registering after the bridge attached.
	v := e.StartGRPCPlugin("90", "v", "-reject", "bad")
	late := rejection(t, e, pod, "bad-late")

	// Known at Configure: nrid restarted, attached again only once 90-v,
	// recorded in its state directory, is back.
	e.Nrid.Stop(t)
	e.Restart(e.Nrid)
	e.WaitNridServing()
	e.WaitPluginReady(v.Full, v.Proc)
	known := rejection(t, e, pod, "bad-known")

	want := `validator "00-nri-grpc" rejected container adjustment, reason: validator "90-v" rejected container adjustment, reason: ` + e2eRejectReason
	for _, r := range []struct {
		what string
		err  error
	}{{"registered after the bridge attached", late}, {"known at Configure", known}} {
		st := status.Convert(r.err)
		t.Logf("validator %s: CRI code %v: %s", r.what, st.Code(), st.Message())
		if st.Code() != codes.Unknown || !strings.HasSuffix(st.Message(), want) || strings.Contains(st.Message(), "rpc error") {
			t.Errorf("validator %s: CRI error %v: %q, want code Unknown ending in %q (no nested status)", r.what, st.Code(), st.Message(), want)
		}
	}
	if a, b := shape(status.Convert(late).Message()), shape(status.Convert(known).Message()); a != b {
		t.Errorf("the two rejections differ beyond the container's name and ids:\n %s\n %s", a, b)
	}
	// Accepted containers still are.
	e.Create(pod, "c1")
}

// rejection creates container name in pod and returns the error, failing
// the test if the creation succeeded.
func rejection(t *testing.T, e *Env, pod *Pod, name string) error {
	t.Helper()
	if _, err := e.TryCreate(pod, name); err != nil {
		return err
	}
	t.Fatalf("container %s was created; the validator should have rejected it", name)
	return nil
}

var idPattern = regexp.MustCompile(`[0-9a-f]{64}`)

// shape is a CRI error message without what differs between two creations
// of the same kind: container ids and the two names tried.
func shape(msg string) string {
	msg = idPattern.ReplaceAllString(msg, "<id>")
	return strings.NewReplacer("bad-late", "<name>", "bad-known", "<name>").Replace(msg)
}
