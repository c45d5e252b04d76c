package server

import (
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

// refusal builds the status of a refused registration: the message names
// the field and the rule; details carry ErrorInfo (reason = the refusal's
// enum name, metadata "field") and, for a field, a BadRequest violation.
func refusal(code codes.Code, why nriv1beta1.RegistrationRefusal, field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	st := status.New(code, msg)
	info := &errdetails.ErrorInfo{Reason: why.String(), Domain: nri.ErrorDomain}
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
// creating event (nri.DispatchError): the message names the plugins;
// ErrorInfo carries the outcome and the plugins' full names, which
// nri.OutcomeOf and nri.PluginsOf read back.
func dispatchError(code codes.Code, outcome nriv1beta1.DispatchOutcome, plugins []string, format string, args ...any) error {
	return nri.DispatchError(code, outcome, plugins, fmt.Sprintf(format, args...))
}

// invalid builds the INVALID_ARGUMENT status for a bad request field.
func invalid(field, format string, args ...any) error {
	msg := field + ": " + fmt.Sprintf(format, args...)
	st := status.New(codes.InvalidArgument, msg)
	if d, err := st.WithDetails(
		&errdetails.ErrorInfo{Reason: nriv1beta1.DispatchOutcome_DISPATCH_OUTCOME_ERROR.String(), Domain: nri.ErrorDomain,
			Metadata: map[string]string{"field": field}},
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: msg}}},
	); err == nil {
		st = d
	}
	return st.Err()
}
