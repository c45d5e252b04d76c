package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/server/merge"
	"github.com/nri-grpc/nri-grpc/server/validate"
)

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
	validators, all := s.validatorsOf(fl)
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
		// Absent plugins whose known selectors exclude this container are
		// not required for it (selectors.go): the default validator
		// counts them as present.
		registered := vreq.Plugins
		vreq.Plugins = append(slices.Clip(registered), s.excusedAbsent(fl, registered)...)
		err := s.defaultValidation(vreq)
		vreq.Plugins = registered
		if err != nil {
			return err
		}
	}
	if len(validators) == 0 {
		return nil
	}
	return validationVerdict(validators, s.callValidators(ctx, validators, vreq, fl))
}

// validatorsOf returns the slots of the event's validating plugins, and
// every registered plugin (the validators' view of who took part).
// Validators are waited for (each within its own timeout); the list of
// registered plugins never waits for anybody.
func (s *Server) validatorsOf(fl *flight) (validators []*slot, all []*nriv1beta1.PluginInstance) {
	for _, sl := range fl.order {
		if p := sl.registered(); p != nil && !sitsOut(fl, p) {
			all = append(all, &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx})
		}
		if sl.instanceFor(evValidate.mask(), fl) != nil {
			validators = append(validators, sl)
		} else {
			s.countFiltered(sl, evValidate.eventInfo, fl)
		}
	}
	return validators, all
}

// defaultValidation runs the default validator (package validate).
func (s *Server) defaultValidation(vreq *nriv1beta1.ValidateContainerAdjustmentRequest) error {
	err := s.validator.Validate(vreq)
	if err == nil {
		return nil
	}
	var missing *validate.MissingPluginsError
	if errors.As(err, &missing) {
		return dispatchError(codes.Unavailable, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REQUIRED_UNAVAILABLE,
			missing.Missing, "CreateContainer: %v", err)
	}
	return dispatchError(codes.FailedPrecondition, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED,
		[]string{defaultValidatorName}, "validator %q rejected container adjustment, reason: %v", defaultValidatorName, err)
}

// validation is one validating plugin's answer: nothing (it was gone),
// its verdict, or the error of its call.
type validation struct {
	rsp *nriv1beta1.ValidateContainerAdjustmentResponse
	err error
}

// callValidators calls the validating plugins at once and returns their
// answers in order; their calls are recorded in the validators' order.
func (s *Server) callValidators(ctx context.Context, validators []*slot, vreq *nriv1beta1.ValidateContainerAdjustmentRequest,
	fl *flight) []validation {
	results := make([]validation, len(validators))
	pcs := make([]*nriv1beta1.PluginCall, len(validators))
	var wg sync.WaitGroup
	for i, sl := range validators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], pcs[i] = s.callValidator(ctx, sl, vreq, fl)
		}()
	}
	wg.Wait()
	if fl.rec != nil {
		for _, pc := range pcs {
			if pc != nil { // nil: not called (gone, or not ready in time)
				fl.rec.Calls = append(fl.rec.Calls, pc)
			}
		}
	}
	return results
}

// callValidator calls the validating plugin of sl, waiting within its
// timeout for one still synchronizing, and returns its answer and the
// record of its call (nil when nothing is recorded).
func (s *Server) callValidator(ctx context.Context, sl *slot, vreq *nriv1beta1.ValidateContainerAdjustmentRequest,
	fl *flight) (validation, *nriv1beta1.PluginCall) {
	inst := sl.instanceFor(evValidate.mask(), fl)
	if inst == nil {
		return validation{}, nil // unsubscribed meanwhile
	}
	timeout := inst.timeouts.forEvent(evValidate.event)
	deadline := time.Now().Add(timeout)
	p, ready, _ := sl.target(ctx, evValidate.eventInfo, fl, deadline)
	if p == nil && ready {
		return validation{}, nil // gone meanwhile (evicted, closed)
	}
	if p == nil {
		// Validators fail closed: one still synchronizing when its time
		// ran out fails the creation.
		err := status.Errorf(codes.Unavailable, "not ready (synchronizing) within its %v", timeout.Round(time.Millisecond))
		s.observe(inst, evValidate.eventInfo, nriv1beta1.CallOutcome_CALL_OUTCOME_UNAVAILABLE, timeout, nil, err)
		return validation{err: err}, nil
	}
	if ok, v, pc := s.validatorNotReady(ctx, p, deadline, fl); !ok {
		return v, pc
	}
	start := time.Now()
	rsp, err := call(ctx, p, evValidate.rpc, time.Until(deadline), vreq, nil)
	took := time.Since(start)
	outcome, avail := nriv1beta1.CallOutcome_CALL_OUTCOME_OK, false
	if err != nil {
		outcome, avail = classify(err)
	} else if rsp.GetReject() {
		outcome = nriv1beta1.CallOutcome_CALL_OUTCOME_VETO
	}
	var pc *nriv1beta1.PluginCall
	if fl.rec != nil {
		pc = &nriv1beta1.PluginCall{Plugin: &nriv1beta1.PluginInstance{Name: p.name, Index: p.idx}, InstanceId: p.instanceID}
	}
	s.observe(p, evValidate.eventInfo, outcome, took, pc, err)
	if err != nil && avail {
		s.afterFailure(p, outcome, err)
	}
	return validation{rsp: rsp, err: err}, pc
}

// validationVerdict fails the creation with the first validator, in
// order, that failed or rejected it.
func validationVerdict(validators []*slot, results []validation) error {
	for i, r := range results {
		full := validators[i].full
		if r.err != nil {
			return dispatchError(codes.FailedPrecondition, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED, []string{full},
				"validator plugin %s failed: %s", full, status.Convert(r.err).Message())
		}
		if !r.rsp.GetReject() {
			continue
		}
		reason := clip(r.rsp.GetReason())
		if reason == "" {
			reason = "unknown rejection reason"
		}
		return dispatchError(codes.FailedPrecondition, nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_REJECTED, []string{full},
			"validator %q rejected container adjustment, reason: %s", full, reason)
	}
	return nil
}

// defaultValidatorName names the default validator in its rejections: the
// name classic NRI gives its builtin default validator, so that a rejection
// reads the same behind either.
const defaultValidatorName = "00-default-validator"
