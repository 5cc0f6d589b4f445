package expr

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Value is a compiled value template (story-format.md §11): a string in
// which {{ expr }} splices the result of a guard-language expression.
type Value struct {
	src    string
	lit    any     // src as an any, so a literal's Eval does not allocate
	single *unit   // the whole string is one {{ expr }}: Eval keeps its type
	nodes  []vnode // otherwise the parts, rendered to a string
	menu   bool    // some expression reads the computed menu
}

type vkind uint8

const (
	vText vkind = iota
	vExpr
	vIf
	vRange
)

// vnode is one part of a value template.
type vnode struct {
	kind     vkind
	text     string   // vText
	u        *unit    // vExpr; vRange: the collection
	branches []branch // vIf, in order; an else branch has a nil cond
	body     []vnode  // vRange
	alt      []vnode  // vRange: rendered when the collection is empty
}

type branch struct {
	cond *unit
	body []vnode
}

// CompileValue compiles a value template. A string without "{{" is a literal
// and is returned unchanged by Eval. Errors are *CompileError values whose
// Line and Col point into src.
func CompileValue(src string, opts ...CompileOption) (*Value, error) {
	return compileValue(src, configOf(opts).names)
}

func compileValue(src string, names Names) (*Value, error) {
	v := &Value{src: src, lit: src}
	if !strings.Contains(src, "{{") {
		return v, nil
	}
	toks, err := lexValue(src)
	if err != nil {
		return nil, err
	}
	if len(toks) == 2 && toks[0].kind == tExpr && toks[0].at == 0 && toks[0].close == len(src) {
		u, err := compileExprWith(src, toks[0].start, toks[0].end, false, false, "", names)
		if err != nil {
			return nil, err
		}
		v.single, v.menu = u, u.menu
		return v, nil
	}
	p := &vparser{src: src, toks: toks, names: names}
	nodes, stop, err := p.list(false)
	if err != nil {
		return nil, err
	}
	if stop.kind != tEOF {
		return nil, p.errorAt(stop.at, fmt.Sprintf("unexpected {{ %s }} with no open {{ if }} or {{ range }}", stop.word()))
	}
	v.nodes, v.menu = nodes, nodesUseMenu(nodes)
	return v, nil
}

// nodesUseMenu reports whether an expression among nodes reads the menu.
func nodesUseMenu(nodes []vnode) bool {
	for _, n := range nodes {
		if n.u != nil && n.u.menu || nodesUseMenu(n.body) || nodesUseMenu(n.alt) {
			return true
		}
		for _, b := range n.branches {
			if b.cond != nil && b.cond.menu || nodesUseMenu(b.body) {
				return true
			}
		}
	}
	return false
}

// Source returns the template text.
func (v *Value) Source() string { return v.src }

// Roots lists the roots (world, slots, event, …) the template's
// expressions read, each once, in source order.
func (v *Value) Roots() []string {
	var out []string
	add := func(u *unit) {
		for _, r := range u.roots {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	if v.single != nil {
		add(v.single)
	}
	var walk func([]vnode)
	walk = func(nodes []vnode) {
		for i := range nodes {
			n := &nodes[i]
			if n.u != nil {
				add(n.u)
			}
			for _, b := range n.branches {
				if b.cond != nil {
					add(b.cond)
				}
				walk(b.body)
			}
			walk(n.body)
			walk(n.alt)
		}
	}
	walk(v.nodes)
	return out
}

// IsLiteral reports whether the template has no {{ … }} at all.
func (v *Value) IsLiteral() bool { return v.single == nil && v.nodes == nil }

// Eval renders the template. A literal returns its source; a template that is
// exactly one {{ expr }} returns the expression's value with its type; any
// other template returns a string (nil → "", maps and lists → compact JSON
// with sorted keys, else %v). Failures are *EvalError values.
func (v *Value) Eval(env Env) (any, error) {
	switch {
	case v.single != nil:
		return v.single.run(env)
	case v.nodes == nil:
		return v.lit, nil
	}
	var b strings.Builder
	b.Grow(len(v.src))
	if err := render(&b, v.nodes, env); err != nil {
		return nil, err
	}
	return b.String(), nil
}

func render(b *strings.Builder, nodes []vnode, env map[string]any) error {
	return renderTo(b, nodes, env, nil)
}

// renderTo renders nodes into b; with sh set, text and values go through
// it (EvalShell).
func renderTo(b *strings.Builder, nodes []vnode, env map[string]any, sh *shellWriter) error {
	for i := range nodes {
		n := &nodes[i]
		switch n.kind {
		case vText:
			if sh != nil {
				sh.text(b, n.text)
			} else {
				b.WriteString(n.text)
			}
		case vExpr:
			out, err := n.u.run(env)
			if err != nil {
				return err
			}
			if sh != nil {
				sh.value(b, toText(out))
			} else {
				b.WriteString(toText(out))
			}
		case vIf:
			for _, br := range n.branches {
				if br.cond != nil {
					c, err := br.cond.run(env)
					if err != nil {
						return err
					}
					if !truthy(c) {
						continue
					}
				}
				if err := renderTo(b, br.body, env, sh); err != nil {
					return err
				}
				break
			}
		case vRange:
			if err := renderRange(b, n, env, sh); err != nil {
				return err
			}
		}
	}
	return nil
}

func renderRange(b *strings.Builder, n *vnode, env map[string]any, sh *shellWriter) error {
	coll, err := n.u.run(env)
	if err != nil {
		return err
	}
	items, err := rangeItems(coll)
	if err != nil {
		line, col := lineCol(n.u.tpl, n.u.tplOffset(0))
		return &EvalError{Line: line, Col: col, Msg: err.Error()}
	}
	if len(items) == 0 {
		return renderTo(b, n.alt, env, sh)
	}
	// The body sees every root plus the current item; one scope per range,
	// reused across its items.
	scope := make(map[string]any, len(env)+1)
	for k, v := range env {
		scope[k] = v
	}
	for _, it := range items {
		scope[dotName] = it
		if err := renderTo(b, n.body, scope, sh); err != nil {
			return err
		}
	}
	return nil
}

// rangeItems lists what {{ range }} iterates: the elements of a list, or the
// values of a map in key order. nil iterates nothing.
func rangeItems(coll any) ([]any, error) {
	switch c := coll.(type) {
	case nil:
		return nil, nil
	case []any:
		return c, nil
	case map[string]any:
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = c[k]
		}
		return out, nil
	}
	rv := reflect.ValueOf(coll)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).Interface()
		}
		return out, nil
	case reflect.Map:
		keys := rv.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			return strings.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
		})
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = rv.MapIndex(k).Interface()
		}
		return out, nil
	}
	return nil, fmt.Errorf("{{ range }} needs a list or a map, got %s", describe(coll))
}

// ---- lexing and parsing ----

type tkind uint8

const (
	tText tkind = iota
	tExpr
	tIf
	tElseIf
	tElse
	tEnd
	tRange
	tEOF
)

// vtok is a run of text or one {{ … }} action.
type vtok struct {
	kind       tkind
	text       string // tText
	at, close  int    // byte offsets of "{{" and just past "}}"
	start, end int    // byte range of the expression (tExpr, tIf, tElseIf, tRange)
}

func (t vtok) word() string {
	switch t.kind {
	case tIf:
		return "if"
	case tElseIf:
		return "else if"
	case tElse:
		return "else"
	case tEnd:
		return "end"
	case tRange:
		return "range"
	}
	return "…"
}

// lexValue splits src into text and actions; the last token is tEOF.
func lexValue(src string) ([]vtok, error) {
	var toks []vtok
	pos := 0
	for {
		i := strings.Index(src[pos:], "{{")
		if i < 0 {
			break
		}
		open := pos + i
		if open > pos {
			toks = append(toks, vtok{kind: tText, text: src[pos:open]})
		}
		close, err := findClose(src, open+2)
		if err != nil {
			return nil, err
		}
		t, err := classify(src, open, close)
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		pos = close
	}
	if pos < len(src) {
		toks = append(toks, vtok{kind: tText, text: src[pos:]})
	}
	return append(toks, vtok{kind: tEOF, at: len(src)}), nil
}

// findClose returns the offset just past the "}}" that ends the action whose
// body starts at from, skipping quoted strings.
func findClose(src string, from int) (int, error) {
	for i := from; i < len(src); i++ {
		switch c := src[i]; c {
		case '\'', '"', '`':
			j := skipQuoted(src, i)
			if j < 0 {
				line, col := lineCol(src, i)
				return 0, &CompileError{Line: line, Col: col, Msg: "unterminated string inside {{ … }}"}
			}
			i = j - 1
		case '}':
			if i+1 < len(src) && src[i+1] == '}' {
				return i + 2, nil
			}
		}
	}
	line, col := lineCol(src, from-2)
	return 0, &CompileError{Line: line, Col: col, Msg: "{{ is not closed: add }}"}
}

// skipQuoted returns the offset just past the string literal starting at i,
// or -1 when it is not terminated. Backslash escapes apply except in
// backquoted strings.
func skipQuoted(src string, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j + 1
		}
	}
	return -1
}

func classify(src string, open, close int) (vtok, error) {
	t := vtok{kind: tExpr, at: open, close: close}
	start, end := open+2, close-2
	for start < end && isSpace(src[start]) {
		start++
	}
	for end > start && isSpace(src[end-1]) {
		end--
	}
	body := src[start:end]
	keyword := func(kw string) (int, bool) {
		if body == kw {
			return end, true
		}
		if strings.HasPrefix(body, kw) && isSpace(body[len(kw)]) {
			return start + len(kw), true
		}
		return 0, false
	}
	switch {
	case body == "":
		line, col := lineCol(src, open)
		return t, &CompileError{Line: line, Col: col, Msg: "empty {{ }}: put an expression inside"}
	case body == "end":
		t.kind = tEnd
		return t, nil
	case body == "else":
		t.kind = tElse
		return t, nil
	}
	if rest, ok := keyword("else"); ok {
		inner := strings.TrimLeft(src[rest:end], " \t\r\n")
		if r, ok := cutKeyword(inner, "if"); ok {
			t.kind, t.start = tElseIf, end-len(r)
		} else {
			line, col := lineCol(src, open)
			return t, &CompileError{Line: line, Col: col, Msg: "expected {{ else }} or {{ else if condition }}"}
		}
	} else if rest, ok := keyword("if"); ok {
		t.kind, t.start = tIf, rest
	} else if rest, ok := keyword("range"); ok {
		t.kind, t.start = tRange, rest
	} else {
		t.start = start
	}
	t.end = end
	for t.start < t.end && isSpace(src[t.start]) {
		t.start++
	}
	if t.kind != tExpr && t.start == t.end {
		line, col := lineCol(src, open)
		return t, &CompileError{Line: line, Col: col, Msg: fmt.Sprintf("{{ %s }} needs an expression", t.word())}
	}
	return t, nil
}

// cutKeyword returns what follows kw in s when s starts with kw as a word.
func cutKeyword(s, kw string) (string, bool) {
	if s == kw {
		return "", true
	}
	if strings.HasPrefix(s, kw) && isSpace(s[len(kw)]) {
		return s[len(kw):], true
	}
	return "", false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

type vparser struct {
	src   string
	toks  []vtok
	pos   int
	names Names
}

func (p *vparser) next() vtok {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *vparser) errorAt(off int, msg string) *CompileError {
	line, col := lineCol(p.src, off)
	return &CompileError{Line: line, Col: col, Msg: msg}
}

func (p *vparser) compile(t vtok, inRange bool) (*unit, error) {
	return compileExprWith(p.src, t.start, t.end, inRange, false, "", p.names)
}

// list parses nodes up to (and returns) the next else, else if, end or EOF.
func (p *vparser) list(inRange bool) ([]vnode, vtok, error) {
	var nodes []vnode
	for {
		t := p.next()
		switch t.kind {
		case tText:
			nodes = append(nodes, vnode{kind: vText, text: t.text})
		case tExpr:
			u, err := p.compile(t, inRange)
			if err != nil {
				return nil, t, err
			}
			nodes = append(nodes, vnode{kind: vExpr, u: u})
		case tIf:
			n, err := p.ifBlock(t, inRange)
			if err != nil {
				return nil, t, err
			}
			nodes = append(nodes, n)
		case tRange:
			n, err := p.rangeBlock(t, inRange)
			if err != nil {
				return nil, t, err
			}
			nodes = append(nodes, n)
		default:
			return nodes, t, nil
		}
	}
}

func (p *vparser) ifBlock(open vtok, inRange bool) (vnode, error) {
	n := vnode{kind: vIf}
	cond := open
	for {
		var u *unit
		if cond.kind != tElse {
			var err error
			if u, err = p.compile(cond, inRange); err != nil {
				return n, err
			}
		}
		body, stop, err := p.list(inRange)
		if err != nil {
			return n, err
		}
		n.branches = append(n.branches, branch{cond: u, body: body})
		switch {
		case stop.kind == tEnd:
			return n, nil
		case stop.kind == tEOF:
			return n, p.errorAt(open.at, "{{ if }} is never closed: add {{ end }}")
		case cond.kind == tElse:
			return n, p.errorAt(stop.at, fmt.Sprintf("{{ %s }} after {{ else }}: expected {{ end }}", stop.word()))
		}
		cond = stop
	}
}

func (p *vparser) rangeBlock(open vtok, inRange bool) (vnode, error) {
	u, err := p.compile(open, inRange)
	if err != nil {
		return vnode{}, err
	}
	n := vnode{kind: vRange, u: u}
	body, stop, err := p.list(true)
	if err != nil {
		return n, err
	}
	n.body = body
	if stop.kind == tElse {
		if n.alt, stop, err = p.list(inRange); err != nil {
			return n, err
		}
	}
	switch stop.kind {
	case tEnd:
		return n, nil
	case tEOF:
		return n, p.errorAt(open.at, "{{ range }} is never closed: add {{ end }}")
	}
	return n, p.errorAt(stop.at, fmt.Sprintf("unexpected {{ %s }} in {{ range }}: expected {{ end }}", stop.word()))
}
