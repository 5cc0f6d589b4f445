package expr

import (
	"fmt"
	"strings"
)

// EvalShell renders the template as a bash command line: the value of
// every {{ expr }} is quoted for the place it lands in the command (a bare
// word, inside "…", inside '…', inside $( ) or backticks, in the body of a
// here-document, in a comment), so it is one piece of data whatever it
// holds, never shell syntax. A value that would end a here-document (a
// line of it is the delimiter) cannot be made data there: it is an error. A literal returns
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
	if sh.err != nil {
		return "", sh.err
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
	shComment                   // after a # that starts a word, to the line's end
	shHeredoc                   // the body of a here-document
)

type shellFrame struct {
	kind  shellKind
	depth int  // parentheses open inside a $( … ) or ( … )
	arith bool // $(( … )) or (( … )): arithmetic, where << is a shift
	hd    *heredoc
}

// heredoc is a here-document (<<WORD or <<-WORD): its body starts on the
// line after the operator and ends at a line that is WORD alone (after
// leading tabs with <<-). In its body $, ` and \ are special unless WORD
// was quoted.
type heredoc struct {
	delim   string
	tabs    bool // <<-: leading tabs are stripped from each line
	quoted  bool // a quoted WORD: the body is literal
	line    []byte
	tainted bool // a spliced value is on the current line
}

// ended reports whether line ends h.
func (h *heredoc) ended(line []byte) bool {
	l := string(line)
	if h.tabs {
		l = strings.TrimLeft(l, "\t")
	}
	return l == h.delim
}

// hdWord reads the WORD after << (the delimiter), quotes and all.
type hdWord struct {
	h                       *heredoc
	word                    []byte
	started                 bool
	single, double, escaped bool
}

// shellWriter follows bash's quoting through the literal text of a
// command as it is written, so each spliced value can be quoted for the
// context it lands in.
type shellWriter struct {
	frames  []shellFrame
	escape  bool       // the previous byte was a backslash that escapes this one
	dollar  bool       // the previous byte was an unquoted or double-quoted $
	notWord bool       // the previous byte does not end a word: a # here is no comment
	opened  bool       // the previous byte was the ( that opened the top frame
	lt      int        // unquoted < in a row just before
	hdw     *hdWord    // reading a here-document's WORD
	pending []*heredoc // here-documents whose bodies start at the next newline
	err     error
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
	if f.kind == shHeredoc {
		s.heredocStep(f, c)
		return
	}
	if s.escape {
		s.escape = false
		s.notWord = true
		return
	}
	dollar, opened := s.dollar, s.opened
	s.dollar, s.opened = false, false
	switch f.kind {
	case shComment:
		if c == '\n' {
			s.pop()
			s.newline()
		}
		return
	case shSingle:
		if c == '\'' {
			s.pop()
		}
		return
	case shDouble:
		s.doubleStep(c, dollar)
		return
	}
	s.wordStep(f, c, dollar, opened)
}

// doubleStep follows a byte inside "…".
func (s *shellWriter) doubleStep(c byte, dollar bool) {
	if c == '"' {
		s.pop()
		return
	}
	s.expandStep(c, dollar)
}

// expandStep follows a byte of text in which the shell expands: inside
// "…" and in an unquoted here-document, a backslash escapes the next
// byte, and $( and ` open a substitution.
func (s *shellWriter) expandStep(c byte, dollar bool) {
	switch c {
	case '\\':
		s.escape = true
	case '$':
		s.dollar = true
	case '(':
		if dollar {
			s.push(shSubst)
			s.opened = true
		}
	case '`':
		s.push(shBacktick)
	}
}

// wordStep follows a byte outside quotes (shBare, shSubst, shBacktick).
func (s *shellWriter) wordStep(f *shellFrame, c byte, dollar, opened bool) {
	if s.hdw != nil && s.delimStep(c) {
		return
	}
	if s.lt == 2 && c != '<' && !f.arith {
		s.lt = 0
		s.hdw = &hdWord{h: &heredoc{tabs: c == '-'}}
		if c == '-' || s.delimStep(c) {
			return
		}
	}
	if c == '<' {
		s.lt++
	} else {
		s.lt = 0
	}
	word := !s.notWord
	s.notWord = !strings.ContainsRune(" \t\n;&|()<>", rune(c))
	switch c {
	case '\\':
		s.escape = true
	case '\'':
		s.push(shSingle)
	case '"':
		s.push(shDouble)
	case '#':
		if word && !dollar {
			s.push(shComment)
		}
	case '\n':
		s.newline()
	case '$':
		s.dollar = true
	case '`':
		if f.kind == shBacktick {
			s.pop()
		} else {
			s.push(shBacktick)
		}
	case '(':
		switch {
		case opened:
			f.arith = true // $(( or ((
			f.depth++
		case dollar || f.kind != shSubst:
			s.push(shSubst)
			s.opened = true
		default:
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

// newline starts the body of the first pending here-document, if any.
func (s *shellWriter) newline() {
	s.notWord = false
	if s.hdw != nil {
		s.delimEnd()
	}
	if len(s.pending) > 0 {
		h := s.pending[0]
		s.pending = s.pending[1:]
		s.frames = append(s.frames, shellFrame{kind: shHeredoc, hd: h})
	}
}

// delimStep takes c as part of the WORD after <<, reporting whether it
// did (a byte that ends the word is left to the caller).
func (s *shellWriter) delimStep(c byte) bool {
	w := s.hdw
	switch {
	case w.single:
		if c == '\'' {
			w.single = false
		} else {
			w.word = append(w.word, c)
		}
	case w.escaped:
		w.escaped = false
		w.word = append(w.word, c)
	case w.double:
		switch c {
		case '"':
			w.double = false
		case '\\':
			w.escaped = true
		default:
			w.word = append(w.word, c)
		}
	case c == '\'':
		w.h.quoted, w.single, w.started = true, true, true
	case c == '"':
		w.h.quoted, w.double, w.started = true, true, true
	case c == '\\':
		w.h.quoted, w.escaped, w.started = true, true, true
	case c == ' ' || c == '\t':
		if w.started {
			s.delimEnd()
			return false
		}
	case strings.IndexByte("\n;&|()<>", c) >= 0:
		s.delimEnd()
		return false
	default:
		w.word = append(w.word, c)
		w.started = true
	}
	return true
}

// delimEnd queues the here-document whose WORD was read.
func (s *shellWriter) delimEnd() {
	h := s.hdw.h
	h.delim = string(s.hdw.word)
	s.hdw = nil
	s.pending = append(s.pending, h)
}

// heredocStep follows the body of a here-document: a line that is its
// delimiter ends it; in an unquoted one, $( and ` open a substitution.
func (s *shellWriter) heredocStep(f *shellFrame, c byte) {
	h := f.hd
	if c == '\n' {
		if h.ended(h.line) {
			if h.tainted {
				s.fail(h)
			}
			s.pop()
			s.newline()
			return
		}
		h.line, h.tainted = h.line[:0], false
		return
	}
	h.line = append(h.line, c)
	if h.quoted {
		return
	}
	if s.escape {
		s.escape = false
		return
	}
	dollar := s.dollar
	s.dollar = false
	s.expandStep(c, dollar)
}

func (s *shellWriter) fail(h *heredoc) {
	if s.err == nil {
		s.err = fmt.Errorf("a value spliced into the here-document <<%s holds the line %q, which would end it: "+
			"pass the value some other way (an environment variable, a file) or pick a delimiter it cannot hold", h.delim, h.delim)
	}
}

// value writes a spliced value, quoted for the current context. The
// context does not change: a quoted value opens and closes its own quotes.
func (s *shellWriter) value(b *strings.Builder, v string) {
	s.escape, s.dollar, s.opened, s.lt = false, false, false, 0
	s.notWord = true
	if s.hdw != nil {
		if s.err == nil {
			s.err = fmt.Errorf("a spliced value cannot be the delimiter of a here-document (after <<): write the delimiter out")
		}
		return
	}
	switch f := s.top(); f.kind {
	case shHeredoc:
		s.heredocValue(b, f.hd, v)
		return
	case shComment:
		// A comment is not run, but a line break in it would end it;
		// quoted all the same, should the # not start one after all.
		singleQuote(b, strings.NewReplacer("\n", " ", "\r", " ").Replace(v))
		return
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

// heredocValue writes v into the body of h: as it is in a quoted one,
// with \ $ and ` escaped in an unquoted one; a line of v that is h's
// delimiter is an error.
func (s *shellWriter) heredocValue(b *strings.Builder, h *heredoc, v string) {
	lines := strings.Split(v, "\n")
	for i, l := range lines {
		if i > 0 {
			if h.ended(h.line) {
				s.fail(h)
			}
			h.line = h.line[:0]
		}
		h.line = append(h.line, l...)
	}
	h.tainted = true
	if h.quoted {
		b.WriteString(v)
		return
	}
	escapeInto(b, v, `\$`+"`")
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
