package check

import (
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// Error is a value that breaks a rule.
type Error struct {
	// Field is the path of the value in the message, in the form of the
	// server's policy errors: "adjust.linux.oom_score_adj",
	// "adjust.rlimits[2].type", `adjust.linux.sysctl["kernel.core_pattern"]`,
	// "update[0].linux.resources.memory.limit", "evict[1].container_id".
	Field string
	// Rule says what is wrong and which rule the value breaks.
	Rule string
}

// Error renders "Field: Rule".
func (e *Error) Error() string { return e.Field + ": " + e.Rule }

// FieldPath is Field: the server names it in the refusal's status details.
func (e *Error) FieldPath() string { return e.Field }

// under puts e below parent: parent + "." + e.Field, or parent + e.Field
// when e.Field is an index or a key ("[...]"), or parent alone when e is
// about the parent itself. It is only called on the failure path.
func (e *Error) under(parent string) *Error {
	switch {
	case parent == "":
	case e.Field == "":
		e.Field = parent
	case e.Field[0] == '[':
		e.Field = parent + e.Field
	default:
		e.Field = parent + "." + e.Field
	}
	return e
}

// at puts e below element i of the list named list ("mounts[3]").
func (e *Error) at(list string, i int) *Error {
	return e.under(list + "[" + strconv.Itoa(i) + "]")
}

// atKey puts e below the entry key of the map named m
// (`sysctl["kernel.core_pattern"]`).
func (e *Error) atKey(m, key string) *Error {
	return e.under(m + "[" + untrusted.Quote(key) + "]")
}

// fail returns a violation of the value itself, rule fixed.
func fail(rule string) *Error { return &Error{Rule: rule} }

// failAt returns a violation of the sub-field field.
func failAt(field, rule string) *Error { return &Error{Field: field, Rule: rule} }

// asError converts a *Error to an error, keeping nil nil.
func asError(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}

// Adjustment checks every value of a plugin's container adjustment. path is
// the path of the adjustment in its message ("adjust"). It returns the first
// violation, as a *Error, in field order; nil a is valid.
func Adjustment(path string, a *nriv1beta1.ContainerAdjustment) error {
	if e := checkAdjustment(a); e != nil {
		return e.under(path)
	}
	return nil
}

// Updates checks container updates: element i is reported as path[i]
// ("update[0].linux.resources.memory.limit").
func Updates(path string, us []*nriv1beta1.ContainerUpdate) error {
	return asError(checkUpdates(path, us))
}

// Evictions checks container evictions: element i is reported as path[i]
// ("evict[1].container_id").
func Evictions(path string, es []*nriv1beta1.ContainerEviction) error {
	return asError(checkEvictions(path, es))
}

// Resources checks the cgroup resources r, reported below path
// ("update[0].linux.resources"). nil r is valid.
func Resources(path string, r *nriv1beta1.LinuxResources) error {
	if e := checkResources(r); e != nil {
		return e.under(path)
	}
	return nil
}

// Response checks a plugin's whole answer: the adjustment, updates and
// evictions of a *CreateContainerResponse ("adjust", "update", "evict"), the
// updates and evictions of an *UpdateContainerResponse,
// *StopContainerResponse, *SynchronizeResponse or
// *UpdateContainersRequest. Any other message has nothing to check: nil.
func Response(m proto.Message) error {
	switch r := m.(type) {
	case *nriv1beta1.CreateContainerResponse:
		if e := checkAdjustment(r.GetAdjust()); e != nil {
			return e.under("adjust")
		}
		return asError(checkAnswer(r.GetUpdate(), r.GetEvict()))
	case *nriv1beta1.UpdateContainerResponse:
		return asError(checkAnswer(r.GetUpdate(), r.GetEvict()))
	case *nriv1beta1.StopContainerResponse:
		return asError(checkAnswer(r.GetUpdate(), r.GetEvict()))
	case *nriv1beta1.SynchronizeResponse:
		return asError(checkAnswer(r.GetUpdate(), r.GetEvict()))
	case *nriv1beta1.UpdateContainersRequest:
		return asError(checkAnswer(r.GetUpdate(), r.GetEvict()))
	}
	return nil
}

// checkAnswer checks the update and evict lists of a response.
func checkAnswer(us []*nriv1beta1.ContainerUpdate, es []*nriv1beta1.ContainerEviction) *Error {
	if e := checkUpdates("update", us); e != nil {
		return e
	}
	return checkEvictions("evict", es)
}

func checkUpdates(path string, us []*nriv1beta1.ContainerUpdate) *Error {
	for i, u := range us {
		if u == nil {
			continue
		}
		if e := checkUpdate(u); e != nil {
			return e.at(path, i)
		}
	}
	return nil
}

// checkUpdate checks one update: container_id (1), linux.resources (2).
func checkUpdate(u *nriv1beta1.ContainerUpdate) *Error {
	if e := containerID(u.GetContainerId()); e != nil {
		return e.under("container_id")
	}
	if e := checkResources(u.GetLinux().GetResources()); e != nil {
		return e.under("linux.resources")
	}
	return nil
}

func checkEvictions(path string, es []*nriv1beta1.ContainerEviction) *Error {
	for i, ev := range es {
		if ev == nil {
			continue
		}
		if e := containerID(ev.GetContainerId()); e != nil {
			return e.under("container_id").at(path, i)
		}
		if r := ev.GetReason(); len(r) > MaxReasonLen {
			return tooLong(r, MaxReasonLen, "MaxReasonLen").under("reason").at(path, i)
		}
	}
	return nil
}

// firstInMap checks every entry of m with entry and returns the violation
// of the first bad key in sorted order, so that the same map is always
// refused the same way. It allocates only when an entry is bad. entry
// reports a violation relative to the entry (Field "" for the entry
// itself, "name" for a field of a message value).
func firstInMap[V any](name string, m map[string]V, entry func(key string, v V) *Error) *Error {
	found := false
	for k, v := range m {
		if entry(k, v) != nil {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if e := entry(k, m[k]); e != nil {
			return e.atKey(name, k)
		}
	}
	return nil // not reached: entry is deterministic
}
