// Package bidi makes the Unicode bidirectional controls that reorder text
// visible. An override (U+202A–202E) or isolate (U+2066–2069) inside a
// prompt, an answer or a command's output would make a page show text in
// another order than it is stored (a "Trojan Source" string: a name that
// reads as report.txt but is exe.txt…). The HTML views write each as a
// mark naming it instead.
package bidi

import "strings"

// controls maps each control to its mark.
var controls = strings.NewReplacer(
	"\u202a", "[U+202A LRE]",
	"\u202b", "[U+202B RLE]",
	"\u202c", "[U+202C PDF]",
	"\u202d", "[U+202D LRO]",
	"\u202e", "[U+202E RLO]",
	"\u2066", "[U+2066 LRI]",
	"\u2067", "[U+2067 RLI]",
	"\u2068", "[U+2068 FSI]",
	"\u2069", "[U+2069 PDI]",
)

// Reveal replaces every bidi override and isolate in s with a visible mark
// ("[U+202E RLO]"). The marks hold no character HTML or JSON escapes, so
// Reveal may run over a whole page or JSON document.
func Reveal(s string) string {
	if !Has(s) {
		return s
	}
	return controls.Replace(s)
}

// Has reports whether s holds a bidi override or isolate. They all encode
// as E2 80 AA–AE or E2 81 A6–A9 in UTF-8.
func Has(s string) bool {
	for i := strings.IndexByte(s, 0xe2); i >= 0 && i+2 < len(s); {
		b1, b2 := s[i+1], s[i+2]
		if (b1 == 0x80 && b2 >= 0xaa && b2 <= 0xae) || (b1 == 0x81 && b2 >= 0xa6 && b2 <= 0xa9) {
			return true
		}
		j := strings.IndexByte(s[i+1:], 0xe2)
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}
