package selector

import (
	"testing"
	"unicode/utf8"
)

// FuzzParseLabels: the parser never panics, refuses what is not UTF-8 or
// too long, keeps errors short, and what it accepts prints to a selector
// that parses to the same thing.
func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{"", "a=b", "a in (b,c),!d,e", "x notin (,)", "a/b=c", "k!=v", "a==", "x > 1", "(", ")", "!", "in in (in)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := ParseLabels(s)
		if err != nil {
			if len(err.Error()) > 400 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if !utf8.ValidString(s) || len(s) > MaxLabelSelectorLen {
			t.Fatalf("accepted %q", s)
		}
		again, err := ParseLabels(sel.String())
		if err != nil || again.String() != sel.String() {
			t.Fatalf("%q printed as %q, which parses to %q, %v", s, sel.String(), again.String(), err)
		}
		sel.Matches(map[string]string{"a": "b", "in": ""})
	})
}

// FuzzMatchName: never panics; a pattern without wildcards matches only
// itself; "*" matches everything.
func FuzzMatchName(f *testing.F) {
	f.Add("web-*", "web-1")
	f.Add("?*?", "é")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > MaxEntryLen || len(name) > 1024 {
			return
		}
		got := MatchName(pattern, name)
		if !containsWild(pattern) && got != (pattern == name) && utf8.ValidString(name) && utf8.ValidString(pattern) {
			t.Fatalf("MatchName(%q, %q) = %v", pattern, name, got)
		}
		if !MatchName("*", name) {
			t.Fatalf("* does not match %q", name)
		}
	})
}

func containsWild(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '*' || s[i] == '?' {
			return true
		}
	}
	return false
}
