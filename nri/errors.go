package nri

import (
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of nri-grpc's errors:
// dispatch failures (reason: a DispatchOutcome name) and registration
// refusals (reason: a RegistrationRefusal name).
const ErrorDomain = "nri.v1beta1"

// pluginsKey is the ErrorInfo metadata key that lists the plugins of a
// dispatch failure.
const pluginsKey = "plugins"

// DispatchError returns the error status of a failed creating event, as
// the server returns it to runtimes: code and msg, with a
// google.rpc.ErrorInfo detail in ErrorDomain whose reason is the name of
// outcome and whose metadata "plugins" lists the full names of the plugins
// involved ("NN-name", comma-separated). OutcomeOf and PluginsOf read it
// back; docs/PROTOCOL.md describes it for other languages.
func DispatchError(code codes.Code, outcome nriv1beta1.DispatchOutcome, plugins []string, msg string) error {
	st := status.New(code, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{
		Reason:   outcome.String(),
		Domain:   ErrorDomain,
		Metadata: map[string]string{pluginsKey: strings.Join(plugins, ",")},
	}); err == nil {
		st = d
	}
	return st.Err()
}

// OutcomeOf returns the DispatchOutcome an error of the runtime-facing
// entry points records (server.Server.CreateContainer and the others, or
// the same AdaptationService calls over gRPC): DISPATCH_OUTCOME_OK for nil,
// DISPATCH_OUTCOME_VETOED when a plugin vetoed the event, and so on, and
// DISPATCH_OUTCOME_ERROR for an error that records no outcome. err may wrap
// the status (fmt.Errorf with %w).
func OutcomeOf(err error) nriv1beta1.DispatchOutcome {
	if err == nil {
		return nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_OK
	}
	if _, outcome, ok := dispatchInfo(err); ok {
		return outcome
	}
	return nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_ERROR
}

// PluginsOf returns the full names ("NN-name") of the plugins a dispatch
// failure names, in the server's order: the plugin that vetoed, the
// plugins that conflicted, the validators that rejected, or the required
// plugins that were unavailable. It returns nil for nil, for an error that
// records no dispatch outcome, and for a failure that names no plugin.
func PluginsOf(err error) []string {
	if err == nil {
		return nil
	}
	info, _, ok := dispatchInfo(err)
	if !ok {
		return nil
	}
	var out []string
	for p := range strings.SplitSeq(info.GetMetadata()[pluginsKey], ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// dispatchInfo returns the first ErrorInfo of err's status that is in
// ErrorDomain and whose reason names a DispatchOutcome.
func dispatchInfo(err error) (*errdetails.ErrorInfo, nriv1beta1.DispatchOutcome, bool) {
	// status.Convert finds a status that err wraps; any other error has no
	// details.
	for _, d := range status.Convert(err).Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != ErrorDomain {
			continue
		}
		if v, ok := nriv1beta1.DispatchOutcome_value[info.GetReason()]; ok {
			return info, nriv1beta1.DispatchOutcome(v), true
		}
	}
	return nil, 0, false
}
