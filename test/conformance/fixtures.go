package conformance

import (
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Pods and containers shaped like classic NRI's test suite's: "pod0" with
// "ctr0", and so on.

// newPod returns pod id ("pod0") with optional annotations.
func newPod(id string, annotations map[string]string) *nriv1beta1.PodSandbox {
	return &nriv1beta1.PodSandbox{
		Id:          id,
		Name:        id,
		Uid:         "uid" + strings.TrimPrefix(id, "pod"),
		Namespace:   "default",
		Annotations: annotations,
	}
}

// newCtr returns container id ("ctr0") of pod podID, named like its id.
func newCtr(podID, id string) *nriv1beta1.Container {
	return &nriv1beta1.Container{
		Id:           id,
		PodSandboxId: podID,
		Name:         id,
		State:        nriv1beta1.ContainerState_CONTAINER_STATE_CREATED,
	}
}

func clone[T proto.Message](m T) T { return proto.Clone(m).(T) }

func u64(v uint64) *wrapperspb.UInt64Value { return wrapperspb.UInt64(v) }
func i64(v int64) *wrapperspb.Int64Value   { return wrapperspb.Int64(v) }
func str(v string) *wrapperspb.StringValue { return wrapperspb.String(v) }
func boolv(v bool) *wrapperspb.BoolValue   { return wrapperspb.Bool(v) }

// The lifecycle events, in the order lifecycle drives them (classic NRI's
// startStopPodAndContainer).
var lifecycleEvents = []string{
	"RunPodSandbox", "UpdatePodSandbox", "PostUpdatePodSandbox",
	"CreateContainer", "PostCreateContainer", "StartContainer", "PostStartContainer",
	"UpdateContainer", "PostUpdateContainer", "StopContainer", "RemoveContainer",
	"StopPodSandbox", "RemovePodSandbox",
}

// eventOf maps a method name to its event.
var eventOf = map[string]nriv1beta1.Event{
	"RunPodSandbox":               nriv1beta1.Event_EVENT_RUN_POD_SANDBOX,
	"StopPodSandbox":              nriv1beta1.Event_EVENT_STOP_POD_SANDBOX,
	"RemovePodSandbox":            nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX,
	"CreateContainer":             nriv1beta1.Event_EVENT_CREATE_CONTAINER,
	"PostCreateContainer":         nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER,
	"StartContainer":              nriv1beta1.Event_EVENT_START_CONTAINER,
	"PostStartContainer":          nriv1beta1.Event_EVENT_POST_START_CONTAINER,
	"UpdateContainer":             nriv1beta1.Event_EVENT_UPDATE_CONTAINER,
	"PostUpdateContainer":         nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER,
	"StopContainer":               nriv1beta1.Event_EVENT_STOP_CONTAINER,
	"RemoveContainer":             nriv1beta1.Event_EVENT_REMOVE_CONTAINER,
	"UpdatePodSandbox":            nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX,
	"PostUpdatePodSandbox":        nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX,
	"ValidateContainerAdjustment": nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT,
}

// parseEvents turns "A,B" lists of method names into events.
func parseEvents(lists ...string) []nriv1beta1.Event {
	var out []nriv1beta1.Event
	for _, l := range lists {
		for _, name := range strings.Split(l, ",") {
			out = append(out, eventOf[name])
		}
	}
	return out
}

// send drives one lifecycle event for pod and ctr (fresh copies) and
// returns its error. Events without a container ignore ctr.
func (s *S) send(event string, pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) error {
	rt, ctx := s.RT(), s.ctx
	p, c := clone(pod), func() *nriv1beta1.Container {
		if ctr == nil {
			return nil
		}
		return clone(ctr)
	}()
	var err error
	switch event {
	case "RunPodSandbox":
		err = rt.RunPodSandbox(ctx, &nriv1beta1.RunPodSandboxRequest{Pod: p})
	case "UpdatePodSandbox":
		err = rt.UpdatePodSandbox(ctx, &nriv1beta1.UpdatePodSandboxRequest{Pod: p, LinuxResources: &nriv1beta1.LinuxResources{}})
	case "PostUpdatePodSandbox":
		_, err = rt.PostUpdatePodSandbox(ctx, &nriv1beta1.PostUpdatePodSandboxRequest{Pod: p})
	case "StopPodSandbox":
		_, err = rt.StopPodSandbox(ctx, &nriv1beta1.StopPodSandboxRequest{Pod: p})
	case "RemovePodSandbox":
		_, err = rt.RemovePodSandbox(ctx, &nriv1beta1.RemovePodSandboxRequest{Pod: p})
	case "CreateContainer":
		_, err = rt.CreateContainer(ctx, &nriv1beta1.CreateContainerRequest{Pod: p, Container: c})
	case "PostCreateContainer":
		_, err = rt.PostCreateContainer(ctx, &nriv1beta1.PostCreateContainerRequest{Pod: p, Container: c})
	case "StartContainer":
		err = rt.StartContainer(ctx, &nriv1beta1.StartContainerRequest{Pod: p, Container: c})
	case "PostStartContainer":
		_, err = rt.PostStartContainer(ctx, &nriv1beta1.PostStartContainerRequest{Pod: p, Container: c})
	case "UpdateContainer":
		_, err = rt.UpdateContainer(ctx, &nriv1beta1.UpdateContainerRequest{Pod: p, Container: c, LinuxResources: &nriv1beta1.LinuxResources{}})
	case "PostUpdateContainer":
		_, err = rt.PostUpdateContainer(ctx, &nriv1beta1.PostUpdateContainerRequest{Pod: p, Container: c})
	case "StopContainer":
		_, err = rt.StopContainer(ctx, &nriv1beta1.StopContainerRequest{Pod: p, Container: c})
	case "RemoveContainer":
		_, err = rt.RemoveContainer(ctx, &nriv1beta1.RemoveContainerRequest{Pod: p, Container: c})
	default:
		s.Fatalf("unknown event %q", event)
	}
	return err
}

// lifecycle drives pod and ctr through every lifecycle event, failing the
// scenario on any error.
func (s *S) lifecycle(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) {
	s.Helper()
	for _, ev := range lifecycleEvents {
		s.must(ev, s.send(ev, pod, ctr))
	}
}

// runPod runs a pod sandbox, failing the scenario on error.
func (s *S) runPod(pod *nriv1beta1.PodSandbox) {
	s.Helper()
	s.must("RunPodSandbox", s.RT().RunPodSandbox(s.ctx, &nriv1beta1.RunPodSandboxRequest{Pod: clone(pod)}))
}

// create creates a container and returns the result.
func (s *S) create(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) (*nriv1beta1.AdaptationServiceCreateContainerResponse, error) {
	return s.RT().CreateContainer(s.ctx, &nriv1beta1.CreateContainerRequest{Pod: clone(pod), Container: clone(ctr)})
}

// mustCreate creates a container, failing the scenario on error.
func (s *S) mustCreate(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) *nriv1beta1.AdaptationServiceCreateContainerResponse {
	s.Helper()
	rsp, err := s.create(pod, ctr)
	s.must("CreateContainer "+ctr.GetId(), err)
	return rsp
}
