package server

import (
	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// eventInfo describes one lifecycle event: its enum value, the PluginService
// method that delivers it, and how its errors are treated.
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

var (
	evRunPodSandbox = &eventInfo{nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, "RunPodSandbox",
		nriv1beta1.PluginService_RunPodSandbox_FullMethodName, true}
	evUpdatePodSandbox = &eventInfo{nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX, "UpdatePodSandbox",
		nriv1beta1.PluginService_UpdatePodSandbox_FullMethodName, true}
	evPostUpdatePodSandbox = &eventInfo{nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX, "PostUpdatePodSandbox",
		nriv1beta1.PluginService_PostUpdatePodSandbox_FullMethodName, false}
	evStopPodSandbox = &eventInfo{nriv1beta1.Event_EVENT_STOP_POD_SANDBOX, "StopPodSandbox",
		nriv1beta1.PluginService_StopPodSandbox_FullMethodName, false}
	evRemovePodSandbox = &eventInfo{nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX, "RemovePodSandbox",
		nriv1beta1.PluginService_RemovePodSandbox_FullMethodName, false}
	evCreateContainer = &eventInfo{nriv1beta1.Event_EVENT_CREATE_CONTAINER, "CreateContainer",
		nriv1beta1.PluginService_CreateContainer_FullMethodName, true}
	evPostCreateContainer = &eventInfo{nriv1beta1.Event_EVENT_POST_CREATE_CONTAINER, "PostCreateContainer",
		nriv1beta1.PluginService_PostCreateContainer_FullMethodName, false}
	evStartContainer = &eventInfo{nriv1beta1.Event_EVENT_START_CONTAINER, "StartContainer",
		nriv1beta1.PluginService_StartContainer_FullMethodName, true}
	evPostStartContainer = &eventInfo{nriv1beta1.Event_EVENT_POST_START_CONTAINER, "PostStartContainer",
		nriv1beta1.PluginService_PostStartContainer_FullMethodName, false}
	evUpdateContainer = &eventInfo{nriv1beta1.Event_EVENT_UPDATE_CONTAINER, "UpdateContainer",
		nriv1beta1.PluginService_UpdateContainer_FullMethodName, true}
	evPostUpdateContainer = &eventInfo{nriv1beta1.Event_EVENT_POST_UPDATE_CONTAINER, "PostUpdateContainer",
		nriv1beta1.PluginService_PostUpdateContainer_FullMethodName, false}
	evStopContainer = &eventInfo{nriv1beta1.Event_EVENT_STOP_CONTAINER, "StopContainer",
		nriv1beta1.PluginService_StopContainer_FullMethodName, false}
	evRemoveContainer = &eventInfo{nriv1beta1.Event_EVENT_REMOVE_CONTAINER, "RemoveContainer",
		nriv1beta1.PluginService_RemoveContainer_FullMethodName, false}
	evValidate = &eventInfo{nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT, "ValidateContainerAdjustment",
		nriv1beta1.PluginService_ValidateContainerAdjustment_FullMethodName, true}
)
