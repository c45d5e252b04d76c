package server

import (
	"context"
	"math"

	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
	"github.com/nri-grpc/nri-grpc/server/merge"
)

// DryRun evaluates a CreateContainer or UpdateContainer without a runtime:
// only plugins that declared dry-run support are called, with dry_run set;
// the others are reported as not evaluated. Nothing is cached, applied or
// relayed, and the caller's objects are not modified.
func (s *Server) DryRun(ctx context.Context, req *nriv1beta1.DryRunRequest) (*nriv1beta1.DryRunResponse, error) {
	if err := checkContainer(req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	pod, ctr := req.Pod.CloneVT(), req.Container.CloneVT()
	out := &nriv1beta1.DryRunResponse{}
	rec := &nriv1beta1.DispatchRecord{Event: req.GetEvent(), DryRun: true}
	// Not an event in flight: it sees every instance, pending ones too.
	fl := &flight{gen: math.MaxUint64, order: *s.order.Load(), rec: rec, pod: pod, ctr: ctr}
	var err error
	switch req.GetEvent() {
	case nriv1beta1.Event_EVENT_CREATE_CONTAINER:
		creq := &nriv1beta1.CreateContainerRequest{Pod: pod, Container: ctr, DryRun: true}
		m := merge.NewCreate(creq)
		err = dryRun(ctx, s, evCreateContainer, creq, fl, createMerge(m, creq), &out.NotEvaluated)
		if err == nil {
			res := m.Result()
			out.Adjust, out.Update, out.Evict = res.Adjust, res.Update, res.Evict
		}
	case nriv1beta1.Event_EVENT_UPDATE_CONTAINER:
		ureq := &nriv1beta1.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: req.GetLinuxResources().CloneVT(), DryRun: true}
		m := merge.NewUpdate(ureq)
		err = dryRun(ctx, s, evUpdateContainer, ureq, fl, updateMerge(m), &out.NotEvaluated)
		if err == nil {
			res := m.Result()
			out.Update, out.Evict, out.LinuxResources = res.Update, res.Evict, res.LinuxResources
		}
	default:
		return nil, invalid("event", "%v cannot be dry-run; use EVENT_CREATE_CONTAINER or EVENT_UPDATE_CONTAINER", req.GetEvent())
	}
	if err != nil {
		out.Error = status.Convert(err).Message()
	}
	rec.Outcome = nri.OutcomeOf(err)
	rec.Error = out.Error
	out.Record = rec
	return out, nil
}
