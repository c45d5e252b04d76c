package bridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// handler serves one method of the classic runtime's calls: payload is the
// request's encoding (the call's own ttrpc payload, which classicwire
// never reuses, so decoded messages may alias it), the result the reply's.
type handler func(ctx context.Context, payload []byte) ([]byte, error)

// methodTable maps the name of every classic method the bridge serves to
// its handler: the event's type is worked out once, from the name.
type methodTable map[string]handler

// eventCall dispatches one event's request to the server with the event's
// options and encodes the classic reply (nil for an empty one).
type eventCall[R any] func(ctx context.Context, req R, opts ...server.EventOption) ([]byte, error)

// decodeError is a request that did not decode; serve makes it the
// runtime's INVALID_ARGUMENT.
type decodeError struct{ err error }

func (e decodeError) Error() string { return "undecodable request: " + e.err.Error() }
func (e decodeError) Unwrap() error { return e.err }

// newClassicHandlers returns the handlers of one connection to the classic
// runtime.
func newClassicHandlers(r *RuntimeSide) *classicHandlers {
	h := &classicHandlers{r: r, configured: make(chan time.Duration, 1)}
	h.methods = h.methodTable()
	return h
}

// methodTable returns the bridge's method table. Every request is decoded
// straight into its v1beta1 message (v1alpha1 shares the wire:
// test/wirecompat), never as v1alpha1; the events' requests alias the
// payload, which the server also gets as the request's encoding
// (server.Encoded), so the first gRPC plugin is sent the runtime's bytes as
// they came. UpdateContainer's request is not handed over encoded: the
// server reshapes it (empty memory and CPU messages) before plugins see it.
// StateChange, what runtimes older than the dedicated methods send, is
// served by its event's entry.
func (h *classicHandlers) methodTable() methodTable {
	srv := h.r.srv
	return methodTable{
		"Configure":                   h.configure,
		"Synchronize":                 h.synchronize,
		"Shutdown":                    h.shutdown,
		"StateChange":                 h.stateChange,
		"ValidateContainerAdjustment": func(_ context.Context, p []byte) ([]byte, error) { return h.validateContainerAdjustment(p) },
		"RunPodSandbox":               relayed(h, creating(srv.RunPodSandbox)),
		"UpdatePodSandbox":            relayed(h, creating(srv.UpdatePodSandbox)),
		"PostUpdatePodSandbox":        relayed(h, notification(h, "PostUpdatePodSandbox", srv.PostUpdatePodSandbox)),
		"StopPodSandbox":              relayed(h, notification(h, "StopPodSandbox", srv.StopPodSandbox)),
		"RemovePodSandbox":            relayed(h, notification(h, "RemovePodSandbox", srv.RemovePodSandbox)),
		"CreateContainer":             relayed(h, h.createContainer),
		"PostCreateContainer":         relayed(h, notification(h, "PostCreateContainer", srv.PostCreateContainer)),
		"StartContainer":              relayed(h, creating(srv.StartContainer)),
		"PostStartContainer":          relayed(h, notification(h, "PostStartContainer", srv.PostStartContainer)),
		"UpdateContainer":             reshaped(h, h.updateContainer),
		"PostUpdateContainer":         relayed(h, notification(h, "PostUpdateContainer", srv.PostUpdateContainer)),
		"StopContainer":               relayed(h, h.stopContainer),
		"RemoveContainer":             relayed(h, notification(h, "RemoveContainer", srv.RemoveContainer)),
	}
}

// serve answers one call of the classic runtime (classicwire.Handler) with
// the method's entry of the table.
func (h *classicHandlers) serve(ctx context.Context, method string, payload []byte) ([]byte, error) {
	h.receipt(method)
	f, ok := h.methods[method]
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "bridge: %s is not served", method)
	}
	out, err := f(extractTrace(ctx), payload)
	if de := (decodeError{}); errors.As(err, &de) {
		return nil, status.Errorf(codes.InvalidArgument, "bridge: %s: %v", method, de)
	}
	return out, err
}

// relayed is the entry of an event whose request the server gets with its
// encoding, payload.
func relayed[Req any, R interface {
	*Req
	unsafeDecoder
}](h *classicHandlers, call eventCall[R]) handler {
	return decoded[Req](h, call, true)
}

// reshaped is the entry of an event whose request the server encodes
// itself.
func reshaped[Req any, R interface {
	*Req
	unsafeDecoder
}](h *classicHandlers, call eventCall[R]) handler {
	return decoded[Req](h, call, false)
}

// decoded decodes an event's request straight into its v1beta1 message and
// calls call with the budget and the payload: with encoded as the
// request's encoding (server.Encoded), otherwise for checking only
// (server.Received). Either way the server refuses a request whose strings
// are not valid UTF-8 before any plugin is called.
func decoded[Req any, R interface {
	*Req
	unsafeDecoder
}](h *classicHandlers, call eventCall[R], encoded bool) handler {
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		req := R(new(Req))
		if err := req.UnmarshalVTUnsafe(payload); err != nil {
			return nil, decodeError{err}
		}
		budget, receivedAt := h.budget()
		if encoded {
			return call(ctx, req, server.Encoded(payload), budget, receivedAt)
		}
		// Not sent, but checked as a runtime's input (UTF-8: the decoding
		// above checks none).
		return call(ctx, req, server.Received(payload), budget, receivedAt)
	}
}

// budget returns the options that bound the request being served: its
// budget counted from its receipt, and, when it was received before it was
// read (the first request after a takeover), the moment of its receipt
// (nil otherwise).
func (h *classicHandlers) budget() (budget, received server.EventOption) {
	_, b := h.r.timeouts()
	at := h.received
	if at.IsZero() {
		at = time.Now() // a handler called without serve (tests)
	}
	if h.early {
		received = server.ReceivedAt(at)
	}
	return server.Budget(at.Add(b)), received
}

// receipt notes when the request read now, method, was received: now, but
// for the first request read from an adopted connection the moment the
// previous owner stopped reading, since when it may have waited in the
// socket while the runtime's timeout for it ran (bounded by that timeout:
// an older request has timed out in the runtime already, and the two
// processes' clocks might have stepped).
func (h *classicHandlers) receipt(method string) {
	now := time.Now()
	h.received, h.early = now, false
	stopped := h.stopped
	if stopped.IsZero() {
		return
	}
	h.stopped = time.Time{}
	if !stopped.Before(now) {
		return
	}
	if t, _ := h.r.timeouts(); stopped.Before(now.Add(-t)) {
		stopped = now.Add(-t)
	}
	h.received, h.early = stopped, true
	h.r.log.Info("first request after the handover", "method", method, "waited_in_socket", now.Sub(stopped).Round(time.Millisecond))
}

// creating calls a creating event's server method; the reply is empty, a
// plugin's veto the error.
func creating[R any](f func(context.Context, R, ...server.EventOption) error) eventCall[R] {
	return func(ctx context.Context, req R, opts ...server.EventOption) ([]byte, error) {
		return nil, f(ctx, req, opts...)
	}
}

// notification calls a notification's server method: the reply is empty
// and never an error (notified).
func notification[R any](h *classicHandlers, event string,
	f func(context.Context, R, ...server.EventOption) ([]*nriv1beta1.PluginError, error)) eventCall[R] {
	return func(ctx context.Context, req R, opts ...server.EventOption) ([]byte, error) {
		errs, err := f(ctx, req, opts...)
		return nil, h.notified(event, errs, err)
	}
}

// configure answers the runtime's Configure with the bridge's subscription
// and passes its request timeout to connect.
func (h *classicHandlers) configure(_ context.Context, payload []byte) ([]byte, error) {
	req := &nriv1beta1.ConfigureRequest{}
	if err := req.UnmarshalVT(payload); err != nil {
		return nil, decodeError{err}
	}
	events := h.subscribe(req.GetRuntimeName(), req.GetRuntimeVersion(), req.GetNriVersion())
	select {
	case h.configured <- time.Duration(req.GetRequestTimeout()) * time.Millisecond:
	default:
	}
	return (&nriv1beta1.ConfigureResponse{Events: int32(events)}).MarshalVT()
}

// synchronize collects the pages of the runtime's Synchronize and hands the
// state to the server after the last. The pages are not decoded: each
// pod's and container's bytes are sub-slices of the page's buffer (the
// call's own payload, never reused), which the server keeps as the state's
// encoding and checks (server.SetRuntimeEncoded). v1alpha1 and v1beta1
// number the fields alike (pods 1, containers 2, more 3).
func (h *classicHandlers) synchronize(ctx context.Context, payload []byte) ([]byte, error) {
	pods, ctrs, more, err := splitSyncPage(payload)
	if err != nil {
		return nil, decodeError{err}
	}
	h.syncPods, h.syncCtrs = append(h.syncPods, pods...), append(h.syncCtrs, ctrs...)
	if more {
		return (&nriv1beta1.SynchronizeResponse{More: true}).MarshalVT()
	}
	pods, ctrs = h.syncPods, h.syncCtrs
	h.syncPods, h.syncCtrs = nil, nil
	return nil, h.setState(ctx, pods, ctrs)
}

// splitSyncPage splits a SynchronizeRequest's encoding into the encodings
// of its pods and containers, sub-slices of payload, and its more flag.
// Other fields are skipped; malformed wire format or a field of the wrong
// wire type is an error.
func splitSyncPage(payload []byte) (pods, ctrs [][]byte, more bool, err error) {
	for b := payload; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, false, errors.New("synchronize page: malformed field tag")
		}
		b = b[n:]
		switch {
		case (num == 1 || num == 2) && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, nil, false, fmt.Errorf("synchronize page: field %d: malformed length", num)
			}
			if num == 1 {
				pods = append(pods, v[:len(v):len(v)])
			} else {
				ctrs = append(ctrs, v[:len(v):len(v)])
			}
			n = m
		case num == 3 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return nil, nil, false, errors.New("synchronize page: field more: malformed varint")
			}
			more, n = v != 0, m
		case num >= 1 && num <= 3:
			return nil, nil, false, fmt.Errorf("synchronize page: field %d has wire type %d", num, typ)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, nil, false, fmt.Errorf("synchronize page: field %d: malformed value", num)
			}
		}
		b = b[n:]
	}
	return pods, ctrs, more, nil
}

// shutdown notes the runtime's Shutdown of the bridge.
func (h *classicHandlers) shutdown(context.Context, []byte) ([]byte, error) {
	h.r.log.Info("classic runtime shut the bridge down")
	return nil, nil
}

// stateChange serves a StateChange by the entry of its event's dedicated
// method, with the request re-encoded from the pod and container the
// StateChange carries (their bytes are the same).
func (h *classicHandlers) stateChange(ctx context.Context, payload []byte) ([]byte, error) {
	event, req, err := fromStateChange(payload, func(e int32) bool { return containerStateChange(v1alpha1.Event(e)) })
	if err != nil {
		return nil, decodeError{err}
	}
	if !isStateChangeEvent(v1alpha1.Event(event)) {
		return nil, status.Errorf(codes.InvalidArgument, "bridge: StateChange: unexpected event %v", v1alpha1.Event(event))
	}
	if _, err := h.methods[v1alpha1.Event(event).PrettyName()](ctx, req); err != nil {
		return nil, err
	}
	return nil, nil
}

// isStateChangeEvent reports whether classic runtimes send e as a
// StateChange.
func isStateChangeEvent(e v1alpha1.Event) bool {
	switch e {
	case v1alpha1.Event_RUN_POD_SANDBOX, v1alpha1.Event_STOP_POD_SANDBOX, v1alpha1.Event_REMOVE_POD_SANDBOX:
		return true
	}
	return containerStateChange(e)
}

// containerStateChange reports whether e is a container event classic
// runtimes send as a StateChange.
func containerStateChange(e v1alpha1.Event) bool {
	switch e {
	case v1alpha1.Event_POST_CREATE_CONTAINER, v1alpha1.Event_START_CONTAINER, v1alpha1.Event_POST_START_CONTAINER,
		v1alpha1.Event_POST_UPDATE_CONTAINER, v1alpha1.Event_REMOVE_CONTAINER:
		return true
	}
	return false
}
