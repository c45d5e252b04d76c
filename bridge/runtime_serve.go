package bridge

import (
	"context"
	"fmt"
	"time"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// unsafeDecoder is a v1beta1 message with vtprotobuf's aliasing decoder,
// whose strings point into the bytes decoded instead of being copied one
// by one.
type unsafeDecoder interface {
	proto.Message
	UnmarshalVTUnsafe([]byte) error
}

// directRequest returns an empty v1beta1 request for the classic methods
// whose handlers only pass the request on to the server, nil for the
// others. Their requests are decoded straight into the v1beta1 message (the
// API versions share the wire format: test/wirecompat), never as v1alpha1,
// and the server gets the bytes too (server.WithEncodedRequest), so the
// first gRPC plugin is sent the runtime's own encoding: one decode and no
// encode on nrid's way in. UpdateContainer and UpdatePodSandbox are not
// among them: their answers need the classic arguments.
func directRequest(method string) unsafeDecoder {
	switch method {
	case "RunPodSandbox":
		return &nriv1beta1.RunPodSandboxRequest{}
	case "PostUpdatePodSandbox":
		return &nriv1beta1.PostUpdatePodSandboxRequest{}
	case "StopPodSandbox":
		return &nriv1beta1.StopPodSandboxRequest{}
	case "RemovePodSandbox":
		return &nriv1beta1.RemovePodSandboxRequest{}
	case "CreateContainer":
		return &nriv1beta1.CreateContainerRequest{}
	case "PostCreateContainer":
		return &nriv1beta1.PostCreateContainerRequest{}
	case "StartContainer":
		return &nriv1beta1.StartContainerRequest{}
	case "PostStartContainer":
		return &nriv1beta1.PostStartContainerRequest{}
	case "PostUpdateContainer":
		return &nriv1beta1.PostUpdateContainerRequest{}
	case "StopContainer":
		return &nriv1beta1.StopContainerRequest{}
	case "RemoveContainer":
		return &nriv1beta1.RemoveContainerRequest{}
	}
	return nil
}

// inboundKey is the context key of the call's inbound.
type inboundKey struct{}

// inbound is a classic request decoded straight into its v1beta1 message,
// and the bytes it was decoded from.
type inbound struct {
	req unsafeDecoder
	raw []byte
}

// direct returns the request the interceptor decoded for this call and a
// context handing its encoding to the server; ok is false when the call has
// none (an event that reached the handler another way, such as classic
// StateChange).
func direct[T proto.Message](ctx context.Context) (context.Context, T, bool, error) {
	var zero T
	in, _ := ctx.Value(inboundKey{}).(*inbound)
	if in == nil {
		return ctx, zero, false, nil
	}
	req, ok := in.req.(T)
	if !ok {
		return ctx, zero, false, fmt.Errorf("bridge: decoded %T for a handler of %T", in.req, zero)
	}
	return server.WithEncodedRequest(ctx, req, in.raw), req, true, nil
}

// podRequest returns the v1beta1 request of a pod event: the one decoded
// directly, or mk of the converted classic pod.
func podRequest[T proto.Message](ctx context.Context, pod *v1alpha1.PodSandbox, mk func(*nriv1beta1.PodSandbox) T) (context.Context, T, error) {
	ctx, req, ok, err := direct[T](ctx)
	if ok || err != nil {
		return ctx, req, err
	}
	bp, err := podReq(pod)
	if err != nil {
		return ctx, req, err
	}
	return ctx, mk(bp), nil
}

// ctrRequest returns the v1beta1 request of a container event: the one
// decoded directly, or mk of the converted classic pod and container.
func ctrRequest[T proto.Message](ctx context.Context, pod *v1alpha1.PodSandbox, ctr *v1alpha1.Container,
	mk func(*nriv1beta1.PodSandbox, *nriv1beta1.Container) T) (context.Context, T, error) {
	ctx, req, ok, err := direct[T](ctx)
	if ok || err != nil {
		return ctx, req, err
	}
	bp, bc, err := ctrReq(pod, ctr)
	if err != nil {
		return ctx, req, err
	}
	return ctx, mk(bp, bc), nil
}

// serve answers one call of the classic runtime (classicwire.Handler):
// it decodes the request, runs the handler of the method and encodes its
// answer. The requests of directRequest's methods are decoded straight into
// v1beta1, aliasing payload (which classicwire never reuses).
func (h *classicHandlers) serve(ctx context.Context, method string, payload []byte) ([]byte, error) {
	ctx = extractTrace(ctx)
	if req := directRequest(method); req != nil {
		if err := req.UnmarshalVTUnsafe(payload); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "bridge: %s: undecodable request: %v", method, err)
		}
		ctx = context.WithValue(ctx, inboundKey{}, &inbound{req: req, raw: payload})
		return h.event(ctx, method, nil, nil)
	}
	switch method {
	case "Configure":
		req := &v1alpha1.ConfigureRequest{}
		if err := decode(method, payload, req); err != nil {
			return nil, err
		}
		events, err := h.Configure(ctx, req.GetConfig(), req.GetRuntimeName(), req.GetRuntimeVersion())
		if err != nil {
			return nil, err
		}
		select {
		case h.configured <- time.Duration(req.GetRequestTimeout()) * time.Millisecond:
		default:
		}
		return (&v1alpha1.ConfigureResponse{Events: int32(events)}).MarshalVT()
	case "Synchronize":
		// Pages decoded straight into v1beta1 with the aliasing decoder:
		// the state the server keeps points into the pages' buffers
		// instead of holding a copy of every string.
		req := &nriv1beta1.SynchronizeRequest{}
		if err := req.UnmarshalVTUnsafe(payload); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "bridge: %s: undecodable request: %v", method, err)
		}
		h.syncPods, h.syncCtrs = append(h.syncPods, req.GetPods()...), append(h.syncCtrs, req.GetContainers()...)
		if req.GetMore() {
			return (&v1alpha1.SynchronizeResponse{More: true}).MarshalVT()
		}
		pods, ctrs := h.syncPods, h.syncCtrs
		h.syncPods, h.syncCtrs = nil, nil
		if err := h.Synchronize(ctx, pods, ctrs); err != nil {
			return nil, err
		}
		return nil, nil
	case "Shutdown":
		h.Shutdown(ctx)
		return nil, nil
	case "UpdatePodSandbox":
		req := &v1alpha1.UpdatePodSandboxRequest{}
		if err := decode(method, payload, req); err != nil {
			return nil, err
		}
		return nil, h.UpdatePodSandbox(ctx, req.GetPod(), req.GetOverheadLinuxResources(), req.GetLinuxResources())
	case "UpdateContainer":
		req := &v1alpha1.UpdateContainerRequest{}
		if err := decode(method, payload, req); err != nil {
			return nil, err
		}
		updates, err := h.UpdateContainer(ctx, req.GetPod(), req.GetContainer(), req.GetLinuxResources())
		if err != nil {
			return nil, err
		}
		return (&v1alpha1.UpdateContainerResponse{Update: updates}).MarshalVT()
	case "StateChange":
		// What runtimes older than the dedicated methods send.
		req := &v1alpha1.StateChangeEvent{}
		if err := decode(method, payload, req); err != nil {
			return nil, err
		}
		name, ok := stateChangeMethods[req.GetEvent()]
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "bridge: StateChange: unexpected event %v", req.GetEvent())
		}
		if _, err := h.event(ctx, name, req.GetPod(), req.GetContainer()); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return nil, status.Errorf(codes.Unimplemented, "bridge: %s is not served", method)
}

// stateChangeMethods names the method of each event a StateChange carries.
var stateChangeMethods = map[v1alpha1.Event]string{
	v1alpha1.Event_RUN_POD_SANDBOX:       "RunPodSandbox",
	v1alpha1.Event_STOP_POD_SANDBOX:      "StopPodSandbox",
	v1alpha1.Event_REMOVE_POD_SANDBOX:    "RemovePodSandbox",
	v1alpha1.Event_POST_CREATE_CONTAINER: "PostCreateContainer",
	v1alpha1.Event_START_CONTAINER:       "StartContainer",
	v1alpha1.Event_POST_START_CONTAINER:  "PostStartContainer",
	v1alpha1.Event_POST_UPDATE_CONTAINER: "PostUpdateContainer",
	v1alpha1.Event_REMOVE_CONTAINER:      "RemoveContainer",
}

// event runs the handler of one of directRequest's methods, with the
// request decoded directly in ctx or, without it, converted from pod and
// ctr, and encodes its answer.
func (h *classicHandlers) event(ctx context.Context, method string, pod *v1alpha1.PodSandbox, ctr *v1alpha1.Container) ([]byte, error) {
	switch method {
	case "RunPodSandbox":
		return nil, h.RunPodSandbox(ctx, pod)
	case "PostUpdatePodSandbox":
		return nil, h.PostUpdatePodSandbox(ctx, pod)
	case "StopPodSandbox":
		return nil, h.StopPodSandbox(ctx, pod)
	case "RemovePodSandbox":
		return nil, h.RemovePodSandbox(ctx, pod)
	case "CreateContainer":
		adjust, updates, err := h.CreateContainer(ctx, pod, ctr)
		if err != nil {
			return nil, err
		}
		return (&v1alpha1.CreateContainerResponse{Adjust: adjust, Update: updates}).MarshalVT()
	case "PostCreateContainer":
		return nil, h.PostCreateContainer(ctx, pod, ctr)
	case "StartContainer":
		return nil, h.StartContainer(ctx, pod, ctr)
	case "PostStartContainer":
		return nil, h.PostStartContainer(ctx, pod, ctr)
	case "PostUpdateContainer":
		return nil, h.PostUpdateContainer(ctx, pod, ctr)
	case "StopContainer":
		updates, err := h.StopContainer(ctx, pod, ctr)
		if err != nil {
			return nil, err
		}
		return (&v1alpha1.StopContainerResponse{Update: updates}).MarshalVT()
	case "RemoveContainer":
		return nil, h.RemoveContainer(ctx, pod, ctr)
	}
	return nil, status.Errorf(codes.Unimplemented, "bridge: %s is not served", method)
}

// decode decodes a classic request.
func decode(method string, payload []byte, req interface{ UnmarshalVT([]byte) error }) error {
	if err := req.UnmarshalVT(payload); err != nil {
		return status.Errorf(codes.InvalidArgument, "bridge: %s: undecodable request: %v", method, err)
	}
	return nil
}
