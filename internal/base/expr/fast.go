package expr

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"
	"github.com/flosch/pongo2/v6"
)

// The fast paths. Most of a story's templates only splice variables into
// text: a prompt file's "{{ args.claim }}", a with: value's
// "{{ world.amount }}". For those, the template engines' generic machinery
// (pongo2's per-render contexts, expr-lang's VM) costs more than the
// lookups themselves. At compile time such templates also get a plain
// form, which renders by walking maps and lists directly; at render time
// the plain form either produces exactly what the engine would, or gives
// up (a value of a kind it does not walk, anything that would be an
// error), and the engine renders as before. So a result, an error message
// or a position can never differ: every error comes from the engine.
// docs/expressions.md (Performance) says when each applies.

// step is one step of a variable path: a map key or a list index.
type step struct {
	key      string
	index    int
	isIdx    bool
	optional bool // expr-lang's ?.: a nil before the step ends the chain
}

// ---- value templates and guards (expr-lang) ----

// exprFast is the plain form of an expression: a path, a literal, or
// a ?? b. get returns what expr-lang's VM returns, or false where the VM
// must run (it then reports its own error).
type exprFast interface {
	get(env map[string]any) (any, bool)
}

// exprPath is a root and member steps (world.a.b, world["k"],
// world.list[0]). In a ?. chain, a step marked optional stops the chain at
// a nil; the chain's result is then nil, untyped unless it feeds a ??
// (which tests it as it is).
type exprPath struct {
	root      string
	steps     []step
	normalize bool // a chain not under ??: a nil-like result becomes nil
}

// exprLit is a literal.
type exprLit struct{ v any }

func (l exprLit) get(map[string]any) (any, bool) { return l.v, true }

// exprCoalesce is a ?? b: b when a is nil-like (expr-lang's IsNil).
type exprCoalesce struct{ left, right exprFast }

func (c *exprCoalesce) get(env map[string]any) (any, bool) {
	v, ok := c.left.get(env)
	if !ok {
		return nil, false
	}
	if !isNil(v) {
		return v, true
	}
	return c.right.get(env)
}

// plainExpr returns the plain form of a checked expression tree, or nil.
func plainExpr(n ast.Node, underCoalesce bool) exprFast {
	switch x := n.(type) {
	case *ast.IdentifierNode, *ast.MemberNode:
		if p := memberPath(n, false); p != nil {
			return p
		}
	case *ast.ChainNode:
		if p := memberPath(x.Node, true); p != nil {
			p.normalize = !underCoalesce
			return p
		}
	case *ast.BinaryNode:
		if x.Operator != "??" {
			return nil
		}
		l, r := plainExpr(x.Left, true), plainExpr(x.Right, true)
		if l == nil || r == nil {
			return nil
		}
		return &exprCoalesce{left: l, right: r}
	case *ast.StringNode:
		return exprLit{x.Value}
	case *ast.BoolNode:
		return exprLit{x.Value}
	case *ast.NilNode:
		return exprLit{nil}
	case *ast.IntegerNode:
		// the compiler converts an integer literal to its checked type
		if t := x.Type(); t != nil && t.Kind() == reflect.Int {
			return exprLit{x.Value}
		}
	case *ast.FloatNode:
		if t := x.Type(); t != nil && t.Kind() == reflect.Float64 {
			return exprLit{x.Value}
		}
	}
	return nil
}

// memberPath reads a root and member steps; optional steps only inside a
// chain.
func memberPath(n ast.Node, inChain bool) *exprPath {
	var steps []step
	for {
		switch x := n.(type) {
		case *ast.IdentifierNode:
			if x.Value == "$env" {
				return nil
			}
			// steps were collected from the outside in
			for i, j := 0, len(steps)-1; i < j; i, j = i+1, j-1 {
				steps[i], steps[j] = steps[j], steps[i]
			}
			return &exprPath{root: x.Value, steps: steps}
		case *ast.MemberNode:
			if x.Method || x.Optional && !inChain {
				return nil
			}
			st := step{optional: x.Optional}
			switch p := x.Property.(type) {
			case *ast.StringNode:
				st.key = p.Value
			case *ast.IntegerNode:
				if p.Value < 0 {
					return nil
				}
				st.index, st.isIdx = p.Value, true
			default:
				return nil
			}
			steps = append(steps, st)
			n = x.Node
		default:
			return nil
		}
	}
}

// get follows the path as the VM does: a missing key is nil (expr-lang's
// fetch from a map); a step from nil outside ?., from anything but a
// map[string]any or []any, or an index out of range leaves it to the VM.
func (p *exprPath) get(env map[string]any) (any, bool) {
	v := env[p.root]
	for i := range p.steps {
		s := &p.steps[i]
		if s.optional && isNil(v) {
			break
		}
		switch c := v.(type) {
		case map[string]any:
			if s.isIdx {
				return nil, false
			}
			v = c[s.key]
		case []any:
			if !s.isIdx || s.index >= len(c) {
				return nil, false
			}
			v = c[s.index]
		default:
			return nil, false
		}
	}
	if p.normalize && isNil(v) {
		return nil, true
	}
	return v, true
}

// isNil is expr-lang's runtime.IsNil (what ?? and ?. test), without
// reflection for the common kinds.
func isNil(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return x == nil
	case []any:
		return x == nil
	case string, bool, int, int64, float64, json.Number:
		return false
	}
	return runtime.IsNil(v)
}

// ---- text templates (pongo2) ----

// fastText is a text template in its plain form: literal text, {{ path }}
// outputs, {% if path %} … {% elif path %} … {% else %} … {% endif %}
// and {% block name %} … {% endblock %}.
type fastText struct {
	nodes []fnode
	size  int // bytes of literal text, to size the output
}

// fnode is one part of a plain text template: literal text, an output, or
// an if block.
type fnode struct {
	lit   string
	out   *textExpr
	conds []fcond
}

// fcond is one branch of an if block; else has a nil cond.
type fcond struct {
	cond *textExpr
	body []fnode
}

// textExpr is a path with the ?? alternatives after it, as pongo2 reads
// them once they are rewritten: path|default:alt|default:alt…
type textExpr struct {
	path *textPath
	alts []textOperand
}

// textOperand is default's argument: a path or a literal.
type textOperand struct {
	path *textPath
	lit  any
}

// textPath is a variable path as pongo2 resolves it.
type textPath struct {
	root  string
	steps []step
}

// pongo2Keywords are the words pongo2's lexer does not take as names.
var pongo2Keywords = map[string]bool{
	"in": true, "and": true, "or": true, "not": true, "true": true, "false": true, "as": true, "export": true,
}

// pongo2Private are the names a text template's variables are first looked
// up in: what pongo2, the scope tag and (from the first block on) the
// block tag put in the private context.
var pongo2Private = map[string]bool{
	"pongo2": true, showFunc: true, "available": true, "blocked": true, "blocked_reason": true, "intent_status": true,
	"block": true,
}

// plainText returns the plain form of src, or nil when src uses anything
// else (filters, operators, ternaries, other tags, comments, whitespace
// control).
// src has already compiled, so its tags are well formed.
func plainText(src string) *fastText {
	if strings.HasSuffix(src, "{") {
		// pongo2 would read it together with the scope tag's end
		return nil
	}
	p := &textParser{src: src}
	nodes, stop, ok := p.list()
	if !ok || stop != "" {
		return nil
	}
	return &fastText{nodes: nodes, size: p.lits}
}

type textParser struct {
	src  string
	pos  int
	lits int
	cond string // the condition of the elif, else or endif list stopped at
}

// list parses nodes up to the next elif, else, endif or endblock tag
// (returned as stop, with p.pos past it and p.cond what follows the word)
// or the end ("").
func (p *textParser) list() ([]fnode, string, bool) {
	var nodes []fnode
	src := p.src
	lit := func(to int) {
		if to > p.pos {
			nodes = append(nodes, fnode{lit: src[p.pos:to]})
			p.lits += to - p.pos
		}
	}
	for from := p.pos; ; {
		i := strings.IndexByte(src[from:], '{')
		if i < 0 || from+i+1 >= len(src) {
			lit(len(src))
			p.pos = len(src)
			return nodes, "", true
		}
		open := from + i
		kind := src[open+1]
		switch kind {
		case '#':
			return nil, "", false
		case '{', '%':
		default:
			from = open + 1
			continue
		}
		end := tagEnd(src, open+2, closerOf(kind))
		if end < 0 {
			return nil, "", false
		}
		body := strings.Trim(src[open+2:end-2], " \t\r")
		lit(open)
		p.pos = end
		from = end
		if kind == '{' {
			te := parseTextExpr(body)
			if te == nil {
				return nil, "", false
			}
			nodes = append(nodes, fnode{out: te})
			continue
		}
		word, rest := body, ""
		if j := strings.IndexAny(body, " \t\r"); j >= 0 {
			word, rest = body[:j], strings.TrimLeft(body[j:], " \t\r")
		}
		switch word {
		case "if":
			n, ok := p.ifBlock(rest)
			if !ok {
				return nil, "", false
			}
			nodes = append(nodes, n)
			from = p.pos
		case "block":
			// Without extends a block renders its body where it stands
			// (a branch without a condition). Its name was checked.
			body, stop, ok := p.list()
			if !ok || stop != "endblock" {
				return nil, "", false
			}
			nodes = append(nodes, fnode{conds: []fcond{{body: body}}})
			from = p.pos
		case "elif", "else", "endif", "endblock":
			p.cond = rest
			return nodes, word, true
		default:
			return nil, "", false
		}
	}
}

func (p *textParser) ifBlock(cond string) (fnode, bool) {
	var n fnode
	for word := "if"; ; {
		var te *textExpr
		if word != "else" {
			if te = parseTextExpr(cond); te == nil {
				return n, false
			}
		} else if cond != "" {
			return n, false
		}
		body, stop, ok := p.list()
		if !ok {
			return n, false
		}
		n.conds = append(n.conds, fcond{cond: te, body: body})
		switch {
		case stop == "endif" && p.cond == "":
			return n, true
		case stop != "elif" && stop != "else" || word == "else":
			return n, false
		}
		word, cond = stop, p.cond
	}
}

// parseTextExpr parses a path followed by any number of "?? alternative"s
// (CompileText rewrites each to |default:), an alternative being a path,
// a quoted string without backslashes or a whole number. Paths with a
// subscript take no alternatives (CompileText does not use the filter
// form for them). nil for anything else.
func parseTextExpr(s string) *textExpr {
	var ops []string
	last := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'':
			j := strings.IndexByte(s[i+1:], s[i])
			if j < 0 {
				return nil
			}
			i += j + 1
		case '?':
			if i+1 >= len(s) || s[i+1] != '?' {
				return nil
			}
			ops = append(ops, strings.Trim(s[last:i], " \t\r"))
			last = i + 2
			i++
		}
	}
	ops = append(ops, strings.Trim(s[last:], " \t\r"))
	te := &textExpr{path: parseTextPath(ops[0])}
	if te.path == nil {
		return nil
	}
	for _, op := range ops[1:] {
		if strings.ContainsAny(op, "[]") || strings.ContainsAny(ops[0], "[]") {
			return nil
		}
		switch {
		case op == "":
			return nil
		case op[0] == '"' || op[0] == '\'':
			if len(op) < 2 || op[len(op)-1] != op[0] || strings.ContainsAny(op[1:len(op)-1], "\"'\\\n") {
				return nil
			}
			te.alts = append(te.alts, textOperand{lit: op[1 : len(op)-1]})
		case digitsLen(op) == len(op):
			i, err := strconv.Atoi(op)
			if err != nil {
				return nil
			}
			te.alts = append(te.alts, textOperand{lit: i})
		default:
			tp := parseTextPath(op)
			if tp == nil {
				return nil
			}
			te.alts = append(te.alts, textOperand{path: tp})
		}
	}
	return te
}

// value is what pongo2 makes of the expression: default replaces a value
// that is not true by its argument, which is always evaluated.
func (te *textExpr) value(env Env) (any, bool) {
	v, ok := te.path.resolve(env)
	if !ok {
		return nil, false
	}
	for i := range te.alts {
		a := &te.alts[i]
		alt := a.lit
		if a.path != nil {
			if alt, ok = a.path.resolve(env); !ok {
				return nil, false
			}
		}
		if !pongo2True(v) {
			v = alt
		}
	}
	return v, true
}

// parseTextPath parses a pongo2 variable path: a name, then .name and .N
// steps, and at the end at most one ["key"], ['key'] or [N] (pongo2 ends
// a variable at its first subscript), with no spaces; nil for anything
// else.
func parseTextPath(s string) *textPath {
	n := identLen(s)
	if n == 0 || pongo2Keywords[s[:n]] || pongo2Private[s[:n]] {
		return nil
	}
	tp := &textPath{root: s[:n]}
	for s = s[n:]; s != ""; {
		switch s[0] {
		case '.':
			s = s[1:]
			// A run of name characters: a number when it is all digits,
			// else a name (pongo2's lexer reads "0abc" as one).
			n = 0
			for n < len(s) && isIdentChar(s[n]) {
				n++
			}
			switch {
			case n == 0 || pongo2Keywords[s[:n]]:
				return nil
			case digitsLen(s) == n:
				i, err := strconv.Atoi(s[:n])
				if err != nil {
					return nil
				}
				tp.steps = append(tp.steps, step{index: i, isIdx: true})
			default:
				tp.steps = append(tp.steps, step{key: s[:n]})
			}
			s = s[n:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil
			}
			sub := s[1:end]
			switch {
			case len(sub) >= 2 && (sub[0] == '"' || sub[0] == '\'') && sub[len(sub)-1] == sub[0] &&
				!strings.ContainsAny(sub[1:len(sub)-1], `"'\`):
				tp.steps = append(tp.steps, step{key: sub[1 : len(sub)-1]})
			case digitsLen(sub) == len(sub) && sub != "":
				i, err := strconv.Atoi(sub)
				if err != nil {
					return nil
				}
				tp.steps = append(tp.steps, step{index: i, isIdx: true})
			default:
				return nil
			}
			s = s[end+1:]
			if s != "" {
				// pongo2 ends a variable at its first subscript
				return nil
			}
		default:
			return nil
		}
	}
	return tp
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// identLen is the length of the pongo2 identifier s starts with.
func identLen(s string) int {
	if s == "" || !isIdentStart(s[0]) {
		return 0
	}
	n := 1
	for n < len(s) && isIdentChar(s[n]) {
		n++
	}
	return n
}

func digitsLen(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// resolve returns the value pongo2 resolves the path to, and false where
// pongo2 would do something other than look it up: fail (a field of a
// string, an index of a map), call a function, unwrap a *pongo2.Value, or
// walk a kind of value the plain form does not (structs, pointers, other
// map and slice types). A missing key, a nil on the way and an index past
// the end of a list resolve to nil, as pongo2 resolves them.
func (tp *textPath) resolve(env Env) (any, bool) {
	v := env[tp.root]
	for i := range tp.steps {
		s := &tp.steps[i]
		switch c := v.(type) {
		case nil:
			return nil, true
		case map[string]any:
			if s.isIdx {
				return nil, false
			}
			v = c[s.key]
		case []any:
			if !s.isIdx {
				return nil, false
			}
			if s.index >= len(c) {
				return nil, true
			}
			v = c[s.index]
		default:
			return nil, false
		}
	}
	switch v.(type) {
	case nil, string, bool, int, int64, float64, json.Number, map[string]any, []any:
		return v, true
	case *pongo2.Value:
		return nil, false
	}
	if reflect.ValueOf(v).Kind() == reflect.Func {
		return nil, false
	}
	return v, true
}

// render renders the plain form; false means pongo2 must render it.
func (f *fastText) render(env Env) (string, bool) {
	var b strings.Builder
	b.Grow(f.size + 16*len(f.nodes))
	if !renderFast(&b, f.nodes, env) {
		return "", false
	}
	return b.String(), true
}

func renderFast(b *strings.Builder, nodes []fnode, env Env) bool {
	for i := range nodes {
		n := &nodes[i]
		switch {
		case n.out != nil:
			v, ok := n.out.value(env)
			if !ok {
				return false
			}
			writeText(b, v)
		case n.conds != nil:
			for _, c := range n.conds {
				if c.cond != nil {
					v, ok := c.cond.value(env)
					if !ok {
						return false
					}
					if !pongo2True(v) {
						continue
					}
				}
				if !renderFast(b, c.body, env) {
					return false
				}
				break
			}
		default:
			b.WriteString(n.lit)
		}
	}
	return true
}

// writeText writes toText(v) without an intermediate string for numbers.
func writeText(b *strings.Builder, v any) {
	var scratch [32]byte
	switch x := v.(type) {
	case nil:
	case string:
		b.WriteString(x)
	case int:
		b.Write(strconv.AppendInt(scratch[:0], int64(x), 10))
	case int64:
		b.Write(strconv.AppendInt(scratch[:0], x, 10))
	case float64:
		b.Write(strconv.AppendFloat(scratch[:0], x, 'g', -1, 64))
	case bool:
		b.Write(strconv.AppendBool(scratch[:0], x))
	case json.Number:
		b.WriteString(string(x))
	default:
		b.WriteString(toText(v))
	}
}

// pongo2True is pongo2's {% if %} test (Value.IsTrue), which differs from
// the value templates' truthy: a json.Number is a string to it (true
// unless empty), nil and values it cannot judge are false.
func pongo2True(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return x != ""
	case bool:
		return x
	case int:
		return x != 0
	case int64:
		return x != 0
	case float64:
		return x != 0
	case json.Number:
		return x != ""
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return pongo2.AsValue(v).IsTrue()
}
