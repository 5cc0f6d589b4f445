package expr

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/flosch/pongo2/v6"
)

// Text is a compiled text template (view, say, prompt files): pongo2, i.e.
// Django syntax, with autoescape off (story-format.md §11).
type Text struct {
	src string
	tpl *pongo2.Template
	// renames are the references WithNames renamed, as replacements in
	// the rewritten source (nil for none). The source as handed to pongo2,
	// which pongo2 keeps its own copy of, is not kept: a render error makes
	// it again from src and renames (mapping) to point into src.
	renames []splice
	literal bool // src holds no "{": it renders as it is, without pongo2
	menu    bool // a tag reads the computed menu
	// reads are the world keys it reads (WorldReads), found on first ask.
	reads     []WorldRead
	readsOnce sync.Once
}

const (
	showFunc  = "__kitsoki_show__" // as a function (any expression) and a filter (simple ones)
	envKey    = "__k"              // short: pongo2 matches every context key against a regexp
	scopeTag  = "__kitsoki_scope__"
	scopeOpen = "{% " + scopeTag + " %}"
	scopeEnd  = "{% end" + scopeTag + " %}"
)

var (
	textOnce sync.Once
	textErr  error
	// textSets holds the template sets text templates are parsed in. A set
	// parses one template at a time (pongo2 records state in it on every
	// FromString), so each parse takes one from the pool, and concurrent
	// parses use different, identically configured sets.
	textSets sync.Pool
	// inlineSets are the sets of texts holding an InlineInclude: include
	// is not banned in them.
	inlineSets sync.Pool
)

// textSet returns a template set to parse one text template in; the caller
// puts it back in its pool (textSets, or inlineSets when inline is set).
// On first use it registers the filters and the scope tag (a process-wide
// pongo2 registry).
func textSet(inline bool) (*pongo2.TemplateSet, *sync.Pool, error) {
	textOnce.Do(func() {
		if textErr = registerFilters(); textErr != nil {
			return
		}
		if textErr = pongo2.RegisterTag(scopeTag, scopeParser); textErr != nil {
			return
		}
		textErr = pongo2.RegisterTag(tokensTag, tokensParser)
	})
	if textErr != nil {
		return nil, nil, textErr
	}
	pool := &textSets
	if inline {
		pool = &inlineSets
	}
	if set, ok := pool.Get().(*pongo2.TemplateSet); ok {
		return set, pool, nil
	}
	set := pongo2.NewSet("kitsoki", inlineLoader{})
	// No file access from a story's templates: the loader puts a story's
	// template files together when it loads, and ssi reads arbitrary
	// files. A text holding an InlineInclude (the one include the loader
	// writes, of text carried in its file name) is parsed in a set that
	// keeps include, whose loader serves only that text.
	banned := []string{"include", "extends", "import", "ssi"}
	if inline {
		banned = banned[1:]
	}
	for _, tag := range banned {
		if err := set.BanTag(tag); err != nil {
			return nil, nil, err
		}
	}
	return set, pool, nil
}

// scopeNode wraps every text template. At render time it makes the caller's
// Env the template's variables, turns autoescape off and provides the value
// formatter.
type scopeNode struct{ body *pongo2.NodeWrapper }

func (n *scopeNode) Execute(ctx *pongo2.ExecutionContext, w pongo2.TemplateWriter) *pongo2.Error {
	// A template included with only (InlineInclude) runs in the context
	// pongo2's include gave it: its with pairs, and no Env.
	if env, ok := ctx.Public[envKey].(Env); ok {
		ctx.Public = pongo2.Context(env)
	}
	ctx.Autoescape = false
	ctx.Private[showFunc] = show
	ctx.Private["available"] = textAvailable
	ctx.Private["blocked"] = textBlocked
	ctx.Private["blocked_reason"] = textBlockedReason
	ctx.Private["intent_status"] = textIntentStatus
	return n.body.Execute(ctx, w)
}

func scopeParser(doc *pongo2.Parser, _ *pongo2.Token, _ *pongo2.Parser) (pongo2.INodeTag, *pongo2.Error) {
	body, _, err := doc.WrapUntilTag("end" + scopeTag)
	if err != nil {
		return nil, err
	}
	return &scopeNode{body: body}, nil
}

// inlinePrefix starts the file name of an InlineInclude.
const inlinePrefix = "kitsoki:inline:"

// InlineInclude returns the file name under which pongo2's include tag
// reads text itself: {% include "<InlineInclude(text)>" with k=v only %}
// renders text with pongo2's include, in the context include gives it
// (with only, its with pairs and nothing else). The loader writes it for
// {% include "F" … only %}; F's text travels in the name, so no file is
// read when the template renders.
func InlineInclude(text string) string {
	return inlinePrefix + base64.RawURLEncoding.EncodeToString([]byte(text))
}

// inlineLoader serves the text of an InlineInclude name, rewritten as
// every text template is, and refuses every other template lookup.
type inlineLoader struct{}

func (inlineLoader) Abs(_, name string) string { return name }
func (inlineLoader) Get(path string) (io.Reader, error) {
	enc, ok := strings.CutPrefix(path, inlinePrefix)
	if !ok {
		return nil, fmt.Errorf("text templates cannot load %q: a story's template files are put together when it loads", path)
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("inline include: %w", err)
	}
	return strings.NewReader(rewriteText(string(b), true).String()), nil
}

// CompileText compiles a text template. Before pongo2 parses it, every
// " ?? " inside {{ }} and {% %} becomes "|default:", and every {{ x }} is
// routed through the same formatter value templates use (so maps and lists
// print as JSON, floats without padding, bools as true/false, nil as "").
// Errors are *CompileError values pointing into src.
func CompileText(src string, opts ...CompileOption) (*Text, error) {
	if !strings.Contains(src, "{") {
		// No tag, variable or comment can start: pongo2 would render the
		// text as it is, so it is kept as it is.
		return &Text{src: src, literal: true}, nil
	}
	set, pool, err := textSet(strings.Contains(src, inlinePrefix))
	if err != nil {
		return nil, err
	}
	defer pool.Put(set)
	m := rewriteText(src, true)
	var reps []splice
	if names := configOf(opts).names; names != nil && mayRefer(src) {
		if reps = textRenames(set, m.String(), names); len(reps) > 0 {
			m = m.splice(reps)
		}
	}
	tpl, err := parseText(set, m)
	if err != nil {
		line, col, msg := m.locate(src, err)
		if strings.Contains(msg, scopeTag) {
			// An unclosed block swallowed the scope tag's end; parsing
			// without the wrapper gives pongo2's own message for it.
			bare := rewriteText(src, false)
			if _, err := parseText(set, bare); err != nil {
				line, col, msg = bare.locate(src, err)
			}
		}
		return nil, &CompileError{Line: line, Col: col, Msg: msg}
	}
	return &Text{src: src, tpl: tpl, renames: reps, menu: textUsesMenu(src)}, nil
}

// mapping is the text as CompileText handed it to pongo2, made again, with
// where each byte came from in the source: for a render error's position.
func (t *Text) mapping() *mapped {
	m := rewriteText(t.src, true)
	if len(t.renames) > 0 {
		m = m.splice(t.renames)
	}
	return m
}

// textUsesMenu reports whether a {{ }} or {% %} tag of src reads the menu.
func textUsesMenu(src string) bool {
	for pos := 0; pos < len(src); {
		i := strings.IndexByte(src[pos:], '{')
		if i < 0 || pos+i+1 >= len(src) {
			return false
		}
		open := pos + i
		kind := src[open+1]
		if kind != '{' && kind != '%' {
			pos = open + 1
			continue
		}
		end := tagEnd(src, open+2, closerOf(kind))
		if end < 0 {
			return false
		}
		if tagUsesMenu(src[open+2 : end-2]) {
			return true
		}
		pos = end
	}
	return false
}

func parseText(set *pongo2.TemplateSet, m *mapped) (*pongo2.Template, error) {
	return set.FromString(m.String())
}

// Source returns the template text as written.
func (t *Text) Source() string { return t.src }

// Render renders the template against env with pongo2. Missing values
// render empty. Failures are *EvalError values pointing into the source.
//
// pongo2 panics where it builds the message for a variable with a [ ]
// subscript that it cannot resolve (a field or index of a value that has
// none: its variableResolver.String is unimplemented for subscripts); that
// panic becomes an *EvalError instead of ending the process.
func (t *Text) Render(env Env) (out string, err error) {
	if t.literal {
		return t.src, nil
	}
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("pongo2 failed while rendering the template (panic: %v)", r)
			if r == "unimplemented" {
				msg = "a variable with a [ ] subscript reads a field or an index of a value that has none " +
					"(pongo2 cannot say which); check the value each step of it reads"
			}
			out, err = "", &EvalError{Msg: msg, Err: fmt.Errorf("pongo2 panic: %v", r)}
		}
	}()
	// Only one key goes through pongo2's per-render context set-up (which
	// copies the context and checks every key with a regexp); the scope tag
	// wrapping the template swaps the whole Env in.
	out, err = t.tpl.Execute(pongo2.Context{envKey: env})
	if err != nil {
		line, col, msg := t.mapping().locate(t.src, err)
		return "", &EvalError{Line: line, Col: col, Msg: msg, Err: err}
	}
	return out, nil
}

// locate turns a pongo2 error, whose line and column refer to the rewritten
// text, into a position in src and a message without pongo2's prefix.
func (m *mapped) locate(src string, err error) (line, col int, msg string) {
	var pe *pongo2.Error
	if !errors.As(err, &pe) {
		return 0, 0, err.Error()
	}
	line, col = pe.Line, pe.Column
	if pe.OrigError != nil {
		msg = pe.OrigError.Error()
	} else {
		msg = pe.Error()
	}
	// An error raised inside a function argument comes back flattened into
	// the message ("[Error (where: …) | Line L Col C near '…'] msg"); the
	// inner position is the more precise one.
	for {
		sm := nestedErr.FindStringSubmatch(msg)
		if sm == nil {
			break
		}
		if sm[1] != "" {
			line, _ = strconv.Atoi(sm[1])
			col, _ = strconv.Atoi(sm[2])
		}
		msg = sm[3]
	}
	if sm := bannedTag.FindStringSubmatch(msg); sm != nil {
		msg = fmt.Sprintf("the %q tag is not available in story text templates (no include, extends, import or ssi)", sm[1])
	}
	if line <= 0 {
		return 0, 0, msg
	}
	out := m.String()
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(out[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	off += max(col-1, 0)
	line, col = lineCol(src, m.sourceOffset(off))
	return line, col, msg
}

var nestedErr = regexp.MustCompile(`(?s)^\[Error[^|\]]*(?:\| Line (\d+) Col (\d+)[^\]]*)?\] (.*)$`)

// filterChain matches a dotted name or literal followed by filters with simple
// arguments: world.x, world.x|default:"none", .5|floatformat:2.
var filterChain = regexp.MustCompile(`^[\w.]+(\|\w+(:("([^"\\]|\\.)*"|'([^'\\]|\\.)*'|-?[\w.]+))?)*$`)

var bannedTag = regexp.MustCompile(`^Usage of tag '(\w+)' is not allowed`)

var verbatimEnd = regexp.MustCompile(`\{%-?\s*endverbatim\s*-?%\}`)

// rewriteText prepares a text template for pongo2: the scope tag around the
// whole template (when wrap is set), ?? → |default: inside tags, and
// {{ x }} → {{ x|show }} or {{ show(x) }}.
func rewriteText(src string, wrap bool) *mapped {
	m := &mapped{}
	m.b.Grow(len(src) + len(scopeOpen) + len(scopeEnd) + 32)
	if wrap {
		m.insert(scopeOpen, 0)
	}
	pos := 0
	for pos < len(src) {
		i := strings.IndexByte(src[pos:], '{')
		if i < 0 || pos+i+1 >= len(src) {
			break
		}
		open := pos + i
		kind := src[open+1]
		if kind != '{' && kind != '%' && kind != '#' {
			m.copy(src, pos, open+1)
			pos = open + 1
			continue
		}
		m.copy(src, pos, open)
		end := tagEnd(src, open+2, closerOf(kind))
		if end < 0 { // unterminated: leave it for pongo2 to report
			m.copy(src, open, len(src))
			pos = len(src)
			break
		}
		switch kind {
		case '#':
			m.copy(src, open, end)
		case '%':
			if isVerbatim(src[open+2 : end-2]) {
				if loc := verbatimEnd.FindStringIndex(src[end:]); loc != nil {
					m.copy(src, open, end+loc[1])
					pos = end + loc[1]
					continue
				}
			}
			m.copy(src, open, open+2)
			if at := forIterableEnd(src, open+2, end-2); at > 0 {
				// {% for x in EXPR %}: EXPR|iterFilter, so a string
				// iterates nothing (see filterIter)
				rewriteDefault(m, src, open+2, at)
				m.insert("|"+iterFilter, at)
				rewriteDefault(m, src, at, end-2)
			} else {
				rewriteDefault(m, src, open+2, end-2)
			}
			m.copy(src, end-2, end)
		case '{':
			rewriteOutput(m, src, open, end)
		}
		pos = end
	}
	m.copy(src, pos, len(src))
	if wrap {
		m.insert(scopeEnd, len(src))
	}
	return m
}

var (
	forTag      = regexp.MustCompile(`^-?\s*for\s+\w+(\s*,\s*\w+)?\s+in\s+\S`)
	forTrailing = regexp.MustCompile(`(\s+(reversed|sorted))*\s*-?\s*$`)
)

// forIterableEnd returns the offset just past the iterable of a for tag
// whose body is src[from:to] (before reversed/sorted), 0 for other tags.
func forIterableEnd(src string, from, to int) int {
	body := src[from:to]
	if !forTag.MatchString(body) {
		return 0
	}
	loc := forTrailing.FindStringIndex(body)
	if loc == nil {
		return to
	}
	return from + loc[0]
}

func closerOf(kind byte) string {
	switch kind {
	case '{':
		return "}}"
	case '%':
		return "%}"
	}
	return "#}"
}

func isVerbatim(body string) bool {
	body = strings.Trim(body, "- \t\r\n")
	return body == "verbatim" || strings.HasPrefix(body, "verbatim ")
}

// rewriteOutput rewrites one {{ … }} spanning src[open:end].
func rewriteOutput(m *mapped, src string, open, end int) {
	start, stop := open+2, end-2
	if start < stop && src[start] == '-' { // {{- trims whitespace before
		start++
	}
	if stop > start && src[stop-1] == '-' { // -}} trims whitespace after
		stop--
	}
	exprStart, exprEnd := start, stop
	for exprStart < exprEnd && isSpace(src[exprStart]) {
		exprStart++
	}
	for exprEnd > exprStart && isSpace(src[exprEnd-1]) {
		exprEnd--
	}
	if exprStart == exprEnd { // empty tag: let pongo2 report it
		m.copy(src, open, end)
		return
	}
	if q, c, ok := ternary(src, exprStart, exprEnd); ok && start == open+2 && stop == end-2 {
		// {{ cond ? a : b }}: pongo2 has no ternary, so it becomes
		// {% if cond %}{{ a }}{% else %}{{ b }}{% endif %}.
		emitTernary(m, src, exprStart, exprEnd, q, c)
		return
	}
	m.copy(src, open, exprStart)
	emitShow(m, src, exprStart, exprEnd)
	m.copy(src, exprEnd, end)
}

// emitShow writes the expression src[from:to] through the formatter. A
// variable or literal with filters takes the formatter as one more filter
// (a plain call); anything with operators is wrapped in a call to it as a
// function (pongo2 only allows filters after a variable).
func emitShow(m *mapped, src string, from, to int) {
	var inner mapped
	rewriteDefault(&inner, src, from, to)
	if filterChain.MatchString(inner.String()) {
		m.append(&inner)
		m.insert("|"+showFunc, to)
	} else {
		m.insert(showFunc+"(", from)
		m.append(&inner)
		m.insert(")", to)
	}
}

// emitTernary writes cond ? a : b (src[from:to], ? at q, its : at c) as
// an if tag with an output of each branch; a branch that is a ternary
// itself nests.
func emitTernary(m *mapped, src string, from, to, q, c int) {
	m.insert("{% if ", from)
	rewriteDefault(m, src, from, trimRight(src, from, q))
	m.insert(" %}", q)
	branch := func(a, b int) {
		a, b = trimLeft(src, a, b), trimRight(src, a, b)
		if q2, c2, ok := ternary(src, a, b); ok {
			emitTernary(m, src, a, b, q2, c2)
			return
		}
		m.insert("{{ ", a)
		emitShow(m, src, a, b)
		m.insert(" }}", b)
	}
	branch(q+1, c)
	m.insert("{% else %}", c)
	branch(c+1, to)
	m.insert("{% endif %}", to)
}

func trimLeft(src string, a, b int) int {
	for a < b && isSpace(src[a]) {
		a++
	}
	return a
}

func trimRight(src string, a, b int) int {
	for b > a && isSpace(src[b-1]) {
		b--
	}
	return b
}

// ternary finds the top-level ? of a conditional expression in
// src[from:to] and its matching :, skipping string literals, brackets,
// ?? and ?. and the : of a filter argument (|name:arg).
func ternary(src string, from, to int) (q, c int, ok bool) {
	depth, nest := 0, 0
	q = -1
	for i := from; i < to; i++ {
		switch ch := src[i]; ch {
		case '"', '\'', '`':
			j := skipQuoted(src[:to], i)
			if j < 0 {
				return 0, 0, false
			}
			i = j - 1
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '?':
			if i+1 < to && (src[i+1] == '?' || src[i+1] == '.') {
				i++
				continue
			}
			if depth != 0 {
				continue
			}
			if q < 0 {
				q = i
			} else {
				nest++
			}
		case ':':
			if depth != 0 || q < 0 || isFilterColon(src, from, i) {
				continue
			}
			if nest == 0 {
				return q, i, true
			}
			nest--
		}
	}
	return 0, 0, false
}

// isFilterColon reports whether the : at i follows |name (a filter's
// argument).
func isFilterColon(src string, from, i int) bool {
	j := i
	for j > from && (src[j-1] == '_' || src[j-1] >= 'a' && src[j-1] <= 'z' || src[j-1] >= 'A' && src[j-1] <= 'Z' || src[j-1] >= '0' && src[j-1] <= '9') {
		j--
	}
	return j < i && j > from && src[j-1] == '|'
}

// rewriteDefault copies src[from:to], replacing each ?? outside string
// literals (with the spaces around it) by |default:.
func rewriteDefault(m *mapped, src string, from, to int) {
	last := from
	for i := from; i < to; i++ {
		switch src[i] {
		case '"', '\'':
			if j := skipQuoted(src[:to], i); j > 0 {
				i = j - 1
			}
		case '?':
			if i+1 >= to || src[i+1] != '?' {
				continue
			}
			ws := i
			for ws > last && isSpace(src[ws-1]) {
				ws--
			}
			m.copy(src, last, ws)
			m.insert("|default:", i)
			j := i + 2
			for j < to && isSpace(src[j]) {
				j++
			}
			last, i = j, j-1
		}
	}
	m.copy(src, last, to)
}

// tagEnd returns the offset just past closer, searching from "from" and
// skipping quoted strings; -1 when there is none.
func tagEnd(src string, from int, closer string) int {
	for i := from; i < len(src); i++ {
		switch src[i] {
		case '"', '\'':
			if closer == "#}" {
				continue
			}
			if j := skipQuoted(src, i); j > 0 {
				i = j - 1
			}
		case closer[0]:
			if strings.HasPrefix(src[i:], closer) {
				return i + 2
			}
		}
	}
	return -1
}
