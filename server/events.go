package server

import (
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// eventInfo describes one lifecycle event, whatever its types: its enum
// value, the PluginService method that delivers it, and how its errors are
// treated.
type eventInfo struct {
	event  nriv1beta1.Event
	name   string // pretty name, as in classic NRI ("CreateContainer")
	method string // full gRPC method name
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
func newEvent[Req, Rsp proto.Message](ev nriv1beta1.Event, name string, creating bool, m rpc[Req, Rsp]) event[Req, Rsp] {
	return event[Req, Rsp]{eventInfo: &eventInfo{event: ev, name: name, method: m.method, creating: creating}, rpc: m}
}

type pss = nriv1beta1.PluginServiceServer

// The lifecycle events.
var (
	evRunPodSandbox = newEvent(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, "RunPodSandbox", true,
		newRPC(nriv1beta1.PluginService_RunPodSandbox_FullMethodName, pss.RunPodSandbox))
	evUpdatePodSandbox = newEvent(nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX, "UpdatePodSandbox", true,
		newRPC(nriv1beta1.PluginService_UpdatePodSandbox_FullMethodName, pss.UpdatePodSandbox))
	evPostUpdatePodSandbox = newEvent(nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX, "PostUpdatePodSandbox", false,
		newRPC(nriv1beta1.PluginService_PostUpdatePodSandbox_FullMethodName, pss.PostUpdatePodSandbox))
	evStopPodSandbox = newEvent(nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, "StopPodSandbox", false,
		newRPC(nriv1beta1.PluginService_StopPodSandbox_FullMethodName, pss.StopPodSandbox))
	evRemovePodSandbox = newEvent(nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX, "RemovePodSandbox", false,
		newRPC(nriv1beta1.PluginService_RemovePodSandbox_FullMethodName, pss.RemovePodSandbox))
	evCreateContainer = newEvent(nriv1beta1.Event_EVENT_CREATE_CONTAINER, "CreateContainer", true,
		newRPC(nriv1beta1.PluginService_CreateContainer_FullMethodName, pss.CreateContainer))
	evPostCreateContainer = newEvent(nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, "PostCreateContainer", false,
		newRPC(nriv1beta1.PluginService_PostCreateContainer_FullMethodName, pss.PostCreateContainer))
	evStartContainer = newEvent(nriv1beta1.Event_EVENT_START_CONTAINER, "StartContainer", true,
		newRPC(nriv1beta1.PluginService_StartContainer_FullMethodName, pss.StartContainer))
	evPostStartContainer = newEvent(nriv1beta1.Event_EVENT_POST_START_CONTAINER, "PostStartContainer", false,
		newRPC(nriv1beta1.PluginService_PostStartContainer_FullMethodName, pss.PostStartContainer))
	evUpdateContainer = newEvent(nriv1beta1.Event_EVENT_UPDATE_CONTAINER, "UpdateContainer", true,
		newRPC(nriv1beta1.PluginService_UpdateContainer_FullMethodName, pss.UpdateContainer))
	evPostUpdateContainer = newEvent(nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER, "PostUpdateContainer", false,
		newRPC(nriv1beta1.PluginService_PostUpdateContainer_FullMethodName, pss.PostUpdateContainer))
	evStopContainer = newEvent(nriv1beta1.Event_EVENT_STOP_CONTAINER, "StopContainer", false,
		newRPC(nriv1beta1.PluginService_StopContainer_FullMethodName, pss.StopContainer))
	evRemoveContainer = newEvent(nriv1beta1.Event_EVENT_REMOVE_CONTAINER, "RemoveContainer", false,
		newRPC(nriv1beta1.PluginService_RemoveContainer_FullMethodName, pss.RemoveContainer))
	evValidate = newEvent(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT, "ValidateContainerAdjustment", true,
		newRPC(nriv1beta1.PluginService_ValidateContainerAdjustment_FullMethodName, pss.ValidateContainerAdjustment))
)
