package bidi

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReveal(t *testing.T) {
	for r := rune(0x2000); r < 0x2100; r++ {
		s := "a" + string(r) + "b"
		control := (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
		if Has(s) != control {
			t.Errorf("Has(U+%04X) = %v", r, !control)
		}
		got := Reveal(s)
		if control && (strings.ContainsRune(got, r) || !strings.HasPrefix(got, "a[U+") || !utf8.ValidString(got)) {
			t.Errorf("Reveal(U+%04X) = %q", r, got)
		}
		if !control && got != s {
			t.Errorf("Reveal changed U+%04X: %q", r, got)
		}
	}
	if got := Reveal("x\u202ey\u2069"); got != "x[U+202E RLO]y[U+2069 PDI]" {
		t.Errorf("Reveal = %q", got)
	}
	if Has("\xe2") || Has("\xe2\x80") || Has("plain") {
		t.Error("Has on short or plain input")
	}
}
