package expr

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser/lexer"
)

// hasItemDot is what rewriteDots decides from the tokens: whether some "."
// token does not follow an operand. ok is false when src does not lex.
func hasItemDot(src string) (found, ok bool) {
	toks, err := lexer.Lex(file.NewSource(src))
	if err != nil {
		return false, false
	}
	for i, t := range toks {
		if t.Kind == lexer.Operator && t.Value == "." && (i == 0 || !endsOperand(toks[i-1])) {
			return true, true
		}
	}
	return false, true
}

// TestNoItemDots checks the shortcut against the lexer: whenever it says no
// dot can be the range-item shorthand, lexing must agree.
func TestNoItemDots(t *testing.T) {
	fixed := []struct {
		src  string
		want bool // noItemDots
	}{
		{"world.count > 1", true},
		{"world.verdict?.decision == 'approve'", true},
		{"world.a.b[0].c", true},
		{"len(world.x).y", true},
		{"'a.b' + \"c.d\"", true},
		{"1.5 + .5 + x.5", true},
		{"#acc.x", true},
		{"$env.x", true},
		{".", false},
		{".name", false},
		{"upper(.name)", false},
		{"x in .items", false},
		{"not.x", false},
		{"a ??.b", false},
		{"a ???.b", true},
		{"1..3", false},
		{"x ...", false},
		{"é.x", false},
	}
	for _, tt := range fixed {
		if got := noItemDots(tt.src); got != tt.want {
			t.Errorf("noItemDots(%q) = %v, want %v", tt.src, got, tt.want)
		}
		if found, ok := hasItemDot(tt.src); ok && found && noItemDots(tt.src) {
			t.Errorf("noItemDots(%q) = true, but the lexer finds an item dot", tt.src)
		}
	}
	// Random sources built from the pieces that matter to the lexer.
	pieces := []string{"world", "x", "1", "5", ".", "..", "?", "??", " ", "in", "not", "and", "if",
		"'", "\"", "`", "\\", "(", ")", "[", "]", "{", "}", "#", "$", "_", "é", "/*", "*/", "//", "\n", "+", "&&", ",", "0x"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50000 {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		src := b.String()
		if !noItemDots(src) {
			continue
		}
		if found, ok := hasItemDot(src); ok && found {
			t.Fatalf("noItemDots(%q) = true, but the lexer finds an item dot", src)
		}
	}
}
