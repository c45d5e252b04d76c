package validate

import (
	"slices"
	"strconv"

	yaml "go.yaml.in/yaml/v3"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/nri"
)

const (
	// AnnotationDomain is the domain of NRI's own annotations.
	AnnotationDomain = "noderesource.dev"

	// RequiredPluginsAnnotation is the pod annotation whose effective value
	// (see [nri.EffectiveAnnotation]) is a YAML or JSON list of plugins a
	// container requires, in addition to the operator's
	// [Config.RequiredPlugins]. Entries are names ("foo") or full names
	// ("10-foo").
	RequiredPluginsAnnotation = "required-plugins." + AnnotationDomain

	// DefaultTolerateMissingPluginsAnnotation is the conventional value of
	// [Config.TolerateMissingPluginsAnnotation]. It is not applied by
	// default: toleration is off unless the operator names a key.
	DefaultTolerateMissingPluginsAnnotation = "tolerate-missing-plugins." + AnnotationDomain
)

// Required returns the plugins that must be registered for ctr of pod to be
// created, in two lists:
//
//   - operator is the operator's [Config.RequiredPlugins] (a copy). The
//     tolerate-missing-plugins annotation never waives it.
//   - annotated is the list in the pod's [RequiredPluginsAnnotation], looked
//     up with [nri.EffectiveAnnotation]. It is nil when the annotation is absent,
//     or when the effective value of [Config.TolerateMissingPluginsAnnotation]
//     is true; the annotation is then not parsed at all.
//
// The lists are not deduplicated. err, which wraps [ErrValidation] and names
// the annotation key, reports a toleration value that is not a boolean
// (strconv.ParseBool) or a required-plugins value that is not a list of
// strings; operator is returned even then.
func (v *Validator) Required(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) (operator, annotated []string, err error) {
	operator = slices.Clone(v.cfg.RequiredPlugins)
	annotations := pod.GetAnnotations()
	name := ctr.GetName()

	if key := v.cfg.TolerateMissingPluginsAnnotation; key != "" {
		if value, ok := nri.EffectiveAnnotation(annotations, key, name); ok {
			tolerate, perr := strconv.ParseBool(value)
			if perr != nil {
				return operator, nil, &annotationError{key: key, value: value, err: perr}
			}
			if tolerate {
				return operator, nil, nil
			}
		}
	}

	value, ok := nri.EffectiveAnnotation(annotations, RequiredPluginsAnnotation, name)
	if !ok {
		return operator, nil, nil
	}
	if perr := yaml.Unmarshal([]byte(value), &annotated); perr != nil {
		return operator, nil, &annotationError{key: RequiredPluginsAnnotation, value: value, err: perr}
	}
	return operator, annotated, nil
}

// MissingRequired returns the entries of required that no plugin in
// registered matches, in order, or nil if all are present. An entry matches a
// plugin by name ("foo") or by full name ("10-foo"). Registration is enough:
// the plugin need not subscribe to any event.
func MissingRequired(required []string, registered []*nriv1beta1.PluginInstance) []string {
	if len(required) == 0 {
		return nil
	}
	present := make(map[string]struct{}, 2*len(registered))
	for _, p := range registered {
		if p == nil {
			continue
		}
		present[p.GetName()] = struct{}{}
		present[p.GetIndex()+"-"+p.GetName()] = struct{}{}
	}
	var missing []string
	for _, r := range required {
		if _, ok := present[r]; !ok {
			missing = append(missing, r)
		}
	}
	return missing
}
