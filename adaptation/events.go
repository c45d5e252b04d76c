package adaptation

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server"
)

// The runtime's requests are pkg/api messages; the server's are v1beta1's.
// The two number their fields alike (test/wirecompat), so a request's
// encoding is the v1beta1 request's: it is encoded once, decoded into
// v1beta1 aliasing those bytes, and the server is handed the bytes too
// (server.Encoded), which it sends the first gRPC plugin unchanged. Answers
// go the other way by their encoding.

// vtMessage is a message with vtprotobuf's encoder (both APIs have it).
type vtMessage interface {
	MarshalVT() ([]byte, error)
}

// unsafeDecoder is a v1beta1 message decoding without copying its bytes.
type unsafeDecoder interface {
	UnmarshalVTUnsafe([]byte) error
}

// decoder is a message decoding into a copy of its bytes.
type decoder interface {
	UnmarshalVT([]byte) error
}

// toServer encodes the runtime's request m and decodes it into its v1beta1
// counterpart, which aliases the returned encoding.
func toServer[T any, P interface {
	*T
	unsafeDecoder
}](m vtMessage) (P, []byte, error) {
	b, err := m.MarshalVT()
	if err != nil {
		return nil, nil, status.Errorf(codes.InvalidArgument, "NRI: encoding the runtime's request: %v", err)
	}
	p := P(new(T))
	if err := p.UnmarshalVTUnsafe(b); err != nil {
		return nil, nil, status.Errorf(codes.InvalidArgument, "NRI: the runtime's request does not decode as v1beta1: %v", err)
	}
	return p, b, nil
}

// convert turns m into its counterpart in the other API by its encoding;
// the result owns its bytes.
func convert[T any, P interface {
	*T
	decoder
}](m vtMessage) (P, error) {
	b, err := m.MarshalVT()
	if err != nil {
		return nil, fmt.Errorf("NRI: encoding %T: %w", m, err)
	}
	p := P(new(T))
	if err := p.UnmarshalVT(b); err != nil {
		return nil, fmt.Errorf("NRI: decoding %T: %w", p, err)
	}
	return p, nil
}

// convertAll converts every message of ms.
func convertAll[T any, P interface {
	*T
	decoder
}, M vtMessage](ms []M) ([]P, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	out := make([]P, len(ms))
	for i, m := range ms {
		p, err := convert[T, P](m)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// creating relays a creating event (its reply is empty, a plugin's veto the
// error): nothing to do before Start and after Stop.
func creating[T any, P interface {
	*T
	unsafeDecoder
}](ctx context.Context, r *Adaptation, event string, req vtMessage, call func(*server.Server, context.Context, P, ...server.EventOption) error) error {
	srv := r.server()
	if srv == nil {
		return nil
	}
	in, raw, err := toServer[T, P](req)
	if err != nil {
		return err
	}
	return asUpstream(event, call(srv, ctx, in, server.Encoded(raw)))
}

// notify relays a notification. Plugins' errors are logged, never returned:
// every plugin is told (a classic runtime stops at the first error), and the
// runtime has nothing to undo (docs/embedding.md).
func notify[T any, P interface {
	*T
	unsafeDecoder
}](ctx context.Context, r *Adaptation, event string, req vtMessage,
	call func(*server.Server, context.Context, P, ...server.EventOption) ([]*nriv1beta1.PluginError, error)) error {
	srv := r.server()
	if srv == nil {
		return nil
	}
	in, raw, err := toServer[T, P](req)
	if err != nil {
		return err
	}
	errs, err := call(srv, ctx, in, server.Encoded(raw))
	r.notified(event, errs, err)
	return nil
}

// notified logs the plugins' errors on a notification, and its failure.
func (r *Adaptation) notified(event string, errs []*nriv1beta1.PluginError, err error) {
	for _, e := range errs {
		r.log.Info("plugin error on notification", "event", event,
			"plugin", e.GetPlugin().GetIndex()+"-"+e.GetPlugin().GetName(), "error", e.GetMessage())
	}
	if err != nil {
		r.log.Warn("notification failed", "event", event, "error", err)
	}
}

// RunPodSandbox relays the creation of a pod to plugins.
func (r *Adaptation) RunPodSandbox(ctx context.Context, req *RunPodSandboxRequest) error {
	return creating[nriv1beta1.RunPodSandboxRequest](ctx, r, "RunPodSandbox", req, (*server.Server).RunPodSandbox)
}

// UpdatePodSandbox relays the update of a pod's resources to plugins.
func (r *Adaptation) UpdatePodSandbox(ctx context.Context, req *UpdatePodSandboxRequest) (*UpdatePodSandboxResponse, error) {
	err := creating[nriv1beta1.UpdatePodSandboxRequest](ctx, r, "UpdatePodSandbox", req, (*server.Server).UpdatePodSandbox)
	if err != nil {
		return nil, err
	}
	return &UpdatePodSandboxResponse{}, nil
}

// PostUpdatePodSandbox tells plugins that a pod's resources were updated.
func (r *Adaptation) PostUpdatePodSandbox(ctx context.Context, req *PostUpdatePodSandboxRequest) error {
	return notify[nriv1beta1.PostUpdatePodSandboxRequest](ctx, r, "PostUpdatePodSandbox", req,
		(*server.Server).PostUpdatePodSandbox)
}

// StopPodSandbox tells plugins that a pod stopped.
func (r *Adaptation) StopPodSandbox(ctx context.Context, req *StopPodSandboxRequest) error {
	return notify[nriv1beta1.StopPodSandboxRequest](ctx, r, "StopPodSandbox", req,
		(*server.Server).StopPodSandbox)
}

// RemovePodSandbox tells plugins that a pod was removed.
func (r *Adaptation) RemovePodSandbox(ctx context.Context, req *RemovePodSandboxRequest) error {
	return notify[nriv1beta1.RemovePodSandboxRequest](ctx, r, "RemovePodSandbox", req,
		(*server.Server).RemovePodSandbox)
}

// CreateContainer relays the creation of a container to plugins and returns
// their merged adjustment, updates of other containers and evictions; a
// plugin's or a validator's rejection is the error.
func (r *Adaptation) CreateContainer(ctx context.Context, req *CreateContainerRequest) (*CreateContainerResponse, error) {
	srv := r.server()
	if srv == nil {
		return &CreateContainerResponse{}, nil
	}
	in, raw, err := toServer[nriv1beta1.CreateContainerRequest](req)
	if err != nil {
		return nil, err
	}
	rsp, err := srv.CreateContainer(ctx, in, server.Encoded(raw))
	if err != nil {
		return nil, asUpstream("CreateContainer", err)
	}
	return convert[CreateContainerResponse](rsp)
}

// PostCreateContainer tells plugins that a container was created.
func (r *Adaptation) PostCreateContainer(ctx context.Context, req *PostCreateContainerRequest) error {
	return notify[nriv1beta1.PostCreateContainerRequest](ctx, r, "PostCreateContainer", req,
		(*server.Server).PostCreateContainer)
}

// StartContainer relays the start of a container to plugins.
func (r *Adaptation) StartContainer(ctx context.Context, req *StartContainerRequest) error {
	return creating[nriv1beta1.StartContainerRequest](ctx, r, "StartContainer", req, (*server.Server).StartContainer)
}

// PostStartContainer tells plugins that a container started.
func (r *Adaptation) PostStartContainer(ctx context.Context, req *PostStartContainerRequest) error {
	return notify[nriv1beta1.PostStartContainerRequest](ctx, r, "PostStartContainer", req,
		(*server.Server).PostStartContainer)
}

// UpdateContainer relays the update of a container's resources to plugins.
// As upstream's, the answer lists the updates of other containers plugins
// asked for and, last, the container's own: its final resources when
// plugins changed them, nil when not (runtimes read the last entry as the
// target's resources).
func (r *Adaptation) UpdateContainer(ctx context.Context, req *UpdateContainerRequest) (*UpdateContainerResponse, error) {
	srv := r.server()
	if srv == nil {
		return &UpdateContainerResponse{Update: []*ContainerUpdate{nil}}, nil
	}
	in, raw, err := toServer[nriv1beta1.UpdateContainerRequest](req)
	if err != nil {
		return nil, err
	}
	if in.LinuxResources == nil {
		in.LinuxResources = &nriv1beta1.LinuxResources{}
	}
	requested := in.LinuxResources.CloneVT()
	// Not handed over encoded (the server reshapes the request: empty
	// memory and CPU messages), but checked as the runtime's input.
	rsp, err := srv.UpdateContainer(ctx, in, server.Received(raw))
	if err != nil {
		return nil, asUpstream("UpdateContainer", err)
	}
	out, err := convert[UpdateContainerResponse](&nriv1beta1.AdaptationServiceUpdateContainerResponse{Update: rsp.GetUpdate(), Evict: rsp.GetEvict()})
	if err != nil {
		return nil, err
	}
	var target *ContainerUpdate
	if final := rsp.GetLinuxResources(); final != nil && !final.EqualVT(requested) {
		if target, err = convert[ContainerUpdate](&nriv1beta1.ContainerUpdate{ContainerId: in.GetContainer().GetId(),
			Linux: &nriv1beta1.LinuxContainerUpdate{Resources: final}}); err != nil {
			return nil, err
		}
	}
	out.Update = append(out.Update, target)
	return out, nil
}

// PostUpdateContainer tells plugins that a container's resources were
// updated.
func (r *Adaptation) PostUpdateContainer(ctx context.Context, req *PostUpdateContainerRequest) error {
	return notify[nriv1beta1.PostUpdateContainerRequest](ctx, r, "PostUpdateContainer", req,
		(*server.Server).PostUpdateContainer)
}

// StopContainer relays the stop of a container to plugins and returns the
// updates of other containers they asked for. Plugins' failures are logged:
// a container stops anyway.
func (r *Adaptation) StopContainer(ctx context.Context, req *StopContainerRequest) (*StopContainerResponse, error) {
	srv := r.server()
	if srv == nil {
		return &StopContainerResponse{}, nil
	}
	in, raw, err := toServer[nriv1beta1.StopContainerRequest](req)
	if err != nil {
		return nil, err
	}
	rsp, err := srv.StopContainer(ctx, in, server.Encoded(raw))
	r.notified("StopContainer", rsp.GetPluginErrors(), err)
	if err != nil {
		return &StopContainerResponse{}, nil
	}
	if len(rsp.GetEvict()) > 0 {
		r.log.Warn("the runtime's StopContainer answer cannot evict; evictions dropped", "count", len(rsp.GetEvict()))
	}
	return convert[StopContainerResponse](&nriv1beta1.AdaptationServiceStopContainerResponse{Update: rsp.GetUpdate()})
}

// RemoveContainer tells plugins that a container was removed.
func (r *Adaptation) RemoveContainer(ctx context.Context, req *RemoveContainerRequest) error {
	return notify[nriv1beta1.RemoveContainerRequest](ctx, r, "RemoveContainer", req,
		(*server.Server).RemoveContainer)
}
