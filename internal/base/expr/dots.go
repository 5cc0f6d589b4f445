package expr

// noItemDots reports whether no "." in src can be the range-item shorthand,
// judged from the character before each dot alone, so that rewriteDots can
// skip lexing the expression (which costs about as much as parsing it). A
// dot directly after a name, a number, a closing bracket or quote, or the
// "?" of "?.", is a member access, part of a number or inside a string; a
// dot after a keyword operator (in, not, ...), a space or an operator might
// be the shorthand, and so might a dot next to another dot ("..", "...").
// false means "lex to find out", never that a shorthand is present.
func noItemDots(src string) bool {
	for i := 0; i < len(src); i++ {
		if src[i] != '.' {
			continue
		}
		if i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9' {
			continue // ".5", "1.5", "x.5": a number, never the "." operator
		}
		if i == 0 || src[i-1] == '.' || (i+1 < len(src) && src[i+1] == '.') {
			return false
		}
		switch c := src[i-1]; {
		case c == ')' || c == ']' || c == '}' || c == '\'' || c == '"' || c == '`':
			// After an operand, or inside a string.
		case c == '?':
			// "?." is one operator, but "??" pairs first: after an even run
			// of "?", the dot stands alone.
			n := 0
			for j := i - 1; j >= 0 && src[j] == '?'; j-- {
				n++
			}
			if n%2 == 0 {
				return false
			}
		case isWordByte(c):
			j := i - 1
			for j > 0 && isWordByte(src[j-1]) {
				j--
			}
			if j > 0 && src[j-1] >= 0x80 {
				return false // a non-ASCII letter may start the word
			}
			if src[j] < '0' || src[j] > '9' { // not a number
				if keywordOperators[src[j:i]] {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// keywordOperators are the words expr-lang's lexer turns into operators
// rather than names; a dot after one does not follow an operand.
var keywordOperators = map[string]bool{
	"not": true, "in": true, "or": true, "and": true, "matches": true, "contains": true,
	"startsWith": true, "endsWith": true, "let": true, "if": true, "else": true,
}

// isWordByte reports whether c is an ASCII character of a name or number.
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}
