// Package expr compiles and evaluates the story language's expressions:
// guards (when:), value templates ({{ expr }} in set/with/bind/emit_intent)
// and text templates (pongo2: view, say, prompt files).
package expr

// Env is an evaluation scope. Keys are the roots story-format.md §10 allows:
// world, slots, args, event, run, result, menu, item (text templates also
// see state).
type Env map[string]any

// Guard is a compiled when: expression.
type Guard struct{ src string }

// CompileGuard compiles a guard expression.
func CompileGuard(src string) (*Guard, error) { return &Guard{src: src}, nil }

// Source returns the expression text.
func (g *Guard) Source() string { return g.src }

// Eval evaluates the guard.
func (g *Guard) Eval(env Env) (bool, error) { return false, nil }

// Value is a compiled value template.
type Value struct{ src string }

// CompileValue compiles a value template.
func CompileValue(src string) (*Value, error) { return &Value{src: src}, nil }

// Eval renders the template.
func (v *Value) Eval(env Env) (any, error) { return v.src, nil }

// Tree is a compiled YAML value whose strings are value templates.
type Tree struct{ v any }

// CompileTree compiles every string inside v.
func CompileTree(v any) (*Tree, error) { return &Tree{v: v}, nil }

// Eval renders the tree.
func (t *Tree) Eval(env Env) (any, error) { return t.v, nil }

// Text is a compiled text template.
type Text struct{ src string }

// CompileText compiles a pongo2 text template.
func CompileText(src string) (*Text, error) { return &Text{src: src}, nil }

// Render renders the template.
func (t *Text) Render(env Env) (string, error) { return t.src, nil }
