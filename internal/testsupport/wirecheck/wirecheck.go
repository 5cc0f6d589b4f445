// Package wirecheck runs the differential checks of the subprocess wire's
// one-pass decoders (plugin's request, internal/agents/subprocess's
// response, both on internal/base/jsonwire) against encoding/json: over a
// list of lines, and as a fuzz target.
package wirecheck

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Check decodes line with a one-pass decoder, reports through t where
// its result differs from encoding/json's, and returns whether the
// one-pass decoder took the line.
type Check func(t *testing.T, line string) bool

// Taken runs check on every line: the first taken lines must be taken by
// the one-pass decoder, the rest left to encoding/json.
func Taken(t *testing.T, lines []string, taken int, check Check) {
	t.Helper()
	for i, line := range lines {
		if got, want := check(t, line), i < taken; got != want {
			t.Errorf("%.80q: taken by the one-pass decoder = %v, want %v", line, got, want)
		}
	}
}

// Fuzz seeds f with lines and checks every input the line framing would
// hand a decoder: valid UTF-8 without a newline.
func Fuzz(f *testing.F, lines []string, check Check) {
	for _, line := range lines {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if !utf8.ValidString(line) || strings.ContainsRune(line, '\n') {
			return // the framing refuses or splits it first
		}
		check(t, line)
	})
}
