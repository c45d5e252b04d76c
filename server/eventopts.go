package server

import (
	"slices"
	"time"
)

// EventOption adjusts the dispatch of one event: it is passed to one of
// the runtime-facing methods (RunPodSandbox … RemoveContainer) and applies
// to that call only.
type EventOption func(*eventOptions)

// eventOptions is what the EventOptions of one event set.
type eventOptions struct {
	raw        []byte    // the request's encoding (Encoded)
	received   []byte    // the encoding the request was decoded from (Received, Encoded)
	budget     time.Time // the caller's budget (Budget)
	hasBudget  bool
	receivedAt time.Time // when the caller received the event (ReceivedAt); zero: the call
}

func applyEventOptions(opts []EventOption) eventOptions {
	var o eventOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// Encoded hands the server raw, the protobuf encoding of the request passed
// with it as the plugin-facing request message — for example the bytes the
// request was decoded from, which is how the bridge passes on a classic
// runtime's requests (v1alpha1 and v1beta1 share the wire format). The
// server then sends raw, with its own normalisation and the plugins'
// changes appended, to the plugins it calls over gRPC instead of encoding
// the request itself. The server never writes into raw; the caller must not
// modify it until the call returns.
//
// raw is also checked as Received does: a request whose encoding holds a
// string that is not valid UTF-8 is refused before any plugin is called.
func Encoded(raw []byte) EventOption {
	return func(o *eventOptions) { o.raw, o.received = slices.Clip(raw), raw }
}

// Received hands the server raw, the protobuf encoding the request passed
// with it was decoded from, for checking only: the server refuses the
// request with INVALID_ARGUMENT, naming the field, when raw is malformed or
// holds a string that is not valid UTF-8 (docs/PROTOCOL.md, "Limits"),
// before any plugin is called, and never sends raw. The vtprotobuf
// decoding nri-grpc uses does not check UTF-8, and a strict plugin would
// otherwise fail to decode the request and be blamed for it. Use it where
// the request cannot be handed over with Encoded (the server reshapes
// it); the caller must not modify raw until the call returns.
func Received(raw []byte) EventOption {
	return func(o *eventOptions) { o.received = raw }
}

// Budget bounds the event's dispatch by deadline: plugins are called only
// while the budget lasts and each call is cut to what is left. When it runs
// out, plugins with the ignore policy are skipped and a required plugin
// fails the event, so the caller always answers before deadline. The
// bridge uses it to stay inside a classic runtime's request timeout; the
// context's own deadline should be later than the budget.
func Budget(deadline time.Time) EventOption {
	return func(o *eventOptions) { o.budget, o.hasBudget = deadline, true }
}

// ReceivedAt tells the server when the caller received the event, if that
// was before the call: the event's budget (Budget) started then. A hold on
// events (HoldEvents) ends by the middle of the budget counted from that
// moment, so that what waited before the call — in a socket during a
// handover from one nrid to the next, say — is not waited again. The
// bridge passes the moment the previous nrid stopped reading for the
// runtime's first request after a takeover.
func ReceivedAt(t time.Time) EventOption {
	return func(o *eventOptions) { o.receivedAt = t }
}
