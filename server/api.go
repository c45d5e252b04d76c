package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/merge"
	"github.com/nri-grpc/nri-grpc/server/validate"
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

func newRsp[T any, P interface {
	*T
	proto.Message
}]() func() proto.Message {
	return func() proto.Message { return P(new(T)) }
}

// RunPodSandbox dispatches the creation of a pod sandbox.
func (s *Server) RunPodSandbox(ctx context.Context, req *nriv1beta1.RunPodSandboxRequest, opts ...EventOption) error {
	if err := checkPod(req.GetPod()); err != nil {
		return err
	}
	return s.event(ctx, evRunPodSandbox, req.Pod, nil, opts, func(fl *flight) error {
		_, err := s.dispatch(ctx, evRunPodSandbox, req, newRsp[nriv1beta1.RunPodSandboxResponse](), nil, fl)
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
	return s.event(ctx, evUpdatePodSandbox, req.Pod, nil, opts, func(fl *flight) error {
		_, err := s.dispatch(ctx, evUpdatePodSandbox, req, newRsp[nriv1beta1.UpdatePodSandboxResponse](), nil, fl)
		return err
	})
}

// notify runs a notification or teardown event: errors are collected.
func (s *Server) notify(ctx context.Context, ev *eventInfo, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container,
	req proto.Message, newResponse func() proto.Message, after func(), opts []EventOption) ([]*nriv1beta1.PluginError, error) {
	var errs []*nriv1beta1.PluginError
	err := s.event(ctx, ev, pod, ctr, opts, func(fl *flight) error {
		var err error
		errs, err = s.dispatch(ctx, ev, req, newResponse, nil, fl)
		if after != nil {
			after()
		}
		return err
	})
	return errs, err
}

// PostUpdatePodSandbox dispatches a completed pod sandbox update.
func (s *Server) PostUpdatePodSandbox(ctx context.Context, req *nriv1beta1.PostUpdatePodSandboxRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkPod(req.GetPod()); err != nil {
		return nil, err
	}
	return s.notify(ctx, evPostUpdatePodSandbox, req.Pod, nil, req, newRsp[nriv1beta1.PostUpdatePodSandboxResponse](),
		func() { s.state.setPod(req.Pod) }, opts)
}

// StopPodSandbox dispatches the stop of a pod sandbox.
func (s *Server) StopPodSandbox(ctx context.Context, req *nriv1beta1.StopPodSandboxRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkPod(req.GetPod()); err != nil {
		return nil, err
	}
	return s.notify(ctx, evStopPodSandbox, req.Pod, nil, req, newRsp[nriv1beta1.StopPodSandboxResponse](),
		func() { s.state.setPod(req.Pod) }, opts)
}

// RemovePodSandbox dispatches the removal of a pod sandbox.
func (s *Server) RemovePodSandbox(ctx context.Context, req *nriv1beta1.RemovePodSandboxRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkPod(req.GetPod()); err != nil {
		return nil, err
	}
	return s.notify(ctx, evRemovePodSandbox, req.Pod, nil, req, newRsp[nriv1beta1.RemovePodSandboxResponse](),
		func() { s.state.deletePod(req.Pod.Id) }, opts)
}

// CreateContainer dispatches the creation of a container and returns the
// merged, validated adjustments, updates and evictions.
func (s *Server) CreateContainer(ctx context.Context, req *nriv1beta1.CreateContainerRequest, opts ...EventOption) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	var out *nriv1beta1.AdaptationServiceCreateContainerResponse
	err := s.event(ctx, evCreateContainer, req.Pod, req.Container, opts, func(fl *flight) error {
		var mopts []merge.CreateOption
		if !s.mayValidate(req, fl.order) {
			mopts = append(mopts, merge.WithoutPristine())
		}
		if fl.raw != nil && !normalised(req) {
			// Plugins get the same shape whichever encoding they are sent.
			fl.raw = append(fl.raw, normalisedShape...)
		}
		m := merge.NewCreate(req, mopts...)
		if _, err := s.dispatch(ctx, evCreateContainer, req, newRsp[nriv1beta1.CreateContainerResponse](), createApply(m, req), fl); err != nil {
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

// createApply merges CreateContainer answers into req with m, and encodes
// the change as a delta where it can.
func createApply(m *merge.Create, req *nriv1beta1.CreateContainerRequest) applyFunc {
	return func(p *plugin, rsp proto.Message, changes *[]*nriv1beta1.FieldChange, wantDelta bool) (bool, []byte, error) {
		r := rsp.(*nriv1beta1.CreateContainerResponse)
		var delta []byte
		if wantDelta {
			delta = additiveDelta(req.Container, r.GetAdjust())
		}
		changed, err := m.Apply(p.full, r, changes)
		if err != nil {
			return false, nil, mergeError(evCreateContainer, p, err)
		}
		return changed, delta, nil
	}
}

// updateApply merges UpdateContainer answers with m.
func updateApply(m *merge.Update) applyFunc {
	return func(p *plugin, rsp proto.Message, changes *[]*nriv1beta1.FieldChange, _ bool) (bool, []byte, error) {
		changed, err := m.Apply(p.full, rsp.(*nriv1beta1.UpdateContainerResponse), changes)
		if err != nil {
			return false, nil, mergeError(evUpdateContainer, p, err)
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

// Validates reports whether creations are validated now: a knob of the
// default validator is set, or a registered (or registering) plugin
// subscribes to ValidateContainerAdjustment. The bridge asks it when a
// classic runtime configures it (docs/bridge.md).
func (s *Server) Validates() bool {
	if s.validator.Enabled() {
		return true
	}
	for _, sl := range *s.order.Load() {
		if sl.subscribed(evValidate.mask()) {
			return true
		}
	}
	return false
}

// mayValidate reports whether a creation may need validation: a plugin
// subscribed to it, a default-validator knob, or a required-plugins pod
// annotation. Without it no pristine copy of the container is kept.
func (s *Server) mayValidate(req *nriv1beta1.CreateContainerRequest, order []*slot) bool {
	if s.validator.Enabled() {
		return true
	}
	for _, sl := range order {
		if sl.subscribed(evValidate.mask()) {
			return true
		}
	}
	_, annotated, err := s.validator.Required(req.Pod, req.Container)
	return err != nil || len(annotated) > 0
}

// validate runs the default validator and the validating plugins on the
// merged result of a container creation. Validators fail closed: a
// rejection, an error or an unavailable validator fails the creation.
func (s *Server) validate(ctx context.Context, req *nriv1beta1.CreateContainerRequest, m *merge.Create,
	out *nriv1beta1.AdaptationServiceCreateContainerResponse, fl *flight) error {
	rec := fl.rec
	// Validators are waited for (each within its own timeout, below); the
	// list of registered plugins never waits for anybody.
	var validators []*slot
	var all []*nriv1beta1.PluginInstance
	for _, sl := range fl.order {
		if p := sl.registered(); p != nil {
			all = append(all, &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx})
		}
		if sl.instanceFor(evValidate.mask(), fl.gen) != nil {
			validators = append(validators, sl)
		}
	}
	runDefault := s.validator.Enabled()
	if !runDefault {
		// Plugins required by a pod annotation are checked even when no
		// default-validator knob is set.
		_, annotated, err := s.validator.Required(req.Pod, req.Container)
		runDefault = err != nil || len(annotated) > 0
	}
	if len(validators) == 0 && !runDefault {
		return nil
	}
	pristine := m.Pristine()
	if pristine == nil {
		// A validator registered after the event started: it gets the
		// adjusted container, the best available.
		pristine = req.Container
	}
	vreq := &nriv1beta1.ValidateContainerAdjustmentRequest{
		Pod:       req.Pod,
		Container: pristine,
		Adjust:    out.Adjust,
		Update:    out.Update,
		Owners:    m.Owners(),
		Plugins:   all,
	}
	if runDefault {
		if err := s.validator.Validate(vreq); err != nil {
			var missing *validate.MissingPluginsError
			if errors.As(err, &missing) {
				return dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE,
					missing.Missing, "CreateContainer: %v", err)
			}
			return dispatchError(codes.FailedPrecondition, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED,
				[]string{"default-validator"}, "validator \"default-validator\" rejected container adjustment, reason: %v", err)
		}
	}
	if len(validators) == 0 {
		return nil
	}
	type result struct {
		rsp *nriv1beta1.ValidateContainerAdjustmentResponse
		err error
	}
	results := make([]result, len(validators))
	pcs := make([]*nriv1beta1.PluginCall, len(validators))
	var wg sync.WaitGroup
	for i, sl := range validators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst := sl.instanceFor(evValidate.mask(), fl.gen)
			if inst == nil {
				return // unsubscribed meanwhile
			}
			timeout := inst.timeouts.forEvent(evValidate.event)
			deadline := time.Now().Add(timeout)
			p, ready, _ := sl.target(ctx, evValidate.mask(), fl.gen, deadline)
			if p == nil && ready {
				return // gone meanwhile (evicted, closed)
			}
			if p == nil {
				// Validators fail closed: one still synchronizing when its
				// time ran out fails the creation.
				err := status.Errorf(codes.Unavailable, "not ready (synchronizing) within its %v", timeout.Round(time.Millisecond))
				s.observe(inst, evValidate, nriv1beta1.CallOutcome_CALL_OUTCOME_UNAVAILABLE, timeout, nil, err)
				results[i] = result{err: err}
				return
			}
			start := time.Now()
			rsp, err := p.call(ctx, evValidate.method, time.Until(deadline), vreq, nil,
				newRsp[nriv1beta1.ValidateContainerAdjustmentResponse]())
			d := time.Since(start)
			outcome := nriv1beta1.CallOutcome_CALL_OUTCOME_OK
			if err != nil {
				outcome, _ = classify(err)
			} else if rsp.(*nriv1beta1.ValidateContainerAdjustmentResponse).GetReject() {
				outcome = nriv1beta1.CallOutcome_CALL_OUTCOME_VETO
			}
			var pc *nriv1beta1.PluginCall
			if rec != nil {
				pc = &nriv1beta1.PluginCall{Plugin: &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx}, InstanceId: p.instanceID}
				pcs[i] = pc
			}
			s.observe(p, evValidate, outcome, d, pc, err)
			if err != nil {
				if o, avail := classify(err); avail {
					s.afterFailure(p, o, err)
				}
				results[i] = result{err: err}
				return
			}
			results[i] = result{rsp: rsp.(*nriv1beta1.ValidateContainerAdjustmentResponse)}
		}()
	}
	wg.Wait()
	if rec != nil {
		rec.Calls = append(rec.Calls, pcs...)
	}
	for i, r := range results {
		full := validators[i].full
		if r.err != nil {
			return dispatchError(codes.FailedPrecondition, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED, []string{full},
				"validator plugin %s failed: %s", full, status.Convert(r.err).Message())
		}
		if r.rsp == nil {
			continue
		}
		if r.rsp.GetReject() {
			reason := clip(r.rsp.GetReason())
			if reason == "" {
				reason = "unknown rejection reason"
			}
			return dispatchError(codes.FailedPrecondition, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED, []string{full},
				"validator %q rejected container adjustment, reason: %s", full, reason)
		}
	}
	return nil
}

// PostCreateContainer dispatches a completed container creation.
func (s *Server) PostCreateContainer(ctx context.Context, req *nriv1beta1.PostCreateContainerRequest, opts ...EventOption) ([]*nriv1beta1.PluginError, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	return s.notify(ctx, evPostCreateContainer, req.Pod, req.Container, req, newRsp[nriv1beta1.PostCreateContainerResponse](),
		func() { s.state.recordContainer(req.Container, nriv1beta1.ContainerState_CONTAINER_STATE_CREATED) }, opts)
}

// StartContainer dispatches the start of a container.
func (s *Server) StartContainer(ctx context.Context, req *nriv1beta1.StartContainerRequest, opts ...EventOption) error {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return err
	}
	return s.event(ctx, evStartContainer, req.Pod, req.Container, opts, func(fl *flight) error {
		_, err := s.dispatch(ctx, evStartContainer, req, newRsp[nriv1beta1.StartContainerResponse](), nil, fl)
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
	return s.notify(ctx, evPostStartContainer, req.Pod, req.Container, req, newRsp[nriv1beta1.PostStartContainerResponse](),
		func() { s.state.recordContainer(req.Container, nriv1beta1.ContainerState_CONTAINER_STATE_RUNNING) }, opts)
}

// UpdateContainer dispatches a container resource update and returns the
// target's final resources and the updates of other containers.
func (s *Server) UpdateContainer(ctx context.Context, req *nriv1beta1.UpdateContainerRequest, opts ...EventOption) (*nriv1beta1.AdaptationServiceUpdateContainerResponse, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	var out *nriv1beta1.AdaptationServiceUpdateContainerResponse
	err := s.event(ctx, evUpdateContainer, req.Pod, req.Container, opts, func(fl *flight) error {
		m := merge.NewUpdate(req)
		if _, err := s.dispatch(ctx, evUpdateContainer, req, newRsp[nriv1beta1.UpdateContainerResponse](), updateApply(m), fl); err != nil {
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
	return s.notify(ctx, evPostUpdateContainer, req.Pod, req.Container, req, newRsp[nriv1beta1.PostUpdateContainerResponse](),
		func() { s.state.recordContainer(req.Container, nriv1beta1.ContainerState_CONTAINER_STATE_UNSPECIFIED) }, opts)
}

// StopContainer dispatches the stop of a container and returns the updates
// plugins asked for other containers. Errors never stop delivery.
func (s *Server) StopContainer(ctx context.Context, req *nriv1beta1.StopContainerRequest, opts ...EventOption) (*nriv1beta1.AdaptationServiceStopContainerResponse, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	var out *nriv1beta1.AdaptationServiceStopContainerResponse
	err := s.event(ctx, evStopContainer, req.Pod, req.Container, opts, func(fl *flight) error {
		m := merge.NewStop(req)
		var mergeErrs []*nriv1beta1.PluginError
		apply := func(p *plugin, rsp proto.Message, changes *[]*nriv1beta1.FieldChange, _ bool) (bool, []byte, error) {
			if _, err := m.Apply(p.full, rsp.(*nriv1beta1.StopContainerResponse), changes); err != nil {
				// A teardown event goes on: the conflicting update is dropped.
				mergeErrs = append(mergeErrs, &nriv1beta1.PluginError{
					Plugin: &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx},
					Code:   int32(codes.FailedPrecondition), Message: err.Error(),
				})
			}
			return false, nil, nil
		}
		errs, err := s.dispatch(ctx, evStopContainer, req, newRsp[nriv1beta1.StopContainerResponse](), apply, fl)
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
	return s.notify(ctx, evRemoveContainer, req.Pod, req.Container, req, newRsp[nriv1beta1.RemoveContainerResponse](),
		func() { s.state.deleteContainer(req.Container.Id) }, opts)
}

// errNoRuntime is returned for unsolicited updates while no runtime can
// apply them.
var errNoRuntime = status.Error(codes.Unavailable, "no runtime is attached to apply updates")
