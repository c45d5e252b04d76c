package bridge

import (
	"strconv"
	"strings"
	"sync"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server"
)

// Validation rejections behind a classic runtime (docs/bridge.md,
// "Validation rejections").
//
// When one of nri-grpc's validators rejects a container, the bridge could
// fail the runtime's CreateContainer with the server's status; the CRI
// client then sees that status wrapped by the runtime twice
// ("rpc error: code = FailedPrecondition desc = rpc error: …"). A classic
// validator's rejection is produced inside the runtime instead, by its
// ValidateContainerAdjustment, and reaches the CRI client as one plain
// error: `validator "X" rejected container adjustment, reason: …`. To give
// nri-grpc's rejections that shape, the bridge subscribes to
// ValidateContainerAdjustment, answers the CreateContainer of a rejected
// container with nothing at all (no adjustment, no update, no eviction) and
// rejects it when the runtime validates it.
//
// That is only safe where the runtime is certain to call the bridge's
// ValidateContainerAdjustment after its CreateContainer: an empty answer
// must never let a rejected container be created. runtimeValidatesBridge
// decides it from the NRI version the runtime announces at Configure; on
// every other runtime the rejection stays a CreateContainer error.

// validateEvent is the classic mask bit of ValidateContainerAdjustment.
const validateEvent = v1alpha1.EventMask(1) << (v1alpha1.Event_VALIDATE_CONTAINER_ADJUSTMENT - 1)

// runtimeValidatesBridge reports whether a classic runtime of NRI version
// nriVersion (ConfigureRequest.NRI_version) calls every subscribed
// validator after a CreateContainer, the bridge included even when its
// connection closed meanwhile, so that the bridge may defer a rejection to
// ValidateContainerAdjustment. Only pkg/adaptation v0.12.0 to v0.12.4 do:
//
//   - before v0.10.0 there is no validation, and a subscription to it is
//     refused ("invalid plugin events"): the bridge would not be attached at
//     all;
//   - v0.10.0 and v0.11.x validate, but announce no NRI version (it came
//     with v0.12.0), so they cannot be told from older releases;
//   - v0.12.0 to v0.12.4 call every validator of their list, a closed one
//     too (its call fails, and so does the creation): the list is fixed under
//     the runtime's lock for the whole CreateContainer, and CreateContainer
//     always ends in validation when the list is not empty;
//   - v0.12.5 skips validators whose connection closed. Had nrid died (or
//     had its connection been cut) between its empty answer to
//     CreateContainer and the runtime's validation — which comes after every
//     later plugin's CreateContainer, seconds later at worst — the rejected
//     container would be created. Later releases are assumed to keep that.
//
// A version that does not parse, with a pre-release or git suffix after
// v0.12.3 (it may contain v0.12.5's change), or outside the range keeps the
// CreateContainer error.
func runtimeValidatesBridge(nriVersion string) bool {
	major, minor, patch, suffix, ok := parseVersion(nriVersion)
	if !ok || major != 0 || minor != 12 {
		return false
	}
	switch {
	case patch <= 3:
		return true
	case patch == 4:
		return suffix == ""
	}
	return false
}

// validationEvents decides at Configure whether the bridge relays
// rejections through the runtime's validation on this connection, and
// returns the events it adds to the subscription: validation when it does.
// It does whenever the runtime is safe for it (runtimeValidatesBridge),
// whether or not nri-grpc validates at that moment. The subscription is
// fixed until the next attach, while validators register and leave at any
// time, and a rejection can come without any (the default validator of a
// pod's required-plugins annotation): deciding by what is registered at
// Configure gave a validator registering after the bridge attached the
// CreateContainer error's shape, and the same validator known at Configure
// (a restart with server.state_dir) the classic one (issue 28). So every
// CreateContainer behind such a runtime is followed by the runtime's
// validation request, which the bridge answers from the verdict it kept,
// without decoding the request or calling the server (docs/bridge.md,
// "Validation rejections", has the cost).
func (h *classicHandlers) validationEvents(runtime, nriVersion string) v1alpha1.EventMask {
	relay := runtimeValidatesBridge(nriVersion) && !h.r.noValidation
	h.verdicts.setRelay(relay)
	h.r.log.Info("classic runtime configured the bridge", "runtime", runtime, "nri_version", untrusted.Quote(nriVersion),
		"rejections_via_runtime_validation", relay)
	if !relay {
		return 0
	}
	return validateEvent
}

// parseVersion parses "vMAJOR.MINOR.PATCH", with anything after PATCH
// (a pre-release, a git-described suffix, build metadata) returned as
// suffix, build metadata ("+…") alone excepted.
func parseVersion(v string) (major, minor, patch int, suffix string, ok bool) {
	rest, found := strings.CutPrefix(v, "v")
	if !found {
		return 0, 0, 0, "", false
	}
	rest, _, _ = strings.Cut(rest, "+")
	core, suffix, _ := strings.Cut(rest, "-")
	if suffix != "" {
		suffix = "-" + suffix
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return 0, 0, 0, "", false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || (len(p) > 1 && p[0] == '0') {
			return 0, 0, 0, "", false
		}
		n[i] = x
	}
	return n[0], n[1], n[2], suffix, true
}

// maxVerdicts bounds the verdicts a connection remembers. A classic runtime
// holds its lock from CreateContainer to the end of validation, so one
// verdict waits at a time; the others are those of creations that failed
// after the bridge answered (a later plugin's error), which are never
// validated and are forgotten oldest first.
const maxVerdicts = 64

// maxReasonLen bounds the reason the bridge gives the runtime.
const maxReasonLen = 2 * server.MaxMessageLen

// verdict is the bridge's answer to the runtime's validation of one
// container.
type verdict struct {
	reject bool
	reason string
}

// verdicts are the bridge's verdicts on the containers whose CreateContainer
// it answered on one connection, until the runtime validates them. The zero
// value is ready: relaying rejections off.
type verdicts struct {
	mu sync.Mutex
	// relay is set when the bridge subscribed to ValidateContainerAdjustment
	// (or learned that a previous owner of the connection did).
	relay bool
	byID  map[string]verdict
	// ring holds the ids of byID in the order they came ("" once taken);
	// next is where the next id goes, evicting the oldest.
	ring [maxVerdicts]string
	next int
}

func (v *verdicts) setRelay(on bool) {
	v.mu.Lock()
	v.relay = on
	v.mu.Unlock()
}

func (v *verdicts) relaying() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.relay
}

// put remembers the verdict on container id, forgetting the oldest one
// when maxVerdicts are remembered.
func (v *verdicts) put(id string, vd verdict) {
	id = strings.Clone(id) // it may alias the runtime's request payload
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byID == nil {
		v.byID = make(map[string]verdict, maxVerdicts)
	}
	if _, ok := v.byID[id]; !ok {
		if old := v.ring[v.next]; old != "" {
			delete(v.byID, old)
		}
		v.ring[v.next] = id
		v.next = (v.next + 1) % maxVerdicts
	}
	v.byID[id] = vd
}

// take returns and forgets the verdict on container id. It also turns
// relaying on: the runtime validates with the bridge, so the bridge (or the
// previous owner of a connection handed over) subscribed.
func (v *verdicts) take(id string) (verdict, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.relay = true
	vd, ok := v.byID[id]
	if !ok {
		return verdict{}, false
	}
	delete(v.byID, id)
	for i, o := range v.ring {
		if o == id {
			v.ring[i] = ""
			break
		}
	}
	return vd, true
}

// len returns how many verdicts are remembered.
func (v *verdicts) len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.byID)
}

// deferRejection decides how the bridge answers the CreateContainer of
// container id that the server failed with err. When relaying is on and err
// is a validator's rejection (DISPATCH_OUTCOME_REJECTED, the server's
// structured outcome), it remembers the rejection and reports true: the
// bridge answers with nothing, and rejects the container at the runtime's
// validation. Otherwise the error is returned to the runtime as it is.
func (v *verdicts) deferRejection(id string, err error) bool {
	if !v.relaying() || nri.OutcomeOf(err) != nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED {
		return false
	}
	reason := status.Convert(err).Message()
	if len(reason) > maxReasonLen {
		reason = untrusted.Cut(reason, maxReasonLen) + "... (clipped, " + strconv.Itoa(len(reason)) + " bytes)"
	}
	v.put(id, verdict{reject: true, reason: reason})
	return true
}

// accepted remembers that the bridge answered the CreateContainer of
// container id with the server's result. It is remembered even while
// relaying is off, so that a new owner of a connection handed over accepts
// the containers it answered for.
func (v *verdicts) accepted(id string) { v.put(id, verdict{}) }

// validateContainerAdjustment answers the runtime's validation of a
// container with the bridge's verdict on it. A container the bridge has no
// verdict on is rejected: its CreateContainer was answered by another owner
// of this connection (a handover), or its verdict was forgotten, and the
// bridge cannot tell that nri-grpc accepted it.
func (h *classicHandlers) validateContainerAdjustment(payload []byte) ([]byte, error) {
	id, err := validatedContainerID(payload)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "bridge: ValidateContainerAdjustment: undecodable request: %v", err)
	}
	rsp := &v1alpha1.ValidateContainerAdjustmentResponse{}
	vd, ok := h.verdicts.take(id)
	switch {
	case !ok:
		h.r.log.Warn("runtime validates a container the bridge has no verdict on; rejected", "container", untrusted.Quote(id))
		rsp.Reject = true
		rsp.Reason = "nri-grpc has no verdict on container " + untrusted.Quote(id) +
			" (its CreateContainer was not answered on this connection)"
	case vd.reject:
		rsp.Reject = true
		rsp.Reason = vd.reason
	}
	return rsp.MarshalVT()
}

// validatedContainerID reads container.id of a ValidateContainerAdjustment
// request without decoding the rest (the pod, the adjustment, the owners:
// the bridge's verdict needs none of them). Occurrences merge as in
// decoding: the last id present wins.
func validatedContainerID(b []byte) (string, error) {
	var id []byte
	err := eachBytes(b, 2, func(ctr []byte) error { // ValidateContainerAdjustmentRequest.container
		return eachBytes(ctr, 1, func(v []byte) error { id = v; return nil }) // Container.id
	})
	return string(id), err
}

// validationHandover is what a connection's verdicts carry to the next
// owner of the connection (a handover): whether the bridge subscribed to
// validation (the runtime does not configure the next owner again) and the
// verdicts the runtime has not asked for yet — at most the one of the
// creation in progress, since Detach waits for the runtime's call being
// served, not for the runtime's validation that follows it. Without them
// the next owner learns the subscription at the runtime's first
// validation, and rejects that container (it has no verdict on it).
type validationHandover struct {
	Relay    bool                   `json:"relay,omitempty"`
	Verdicts []validationVerdictDoc `json:"verdicts,omitempty"`
}

type validationVerdictDoc struct {
	Container string `json:"container"`
	Reject    bool   `json:"reject,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// handover returns the verdicts' state for the next owner of the
// connection, oldest verdict first.
func (v *verdicts) handover() validationHandover {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := validationHandover{Relay: v.relay}
	for i := range maxVerdicts {
		id := v.ring[(v.next+i)%maxVerdicts]
		if vd, ok := v.byID[id]; ok && id != "" {
			out.Verdicts = append(out.Verdicts, validationVerdictDoc{Container: id, Reject: vd.reject, Reason: vd.reason})
		}
	}
	return out
}

// adopt takes over the state handover returned in the previous owner.
func (v *verdicts) adopt(ho validationHandover) {
	if ho.Relay {
		v.setRelay(true)
	}
	for _, d := range ho.Verdicts {
		reason := d.Reason
		if len(reason) > maxReasonLen {
			reason = untrusted.Cut(reason, maxReasonLen)
		}
		v.put(d.Container, verdict{reject: d.Reject, reason: reason})
	}
}
