package expr

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Tree is a compiled YAML value (a with: block, emit slots, set values):
// nested maps and lists whose every string is a value template. Map keys are
// taken literally.
type Tree struct {
	root    tnode
	literal bool
	menu    bool // some string reads the computed menu
}

// tnode is one node of a compiled tree; exactly one field is used.
type tnode struct {
	tmpl   *Value   // a string containing {{
	scalar any      // any other leaf (literal strings included)
	keys   []string // a map: sorted keys ...
	vals   []tnode  // ... and their values, or a list's elements
	isMap  bool
	isList bool
	// base is a map's scalar members (the rest set to nil, so the clone has
	// room for them): Eval clones it and sets only the other members, which
	// costs less than inserting every key into a new map.
	base map[string]any
	dyn  []int // indexes of the members that are not scalars
}

// CompileTree compiles every string inside v. Maps (map[string]any, or any
// map, whose keys are then converted with %v) evaluate to map[string]any and
// lists to []any. Errors name the path of the failing string, e.g.
// `args.claim: col 4: unknown name "x" …`, and wrap the *CompileError.
func CompileTree(v any, opts ...CompileOption) (*Tree, error) {
	lit := true
	c := configOf(opts)
	if c.values == nil {
		names := c.names
		c.values = func(src string) (*Value, error) { return compileValue(src, names) }
	}
	root, err := compileNode(v, "", &lit, c.values)
	if err != nil {
		return nil, err
	}
	return &Tree{root: root, literal: lit, menu: root.usesMenu()}, nil
}

func (n tnode) usesMenu() bool {
	if n.tmpl != nil && n.tmpl.menu {
		return true
	}
	for _, c := range n.vals {
		if c.usesMenu() {
			return true
		}
	}
	return false
}

func compileNode(v any, path string, lit *bool, values func(string) (*Value, error)) (tnode, error) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "{{") {
			return tnode{scalar: x}, nil // a literal, as CompileValue would find
		}
		tv, err := values(x)
		if err != nil {
			if path == "" {
				return tnode{}, err
			}
			return tnode{}, fmt.Errorf("%s: %w", path, err)
		}
		if tv.IsLiteral() {
			return tnode{scalar: x}, nil
		}
		*lit = false
		return tnode{tmpl: tv}, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		n := tnode{isMap: true, keys: keys, vals: make([]tnode, len(keys))}
		for i, k := range keys {
			c, err := compileNode(x[k], join(path, k), lit, values)
			if err != nil {
				return tnode{}, err
			}
			n.vals[i] = c
		}
		n.base = make(map[string]any, len(keys))
		for i, k := range keys {
			c := &n.vals[i]
			if c.tmpl == nil && !c.isMap && !c.isList {
				n.base[k] = c.scalar
			} else {
				n.base[k] = nil
				n.dyn = append(n.dyn, i)
			}
		}
		return n, nil
	case []any:
		n := tnode{isList: true, vals: make([]tnode, len(x))}
		for i, e := range x {
			c, err := compileNode(e, path+"["+strconv.Itoa(i)+"]", lit, values)
			if err != nil {
				return tnode{}, err
			}
			n.vals[i] = c
		}
		return n, nil
	case nil:
		return tnode{}, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		m := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			m[fmt.Sprint(it.Key().Interface())] = it.Value().Interface()
		}
		return compileNode(m, path, lit, values)
	case reflect.Slice, reflect.Array:
		if _, isBytes := v.([]byte); isBytes {
			break
		}
		l := make([]any, rv.Len())
		for i := range l {
			l[i] = rv.Index(i).Interface()
		}
		return compileNode(l, path, lit, values)
	}
	return tnode{scalar: v}, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Member returns the template of the top-level map member key, or nil
// when the tree is no map, has no such member, or the member is not a
// template string.
func (t *Tree) Member(key string) *Value {
	if !t.root.isMap {
		return nil
	}
	i, ok := slices.BinarySearch(t.root.keys, key)
	if !ok {
		return nil
	}
	return t.root.vals[i].tmpl
}

// IsLiteral reports whether no string in the tree contains {{.
func (t *Tree) IsLiteral() bool { return t.literal }

// Eval renders the tree into fresh maps and lists (the caller may modify the
// result). Template strings follow Value.Eval, so "{{ world.n }}" keeps the
// number's type. A failure is the template's *EvalError wrapped with the path
// of the failing string (e.g. "args.claim: col 4: …").
func (t *Tree) Eval(env Env) (any, error) {
	return t.root.eval(env)
}

func (n *tnode) eval(env Env) (any, error) {
	switch {
	case n.tmpl != nil:
		return n.tmpl.Eval(env)
	case n.isMap:
		m := maps.Clone(n.base)
		for _, i := range n.dyn {
			k := n.keys[i]
			v, err := n.vals[i].eval(env)
			if err != nil {
				return nil, prefixPath(k, err)
			}
			m[k] = v
		}
		return m, nil
	case n.isList:
		l := make([]any, len(n.vals))
		for i := range n.vals {
			v, err := n.vals[i].eval(env)
			if err != nil {
				return nil, prefixPath("["+strconv.Itoa(i)+"]", err)
			}
			l[i] = v
		}
		return l, nil
	}
	return n.scalar, nil
}

// pathError locates an evaluation error inside a tree.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// prefixPath puts seg (a key or "[i]") in front of the path err carries.
func prefixPath(seg string, err error) error {
	pe, ok := err.(*pathError)
	if !ok {
		return &pathError{path: seg, err: err}
	}
	if pe.path[0] == '[' {
		pe.path = seg + pe.path
	} else {
		pe.path = seg + "." + pe.path
	}
	return pe
}
