package bridge

import (
	"context"
	"errors"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// The server calls a classic plugin through classicConn, which implements
// PluginService by sending the v1beta1 request's own encoding (holding only
// fields v1alpha1 has, it is the classic request: test/wirecompat) and
// decoding the plugin's answer straight into the v1beta1 response. Status
// codes pass through unchanged (ttrpc errors are gRPC statuses); deadlines
// travel in ttrpc's timeout field.

// classicPluginService is the ttrpc service classic plugins serve.
const classicPluginService = "nri.pkg.api.v1alpha1.Plugin"

// call calls method of the classic plugin with req's encoding and decodes
// the answer into rsp.
func call[R unsafeDecoder](ctx context.Context, cc *classicConn, method string, req vtMessage, rsp R) (R, error) {
	b, err := req.MarshalVT()
	if err != nil {
		var zero R
		return zero, status.Errorf(codes.Internal, "bridge: encoding %s for a classic plugin: %v", method, err)
	}
	if err := cc.callEncoded(ctx, method, b, rsp); err != nil {
		var zero R
		return zero, err
	}
	return rsp, nil
}

// callEncoded calls method of the classic plugin with the request encoded
// as req and decodes the answer into rsp, if not nil. The answer is decoded
// with the aliasing decoder: its bytes are a copy of the call's own.
func (cc *classicConn) callEncoded(ctx context.Context, method string, req []byte, rsp unsafeDecoder) error {
	out, err := cc.tr.invoke(ctx, method, req)
	if err != nil {
		return err
	}
	if rsp == nil {
		return nil
	}
	if err := rsp.UnmarshalVTUnsafe(out); err != nil {
		return status.Errorf(codes.Internal, "bridge: undecodable answer of classic plugin %s to %s: %v", cc.full, method, err)
	}
	return nil
}

// transport carries a classic plugin's calls: ttrpc over its connection
// (ttrpcTransport), or calls into its WebAssembly module (wasmTransport).
type transport interface {
	// invoke calls the classic method with the request encoded as req and
	// returns the answer's encoding, which the caller may keep; errors are
	// gRPC statuses.
	invoke(ctx context.Context, method string, req []byte) ([]byte, error)
}

// ttrpcTransport calls a classic plugin over its ttrpc connection.
type ttrpcTransport struct{ client *ttrpc.Client }

// invoke implements transport.
func (t ttrpcTransport) invoke(ctx context.Context, method string, req []byte) ([]byte, error) {
	out := &emptypb.Empty{}
	if err := t.client.Call(injectTrace(ctx), classicPluginService, method, encoded(req), out); err != nil {
		return nil, ttrpcError(err)
	}
	return answerBytes(out), nil
}

// classicRuntimeService is the ttrpc service the bridge serves classic
// plugins.
const classicRuntimeService = "nri.pkg.api.v1alpha1.Runtime"

// serveRuntime registers the classic Runtime service of cc on srv.
// UpdateContainers is decoded straight into v1beta1 and answered with the
// v1beta1 encoding of the failed updates.
func (cc *classicConn) serveRuntime(srv *ttrpc.Server) {
	srv.RegisterService(classicRuntimeService, &ttrpc.ServiceDesc{Methods: map[string]ttrpc.Method{
		"RegisterPlugin": func(ctx context.Context, unmarshal func(any) error) (any, error) {
			req := &v1alpha1.RegisterPluginRequest{}
			if err := unmarshal(req); err != nil {
				return nil, err
			}
			return cc.RegisterPlugin(ctx, req)
		},
		"UpdateContainers": func(ctx context.Context, unmarshal func(any) error) (any, error) {
			in := &emptypb.Empty{}
			if err := unmarshal(in); err != nil {
				return nil, err
			}
			req := &nriv1beta1.UpdateContainersRequest{}
			if err := req.UnmarshalVTUnsafe(answerBytes(in)); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "bridge: UpdateContainers: undecodable request: %v", err)
			}
			failed, err := cc.updateContainers(ctx, req)
			if err != nil {
				return nil, err
			}
			b, err := (&nriv1beta1.UpdateContainersResponse{Failed: failed}).MarshalVT()
			if err != nil {
				return nil, status.Errorf(codes.Internal, "bridge: encoding the UpdateContainers answer: %v", err)
			}
			return encoded(b), nil
		},
	}})
}

// ttrpcError maps ttrpc's client-side errors to the status codes the server
// classifies as availability failures: a deadline or cancellation, and a
// closed or broken connection, are not the plugin's verdict. Statuses the
// plugin returned pass through unchanged.
func ttrpcError(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return status.FromContextError(err).Err()
	case errors.Is(err, ttrpc.ErrClosed), errors.Is(err, ttrpc.ErrServerClosed), errors.Is(err, ttrpc.ErrProtocol):
		return status.Error(codes.Unavailable, err.Error())
	}
	return err
}

// Configure sends the classic plugin only the v1alpha1 fields: it has no
// use for the rest.
func (cc *classicConn) Configure(ctx context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	alpha := &nriv1beta1.ConfigureRequest{
		Config: req.GetConfig(), RuntimeName: req.GetRuntimeName(), RuntimeVersion: req.GetRuntimeVersion(),
		RegistrationTimeout: req.GetRegistrationTimeout(), RequestTimeout: req.GetRequestTimeout(), NriVersion: req.GetNriVersion(),
	}
	return call(ctx, cc, "Configure", alpha, &nriv1beta1.ConfigureResponse{})
}

// Synchronize sends a page of the state without the resync's epoch and
// reason.
func (cc *classicConn) Synchronize(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	alpha := &nriv1beta1.SynchronizeRequest{Pods: req.GetPods(), Containers: req.GetContainers(), More: req.GetMore()}
	rsp, err := call(ctx, cc, "Synchronize", alpha, &nriv1beta1.SynchronizeResponse{})
	if err == nil && !req.GetMore() && cc.synced != nil {
		cc.syncOnce.Do(func() { close(cc.synced) })
	}
	return rsp, err
}

// Shutdown is forwarded as the classic, reason-less Shutdown.
func (cc *classicConn) Shutdown(ctx context.Context, req *nriv1beta1.ShutdownRequest) (*nriv1beta1.ShutdownResponse, error) {
	if err := cc.callEncoded(ctx, "Shutdown", nil, nil); err != nil && status.Code(err) != codes.Unimplemented {
		return nil, err
	}
	cc.ps.log.Info("classic plugin shut down", "plugin", cc.full, "reason", req.GetReason())
	return &nriv1beta1.ShutdownResponse{}, nil
}

// UpdatePodSandbox relays a pod's resource update.
func (cc *classicConn) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error) {
	return call(ctx, cc, "UpdatePodSandbox", req, &nriv1beta1.UpdatePodSandboxResponse{})
}

// CreateContainer relays a creation, without the dry-run flag (dry runs
// reach only plugins that declared support for them).
func (cc *classicConn) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	alpha := &nriv1beta1.CreateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()}
	return call(ctx, cc, "CreateContainer", alpha, &nriv1beta1.CreateContainerResponse{})
}

// UpdateContainer relays a container's resource update, without the
// dry-run flag.
func (cc *classicConn) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
	alpha := &nriv1beta1.UpdateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer(), LinuxResources: req.GetLinuxResources()}
	return call(ctx, cc, "UpdateContainer", alpha, &nriv1beta1.UpdateContainerResponse{})
}

// StopContainer relays a container's stop.
func (cc *classicConn) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	return call(ctx, cc, "StopContainer", req, &nriv1beta1.StopContainerResponse{})
}

// ValidateContainerAdjustment relays a validation, without the dry-run
// flag.
func (cc *classicConn) ValidateContainerAdjustment(ctx context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	alpha := &nriv1beta1.ValidateContainerAdjustmentRequest{Pod: req.GetPod(), Container: req.GetContainer(), Adjust: req.GetAdjust(),
		Update: req.GetUpdate(), Owners: req.GetOwners(), Plugins: req.GetPlugins()}
	return call(ctx, cc, "ValidateContainerAdjustment", alpha, &nriv1beta1.ValidateContainerAdjustmentResponse{})
}

// encodedMethods are the PluginService methods whose requests reach a
// classic plugin as they are encoded: the classic method they call, and for
// the nine notifications classic NRI before v0.12 sent as StateChange, the
// event (notifyEncoded).
var encodedMethods = map[string]struct {
	classic string
	event   nriv1beta1.Event
}{
	nriv1beta1.PluginService_CreateContainer_FullMethodName:             {classic: "CreateContainer"},
	nriv1beta1.PluginService_UpdatePodSandbox_FullMethodName:            {classic: "UpdatePodSandbox"},
	nriv1beta1.PluginService_StopContainer_FullMethodName:               {classic: "StopContainer"},
	nriv1beta1.PluginService_UpdateContainer_FullMethodName:             {classic: "UpdateContainer"},
	nriv1beta1.PluginService_ValidateContainerAdjustment_FullMethodName: {classic: "ValidateContainerAdjustment"},
	nriv1beta1.PluginService_RunPodSandbox_FullMethodName:               {event: nriv1beta1.Event_EVENT_RUN_POD_SANDBOX},
	nriv1beta1.PluginService_PostUpdatePodSandbox_FullMethodName:        {event: nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX},
	nriv1beta1.PluginService_StopPodSandbox_FullMethodName:              {event: nriv1beta1.Event_EVENT_STOP_POD_SANDBOX},
	nriv1beta1.PluginService_RemovePodSandbox_FullMethodName:            {event: nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX},
	nriv1beta1.PluginService_PostCreateContainer_FullMethodName:         {event: nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER},
	nriv1beta1.PluginService_StartContainer_FullMethodName:              {event: nriv1beta1.Event_EVENT_START_CONTAINER},
	nriv1beta1.PluginService_PostStartContainer_FullMethodName:          {event: nriv1beta1.Event_EVENT_POST_START_CONTAINER},
	nriv1beta1.PluginService_PostUpdateContainer_FullMethodName:         {event: nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER},
	nriv1beta1.PluginService_RemoveContainer_FullMethodName:             {event: nriv1beta1.Event_EVENT_REMOVE_CONTAINER},
}

// InvokeEncoded implements server.EncodedPlugin: the lifecycle events whose
// classic request is the v1beta1 request (the fields only v1beta1 has are
// unknown to a classic plugin, which skips them) are sent as the server
// has them encoded, without encoding each request again per plugin.
// The dry-run flag (CreateContainer, UpdateContainer, validation) never
// reaches a classic plugin this way: dry runs skip plugins that did not
// declare support for them.
func (cc *classicConn) InvokeEncoded(ctx context.Context, method string, req []byte, rsp proto.Message) (bool, error) {
	m, ok := encodedMethods[method]
	if !ok {
		return false, nil
	}
	if m.classic == "" {
		return true, cc.notifyEncoded(ctx, m.event, req)
	}
	dec, ok := rsp.(unsafeDecoder)
	if !ok {
		return false, nil
	}
	return true, cc.callEncoded(ctx, m.classic, req, dec)
}

// notify delivers one of the nine events that classic NRI before v0.12
// sent as StateChange: the dedicated RPC first and, once the plugin answers
// UNIMPLEMENTED, StateChange from then on (for all nine, as classic NRI
// does), with a deprecation recorded per event. Both carry the request's
// encoding: as it is, or with the pod and container renumbered into a
// StateChangeEvent.
func (cc *classicConn) notify(ctx context.Context, event nriv1beta1.Event, req vtMessage) error {
	b, err := req.MarshalVT()
	if err != nil {
		return status.Errorf(codes.Internal, "bridge: encoding %s for a classic plugin: %v", prettyEvent(event), err)
	}
	return cc.notifyEncoded(ctx, event, b)
}

// notifyEncoded is notify with the request encoded as b.
func (cc *classicConn) notifyEncoded(ctx context.Context, event nriv1beta1.Event, b []byte) error {
	cc.mu.Lock()
	legacy := cc.stateChange
	cc.mu.Unlock()
	if !legacy {
		err := cc.callEncoded(ctx, prettyEvent(event), b, nil)
		if status.Code(err) != codes.Unimplemented {
			return err
		}
		cc.mu.Lock()
		cc.stateChange = true
		cc.mu.Unlock()
	}
	sc, err := toStateChange(int32(event), b)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if err := cc.callEncoded(ctx, "StateChange", sc, nil); err != nil {
		return err
	}
	cc.ps.deprecated(cc, event)
	return nil
}

// RunPodSandbox relays a notification (notify).
func (cc *classicConn) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	return &nriv1beta1.RunPodSandboxResponse{}, cc.notify(ctx, nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, req)
}

// PostUpdatePodSandbox relays a notification (notify).
func (cc *classicConn) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error) {
	return &nriv1beta1.PostUpdatePodSandboxResponse{}, cc.notify(ctx, nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX, req)
}

// StopPodSandbox relays a notification (notify).
func (cc *classicConn) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error) {
	return &nriv1beta1.StopPodSandboxResponse{}, cc.notify(ctx, nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, req)
}

// RemovePodSandbox relays a notification (notify).
func (cc *classicConn) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error) {
	return &nriv1beta1.RemovePodSandboxResponse{}, cc.notify(ctx, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX, req)
}

// PostCreateContainer relays a notification (notify).
func (cc *classicConn) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error) {
	return &nriv1beta1.PostCreateContainerResponse{}, cc.notify(ctx, nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, req)
}

// StartContainer relays a notification (notify).
func (cc *classicConn) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	return &nriv1beta1.StartContainerResponse{}, cc.notify(ctx, nriv1beta1.Event_EVENT_START_CONTAINER, req)
}

// PostStartContainer relays a notification (notify).
func (cc *classicConn) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error) {
	return &nriv1beta1.PostStartContainerResponse{}, cc.notify(ctx, nriv1beta1.Event_EVENT_POST_START_CONTAINER, req)
}

// PostUpdateContainer relays a notification (notify).
func (cc *classicConn) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error) {
	return &nriv1beta1.PostUpdateContainerResponse{}, cc.notify(ctx, nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER, req)
}

// RemoveContainer relays a notification (notify).
func (cc *classicConn) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error) {
	return &nriv1beta1.RemoveContainerResponse{}, cc.notify(ctx, nriv1beta1.Event_EVENT_REMOVE_CONTAINER, req)
}

// deprecated records that a classic plugin only understands StateChange for
// event.
func (ps *PluginSide) deprecated(cc *classicConn, event nriv1beta1.Event) {
	name, idx := cc.full[3:], cc.full[:2]
	ps.srv.RecordDeprecation(&nriv1beta1.PluginInstance{Name: name, Index: idx}, "StateChange", event,
		"does not implement a dedicated "+prettyEvent(event)+" RPC call")
}

// prettyEvent names an event as classic NRI does ("StartContainer").
func prettyEvent(e nriv1beta1.Event) string {
	return v1alpha1.Event(e).PrettyName()
}
