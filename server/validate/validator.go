package validate

import (
	"fmt"
	"slices"
	"strings"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
)

// Validator is the built-in default validator. It is a pure function of the
// request: no I/O, no logging, no clock. A Validator is immutable and safe for
// concurrent use.
type Validator struct {
	cfg Config
}

// New checks cfg and returns a validator for it. An error names the offending
// TOML key: a required plugin that is not a valid name ([a-zA-Z0-9_.+-]+,
// optionally "NN-" prefixed) or is listed twice, or a toleration annotation
// key with blanks or non-ASCII characters. New keeps a copy of cfg.
func New(cfg Config) (*Validator, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.RequiredPlugins = slices.Clone(cfg.RequiredPlugins)
	return &Validator{cfg: cfg}, nil
}

// Enabled reports whether the validator has anything to do: a knob is set or
// the operator requires plugins. When it is false the server skips the
// validator entirely and builds no validation request; plugins required only
// by the [RequiredPluginsAnnotation] are then not checked by this validator.
func (v *Validator) Enabled() bool {
	c := &v.cfg
	return c.RejectOCIHookAdjustment ||
		c.RejectRuntimeDefaultSeccompAdjustment ||
		c.RejectUnconfinedSeccompAdjustment ||
		c.RejectCustomSeccompAdjustment ||
		c.RejectNamespaceAdjustment ||
		c.RejectSysctlAdjustment ||
		len(c.RequiredPlugins) > 0
}

// Validate returns nil to accept the request and a rejection otherwise. It runs
// the checks listed in the package documentation in classic order and
// returns the first failure. Every rejection wraps [ErrValidation]; a missing
// required plugin is a [*MissingPluginsError].
func (v *Validator) Validate(req *nriv1beta1.ValidateContainerAdjustmentRequest) error {
	for _, check := range [...]func(*nriv1beta1.ValidateContainerAdjustmentRequest) error{
		v.checkOCIHooks,
		v.checkSeccompPolicy,
		v.checkNamespaces,
		v.checkRequiredPlugins,
		v.checkSysctl,
	} {
		if err := check(req); err != nil {
			return err
		}
	}
	return nil
}

// fieldOwners returns the owners of the request container's fields, or nil.
func fieldOwners(req *nriv1beta1.ValidateContainerAdjustmentRequest) *nriv1beta1.FieldOwners {
	return req.GetOwners().GetOwners()[req.GetContainer().GetId()]
}

// simpleOwner returns the owner of a simple field, and whether it has one.
// Like classic NRI, any entry counts, removal markers ("-NN-name") included.
func simpleOwner(f *nriv1beta1.FieldOwners, field nriv1beta1.Field) (string, bool) {
	owner, ok := f.GetSimple()[int32(field)]
	return owner, ok
}

func (v *Validator) checkOCIHooks(req *nriv1beta1.ValidateContainerAdjustmentRequest) error {
	if req.GetAdjust() == nil || !v.cfg.RejectOCIHookAdjustment {
		return nil
	}
	owners, claimed := simpleOwner(fieldOwners(req), nriv1beta1.Field_FIELD_OCI_HOOKS)
	if !claimed {
		return nil
	}
	// Hook owners accumulate as a comma-separated list.
	offender := fmt.Sprintf("plugin %q", owners)
	if strings.Contains(owners, ",") {
		offender = fmt.Sprintf("plugins %q", owners)
	}
	return fmt.Errorf("%w: %s attempted restricted OCI hook injection", ErrValidation, offender)
}

func (v *Validator) checkSeccompPolicy(req *nriv1beta1.ValidateContainerAdjustmentRequest) error {
	if req.GetAdjust() == nil {
		return nil
	}
	owner, claimed := simpleOwner(fieldOwners(req), nriv1beta1.Field_FIELD_SECCOMP_POLICY)
	if !claimed {
		return nil
	}

	// The messages are classic NRI's, word for word: the owner is not quoted,
	// and the unconfined and custom ones have a double space.
	profile := req.GetContainer().GetLinux().GetSeccompProfile()
	switch {
	case profile == nil || profile.GetProfileType() == nriv1beta1.SecurityProfile_PROFILE_TYPE_UNCONFINED:
		if v.cfg.RejectUnconfinedSeccompAdjustment {
			return fmt.Errorf("%w: plugin %s attempted restricted  unconfined seccomp policy adjustment",
				ErrValidation, owner)
		}
	case profile.GetProfileType() == nriv1beta1.SecurityProfile_PROFILE_TYPE_RUNTIME_DEFAULT:
		if v.cfg.RejectRuntimeDefaultSeccompAdjustment {
			return fmt.Errorf("%w: plugin %s attempted restricted runtime default seccomp policy adjustment",
				ErrValidation, owner)
		}
	case profile.GetProfileType() == nriv1beta1.SecurityProfile_PROFILE_TYPE_LOCALHOST:
		if v.cfg.RejectCustomSeccompAdjustment {
			return fmt.Errorf("%w: plugin %s attempted restricted  custom seccomp policy adjustment",
				ErrValidation, owner)
		}
	}
	// An unknown profile type matches no knob and passes, as in classic NRI.
	return nil
}

func (v *Validator) checkNamespaces(req *nriv1beta1.ValidateContainerAdjustmentRequest) error {
	if req.GetAdjust() == nil || !v.cfg.RejectNamespaceAdjustment {
		return nil
	}
	// Like classic NRI, the presence of the field's entry is what counts,
	// even if it lists no namespace.
	compound, claimed := fieldOwners(req).GetCompound()[int32(nriv1beta1.Field_FIELD_NAMESPACE)]
	if !claimed {
		return nil
	}
	owners := compound.GetOwners()
	offenders := make([]string, 0, len(owners))
	for _, ns := range sortedKeys(owners) {
		offenders = append(offenders, fmt.Sprintf("%q (namespace %q)", owners[ns], ns))
	}
	return fmt.Errorf("%w: attempted restricted namespace adjustment by plugin(s) %s",
		ErrValidation, strings.Join(offenders, ", "))
}

func (v *Validator) checkRequiredPlugins(req *nriv1beta1.ValidateContainerAdjustmentRequest) error {
	operator, annotated, err := v.Required(req.GetPod(), req.GetContainer())
	if err != nil {
		return err
	}
	if missing := MissingRequired(append(operator, annotated...), req.GetPlugins()); len(missing) > 0 {
		return &MissingPluginsError{Missing: missing}
	}
	return nil
}

func (v *Validator) checkSysctl(req *nriv1beta1.ValidateContainerAdjustmentRequest) error {
	linux := req.GetAdjust().GetLinux()
	if linux == nil || !v.cfg.RejectSysctlAdjustment {
		return nil
	}
	sysctl := linux.GetSysctl()
	owners := fieldOwners(req).GetCompound()[int32(nriv1beta1.Field_FIELD_SYSCTL)].GetOwners()
	var offenders []string
	for _, key := range sortedKeys(sysctl) {
		// A pure removal ("-key") has no owner entry under its own key.
		if owner, claimed := owners[key]; claimed {
			offenders = append(offenders, owner)
		}
	}
	if len(offenders) == 0 {
		return nil
	}
	return fmt.Errorf("%w: attempted restricted sysctl adjustment by plugin(s) %s",
		ErrValidation, strings.Join(offenders, ", "))
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
