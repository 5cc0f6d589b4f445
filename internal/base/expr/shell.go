package expr

import "strings"

// EvalShell renders the template as a bash command line: the value of
// every {{ expr }} is quoted for the place it lands in the command (a bare
// word, inside "…", inside '…', inside $( ) or backticks), so it is one
// piece of data whatever it holds, never shell syntax. A literal returns
// its source. A template that is exactly one {{ expr }} is the whole
// command line, taken from data: it is returned unquoted (quoting it
// would make the whole line one word, the name of a program).
func (v *Value) EvalShell(env Env) (string, error) {
	switch {
	case v.single != nil:
		out, err := v.single.run(env)
		if err != nil {
			return "", err
		}
		return toText(out), nil
	case v.nodes == nil:
		return v.src, nil
	}
	var b strings.Builder
	b.Grow(len(v.src) + 16)
	sh := &shellWriter{frames: []shellFrame{{kind: shBare}}}
	if err := renderTo(&b, v.nodes, env, sh); err != nil {
		return "", err
	}
	return b.String(), nil
}

// IsWholeExpr reports whether the template is exactly one {{ expr }}.
func (v *Value) IsWholeExpr() bool { return v.single != nil }

type shellKind uint8

const (
	shBare     shellKind = iota // a word outside any quotes
	shSingle                    // inside '…'
	shDouble                    // inside "…"
	shSubst                     // inside $( … ): a bare context again
	shBacktick                  // inside ` … `: bare, with \ ` $ escaped
)

type shellFrame struct {
	kind  shellKind
	depth int // parentheses open inside a $( … )
}

// shellWriter follows bash's quoting through the literal text of a
// command as it is written, so each spliced value can be quoted for the
// context it lands in.
type shellWriter struct {
	frames []shellFrame
	escape bool // the previous byte was a backslash that escapes this one
	dollar bool // the previous byte was an unquoted or double-quoted $
}

func (s *shellWriter) top() *shellFrame { return &s.frames[len(s.frames)-1] }

func (s *shellWriter) push(k shellKind) { s.frames = append(s.frames, shellFrame{kind: k}) }

func (s *shellWriter) pop() {
	if len(s.frames) > 1 {
		s.frames = s.frames[:len(s.frames)-1]
	}
}

// text writes literal command text and follows its quoting.
func (s *shellWriter) text(b *strings.Builder, t string) {
	b.WriteString(t)
	for i := 0; i < len(t); i++ {
		s.step(t[i])
	}
}

func (s *shellWriter) step(c byte) {
	f := s.top()
	if s.escape {
		s.escape = false
		return
	}
	dollar := s.dollar
	s.dollar = false
	switch f.kind {
	case shSingle:
		if c == '\'' {
			s.pop()
		}
		return
	case shDouble:
		switch c {
		case '\\':
			s.escape = true
		case '"':
			s.pop()
		case '$':
			s.dollar = true
		case '(':
			if dollar {
				s.push(shSubst)
			}
		case '`':
			s.push(shBacktick)
		}
		return
	}
	// shBare, shSubst, shBacktick: words.
	switch c {
	case '\\':
		s.escape = true
	case '\'':
		s.push(shSingle)
	case '"':
		s.push(shDouble)
	case '$':
		s.dollar = true
	case '`':
		if f.kind == shBacktick {
			s.pop()
		} else {
			s.push(shBacktick)
		}
	case '(':
		if dollar {
			s.push(shSubst)
		} else if f.kind == shSubst {
			f.depth++
		}
	case ')':
		if f.kind == shSubst {
			if f.depth == 0 {
				s.pop()
			} else {
				f.depth--
			}
		}
	}
}

// value writes a spliced value, quoted for the current context. The
// context does not change: a quoted value opens and closes its own quotes.
func (s *shellWriter) value(b *strings.Builder, v string) {
	s.escape, s.dollar = false, false
	switch s.top().kind {
	case shSingle:
		b.WriteString(strings.ReplaceAll(v, "'", `'\''`))
	case shDouble:
		escapeInto(b, v, `\"$`+"`")
	case shBacktick:
		var q strings.Builder
		singleQuote(&q, v)
		escapeInto(b, q.String(), `\$`+"`")
	default:
		singleQuote(b, v)
	}
}

// singleQuote writes v as one single-quoted word (” when empty).
func singleQuote(b *strings.Builder, v string) {
	b.WriteByte('\'')
	b.WriteString(strings.ReplaceAll(v, "'", `'\''`))
	b.WriteByte('\'')
}

// escapeInto writes v with a backslash before every byte of special.
func escapeInto(b *strings.Builder, v, special string) {
	for i := 0; i < len(v); i++ {
		if strings.IndexByte(special, v[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
}
