package nri

import (
	"fmt"
	"strings"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// AllEvents is the subscription mask of every event, validation included
// (0x3FFF).
const AllEvents int32 = 1<<(int32(nriv1beta1.Event_EVENT_LAST)-1) - 1

// EventMask returns the subscription mask of events: bit 1<<(e-1) for
// event e, the value of ConfigureResponse.events. Values that are not
// events (EVENT_UNSPECIFIED, EVENT_LAST, unknown numbers) are ignored.
func EventMask(events ...nriv1beta1.Event) int32 {
	var m int32
	for _, e := range events {
		if e > nriv1beta1.Event_EVENT_UNSPECIFIED && e < nriv1beta1.Event_EVENT_LAST {
			m |= 1 << (int32(e) - 1)
		}
	}
	return m
}

// MaskEvents lists the events of a subscription mask in enum order. Bits
// outside AllEvents are ignored.
func MaskEvents(mask int32) []nriv1beta1.Event {
	var out []nriv1beta1.Event
	for e := nriv1beta1.Event_EVENT_RUN_POD_SANDBOX; e < nriv1beta1.Event_EVENT_LAST; e++ {
		if mask&EventMask(e) != 0 {
			out = append(out, e)
		}
	}
	return out
}

// ParseEventMask parses event names into a subscription mask. Names are
// matched without regard to case ("CreateContainer", "createcontainer");
// each argument may hold several, separated by commas. "all" means every
// event (validation included), "pod" every pod event and "container" every
// container event. The error names the first unknown name.
func ParseEventMask(names ...string) (int32, error) {
	var mask int32
	for _, arg := range names {
		for n := range strings.SplitSeq(arg, ",") {
			n = strings.ToLower(strings.TrimSpace(n))
			if n == "" {
				continue
			}
			matched := false
			for _, e := range MaskEvents(AllEvents) {
				name := strings.ToLower(EventName(e))
				switch {
				case n == "all",
					n == name,
					n == "pod" && strings.Contains(name, "podsandbox"),
					n == "container" && strings.Contains(name, "container") && e != nriv1beta1.Event_EVENT_VALIDATE_CONTAINER_ADJUSTMENT:
					mask |= EventMask(e)
					matched = true
				}
			}
			if !matched {
				return 0, fmt.Errorf("unknown event %q", n)
			}
		}
	}
	return mask, nil
}

// EventName returns the short name of an event, the name of its
// PluginService method ("CreateContainer" for EVENT_CREATE_CONTAINER), or
// "Event(N)" for a number that is not an event.
func EventName(e nriv1beta1.Event) string {
	n, ok := nriv1beta1.Event_name[int32(e)]
	if !ok {
		return fmt.Sprintf("Event(%d)", e)
	}
	var b strings.Builder
	for w := range strings.SplitSeq(strings.TrimPrefix(n, "EVENT_"), "_") {
		b.WriteString(w[:1] + strings.ToLower(w[1:]))
	}
	return b.String()
}
