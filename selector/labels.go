package selector

import (
	"fmt"
	"slices"
	"strings"
)

// Operator is a label-selector requirement's operator.
type Operator int

// The operators of Kubernetes label selectors that event selectors support.
// The set-based "gt" and "lt" operators of Kubernetes field selectors are
// not label-selector syntax and are refused.
const (
	// Equals is "key=value" or "key==value": the label is present with
	// that value.
	Equals Operator = iota + 1
	// NotEquals is "key!=value": the label is absent or has another value.
	NotEquals
	// In is "key in (a,b)": the label is present with one of the values.
	In
	// NotIn is "key notin (a,b)": the label is absent or has none of the
	// values.
	NotIn
	// Exists is "key": the label is present.
	Exists
	// DoesNotExist is "!key": the label is absent.
	DoesNotExist
)

// String returns the operator as written in a selector.
func (o Operator) String() string {
	switch o {
	case Equals:
		return "="
	case NotEquals:
		return "!="
	case In:
		return "in"
	case NotIn:
		return "notin"
	case Exists:
		return "exists"
	case DoesNotExist:
		return "!"
	}
	return "?"
}

// Requirement is one requirement of a label selector.
type Requirement struct {
	Key    string
	Op     Operator
	Values []string // sorted and deduplicated; one for Equals and NotEquals
}

// matches reports whether labels satisfy r.
func (r *Requirement) matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Op {
	case Equals, In:
		return ok && slices.Contains(r.Values, v)
	case NotEquals, NotIn:
		return !ok || !slices.Contains(r.Values, v)
	case Exists:
		return ok
	case DoesNotExist:
		return !ok
	}
	return false
}

// LabelSelector is a parsed Kubernetes label selector: requirements that
// must all hold. The zero value matches every set of labels.
type LabelSelector struct {
	reqs []Requirement
}

// Requirements returns the selector's requirements in the order written.
func (l LabelSelector) Requirements() []Requirement { return slices.Clone(l.reqs) }

// Empty reports whether the selector has no requirement (matches all).
func (l LabelSelector) Empty() bool { return len(l.reqs) == 0 }

// Matches reports whether labels satisfy every requirement.
func (l LabelSelector) Matches(labels map[string]string) bool {
	for i := range l.reqs {
		if !l.reqs[i].matches(labels) {
			return false
		}
	}
	return true
}

// String writes the selector in canonical form.
func (l LabelSelector) String() string {
	parts := make([]string, 0, len(l.reqs))
	for _, r := range l.reqs {
		switch r.Op {
		case Exists:
			parts = append(parts, r.Key)
		case DoesNotExist:
			parts = append(parts, "!"+r.Key)
		case Equals, NotEquals:
			parts = append(parts, r.Key+r.Op.String()+r.Values[0])
		default:
			list := strings.Join(r.Values, ",")
			if list == "" {
				list = "," // the one empty value, as "(,)"
			}
			parts = append(parts, r.Key+" "+r.Op.String()+" ("+list+")")
		}
	}
	return strings.Join(parts, ",")
}

// The lexer's tokens.
type tokenKind int

const (
	tokEnd tokenKind = iota
	tokIdent
	tokComma
	tokOpenPar
	tokClosePar
	tokEq       // =
	tokDoubleEq // ==
	tokNotEq    // !=
	tokBang     // !
	tokIn       // in
	tokNotIn    // notin
	tokCompare  // < or > (not supported)
)

type token struct {
	kind tokenKind
	text string
	pos  int
}

// lexer splits a label selector into tokens, as Kubernetes' does:
// identifiers are runs of characters that are neither blanks nor one of
// "!=(),<>".
type lexer struct {
	s   string
	pos int
}

func isSpecial(c byte) bool { return strings.IndexByte("!=(),<>", c) >= 0 }

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func (l *lexer) next() token {
	for l.pos < len(l.s) && isBlank(l.s[l.pos]) {
		l.pos++
	}
	start := l.pos
	if l.pos >= len(l.s) {
		return token{kind: tokEnd, pos: start}
	}
	c := l.s[l.pos]
	two := func(k tokenKind) token { l.pos += 2; return token{kind: k, text: l.s[start:l.pos], pos: start} }
	one := func(k tokenKind) token { l.pos++; return token{kind: k, text: l.s[start:l.pos], pos: start} }
	switch {
	case c == '=' && l.pos+1 < len(l.s) && l.s[l.pos+1] == '=':
		return two(tokDoubleEq)
	case c == '!' && l.pos+1 < len(l.s) && l.s[l.pos+1] == '=':
		return two(tokNotEq)
	case c == '=':
		return one(tokEq)
	case c == '!':
		return one(tokBang)
	case c == ',':
		return one(tokComma)
	case c == '(':
		return one(tokOpenPar)
	case c == ')':
		return one(tokClosePar)
	case c == '<' || c == '>':
		return one(tokCompare)
	}
	for l.pos < len(l.s) && !isBlank(l.s[l.pos]) && !isSpecial(l.s[l.pos]) {
		l.pos++
	}
	text := l.s[start:l.pos]
	switch text {
	case "in":
		return token{kind: tokIn, text: text, pos: start}
	case "notin":
		return token{kind: tokNotIn, text: text, pos: start}
	}
	return token{kind: tokIdent, text: text, pos: start}
}

// parser is a one-token-lookahead parser over lexer.
type parser struct {
	lx  lexer
	tok token
}

func (p *parser) advance() token {
	t := p.tok
	p.tok = p.lx.next()
	return t
}

// syntaxError describes a parse failure at a position of the input.
type syntaxError struct {
	pos  int
	rule string
}

func (p *parser) fail(pos int, format string, args ...any) error {
	return &syntaxError{pos: pos, rule: fmt.Sprintf(format, args...)}
}

func (e *syntaxError) Error() string { return fmt.Sprintf("at byte %d: %s", e.pos, e.rule) }

// ParseLabels parses a Kubernetes label selector:
//
//	selector    = [ requirement { "," requirement } ]
//	requirement = key | "!" key
//	            | key ( "=" | "==" | "!=" ) value
//	            | key ( "in" | "notin" ) "(" [ value { "," value } ] ")"
//
// with blanks allowed between tokens. A key is an optional prefix (a DNS
// subdomain of at most 253 characters) and "/", then a name of at most 63
// characters: alphanumerics with '-', '_' or '.' inside. A value is empty
// or of the name's form. "in" and "notin" need at least one value. The
// input must be valid UTF-8 and at most MaxLabelSelectorLen bytes; the
// work done is linear in its length. The empty string selects everything.
func ParseLabels(s string) (LabelSelector, error) {
	if err := checkString(s, MaxLabelSelectorLen); err != nil {
		return LabelSelector{}, err
	}
	p := &parser{lx: lexer{s: s}}
	p.advance()
	var sel LabelSelector
	if p.tok.kind == tokEnd {
		return sel, nil
	}
	for {
		r, err := p.requirement()
		if err != nil {
			return LabelSelector{}, err
		}
		sel.reqs = append(sel.reqs, r)
		switch t := p.advance(); t.kind {
		case tokEnd:
			return sel, nil
		case tokComma:
			if p.tok.kind == tokEnd {
				return LabelSelector{}, p.fail(p.tok.pos, "a requirement must follow ','")
			}
		default:
			return LabelSelector{}, p.fail(t.pos, "expected ',' or the end after a requirement, found %s", describe(t))
		}
	}
}

func describe(t token) string {
	if t.kind == tokEnd {
		return "the end"
	}
	return quote(t.text)
}

func (p *parser) requirement() (Requirement, error) {
	if p.tok.kind == tokBang {
		p.advance()
		key, err := p.key()
		if err != nil {
			return Requirement{}, err
		}
		return Requirement{Key: key, Op: DoesNotExist}, nil
	}
	key, err := p.key()
	if err != nil {
		return Requirement{}, err
	}
	switch t := p.tok; t.kind {
	case tokEnd, tokComma:
		return Requirement{Key: key, Op: Exists}, nil
	case tokEq, tokDoubleEq, tokNotEq:
		p.advance()
		op := Equals
		if t.kind == tokNotEq {
			op = NotEquals
		}
		v := ""
		if isWord(p.tok.kind) {
			v = p.advance().text
		} else if p.tok.kind != tokEnd && p.tok.kind != tokComma {
			return Requirement{}, p.fail(p.tok.pos, "expected a value after %q, found %s", t.text, describe(p.tok))
		}
		if err := checkValue(v); err != nil {
			return Requirement{}, p.fail(t.pos, "label value %s: %v", quote(v), err)
		}
		return Requirement{Key: key, Op: op, Values: []string{v}}, nil
	case tokIn, tokNotIn:
		p.advance()
		vals, err := p.values()
		if err != nil {
			return Requirement{}, err
		}
		op := In
		if t.kind == tokNotIn {
			op = NotIn
		}
		return Requirement{Key: key, Op: op, Values: vals}, nil
	case tokCompare:
		return Requirement{}, p.fail(t.pos, "operator %q is not supported (use =, ==, !=, in, notin, exists or !exists)", t.text)
	default:
		return Requirement{}, p.fail(t.pos, "expected an operator (=, ==, !=, in, notin), ',' or the end after key %s, found %s",
			quote(key), describe(t))
	}
}

// isWord reports a token that can be a value: an identifier, or "in" and
// "notin", which are valid label values.
func isWord(k tokenKind) bool { return k == tokIdent || k == tokIn || k == tokNotIn }

func (p *parser) key() (string, error) {
	t := p.tok
	if t.kind != tokIdent {
		// "in" and "notin" are keywords where a key is expected, as in
		// Kubernetes.
		return "", p.fail(t.pos, "expected a label key, found %s", describe(t))
	}
	p.advance()
	if err := CheckKey(t.text); err != nil {
		return "", p.fail(t.pos, "label key %s: %v", quote(t.text), err)
	}
	return t.text, nil
}

// values parses "(" [ value { "," value } ] ")".
func (p *parser) values() ([]string, error) {
	if p.tok.kind != tokOpenPar {
		return nil, p.fail(p.tok.pos, "expected '(' after in/notin, found %s", describe(p.tok))
	}
	open := p.advance()
	var vals []string
	expectValue := true
	for {
		t := p.tok
		switch {
		case t.kind == tokClosePar:
			p.advance()
			if expectValue && len(vals) > 0 {
				vals = append(vals, "") // "(a,)": a trailing empty value
			}
			if len(vals) == 0 {
				return nil, p.fail(open.pos, "in/notin need at least one value")
			}
			slices.Sort(vals)
			return slices.Compact(vals), nil
		case t.kind == tokComma:
			p.advance()
			if expectValue {
				vals = append(vals, "") // "(,a)" or "(a,,b)": an empty value
			}
			expectValue = true
		case expectValue && isWord(t.kind):
			p.advance()
			if err := checkValue(t.text); err != nil {
				return nil, p.fail(t.pos, "label value %s: %v", quote(t.text), err)
			}
			vals = append(vals, t.text)
			expectValue = false
		default:
			return nil, p.fail(t.pos, "expected a value, ',' or ')' in the value list, found %s", describe(t))
		}
	}
}

// CheckKey checks a label key: an optional DNS-subdomain prefix and "/",
// then a name (see ParseLabels).
func CheckKey(key string) error {
	name := key
	if prefix, rest, hasPrefix := strings.Cut(key, "/"); hasPrefix {
		name = rest
		if err := checkDNSSubdomain(prefix); err != nil {
			return fmt.Errorf("prefix: %w", err)
		}
		if strings.Contains(rest, "/") {
			return fmt.Errorf("at most one '/'")
		}
	}
	if name == "" {
		return fmt.Errorf("name must not be empty")
	}
	return checkName(name)
}

// checkValue checks a label value: empty, or of a label name's form.
func checkValue(v string) error {
	if v == "" {
		return nil
	}
	return checkName(v)
}

// checkName checks the name part of a key, or a value: at most 63
// characters, alphanumerics with '-', '_' or '.' inside.
func checkName(s string) error {
	if len(s) > 63 {
		return fmt.Errorf("%d characters, at most 63", len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlnum(c):
		case (c == '-' || c == '_' || c == '.') && i > 0 && i < len(s)-1:
		default:
			return fmt.Errorf("must be alphanumerics with '-', '_' or '.' inside (byte %d is %q)", i, rune(c))
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// checkDNSSubdomain checks a DNS subdomain (RFC 1123): at most 253
// characters, dot-separated labels of lower-case alphanumerics and '-',
// starting and ending with an alphanumeric.
func checkDNSSubdomain(s string) error {
	if s == "" {
		return fmt.Errorf("must not be empty")
	}
	if len(s) > 253 {
		return fmt.Errorf("%d characters, at most 253", len(s))
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" {
			return fmt.Errorf("empty DNS label")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			lowerAlnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
			if !lowerAlnum && !(c == '-' && i > 0 && i < len(label)-1) {
				return fmt.Errorf("must be a DNS subdomain: lower-case alphanumerics, '-' and '.' (found %q)", rune(c))
			}
		}
	}
	return nil
}
