package expr

import (
	"errors"
	"sort"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/flosch/pongo2/v6"
)

// Names renames what a template or expression of an imported story refers
// to: the world keys it reads by name and the intents its menu helpers
// name. The loader folds an imported story into its importer under an
// alias (internal/load/compose), and the imported story's text is compiled
// with the alias's Names. The renaming is done on the parse tree: on
// expr-lang's AST for expressions, and on pongo2's tokens for text
// templates. So text in a string literal, in prose or in a comment is left
// as written; only real references are renamed.
type Names interface {
	// WorldKey returns the key a world key read by name is stored under,
	// and false when the key is not renamed.
	WorldKey(key string) (string, bool)
	// Intent returns the name of an intent a menu helper names
	// (available("go")), and false when the name is not renamed.
	Intent(name string) (string, bool)
}

// CompileOption changes how a template or expression is compiled.
type CompileOption func(*compileConfig)

type compileConfig struct {
	names  Names
	values func(src string) (*Value, error)
}

// WithValues makes CompileTree take the value template of each string that
// holds {{ from values instead of compiling it itself, so a caller that
// compiles many trees can share the templates they repeat (the loader's
// compile cache). values compiles src with the caller's Names.
func WithValues(values func(src string) (*Value, error)) CompileOption {
	return func(c *compileConfig) { c.values = values }
}

// WithNames renames the references of the compiled text with names (nil
// renames nothing). The text keeps its source as written: Source returns
// it, and error positions point into it.
func WithNames(names Names) CompileOption {
	return func(c *compileConfig) { c.names = names }
}

func configOf(opts []CompileOption) compileConfig {
	var c compileConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// renameRefs renames, on a parsed expression, the world keys read by name
// (world.k, world?.k, world["k"], get(world, "k")) and the intent a menu
// helper call names (available("go")).
type renameRefs struct{ names Names }

func (r renameRefs) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.MemberNode:
		if key, ok := n.Property.(*ast.StringNode); ok && isWorld(n.Node) {
			r.world(key)
		}
	case *ast.BuiltinNode:
		if n.Name == "get" && len(n.Arguments) == 2 && isWorld(n.Arguments[0]) {
			if key, ok := n.Arguments[1].(*ast.StringNode); ok {
				r.world(key)
			}
		}
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok || !isMenuFunc(id.Value) || len(n.Arguments) != 1 {
			return
		}
		if name, ok := n.Arguments[0].(*ast.StringNode); ok {
			if to, ok := r.names.Intent(name.Value); ok {
				name.Value = to
			}
		}
	}
}

func (r renameRefs) world(key *ast.StringNode) {
	if to, ok := r.names.WorldKey(key.Value); ok {
		key.Value = to
	}
}

// mayRefer reports whether src can hold a reference names would rename: a
// world root or a menu helper. It saves lexing text that cannot.
func mayRefer(src string) bool {
	if strings.Contains(src, "world") {
		return true
	}
	for _, f := range menuFuncs {
		if strings.Contains(src, f) {
			return true
		}
	}
	return false
}

// A text template is renamed on pongo2's own tokens. pongo2 exports no
// lexer, but a tag's parser is handed the document parser, whose tokens are
// exported: tokensTag, put in front of the text, hands them back inside the
// error it stops the parse with, so nothing of the text is parsed.
const (
	tokensTag  = "__kitsoki_tokens__"
	tokensOpen = "{% " + tokensTag + " %}"
)

// tokenList carries the tokens of a text out of pongo2.
type tokenList []*pongo2.Token

func (tokenList) Error() string { return "tokens" }

func tokensParser(doc *pongo2.Parser, _ *pongo2.Token, _ *pongo2.Parser) (pongo2.INodeTag, *pongo2.Error) {
	toks := make(tokenList, 0, doc.Remaining())
	for i := range doc.Remaining() {
		toks = append(toks, doc.GetR(i))
	}
	return nil, &pongo2.Error{Sender: tokensTag, OrigError: toks}
}

// pongoTokens returns the tokens pongo2 reads in s (comments are not
// tokens), with byte offsets into s, or nil when s does not lex (the real
// parse reports that).
func pongoTokens(set *pongo2.TemplateSet, s string) []token {
	_, err := set.FromString(tokensOpen + s)
	var pe *pongo2.Error
	if !errors.As(err, &pe) {
		return nil
	}
	toks, ok := pe.OrigError.(tokenList)
	if !ok {
		return nil
	}
	// pongo2 counts lines from 1 and columns in bytes from 1; the tag in
	// front shifts the first line.
	starts := []int{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	out := make([]token, 0, len(toks))
	for _, t := range toks {
		if t.Line < 1 || t.Line > len(starts) {
			return nil
		}
		off := starts[t.Line-1] + t.Col - 1
		if t.Line == 1 {
			off -= len(tokensOpen)
		}
		if t.Typ == pongo2.TokenString {
			off++ // the column is the opening quote's
		}
		out = append(out, token{t: t, off: off})
	}
	return out
}

// token is a pongo2 token and where its text starts.
type token struct {
	t   *pongo2.Token
	off int
}

func (t token) is(typ pongo2.TokenType, val string) bool {
	return t.t.Typ == typ && t.t.Val == val
}

// splice replaces s[from:to] with text.
type splice struct {
	from, to int
	text     string
}

// textRenames finds the references names renames in s, the text pongo2
// parses: world.k, world["k"] and a menu helper's literal intent name,
// outside {% comment %} blocks. A string token is renamed only when its
// text is the name as written (no escapes).
func textRenames(set *pongo2.TemplateSet, s string, names Names) []splice {
	toks := pongoTokens(set, s)
	var out []splice
	add := func(t token, to string) {
		if s[t.off:t.off+len(t.t.Val)] == t.t.Val {
			out = append(out, splice{from: t.off, to: t.off + len(t.t.Val), text: to})
		}
	}
	inComment := false
	for i, t := range toks {
		if i > 0 && toks[i-1].is(pongo2.TokenSymbol, "{%") && t.t.Typ == pongo2.TokenIdentifier {
			switch t.t.Val {
			case "comment":
				inComment = true
			case "endcomment":
				inComment = false
			}
		}
		if inComment || t.t.Typ != pongo2.TokenIdentifier || (i > 0 && toks[i-1].is(pongo2.TokenSymbol, ".")) || i+2 >= len(toks) {
			continue
		}
		next, arg := toks[i+1], toks[i+2]
		switch {
		case t.t.Val == "world" && next.is(pongo2.TokenSymbol, ".") && arg.t.Typ == pongo2.TokenIdentifier:
			if to, ok := names.WorldKey(arg.t.Val); ok {
				add(arg, to)
			}
		case t.t.Val == "world" && next.is(pongo2.TokenSymbol, "[") && arg.t.Typ == pongo2.TokenString &&
			i+3 < len(toks) && toks[i+3].is(pongo2.TokenSymbol, "]"):
			if to, ok := names.WorldKey(arg.t.Val); ok {
				add(arg, to)
			}
		case isMenuFunc(t.t.Val) && next.is(pongo2.TokenSymbol, "(") && arg.t.Typ == pongo2.TokenString &&
			i+3 < len(toks) && toks[i+3].is(pongo2.TokenSymbol, ")"):
			if to, ok := names.Intent(arg.t.Val); ok {
				add(arg, to)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].from < out[j].from })
	return out
}

// splice returns m with its output's ranges replaced. A replacement is
// attributed to the source byte its range started at, so positions in the
// result still point into the source m was made from.
func (m *mapped) splice(reps []splice) *mapped {
	out := &mapped{}
	s := m.String()
	out.b.Grow(len(s) + 16*len(reps))
	at := 0
	for _, r := range reps {
		m.copyOut(out, at, r.from)
		out.insert(r.text, m.sourceOffset(r.from))
		at = r.to
	}
	m.copyOut(out, at, len(s))
	return out
}

// copyOut appends m's output [from, to) to out, keeping its origins.
func (m *mapped) copyOut(out *mapped, from, to int) {
	s := m.String()
	for i, r := range m.runs {
		end := len(s)
		if i+1 < len(m.runs) {
			end = m.runs[i+1].out
		}
		a, b := max(from, r.out), min(to, end)
		if a >= b {
			continue
		}
		if r.copied {
			out.runs = append(out.runs, run{out: out.b.Len(), src: r.src + a - r.out, copied: true})
		} else {
			out.runs = append(out.runs, run{out: out.b.Len(), src: r.src})
		}
		out.b.WriteString(s[a:b])
	}
}

// Renamable reports whether src may hold a reference Names renames (a
// world key or a menu helper's intent): text that cannot compiles the same
// with any Names.
func Renamable(src string) bool { return mayRefer(src) }
