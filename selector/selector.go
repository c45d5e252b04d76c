package selector

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	nriv1beta1 "github.com/nri-grpc/nri-grpc/gen/go/nri/v1beta1"
	"github.com/nri-grpc/nri-grpc/internal/untrusted"
)

// The bounds of event selectors (RegisterPluginRequest.selectors).
const (
	// MaxSelectors is the most selectors a plugin may register.
	MaxSelectors = 16
	// MaxEntries is the most entries of each list of a selector.
	MaxEntries = 64
	// MaxEntryLen is the longest entry of a list, in bytes.
	MaxEntryLen = 253
	// MaxLabelSelectorLen is the longest pod_labels, in bytes.
	MaxLabelSelectorLen = 4096
)

// Error is an invalid selector: the field path ("selectors[1].pod_labels",
// "selectors[0].namespaces[3]", "selectors") and the rule it breaks.
type Error struct {
	// Field is the path of the offending field.
	Field string
	// Rule says what is wrong; it quotes at most a short prefix of the
	// input.
	Rule string
}

// Error returns "field: rule".
func (e *Error) Error() string { return e.Field + ": " + e.Rule }

// quote quotes at most a short prefix of untrusted input.
func quote(s string) string { return untrusted.Quote(s) }

// errNotUTF8 is the encoding rule of every string.
var errNotUTF8 = errors.New("not valid UTF-8")

// checkString checks a string's length and encoding.
func checkString(s string, limit int) error {
	if len(s) > limit {
		return fmt.Errorf("%d bytes, at most %d", len(s), limit)
	}
	if !utf8.ValidString(s) {
		return errNotUTF8
	}
	return nil
}

// compiled is one validated selector.
type compiled struct {
	namespaces []string // sorted
	labels     LabelSelector
	names      []string
	handlers   []string // sorted; a list may hold ""
	hasHandler bool     // runtime_handlers was set (a list of one "" selects the default handler)
}

// Set is a compiled list of selectors: it matches a pod or container when
// any selector does. A nil or empty Set matches everything. A Set is
// immutable and safe for concurrent use.
type Set struct {
	sels []compiled
	src  []*nriv1beta1.EventSelector
}

// Compile validates sels and compiles them. Errors are [*Error] with field
// paths under "selectors". An empty list compiles to an empty Set, which
// matches everything.
func Compile(sels []*nriv1beta1.EventSelector) (*Set, error) {
	if len(sels) > MaxSelectors {
		return nil, &Error{Field: "selectors", Rule: fmt.Sprintf("%d selectors, at most %d", len(sels), MaxSelectors)}
	}
	out := &Set{sels: make([]compiled, 0, len(sels)), src: make([]*nriv1beta1.EventSelector, 0, len(sels))}
	for i, sel := range sels {
		c, err := compile(fmt.Sprintf("selectors[%d]", i), sel)
		if err != nil {
			return nil, err
		}
		out.sels = append(out.sels, c)
		out.src = append(out.src, proto.CloneOf(sel))
	}
	return out, nil
}

// MustCompile is Compile for selectors known to be valid (tests, constant
// tables); it panics on an error.
func MustCompile(sels ...*nriv1beta1.EventSelector) *Set {
	s, err := Compile(sels)
	if err != nil {
		panic(err)
	}
	return s
}

func compile(path string, sel *nriv1beta1.EventSelector) (compiled, error) {
	var c compiled
	if sel == nil {
		return c, nil
	}
	var err error
	if c.namespaces, err = checkList(path+".namespaces", sel.GetNamespaces()); err != nil {
		return c, err
	}
	if c.names, err = checkList(path+".container_names", sel.GetContainerNames()); err != nil {
		return c, err
	}
	if c.handlers, err = checkList(path+".runtime_handlers", sel.GetRuntimeHandlers()); err != nil {
		return c, err
	}
	c.hasHandler = len(c.handlers) > 0
	if c.labels, err = ParseLabels(sel.GetPodLabels()); err != nil {
		return c, &Error{Field: path + ".pod_labels", Rule: err.Error()}
	}
	slices.Sort(c.namespaces)
	slices.Sort(c.handlers)
	return c, nil
}

// checkList checks a list's length and each entry.
func checkList(path string, list []string) ([]string, error) {
	if len(list) > MaxEntries {
		return nil, &Error{Field: path, Rule: fmt.Sprintf("%d entries, at most %d", len(list), MaxEntries)}
	}
	for i, e := range list {
		if err := checkString(e, MaxEntryLen); err != nil {
			return nil, &Error{Field: fmt.Sprintf("%s[%d]", path, i), Rule: err.Error()}
		}
	}
	return slices.Clone(list), nil
}

// Empty reports whether the Set has no selector (matches everything).
func (s *Set) Empty() bool { return s == nil || len(s.sels) == 0 }

// Selectors returns a copy of the selectors the Set was compiled from.
func (s *Set) Selectors() []*nriv1beta1.EventSelector {
	if s == nil {
		return nil
	}
	out := make([]*nriv1beta1.EventSelector, len(s.src))
	for i, sel := range s.src {
		out[i] = proto.CloneOf(sel)
	}
	return out
}

// MatchPod reports whether the Set selects the pod, for a pod event:
// container_names are not looked at.
func (s *Set) MatchPod(pod *nriv1beta1.PodSandbox) bool {
	if s.Empty() {
		return true
	}
	for i := range s.sels {
		if s.sels[i].matchPod(pod) {
			return true
		}
	}
	return false
}

// MatchContainer reports whether the Set selects the container ctr of pod,
// for a container event: the pod's fields and the container's name.
func (s *Set) MatchContainer(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) bool {
	if s.Empty() {
		return true
	}
	for i := range s.sels {
		c := &s.sels[i]
		if c.matchPod(pod) && c.matchName(ctr.GetName()) {
			return true
		}
	}
	return false
}

// Match is MatchPod when ctr is nil, else MatchContainer.
func (s *Set) Match(pod *nriv1beta1.PodSandbox, ctr *nriv1beta1.Container) bool {
	if ctr == nil {
		return s.MatchPod(pod)
	}
	return s.MatchContainer(pod, ctr)
}

func (c *compiled) matchPod(pod *nriv1beta1.PodSandbox) bool {
	if len(c.namespaces) > 0 {
		if _, ok := slices.BinarySearch(c.namespaces, pod.GetNamespace()); !ok {
			return false
		}
	}
	if c.hasHandler {
		if _, ok := slices.BinarySearch(c.handlers, pod.GetRuntimeHandler()); !ok {
			return false
		}
	}
	return c.labels.Matches(pod.GetLabels())
}

func (c *compiled) matchName(name string) bool {
	if len(c.names) == 0 {
		return true
	}
	for _, p := range c.names {
		if MatchName(p, name) {
			return true
		}
	}
	return false
}

// MatchName reports whether name matches the glob pattern: '*' matches
// any run of characters (the empty one included), '?' exactly one
// character (a rune), every other character itself. There is no escape:
// a '\' is a literal backslash, and a pattern cannot match a literal '*'
// or '?' other than through a wildcard. Matching takes at most
// len(pattern) × len(name) steps.
func MatchName(pattern, name string) bool {
	p, n := 0, 0
	starP, starN := -1, 0
	for n < len(name) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				starP, starN = p, n
				p++
				continue
			case '?':
				_, size := utf8.DecodeRuneInString(name[n:])
				p, n = p+1, n+size
				continue
			default:
				pr, psize := utf8.DecodeRuneInString(pattern[p:])
				nr, nsize := utf8.DecodeRuneInString(name[n:])
				if pr == nr && psize == nsize && pattern[p:p+psize] == name[n:n+nsize] {
					p, n = p+psize, n+nsize
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		// Backtrack: the last '*' takes one more character.
		_, size := utf8.DecodeRuneInString(name[starN:])
		starN += size
		p, n = starP+1, starN
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// String renders selectors compactly for operators, one selector as
// "ns=a|b labels=app=web names=web-* handlers=runc", selectors separated
// by "; ", empty fields left out and an empty selector as "*". No
// selectors at all renders as "".
func String(sels []*nriv1beta1.EventSelector) string {
	parts := make([]string, 0, len(sels))
	for _, sel := range sels {
		var f []string
		if l := sel.GetNamespaces(); len(l) > 0 {
			f = append(f, "ns="+strings.Join(l, "|"))
		}
		if l := sel.GetPodLabels(); l != "" {
			f = append(f, "labels="+l)
		}
		if l := sel.GetContainerNames(); len(l) > 0 {
			f = append(f, "names="+strings.Join(l, "|"))
		}
		if l := sel.GetRuntimeHandlers(); len(l) > 0 {
			f = append(f, "handlers="+strings.Join(l, "|"))
		}
		if len(f) == 0 {
			f = append(f, "*")
		}
		parts = append(parts, strings.Join(f, " "))
	}
	return strings.Join(parts, "; ")
}
