package server

import (
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

// eventInfo describes one lifecycle event, whatever its types: its enum
// value, its name, and how its errors are treated.
type eventInfo struct {
	event nriv1beta1.Event
	name  string // pretty name, as in classic NRI ("CreateContainer")
	// creating events can be vetoed: a plugin error fails them, and a
	// required plugin's absence fails them.
	creating bool
}

// mask returns the subscription bit of the event.
func (e *eventInfo) mask() uint32 { return 1 << (uint32(e.event) - 1) }

// event is a lifecycle event with its request and response types: the
// typed handle the dispatch pipeline (dispatch.go) runs.
type event[Req, Rsp proto.Message] struct {
	*eventInfo
	rpc[Req, Rsp]
}

// newEvent describes the event ev delivered by m; creating events can be
// vetoed.
func newEvent[Req, Rsp proto.Message](ev nriv1beta1.Event, creating bool, m rpc[Req, Rsp]) event[Req, Rsp] {
	return event[Req, Rsp]{eventInfo: &eventInfo{event: ev, name: nri.EventName(ev), creating: creating}, rpc: m}
}

type pss = nriv1beta1.PluginServiceServer

// The lifecycle events.
var (
	evRunPodSandbox = newEvent(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, true,
		newRPC(nriv1beta1.PluginService_RunPodSandbox_FullMethodName, pss.RunPodSandbox))
	evUpdatePodSandbox = newEvent(nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX, true,
		newRPC(nriv1beta1.PluginService_UpdatePodSandbox_FullMethodName, pss.UpdatePodSandbox))
	evPostUpdatePodSandbox = newEvent(nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX, false,
		newRPC(nriv1beta1.PluginService_PostUpdatePodSandbox_FullMethodName, pss.PostUpdatePodSandbox))
	evStopPodSandbox = newEvent(nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, false,
		newRPC(nriv1beta1.PluginService_StopPodSandbox_FullMethodName, pss.StopPodSandbox))
	evRemovePodSandbox = newEvent(nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX, false,
		newRPC(nriv1beta1.PluginService_RemovePodSandbox_FullMethodName, pss.RemovePodSandbox))
	evCreateContainer = newEvent(nriv1beta1.Event_EVENT_CREATE_CONTAINER, true,
		newRPC(nriv1beta1.PluginService_CreateContainer_FullMethodName, pss.CreateContainer))
	evPostCreateContainer = newEvent(nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, false,
		newRPC(nriv1beta1.PluginService_PostCreateContainer_FullMethodName, pss.PostCreateContainer))
	evStartContainer = newEvent(nriv1beta1.Event_EVENT_START_CONTAINER, true,
		newRPC(nriv1beta1.PluginService_StartContainer_FullMethodName, pss.StartContainer))
	evPostStartContainer = newEvent(nriv1beta1.Event_EVENT_POST_START_CONTAINER, false,
		newRPC(nriv1beta1.PluginService_PostStartContainer_FullMethodName, pss.PostStartContainer))
	evUpdateContainer = newEvent(nriv1beta1.Event_EVENT_UPDATE_CONTAINER, true,
		newRPC(nriv1beta1.PluginService_UpdateContainer_FullMethodName, pss.UpdateContainer))
	evPostUpdateContainer = newEvent(nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER, false,
		newRPC(nriv1beta1.PluginService_PostUpdateContainer_FullMethodName, pss.PostUpdateContainer))
	evStopContainer = newEvent(nriv1beta1.Event_EVENT_STOP_CONTAINER, false,
		newRPC(nriv1beta1.PluginService_StopContainer_FullMethodName, pss.StopContainer))
	evRemoveContainer = newEvent(nriv1beta1.Event_EVENT_REMOVE_CONTAINER, false,
		newRPC(nriv1beta1.PluginService_RemoveContainer_FullMethodName, pss.RemoveContainer))
	evValidate = newEvent(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT, true,
		newRPC(nriv1beta1.PluginService_ValidateContainerAdjustment_FullMethodName, pss.ValidateContainerAdjustment))
)
