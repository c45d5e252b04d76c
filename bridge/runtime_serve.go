package bridge

import (
	"context"
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
// whose requests the bridge passes on to the server as they are, nil for the
// others. Their requests are decoded straight into the v1beta1 message (the
// API versions share the wire format: test/wirecompat), never as v1alpha1,
// and the server gets the bytes too (server.Encoded), so the
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
		return h.event(ctx, req, server.Encoded(payload), h.r.budget())
	}
	switch method {
	case "Configure":
		req := &v1alpha1.ConfigureRequest{}
		if err := decode(method, payload, req); err != nil {
			return nil, err
		}
		events, err := h.Configure(ctx, req.GetConfig(), req.GetRuntimeName(), req.GetRuntimeVersion(), req.GetNRIVersion())
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
	case "ValidateContainerAdjustment":
		return h.validateContainerAdjustment(payload)
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
		ev, err := stateChangeRequest(req)
		if err != nil {
			return nil, err
		}
		if _, err := h.event(ctx, ev, h.r.budget()); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return nil, status.Errorf(codes.Unimplemented, "bridge: %s is not served", method)
}

// stateChangeRequest converts what a StateChange carries into the v1beta1
// request of its event.
func stateChangeRequest(sc *v1alpha1.StateChangeEvent) (proto.Message, error) {
	pod, err := podReq(sc.GetPod())
	if err != nil {
		return nil, err
	}
	switch sc.GetEvent() {
	case v1alpha1.Event_RUN_POD_SANDBOX:
		return &nriv1beta1.RunPodSandboxRequest{Pod: pod}, nil
	case v1alpha1.Event_STOP_POD_SANDBOX:
		return &nriv1beta1.StopPodSandboxRequest{Pod: pod}, nil
	case v1alpha1.Event_REMOVE_POD_SANDBOX:
		return &nriv1beta1.RemovePodSandboxRequest{Pod: pod}, nil
	}
	ctr, err := convert(sc.GetContainer(), &nriv1beta1.Container{})
	if err != nil {
		return nil, err
	}
	switch sc.GetEvent() {
	case v1alpha1.Event_POST_CREATE_CONTAINER:
		return &nriv1beta1.PostCreateContainerRequest{Pod: pod, Container: ctr}, nil
	case v1alpha1.Event_START_CONTAINER:
		return &nriv1beta1.StartContainerRequest{Pod: pod, Container: ctr}, nil
	case v1alpha1.Event_POST_START_CONTAINER:
		return &nriv1beta1.PostStartContainerRequest{Pod: pod, Container: ctr}, nil
	case v1alpha1.Event_POST_UPDATE_CONTAINER:
		return &nriv1beta1.PostUpdateContainerRequest{Pod: pod, Container: ctr}, nil
	case v1alpha1.Event_REMOVE_CONTAINER:
		return &nriv1beta1.RemoveContainerRequest{Pod: pod, Container: ctr}, nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "bridge: StateChange: unexpected event %v", sc.GetEvent())
}

// event dispatches the v1beta1 request of one of directRequest's methods
// and encodes the answer the classic runtime expects.
func (h *classicHandlers) event(ctx context.Context, req proto.Message, opts ...server.EventOption) ([]byte, error) {
	srv := h.r.srv
	switch r := req.(type) {
	case *nriv1beta1.RunPodSandboxRequest:
		return nil, srv.RunPodSandbox(ctx, r, opts...)
	case *nriv1beta1.PostUpdatePodSandboxRequest:
		errs, err := srv.PostUpdatePodSandbox(ctx, r, opts...)
		return nil, h.notified("PostUpdatePodSandbox", errs, err)
	case *nriv1beta1.StopPodSandboxRequest:
		errs, err := srv.StopPodSandbox(ctx, r, opts...)
		return nil, h.notified("StopPodSandbox", errs, err)
	case *nriv1beta1.RemovePodSandboxRequest:
		errs, err := srv.RemovePodSandbox(ctx, r, opts...)
		return nil, h.notified("RemovePodSandbox", errs, err)
	case *nriv1beta1.CreateContainerRequest:
		return h.createContainer(ctx, r, opts...)
	case *nriv1beta1.PostCreateContainerRequest:
		errs, err := srv.PostCreateContainer(ctx, r, opts...)
		return nil, h.notified("PostCreateContainer", errs, err)
	case *nriv1beta1.StartContainerRequest:
		return nil, srv.StartContainer(ctx, r, opts...)
	case *nriv1beta1.PostStartContainerRequest:
		errs, err := srv.PostStartContainer(ctx, r, opts...)
		return nil, h.notified("PostStartContainer", errs, err)
	case *nriv1beta1.PostUpdateContainerRequest:
		errs, err := srv.PostUpdateContainer(ctx, r, opts...)
		return nil, h.notified("PostUpdateContainer", errs, err)
	case *nriv1beta1.StopContainerRequest:
		return h.stopContainer(ctx, r, opts...)
	case *nriv1beta1.RemoveContainerRequest:
		errs, err := srv.RemoveContainer(ctx, r, opts...)
		return nil, h.notified("RemoveContainer", errs, err)
	}
	return nil, status.Errorf(codes.Unimplemented, "bridge: %T is not served", req)
}

// decode decodes a classic request.
func decode(method string, payload []byte, req interface{ UnmarshalVT([]byte) error }) error {
	if err := req.UnmarshalVT(payload); err != nil {
		return status.Errorf(codes.InvalidArgument, "bridge: %s: undecodable request: %v", method, err)
	}
	return nil
}
