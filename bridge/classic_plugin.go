package bridge

import (
	"context"
	"errors"

	v1alpha1 "github.com/containerd/nri/pkg/api"
	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// The server calls a classic plugin through classicConn, which implements
// PluginService by converting each request to v1alpha1, calling the plugin
// over ttrpc, and converting the answer back. Status codes pass through
// unchanged (ttrpc errors are gRPC statuses); deadlines travel in ttrpc's
// timeout field.

// call converts req, invokes fn with it, and converts the answer.
func call[AReq, ARsp, BRsp vtMessage](ctx context.Context, req vtMessage, areq AReq, brsp BRsp,
	fn func(context.Context, AReq) (ARsp, error)) (BRsp, error) {
	var zero BRsp
	in, err := convert(req, areq)
	if err != nil {
		return zero, status.Error(codes.Internal, err.Error())
	}
	out, err := fn(injectTrace(ctx), in)
	if err != nil {
		return zero, ttrpcError(err)
	}
	return convert(out, brsp)
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

func (cc *classicConn) Configure(ctx context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	// Only the v1alpha1 fields: a classic plugin has no use for the rest.
	alpha := &nriv1beta1.ConfigureRequest{
		Config: req.GetConfig(), RuntimeName: req.GetRuntimeName(), RuntimeVersion: req.GetRuntimeVersion(),
		RegistrationTimeout: req.GetRegistrationTimeout(), RequestTimeout: req.GetRequestTimeout(), NriVersion: req.GetNriVersion(),
	}
	return call(ctx, alpha, &v1alpha1.ConfigureRequest{}, &nriv1beta1.ConfigureResponse{}, cc.plugin.Configure)
}

func (cc *classicConn) Synchronize(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	alpha := &nriv1beta1.SynchronizeRequest{Pods: req.GetPods(), Containers: req.GetContainers(), More: req.GetMore()}
	return call(ctx, alpha, &v1alpha1.SynchronizeRequest{}, &nriv1beta1.SynchronizeResponse{}, cc.plugin.Synchronize)
}

// Shutdown is forwarded as the classic, reason-less Shutdown.
func (cc *classicConn) Shutdown(ctx context.Context, req *nriv1beta1.ShutdownRequest) (*nriv1beta1.ShutdownResponse, error) {
	if _, err := cc.plugin.Shutdown(ctx, &v1alpha1.Empty{}); err != nil && status.Code(err) != codes.Unimplemented {
		return nil, ttrpcError(err)
	}
	cc.ps.log.Info("classic plugin shut down", "plugin", cc.full, "reason", req.GetReason())
	return &nriv1beta1.ShutdownResponse{}, nil
}

func (cc *classicConn) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error) {
	return call(ctx, req, &v1alpha1.UpdatePodSandboxRequest{}, &nriv1beta1.UpdatePodSandboxResponse{}, cc.plugin.UpdatePodSandbox)
}

func (cc *classicConn) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	alpha := &nriv1beta1.CreateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer()}
	return call(ctx, alpha, &v1alpha1.CreateContainerRequest{}, &nriv1beta1.CreateContainerResponse{}, cc.plugin.CreateContainer)
}

func (cc *classicConn) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
	alpha := &nriv1beta1.UpdateContainerRequest{Pod: req.GetPod(), Container: req.GetContainer(), LinuxResources: req.GetLinuxResources()}
	return call(ctx, alpha, &v1alpha1.UpdateContainerRequest{}, &nriv1beta1.UpdateContainerResponse{}, cc.plugin.UpdateContainer)
}

func (cc *classicConn) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	return call(ctx, req, &v1alpha1.StopContainerRequest{}, &nriv1beta1.StopContainerResponse{}, cc.plugin.StopContainer)
}

func (cc *classicConn) ValidateContainerAdjustment(ctx context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	alpha := &nriv1beta1.ValidateContainerAdjustmentRequest{Pod: req.GetPod(), Container: req.GetContainer(), Adjust: req.GetAdjust(),
		Update: req.GetUpdate(), Owners: req.GetOwners(), Plugins: req.GetPlugins()}
	return call(ctx, alpha, &v1alpha1.ValidateContainerAdjustmentRequest{}, &nriv1beta1.ValidateContainerAdjustmentResponse{},
		cc.plugin.ValidateContainerAdjustment)
}

// notify delivers one of the nine events that classic NRI before v0.12
// sent as StateChange: the dedicated RPC first and, once the plugin answers
// UNIMPLEMENTED, StateChange from then on (for all nine, as classic NRI
// does), with a deprecation recorded per event.
func notify[AReq vtMessage, ARsp any](cc *classicConn, ctx context.Context, event nriv1beta1.Event, req vtMessage, areq AReq,
	fn func(context.Context, AReq) (ARsp, error)) error {
	cc.mu.Lock()
	legacy := cc.stateChange
	cc.mu.Unlock()
	if !legacy {
		in, err := convert(req, areq)
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		_, err = fn(injectTrace(ctx), in)
		if status.Code(err) != codes.Unimplemented {
			return ttrpcError(err)
		}
		cc.mu.Lock()
		cc.stateChange = true
		cc.mu.Unlock()
	}
	ev := &v1alpha1.StateChangeEvent{Event: v1alpha1.Event(event)}
	type podder interface{ GetPod() *nriv1beta1.PodSandbox }
	type ctrer interface{ GetContainer() *nriv1beta1.Container }
	if p, ok := req.(podder); ok && p.GetPod() != nil {
		pod, err := convert(p.GetPod(), &v1alpha1.PodSandbox{})
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		ev.Pod = pod
	}
	if c, ok := req.(ctrer); ok && c.GetContainer() != nil {
		ctr, err := convert(c.GetContainer(), &v1alpha1.Container{})
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		ev.Container = ctr
	}
	if _, err := cc.plugin.StateChange(injectTrace(ctx), ev); err != nil {
		return ttrpcError(err)
	}
	cc.ps.deprecated(cc, event)
	return nil
}

func (cc *classicConn) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	return &nriv1beta1.RunPodSandboxResponse{}, notify(cc, ctx, nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, req, &v1alpha1.RunPodSandboxRequest{}, cc.plugin.RunPodSandbox)
}

func (cc *classicConn) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error) {
	return &nriv1beta1.PostUpdatePodSandboxResponse{}, notify(cc, ctx, nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX, req, &v1alpha1.PostUpdatePodSandboxRequest{}, cc.plugin.PostUpdatePodSandbox)
}

func (cc *classicConn) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error) {
	return &nriv1beta1.StopPodSandboxResponse{}, notify(cc, ctx, nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, req, &v1alpha1.StopPodSandboxRequest{}, cc.plugin.StopPodSandbox)
}

func (cc *classicConn) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error) {
	return &nriv1beta1.RemovePodSandboxResponse{}, notify(cc, ctx, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX, req, &v1alpha1.RemovePodSandboxRequest{}, cc.plugin.RemovePodSandbox)
}

func (cc *classicConn) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error) {
	return &nriv1beta1.PostCreateContainerResponse{}, notify(cc, ctx, nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, req, &v1alpha1.PostCreateContainerRequest{}, cc.plugin.PostCreateContainer)
}

func (cc *classicConn) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	return &nriv1beta1.StartContainerResponse{}, notify(cc, ctx, nriv1beta1.Event_EVENT_START_CONTAINER, req, &v1alpha1.StartContainerRequest{}, cc.plugin.StartContainer)
}

func (cc *classicConn) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error) {
	return &nriv1beta1.PostStartContainerResponse{}, notify(cc, ctx, nriv1beta1.Event_EVENT_POST_START_CONTAINER, req, &v1alpha1.PostStartContainerRequest{}, cc.plugin.PostStartContainer)
}

func (cc *classicConn) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error) {
	return &nriv1beta1.PostUpdateContainerResponse{}, notify(cc, ctx, nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER, req, &v1alpha1.PostUpdateContainerRequest{}, cc.plugin.PostUpdateContainer)
}

func (cc *classicConn) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error) {
	return &nriv1beta1.RemoveContainerResponse{}, notify(cc, ctx, nriv1beta1.Event_EVENT_REMOVE_CONTAINER, req, &v1alpha1.RemoveContainerRequest{}, cc.plugin.RemoveContainer)
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
