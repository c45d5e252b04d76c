package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/interceptor"
	"github.com/nri-grpc/nri-grpc/internal/peercred"
	"github.com/nri-grpc/nri-grpc/nri"
)

// pluginServicePrefix prefixes the full method names of PluginService.
const pluginServicePrefix = "/nri.v1beta1.PluginService/"

// chain returns the interceptor chain of the endpoint's server: recovery
// (a panicking handler answers INTERNAL with the panic's value, for the
// server to record), authentication, and the instance check of
// PluginService calls. The SDK logs no call but refusals and panics.
func (p *Plugin) chain() []grpc.ServerOption {
	return interceptor.ServerOptions(
		interceptor.WithLogger(p.log),
		interceptor.WithAuthenticator(interceptor.AuthFunc(func(ctx context.Context) (context.Context, error) {
			return ctx, p.authenticate(ctx)
		})),
		interceptor.WithAccess(p.checkCall),
		interceptor.WithoutCallLog(),
		interceptor.WithPanicDetails(),
	)
}

// checkCall checks the instance id of PluginService calls (Configure checks
// it itself).
func (p *Plugin) checkCall(ctx context.Context, fullMethod string) error {
	if !strings.HasPrefix(fullMethod, pluginServicePrefix) || fullMethod == nriv1beta1.PluginService_Configure_FullMethodName {
		return nil
	}
	if err := p.checkInstance(ctx); err != nil {
		p.log.Debug("refused a call for another instance", "method", fullMethod, "error", err)
		return err
	}
	return nil
}

// authenticate lets through root, the server's uid (learned from the peer
// credentials of the plugin's own connection to the server) and, on TCP,
// clients with a verified certificate; everybody with WithDebugAccess.
func (p *Plugin) authenticate(ctx context.Context) error {
	if p.opts.debugAccess {
		return nil
	}
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return status.Error(codes.Unauthenticated, "the caller has no peer information")
	}
	switch info := pr.AuthInfo.(type) {
	case peercred.Info:
		if info.UID == 0 {
			return nil
		}
		su := p.serverUID.Load()
		if su >= 0 && uint32(su) == info.UID {
			return nil
		}
		server := "unknown until the plugin has connected to it"
		if su >= 0 {
			server = fmt.Sprintf("uid %d", su)
		}
		return status.Errorf(codes.PermissionDenied,
			"uid %d may not call plugin %s: only root and the NRI server's uid (%s) may; the plugin's WithDebugAccess option lets anybody call",
			info.UID, p.full, server)
	case credentials.TLSInfo:
		if len(info.State.VerifiedChains) > 0 {
			return nil
		}
	}
	return status.Errorf(codes.Unauthenticated, "plugin %s: the caller is not authenticated", p.full)
}

// checkInstance refuses a call addressed to another instance than the
// current one with UNAVAILABLE, which the server never takes for a veto.
func (p *Plugin) checkInstance(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	id := ""
	if v := md.Get(nri.MetadataInstanceID); len(v) == 1 {
		id = v[0]
	}
	p.mu.Lock()
	cur := p.instance
	p.mu.Unlock()
	if cur == "" {
		return status.Errorf(codes.Unavailable, "plugin %s is not registered; the call names instance %q", p.full, id)
	}
	if id != cur {
		return status.Errorf(codes.Unavailable, "plugin %s: the call names instance %q, the current instance is %q", p.full, id, cur)
	}
	return nil
}

// toStatus turns a handler's error into the status the server gets: status
// errors pass through, context errors keep their meaning, anything else is
// a FAILED_PRECONDITION verdict.
func toStatus(err error) error {
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		return err
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		st := se.GRPCStatus()
		return status.Error(st.Code(), err.Error())
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	return status.Error(codes.FailedPrecondition, err.Error())
}

// service implements PluginService on top of the plugin's handlers.
type service struct {
	nriv1beta1.UnimplementedPluginServiceServer
	p *Plugin
}

// call runs handler h, if implemented, and normalizes its answer.
func call[Req any, Rsp any, PR interface {
	*Rsp
	proto.Message
}](ctx context.Context, p *Plugin, event nriv1beta1.Event, h func(context.Context, Req) (PR, error), req Req) (PR, error) {
	if h == nil {
		return nil, status.Errorf(codes.Unimplemented, "plugin %s does not handle %s", p.full, nri.EventName(event))
	}
	rsp, err := h(ctx, req)
	if err != nil {
		p.log.Debug("handler failed", "event", nri.EventName(event), "error", err)
		return nil, toStatus(err)
	}
	if rsp == nil {
		rsp = PR(new(Rsp))
	}
	return rsp, nil
}

// Configure adopts the instance id of a pending registration and returns
// the subscription and failure policy.
func (s *service) Configure(ctx context.Context, req *nriv1beta1.ConfigureRequest) (*nriv1beta1.ConfigureResponse, error) {
	p := s.p
	id := req.GetInstanceId()
	if id == "" {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get(nri.MetadataInstanceID); len(v) == 1 {
			id = v[0]
		}
	}
	p.mu.Lock()
	if p.pending == nil {
		p.mu.Unlock()
		return nil, status.Errorf(codes.Unavailable, "plugin %s has no registration pending; Configure for instance %q refused", p.full, id)
	}
	p.pending.instance = id
	p.instance = id
	p.sync = nil
	p.mu.Unlock()
	p.log.Debug("configuring", "instance", id, "runtime", req.GetRuntimeName(), "runtime_version", req.GetRuntimeVersion(),
		"node", req.GetNodeName(), "server", req.GetServerVersion())

	events, policy := p.events, p.opts.failurePolicy
	if p.h.configure != nil {
		rsp, err := p.h.configure(ctx, req)
		if err != nil {
			p.log.Error("Configure failed", "error", err)
			return nil, toStatus(err)
		}
		if rsp.GetEvents() != 0 {
			if extra := rsp.GetEvents() &^ p.events; extra != 0 {
				err := status.Errorf(codes.FailedPrecondition, "Configure subscribed to events the plugin does not handle: %v",
					eventNames(extra))
				p.log.Error("Configure failed", "error", err)
				return nil, err
			}
			events = rsp.GetEvents()
		}
		if rsp.GetFailurePolicy() != nil {
			policy = rsp.GetFailurePolicy()
		}
	}
	return &nriv1beta1.ConfigureResponse{Events: events, FailurePolicy: policy}, nil
}

// Synchronize collects the pages of a split synchronization and hands the
// full state to the plugin's handler once.
func (s *service) Synchronize(ctx context.Context, req *nriv1beta1.SynchronizeRequest) (*nriv1beta1.SynchronizeResponse, error) {
	p := s.p
	epoch := max(req.GetEpoch(), 1)
	p.mu.Lock()
	acc := p.sync
	if acc == nil || acc.instance != p.instance || acc.epoch != epoch {
		acc = &syncPages{instance: p.instance, epoch: epoch}
		p.sync = acc
	}
	acc.pods = append(acc.pods, req.GetPods()...)
	acc.ctrs = append(acc.ctrs, req.GetContainers()...)
	if req.GetMore() {
		p.mu.Unlock()
		return &nriv1beta1.SynchronizeResponse{More: true}, nil
	}
	p.sync = nil
	p.mu.Unlock()

	full := &nriv1beta1.SynchronizeRequest{
		Pods:       acc.pods,
		Containers: acc.ctrs,
		Epoch:      epoch,
		Reason:     req.GetReason(),
	}
	h := p.h.synchronize
	if epoch > 1 && p.h.resync != nil {
		h = p.h.resync
	}
	p.log.Debug("synchronizing", "epoch", epoch, "reason", req.GetReason().String(), "pods", len(full.Pods), "containers", len(full.Containers))
	if h == nil {
		return &nriv1beta1.SynchronizeResponse{}, nil
	}
	rsp, err := h(ctx, full)
	if err != nil {
		p.log.Error("Synchronize failed", "epoch", epoch, "error", err)
		return nil, toStatus(err)
	}
	if rsp == nil {
		return &nriv1beta1.SynchronizeResponse{}, nil
	}
	rsp.More = false
	return rsp, nil
}

// Shutdown records why the registration ends and tells the plugin.
func (s *service) Shutdown(ctx context.Context, req *nriv1beta1.ShutdownRequest) (*nriv1beta1.ShutdownResponse, error) {
	p := s.p
	p.mu.Lock()
	p.shutdown = req
	p.mu.Unlock()
	p.log.Info("shutdown", "kind", req.GetKind().String(), "reason", req.GetReason())
	if p.h.shutdown != nil {
		p.h.shutdown(ctx, req)
	}
	return &nriv1beta1.ShutdownResponse{}, nil
}

func (s *service) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest) (*nriv1beta1.RunPodSandboxResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, s.p.h.runPodSandbox, req)
}

func (s *service) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest) (*nriv1beta1.UpdatePodSandboxResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX, s.p.h.updatePodSandbox, req)
}

func (s *service) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest) (*nriv1beta1.PostUpdatePodSandboxResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX, s.p.h.postUpdatePodSandbox, req)
}

func (s *service) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest) (*nriv1beta1.StopPodSandboxResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, s.p.h.stopPodSandbox, req)
}

func (s *service) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest) (*nriv1beta1.RemovePodSandboxResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX, s.p.h.removePodSandbox, req)
}

func (s *service) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest) (*nriv1beta1.CreateContainerResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_CREATE_CONTAINER, s.p.h.createContainer, req)
}

func (s *service) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest) (*nriv1beta1.PostCreateContainerResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, s.p.h.postCreateContainer, req)
}

func (s *service) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest) (*nriv1beta1.StartContainerResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_START_CONTAINER, s.p.h.startContainer, req)
}

func (s *service) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest) (*nriv1beta1.PostStartContainerResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_POST_START_CONTAINER, s.p.h.postStartContainer, req)
}

func (s *service) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest) (*nriv1beta1.UpdateContainerResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_UPDATE_CONTAINER, s.p.h.updateContainer, req)
}

func (s *service) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest) (*nriv1beta1.PostUpdateContainerResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER, s.p.h.postUpdateContainer, req)
}

func (s *service) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest) (*nriv1beta1.StopContainerResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_STOP_CONTAINER, s.p.h.stopContainer, req)
}

func (s *service) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest) (*nriv1beta1.RemoveContainerResponse, error) {
	return call(ctx, s.p, nriv1beta1.Event_EVENT_REMOVE_CONTAINER, s.p.h.removeContainer, req)
}

// ValidateContainerAdjustment turns a validator's error into a rejection,
// but an error after the call's context ended is the call's end, not the
// validator's verdict: it is answered as the context's status (a timeout
// stays a timeout for the server, whichever of its deadline and this answer
// it sees first).
func (s *service) ValidateContainerAdjustment(ctx context.Context, req *nriv1beta1.ValidateContainerAdjustmentRequest) (*nriv1beta1.ValidateContainerAdjustmentResponse, error) {
	p := s.p
	if p.h.validate == nil {
		return nil, status.Errorf(codes.Unimplemented, "plugin %s does not validate", p.full)
	}
	rsp, err := p.h.validate(ctx, req)
	if err != nil && ctx.Err() != nil {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if err != nil {
		reason := err.Error()
		if st, ok := status.FromError(err); ok {
			reason = st.Message()
		}
		p.log.Debug("rejecting container adjustment", "container", req.GetContainer().GetName(), "reason", reason)
		return &nriv1beta1.ValidateContainerAdjustmentResponse{Reject: true, Reason: reason}, nil
	}
	if rsp == nil {
		rsp = &nriv1beta1.ValidateContainerAdjustmentResponse{}
	}
	return rsp, nil
}
