// Package untrusted renders text that plugins and clients sent into error
// messages and log lines: quoted, bounded, and never cut inside a rune, so
// that no input is ever echoed whole.
package untrusted

import (
	"strconv"
	"unicode/utf8"
)

// QuoteLen is how many bytes of a value Quote shows.
const QuoteLen = 64

// Quote quotes at most the first QuoteLen bytes of s, saying how long s
// really was when it is longer.
func Quote(s string) string {
	if len(s) <= QuoteLen {
		return strconv.Quote(s)
	}
	return strconv.Quote(Cut(s, QuoteLen)) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// Cut cuts s to at most n bytes without splitting a rune.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
