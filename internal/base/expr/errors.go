package expr

import (
	"fmt"
	"sort"
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
// rewritten text can point into the source the author wrote. The origins are
// kept as runs: a copied run maps byte by byte, an inserted one maps every
// byte to the one source offset it was attributed to.
type mapped struct {
	b    strings.Builder
	runs []run
}

// run is a stretch of output starting at out whose bytes come from src
// onwards (copied) or are all attributed to src (inserted).
type run struct {
	out, src int
	copied   bool
}

// copy appends src[from:to] unchanged.
func (m *mapped) copy(src string, from, to int) {
	if from >= to {
		return
	}
	if n := len(m.runs); n > 0 {
		if last := m.runs[n-1]; last.copied && last.src+m.b.Len()-last.out == from {
			m.b.WriteString(src[from:to]) // continues the last run
			return
		}
	}
	m.runs = append(m.runs, run{out: m.b.Len(), src: from, copied: true})
	m.b.WriteString(src[from:to])
}

// insert appends generated text, attributed to source offset at.
func (m *mapped) insert(s string, at int) {
	if s == "" {
		return
	}
	m.runs = append(m.runs, run{out: m.b.Len(), src: at})
	m.b.WriteString(s)
}

// append appends another mapped text (whose origins already refer to the
// same source).
func (m *mapped) append(o *mapped) {
	base := m.b.Len()
	for _, r := range o.runs {
		r.out += base
		m.runs = append(m.runs, r)
	}
	m.b.WriteString(o.String())
}

func (m *mapped) String() string { return m.b.String() }

// origin returns the source offset output byte off (0 <= off < length) came
// from.
func (m *mapped) origin(off int) int {
	i := sort.Search(len(m.runs), func(i int) bool { return m.runs[i].out > off }) - 1
	r := m.runs[i]
	if r.copied {
		return r.src + off - r.out
	}
	return r.src
}

// sourceOffset maps a byte offset in the rewritten text back to the source.
func (m *mapped) sourceOffset(off int) int {
	n := m.b.Len()
	switch {
	case n == 0:
		return 0
	case off < 0:
		return m.origin(0)
	case off >= n:
		return m.origin(n-1) + 1
	default:
		return m.origin(off)
	}
}
