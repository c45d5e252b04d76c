package nri_test

import (
	"testing"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

func TestEventMaskAndNames(t *testing.T) {
	t.Parallel()
	if nri.AllEvents != 0x3FFF {
		t.Errorf("AllEvents = %#x, want 0x3FFF", nri.AllEvents)
	}
	if m := nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT,
		nriv1beta1.Event_EVENT_LAST, nriv1beta1.Event_EVENT_UNSPECIFIED, nriv1beta1.Event(99)); m != 0x2001 {
		t.Errorf("EventMask = %#x, want 0x2001", m)
	}
	all := nri.MaskEvents(nri.AllEvents | 1<<20)
	if len(all) != 14 || all[0] != nriv1beta1.Event_EVENT_RUN_POD_SANDBOX || all[13] != nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT {
		t.Errorf("MaskEvents(AllEvents|1<<20) = %v, want the 14 events in enum order", all)
	}
	if got := nri.EventMask(all...); got != nri.AllEvents {
		t.Errorf("EventMask(MaskEvents(AllEvents)) = %#x", got)
	}
	if got := nri.MaskEvents(0); got != nil {
		t.Errorf("MaskEvents(0) = %v", got)
	}
	for e, want := range map[nriv1beta1.Event]string{
		nriv1beta1.Event_EVENT_CREATE_CONTAINER:              "CreateContainer",
		nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX:       "PostUpdatePodSandbox",
		nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT: "ValidateContainerAdjustment",
		nriv1beta1.Event(99):                                 "Event(99)",
	} {
		if got := nri.EventName(e); got != want {
			t.Errorf("EventName(%v) = %q, want %q", e, got, want)
		}
	}
}

func TestParseEventMask(t *testing.T) {
	t.Parallel()
	pod := nri.EventMask(nriv1beta1.Event_EVENT_RUN_POD_SANDBOX, nriv1beta1.Event_EVENT_STOP_POD_SANDBOX,
		nriv1beta1.Event_EVENT_REMOVE_POD_SANDBOX, nriv1beta1.Event_EVENT_UPDATE_POD_SANDBOX, nriv1beta1.Event_EVENT_POST_UPDATE_POD_SANDBOX)
	validate := nri.EventMask(nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT)
	for in, want := range map[string]int32{
		"CreateContainer,stopcontainer": nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER, nriv1beta1.Event_EVENT_STOP_CONTAINER),
		" createContainer , ":           nri.EventMask(nriv1beta1.Event_EVENT_CREATE_CONTAINER),
		"all":                           nri.AllEvents,
		"pod":                           pod,
		"container":                     nri.AllEvents &^ validate &^ pod,
		"":                              0,
	} {
		if got, err := nri.ParseEventMask(in); err != nil || got != want {
			t.Errorf("ParseEventMask(%q) = %#x, %v; want %#x", in, got, err, want)
		}
	}
	if _, err := nri.ParseEventMask("CreateContainer", "Bogus"); err == nil {
		t.Error("an unknown event was accepted")
	}
}
