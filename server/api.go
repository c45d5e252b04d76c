package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/merge"
)

// The runtime-facing entry points. Each takes the request plugins receive;
// the server keeps the pod and container objects in its state, so callers
// must not modify them afterwards. Creating events (RunPodSandbox,
// UpdatePodSandbox, CreateContainer, StartContainer, UpdateContainer) return
// an error when a plugin vetoed, plugins conflicted, a validator rejected or
// a required plugin was unavailable; the other events return the errors
// plugins reported, as information.

func checkPod(pod *nriv1beta1.PodSandbox) error {
	if pod == nil {
		return invalid("pod", "required")
	}
	if pod.GetId() == "" {
		return invalid("pod.id", "must not be empty")
	}
	return nil
}

func checkContainer(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) error {
	if err := checkPod(pod); err != nil {
		return err
	}
	if ctr == nil {
		return invalid("container", "required")
	}
	if ctr.GetId() == "" {
		return invalid("container.id", "must not be empty")
	}
	if ctr.GetPodSandboxId() != pod.GetId() {
		return invalid("container.pod_sandbox_id", "%q must equal pod.id %q", ctr.GetPodSandboxId(), pod.GetId())
	}
	return nil
}

// checkReceived refuses a runtime's request whose received encoding
// (Received, Encoded) is malformed or holds a string that is not valid
// UTF-8, with INVALID_ARGUMENT naming the field ("container.name: not
// valid UTF-8"): the vtprotobuf decoding of the bridge and of the
// AdaptationService checks no UTF-8, and a plugin whose protobuf library
// does would fail to decode the request and be counted as failing. It runs
// before the event starts, so no plugin is called and none is blamed. A
// request without a received encoding (an embedded runtime's, built in
// Go) is not checked. Server.event runs it for every event.
func checkReceived(req proto.Message, o eventOptions) error {
	if o.received == nil {
		return nil
	}
	err := checkWire(o.received, req.ProtoReflect().Descriptor(), 0)
	if err == nil {
		return nil
	}
	if f := (*wireFault)(nil); errors.As(err, &f) {
		return invalid(f.field(), "%v", f.rule)
	}
	return invalid("request", "%v", err)
}

// notify runs a notification or teardown event: the plugins' errors are
// collected, and after updates the state once the plugins were told.
func notify[Req, Rsp proto.Message](ctx context.Context, s *Server, ev event[Req, Rsp], req Req,
	pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container, after func(), opts []EventOption) ([]*nriv1beta1.PluginError, error) {
	var errs []*nriv1beta1.PluginError
	err := s.event(ctx, ev.eventInfo, req, pod, ctr, opts, func(fl *flight) error {
		var err error
		errs, err = dispatch(ctx, s, ev, req, fl, nil)
		after()
		return err
	})
	return errs, err
}

// RunPodSandbox dispatches the creation of a pod sandbox.
func (s *Server) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest, opts ...EventOption) error {
	if err := checkPod(req.GetPod()); err != nil {
		return err
	}
	return s.event(ctx, evRunPodSandbox.eventInfo, req, req.Pod, nil, opts, func(fl *flight) error {
		_, err := dispatch(ctx, s, evRunPodSandbox, req, fl, nil)
		if err == nil {
			s.state.setPod(req.Pod)
		}
		return err
	})
}

// UpdatePodSandbox dispatches a pod sandbox resource update.
func (s *Server) UpdatePodSandbox(ctx context.Context, req *nriv1beta1.UpdatePodSandboxRequest, opts ...EventOption) error {
	if err := checkPod(req.GetPod()); err != nil {
		return err
	}
	return s.event(ctx, evUpdatePodSandbox.eventInfo, req, req.Pod, nil, opts, func(fl *flight) error {
		_, err := dispatch(ctx, s, evUpdatePodSandbox, req, fl, nil)
		return err
	})
}

// PostUpdatePodSandbox dispatches a completed pod sandbox update.
func (s *Server) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkPod(req.GetPod()); err != nil {
		return nil, err
	}
	return notify(ctx, s, evPostUpdatePodSandbox, req, req.Pod, nil, func() { s.state.setPod(req.Pod) }, opts)
}

// StopPodSandbox dispatches the stop of a pod sandbox.
func (s *Server) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkPod(req.GetPod()); err != nil {
		return nil, err
	}
	return notify(ctx, s, evStopPodSandbox, req, req.Pod, nil, func() { s.state.setPod(req.Pod) }, opts)
}

// RemovePodSandbox dispatches the removal of a pod sandbox.
func (s *Server) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkPod(req.GetPod()); err != nil {
		return nil, err
	}
	return notify(ctx, s, evRemovePodSandbox, req, req.Pod, nil, func() { s.state.deletePod(req.Pod.Id) }, opts)
}

// CreateContainer dispatches the creation of a container and returns the
// merged, validated adjustments, updates and evictions.
func (s *Server) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest, opts ...EventOption) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	var out *nriv1beta1.AdaptationServiceCreateContainerResponse
	err := s.event(ctx, evCreateContainer.eventInfo, req, req.Pod, req.Container, opts, func(fl *flight) error {
		var mopts []merge.CreateOption
		if !s.mayValidate(req, fl.order) {
			mopts = append(mopts, merge.WithoutPristine())
		}
		m := merge.NewCreate(req, mopts...)
		if fl.raw != nil && m.Reshaped() {
			// Plugins get the same shape whichever encoding they are sent.
			fl.raw = append(fl.raw, normalisedShape...)
		}
		if _, err := dispatch(ctx, s, evCreateContainer, req, fl, createMerge(m, req)); err != nil {
			return err
		}
		out = m.Result()
		if err := s.validate(ctx, req, m, out, fl); err != nil {
			return err
		}
		s.state.recordContainer(req.Container, nriv1beta1.ContainerState_CONTAINER_STATE_CREATED)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// createMerge merges CreateContainer answers into req with m, and encodes
// the change as a delta where it can.
func createMerge(m *merge.Create, req *nriv1beta1.CreateContainerRequest) mergeFunc[*nriv1beta1.CreateContainerResponse] {
	return func(p *plugin, r *nriv1beta1.CreateContainerResponse, changes *[]*nriv1beta1.FieldChange, wantDelta bool) (bool, []byte, error) {
		var delta []byte
		if wantDelta {
			delta = additiveDelta(req.Container, r.GetAdjust())
		}
		changed, err := m.Apply(p.full, r, changes)
		if err != nil {
			return false, nil, mergeError(evCreateContainer.eventInfo, p, err)
		}
		return changed, delta, nil
	}
}

// updateMerge merges UpdateContainer answers with m.
func updateMerge(m *merge.Update) mergeFunc[*nriv1beta1.UpdateContainerResponse] {
	return func(p *plugin, r *nriv1beta1.UpdateContainerResponse, changes *[]*nriv1beta1.FieldChange, _ bool) (bool, []byte, error) {
		changed, err := m.Apply(p.full, r, changes)
		if err != nil {
			return false, nil, mergeError(evUpdateContainer.eventInfo, p, err)
		}
		return changed, nil, nil
	}
}

// mergeError turns a merge failure into the runtime's error.
func mergeError(ev *eventInfo, p *plugin, err error) error {
	plugins := []string{p.full}
	if c, ok := err.(interface{ Plugins() []string }); ok {
		plugins = c.Plugins()
	}
	return dispatchError(codes.FailedPrecondition, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_CONFLICT, plugins,
		"%s: %v", ev.name, err)
}

// PostCreateContainer dispatches a completed container creation.
func (s *Server) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	return notify(ctx, s, evPostCreateContainer, req, req.Pod, req.Container,
		func() { s.state.recordContainer(req.Container, nriv1beta1.ContainerState_CONTAINER_STATE_CREATED) }, opts)
}

// StartContainer dispatches the start of a container.
func (s *Server) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest, opts ...EventOption) error {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return err
	}
	return s.event(ctx, evStartContainer.eventInfo, req, req.Pod, req.Container, opts, func(fl *flight) error {
		_, err := dispatch(ctx, s, evStartContainer, req, fl, nil)
		if err == nil {
			s.state.recordContainer(req.Container, nriv1beta1.ContainerState_CONTAINER_STATE_CREATED)
		}
		return err
	})
}

// PostStartContainer dispatches a completed container start.
func (s *Server) PostStartContainer(ctx context.Context, req *nriv1beta1.PostStartContainerRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	return notify(ctx, s, evPostStartContainer, req, req.Pod, req.Container,
		func() { s.state.recordContainer(req.Container, nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING) }, opts)
}

// UpdateContainer dispatches a container resource update and returns the
// target's final resources and the updates of other containers.
func (s *Server) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest, opts ...EventOption) (*nriv1beta1.AdaptationServiceUpdateContainerResponse, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	var out *nriv1beta1.AdaptationServiceUpdateContainerResponse
	err := s.event(ctx, evUpdateContainer.eventInfo, req, req.Pod, req.Container, opts, func(fl *flight) error {
		m := merge.NewUpdate(req)
		if _, err := dispatch(ctx, s, evUpdateContainer, req, fl, updateMerge(m)); err != nil {
			return err
		}
		out = m.Result()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PostUpdateContainer dispatches a completed container update.
func (s *Server) PostUpdateContainer(ctx context.Context, req *nriv1beta1.PostUpdateContainerRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	return notify(ctx, s, evPostUpdateContainer, req, req.Pod, req.Container,
		func() { s.state.recordContainer(req.Container, nriv1beta1.ContainerState_CONTAINER_STATE_UNSPECIFIED) }, opts)
}

// StopContainer dispatches the stop of a container and returns the updates
// plugins asked for other containers. Errors never stop delivery.
func (s *Server) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest, opts ...EventOption) (*nriv1beta1.AdaptationServiceStopContainerResponse, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	var out *nriv1beta1.AdaptationServiceStopContainerResponse
	err := s.event(ctx, evStopContainer.eventInfo, req, req.Pod, req.Container, opts, func(fl *flight) error {
		m := merge.NewStop(req)
		var mergeErrs []*nriv1beta1.PluginError
		stopMerge := func(p *plugin, r *nriv1beta1.StopContainerResponse, changes *[]*nriv1beta1.FieldChange, _ bool) (bool, []byte, error) {
			if _, err := m.Apply(p.full, r, changes); err != nil {
				// A teardown event goes on: the conflicting update is dropped.
				mergeErrs = append(mergeErrs, &nriv1beta1.PluginError{
					Plugin: &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx},
					Code:   int32(codes.FailedPrecondition), Message: err.Error(),
				})
			}
			return false, nil, nil
		}
		errs, err := dispatch(ctx, s, evStopContainer, req, fl, stopMerge)
		out = m.Result()
		out.PluginErrors = append(errs, mergeErrs...)
		s.state.recordContainer(req.Container, nriv1beta1.ContainerState_CONTAINER_STATE_STOPPED)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RemoveContainer dispatches the removal of a container.
func (s *Server) RemoveContainer(ctx context.Context, req *nriv1beta1.RemoveContainerRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	return notify(ctx, s, evRemoveContainer, req, req.Pod, req.Container, func() { s.state.deleteContainer(req.Container.Id) }, opts)
}

// errNoRuntime is returned for unsolicited updates while no runtime can
// apply them.
var errNoRuntime = status.Error(codes.Unavailable, "no runtime is attached to apply updates")
