package expr

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CompileError reports a problem found while compiling a guard or template.
// Line and Col locate it inside the source that was compiled (both 1-based;
// Col counts characters, not bytes), so a story loader can add the YAML
// position of the string to point at the exact spot.
type CompileError struct {
	Line int
	Col  int
	Msg  string
}

// Error renders "col N: msg" (or "line L, col N: msg" past the first line).
func (e *CompileError) Error() string { return positioned(e.Line, e.Col, e.Msg) }

// EvalError reports a failure while evaluating a compiled guard or template
// (a field fetched from nil, an invalid comparison, a guard that did not
// yield a bool, a failing filter). Line and Col locate the failing part of
// the source when known (0 otherwise). Err is the underlying library error,
// if any.
type EvalError struct {
	Line int
	Col  int
	Msg  string
	Err  error
}

// Error renders "col N: msg" (or "line L, col N: msg"; just msg when the
// position is unknown).
func (e *EvalError) Error() string { return positioned(e.Line, e.Col, e.Msg) }

// Unwrap returns the underlying library error.
func (e *EvalError) Unwrap() error { return e.Err }

func positioned(line, col int, msg string) string {
	switch {
	case col <= 0:
		return msg
	case line > 1:
		return fmt.Sprintf("line %d, col %d: %s", line, col, msg)
	default:
		return fmt.Sprintf("col %d: %s", col, msg)
	}
}

// lineCol converts a byte offset in src to a 1-based line and a 1-based
// character column.
func lineCol(src string, off int) (line, col int) {
	if off > len(src) {
		off = len(src)
	}
	if off < 0 {
		off = 0
	}
	before := src[:off]
	line = 1 + strings.Count(before, "\n")
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	return line, utf8.RuneCountInString(before) + 1
}

// runeToByte converts a rune offset in s to a byte offset (clamped to len).
func runeToByte(s string, runeOff int) int {
	if runeOff <= 0 {
		return 0
	}
	n := 0
	for i := range s {
		if n == runeOff {
			return i
		}
		n++
	}
	return len(s)
}

// mapped is text produced by rewriting a source, remembering for every
// output byte which source byte it came from, so errors reported against the
// rewritten text can point into the source the author wrote.
type mapped struct {
	b      strings.Builder
	origin []int
}

// copy appends src[from:to] unchanged.
func (m *mapped) copy(src string, from, to int) {
	m.b.WriteString(src[from:to])
	for i := from; i < to; i++ {
		m.origin = append(m.origin, i)
	}
}

// insert appends generated text, attributed to source offset at.
func (m *mapped) insert(s string, at int) {
	m.b.WriteString(s)
	for range len(s) {
		m.origin = append(m.origin, at)
	}
}

// append appends another mapped text (whose origins already refer to the
// same source).
func (m *mapped) append(o *mapped) {
	m.b.WriteString(o.String())
	m.origin = append(m.origin, o.origin...)
}

func (m *mapped) String() string { return m.b.String() }

// sourceOffset maps a byte offset in the rewritten text back to the source.
func (m *mapped) sourceOffset(off int) int {
	switch {
	case len(m.origin) == 0:
		return 0
	case off < 0:
		return m.origin[0]
	case off >= len(m.origin):
		return m.origin[len(m.origin)-1] + 1
	default:
		return m.origin[off]
	}
}
