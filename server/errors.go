package server

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of nri-grpc's errors.
const ErrorDomain = "nri.v1beta1"

// refusal builds the status of a refused registration: the message names
// the field and the rule; details carry ErrorInfo (reason = the refusal's
// enum name, metadata "field") and, for a field, a BadRequest violation.
func refusal(code codes.Code, why nriv1beta1.RegistrationRefusal, field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	st := status.New(code, msg)
	info := &errdetails.ErrorInfo{Reason: why.String(), Domain: ErrorDomain}
	if field != "" {
		info.Metadata = map[string]string{"field": field}
	}
	var err error
	if field != "" {
		st, err = st.WithDetails(info, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: field, Description: msg},
		}})
	} else {
		st, err = st.WithDetails(info)
	}
	if err != nil {
		return status.Error(code, msg)
	}
	return st.Err()
}

// codeOf returns err's status code when it is an availability or deadline
// code worth passing on, else def.
func codeOf(err error, def codes.Code) codes.Code {
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		return codes.DeadlineExceeded
	case codes.Unavailable:
		return codes.Unavailable
	}
	return def
}

// dispatchError builds the error returned to the runtime for a failed
// creating event: the message names the plugins; ErrorInfo carries the
// outcome and the plugins' full names.
func dispatchError(code codes.Code, outcome nriv1beta1.DispatchOutcome, plugins []string, format string, args ...any) error {
	st := status.New(code, fmt.Sprintf(format, args...))
	if d, err := st.WithDetails(&errdetails.ErrorInfo{
		Reason:   outcome.String(),
		Domain:   ErrorDomain,
		Metadata: map[string]string{"plugins": strings.Join(plugins, ",")},
	}); err == nil {
		st = d
	}
	return st.Err()
}

// invalid builds the INVALID_ARGUMENT status for a bad request field.
func invalid(field, format string, args ...any) error {
	msg := field + ": " + fmt.Sprintf(format, args...)
	st := status.New(codes.InvalidArgument, msg)
	if d, err := st.WithDetails(
		&errdetails.ErrorInfo{Reason: nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_ERROR.String(), Domain: ErrorDomain,
			Metadata: map[string]string{"field": field}},
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: msg}}},
	); err == nil {
		st = d
	}
	return st.Err()
}

// OutcomeOf returns the DispatchOutcome recorded in an error of the
// runtime-facing entry points (CreateContainer, ...): OK for nil,
// DISPATCH_OUTCOME_REJECTED when a validator rejected the result, and so on;
// DISPATCH_OUTCOME_ERROR for an error that records none.
func OutcomeOf(err error) nriv1beta1.DispatchOutcome { return outcomeOf(err) }

// outcomeOf returns the DispatchOutcome recorded in a dispatch error.
func outcomeOf(err error) nriv1beta1.DispatchOutcome {
	if err == nil {
		return nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_OK
	}
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain {
			if v, ok := nriv1beta1.DispatchOutcome_value[info.GetReason()]; ok {
				return nriv1beta1.DispatchOutcome(v)
			}
		}
	}
	return nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_ERROR
}

// Identity is an authenticated caller.
type Identity struct {
	// Name renders the identity, for example "uid:0".
	Name string
	// UID is the unix uid of a caller on a unix socket.
	UID uint32
	// Unix is true when UID is known (a unix socket peer).
	Unix bool
}

// Authorizer is the authorization policy of the server: who may register
// which plugin, subscribe to which events, and change which fields. The
// server consults it at registration, after Configure, and on every plugin
// response before merging it.
type Authorizer interface {
	// AuthorizeRegistration returns nil when id may register req (name,
	// index, endpoint form), or a PERMISSION_DENIED status naming the rule.
	AuthorizeRegistration(ctx context.Context, id Identity, req *nriv1beta1.RegisterPluginRequest) error
	// AuthorizeSubscription returns nil when identity may receive the events
	// of mask as plugin full ("NN-name"), or an error naming the events.
	AuthorizeSubscription(identity, full string, mask uint32) error
	// AuthorizeResponse returns nil when identity may make the changes of
	// rsp (a plugin's answer to req, an event or, with EVENT_UNSPECIFIED,
	// an UpdateContainersRequest or a SynchronizeResponse with req nil), or
	// an error naming the refused field. A refused event response is an
	// availability failure of the plugin; refused unsolicited updates are
	// not applied.
	AuthorizeResponse(identity, full string, event nriv1beta1.Event, req, rsp proto.Message) error
}

// OwnerAuthorizer lets root and the server's own uid do everything and
// refuses everybody else: the default policy.
type OwnerAuthorizer uint32

// AuthorizeRegistration implements Authorizer.
func (o OwnerAuthorizer) AuthorizeRegistration(_ context.Context, id Identity, _ *nriv1beta1.RegisterPluginRequest) error {
	if id.Unix && (id.UID == 0 || id.UID == uint32(o)) {
		return nil
	}
	return refusal(codes.PermissionDenied, nriv1beta1.RegistrationRefusal_REGISTRATION_REFUSAL_NOT_PERMITTED, "",
		"identity %q may not register plugins: the default policy allows only root and uid %d", id.Name, uint32(o))
}

// AuthorizeSubscription implements Authorizer: every event is allowed.
func (OwnerAuthorizer) AuthorizeSubscription(string, string, uint32) error { return nil }

// AuthorizeResponse implements Authorizer: every change is allowed.
func (OwnerAuthorizer) AuthorizeResponse(string, string, nriv1beta1.Event, proto.Message, proto.Message) error {
	return nil
}
