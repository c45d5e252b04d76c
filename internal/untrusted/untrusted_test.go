package untrusted

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	if got := Quote("short"); got != `"short"` {
		t.Errorf("short: %s", got)
	}
	long := strings.Repeat("é", 100) // 200 bytes
	got := Quote(long)
	if !strings.HasSuffix(got, "... (200 bytes)") || len(got) > QuoteLen+40 {
		t.Errorf("long: %s", got)
	}
}

func TestCutKeepsRunes(t *testing.T) {
	s := strings.Repeat("é", 10) // 20 bytes
	for n := 0; n <= len(s); n++ {
		c := Cut(s, n)
		if len(c) > n || !utf8.ValidString(c) || len(c) < n-1 {
			t.Errorf("Cut(%d) = %q", n, c)
		}
	}
}
