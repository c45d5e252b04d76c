package validate

import (
	"errors"
	"fmt"
	"strings"
)

// ErrValidation is wrapped by every rejection of the default validator, so
// errors.Is(err, ErrValidation) tells a rejection from any other error. Its
// text, "validation error", is classic NRI's.
var ErrValidation = errors.New("validation error")

// MissingPluginsError is the rejection for required plugins that are not
// registered. It wraps [ErrValidation]; its text is classic NRI's:
//
//	validation error: required plugin "foo" not present
//	validation error: required plugins "foo,bar" not present
type MissingPluginsError struct {
	// Missing lists the required plugins that are not registered, in the
	// order they were required: the operator's list first, then the
	// annotation's.
	Missing []string
}

// Error implements error.
func (e *MissingPluginsError) Error() string {
	if len(e.Missing) == 1 {
		return fmt.Sprintf("%v: required plugin %q not present", ErrValidation, e.Missing[0])
	}
	return fmt.Sprintf("%v: required plugins %q not present", ErrValidation, strings.Join(e.Missing, ","))
}

// Unwrap returns [ErrValidation].
func (e *MissingPluginsError) Unwrap() error { return ErrValidation }

// annotationError is the rejection for an annotation value that does not
// parse. Its text is classic NRI's ("invalid <key> annotation <value>:
// <cause>", without the "validation error" prefix); it wraps both
// ErrValidation and the parse error.
type annotationError struct {
	key, value string
	err        error
}

func (e *annotationError) Error() string {
	return fmt.Sprintf("invalid %s annotation %q: %v", e.key, e.value, e.err)
}

func (e *annotationError) Unwrap() []error { return []error{ErrValidation, e.err} }
