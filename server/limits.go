package server

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// Limits on what a plugin sends at registration (docs/PROTOCOL.md §17).
// Every string is also checked to be valid UTF-8.
const (
	// MaxPluginNameLen bounds plugin_name (also a metrics label and part of
	// every log line and record about the plugin).
	MaxPluginNameLen = 128
	// MaxVersionLen bounds nri_version and plugin_version.
	MaxVersionLen = 128
	// MaxEndpointLen bounds endpoint (a unix socket path is further bound
	// by the kernel's 107 bytes).
	MaxEndpointLen = 512
	// MaxMessageLen bounds what nrid keeps or passes on of a message a
	// plugin sent (a veto's reason, an error): longer ones are clipped.
	MaxMessageLen = 1024
)

// clip returns s as valid UTF-8 of at most MaxMessageLen bytes, marking a
// cut: what a plugin says is logged, recorded and returned, never unbounded.
func clip(s string) string {
	if len(s) <= MaxMessageLen && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxMessageLen {
		return s
	}
	return untrusted.Cut(s, MaxMessageLen) + fmt.Sprintf("... (clipped, %d bytes)", len(s))
}

// checkText refuses a registration string that is too long or not UTF-8.
func checkText(field, v string, limit int) error {
	if len(v) > limit {
		return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES, field,
			"%s: %d bytes, the maximum is %d", field, len(v), limit)
	}
	if !utf8.ValidString(v) {
		return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES, field,
			"%s: not valid UTF-8", field)
	}
	return nil
}

// checkDuration refuses a Duration that protobuf's own rules reject
// (nanos outside ±999,999,999 or of the other sign than seconds, seconds
// beyond ±10,000 years).
func checkDuration(field string, d *durationpb.Duration) error {
	if d == nil {
		return nil
	}
	if err := d.CheckValid(); err != nil {
		return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES, field,
			"%s: not a valid google.protobuf.Duration (seconds %d, nanos %d)", field, d.GetSeconds(), d.GetNanos())
	}
	return nil
}

// checkRegistration checks everything in a registration that needs no
// state: identity, the sizes and encoding of its strings, capabilities and
// timeouts. It runs before the endpoint is dialed, so a refusal names the
// real problem, and before anything quotes the request.
func checkRegistration(reg Registration) error {
	if err := checkIdentity(reg.Name, reg.Index); err != nil {
		return err
	}
	for _, f := range []struct {
		field, v string
		limit    int
	}{
		{"nri_version", reg.NRIVersion, MaxVersionLen},
		{"plugin_version", reg.PluginVersion, MaxVersionLen},
		{"endpoint", reg.Endpoint, MaxEndpointLen},
	} {
		if err := checkText(f.field, f.v, f.limit); err != nil {
			return err
		}
	}
	if _, err := compileSelectors(reg.Selectors); err != nil {
		return err
	}
	if err := checkRegistrationStatus(reg); err != nil {
		return err
	}
	if m := reg.Capabilities.GetMaxMessageSize(); m != 0 && m < 64<<10 {
		return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES,
			"capabilities.max_message_size", "capabilities.max_message_size: %d is below the minimum of 65536 bytes", m)
	}
	t := reg.Timeouts
	if err := checkDuration("timeouts.request", t.GetRequest()); err != nil {
		return err
	}
	if err := checkDuration("timeouts.synchronize", t.GetSynchronize()); err != nil {
		return err
	}
	if n := len(t.GetEvents()); n > int(nriv1beta1.Event_EVENT_LAST) {
		return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES,
			"timeouts.events", "timeouts.events: %d entries, at most one per event (%d)", n, nriv1beta1.Event_EVENT_LAST-1)
	}
	var seen [nriv1beta1.Event_EVENT_LAST]bool
	for i, et := range t.GetEvents() {
		e := et.GetEvent()
		if e <= nriv1beta1.Event_EVENT_UNSPECIFIED || e >= nriv1beta1.Event_EVENT_LAST {
			return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES,
				fmt.Sprintf("timeouts.events[%d].event", i), "timeouts.events[%d].event: %d is not an event", i, e)
		}
		if seen[e] {
			return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES,
				fmt.Sprintf("timeouts.events[%d].event", i), "timeouts.events[%d].event: %v has an earlier entry; at most one per event", i, e)
		}
		seen[e] = true
		// An entry is an override: one without a duration overrides
		// nothing, and is a mistake of the plugin's, not a default.
		if et.GetTimeout() == nil {
			return refusal(codes.InvalidArgument, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_INVALID_CAPABILITIES,
				fmt.Sprintf("timeouts.events[%d].timeout", i), "timeouts.events[%d].timeout: missing; an entry must give the duration for %v", i, e)
		}
		if err := checkDuration(fmt.Sprintf("timeouts.events[%d].timeout", i), et.GetTimeout()); err != nil {
			return err
		}
	}
	return nil
}
