package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/parser/lexer"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// roots are the only names an expression may start from (story-format.md §10).
var roots = []string{"world", "slots", "args", "event", "run", "result", "menu", "item"}

// functions are the only functions an expression may call (story-format.md §10).
var functions = []string{"len", "trim", "upper", "lower", "split", "join", "hasPrefix", "hasSuffix",
	"now", "int", "float", "string", "abs", "round", "type", "get", "keys", "min", "max",
	"available", "blocked", "blocked_reason", "intent_status"}

// dotName is the hidden variable a range body's "." is rewritten to. Authors
// cannot write it themselves (compileExpr rejects sources that contain it).
const dotName = "__kitsoki_dot__"

var (
	rootList = strings.Join(roots, ", ")
	funcList = strings.Join(functions, ", ")

	// Compile options, built once: plain expressions, and range bodies that
	// also see dotName.
	plainOpts     = exprOptions(false)
	rangeOpts     = exprOptions(true)
	validatorOpts = exprOptions(false, ValueRoot)
)

// ValueRoot is the extra name a slot validator may start from: the slot's
// value (CompileValidator).
const ValueRoot = "value"

func exprOptions(inRange bool, extra ...string) []expr.Option {
	// Every root has type any: member access is resolved at run time, and
	// the env is a map[string]any so lookups take expr-lang's fast path.
	env := make(types.Map, len(roots)+1+len(extra))
	for _, r := range roots {
		env[r] = types.Any
	}
	for _, r := range extra {
		env[r] = types.Any
	}
	if inRange {
		env[dotName] = types.Any
	}
	opts := []expr.Option{expr.Env(env), expr.DisableAllBuiltins()}
	for _, f := range functions {
		switch f {
		case "len", "int", "float": // replaced below
		case "available", "blocked", "blocked_reason", "intent_status":
			opts = append(opts, expr.Function(f, menuFuncImpl(f), menuFuncSig(f)))
		default:
			opts = append(opts, expr.EnableBuiltin(f))
		}
	}
	return append(opts,
		// len(nil) is 0 instead of an error.
		expr.Function("len", lenFunc, new(func(any) int)),
		// int and float accept JSON numbers, and never quote the string
		// they fail to convert (it may be a secret from the world).
		expr.Function("int", intFunc, new(func(any) int)),
		expr.Function("float", floatFunc, new(func(any) float64)))
}

// intFunc is expr-lang's int, plus json.Number, with value-free errors.
func intFunc(args ...any) (any, error) {
	switch x := args[0].(type) {
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return nil, errors.New("int: the string is not a whole number")
		}
		return i, nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i), nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, errors.New("int: the JSON number is out of range")
		}
		return int(f), nil
	}
	return builtin.Int(args[0]), nil // panics, naming the type, on a bad one
}

// floatFunc is expr-lang's float, plus json.Number, with value-free errors.
func floatFunc(args ...any) (any, error) {
	switch x := args[0].(type) {
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return nil, errors.New("float: the string is not a number")
		}
		return f, nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, errors.New("float: the JSON number is out of range")
		}
		return f, nil
	}
	return builtin.Float(args[0]), nil // panics, naming the type, on a bad one
}

// lenFunc is the story language's len: characters of a string, elements of a
// list or map, 0 for nil.
func lenFunc(args ...any) (any, error) {
	x := args[0]
	switch v := x.(type) {
	case nil:
		return 0, nil
	case string:
		return utf8.RuneCountInString(v), nil
	case []any:
		return len(v), nil
	case map[string]any:
		return len(v), nil
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Array, reflect.Slice, reflect.Map:
		return rv.Len(), nil
	case reflect.String:
		return utf8.RuneCountInString(rv.String()), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return 0, nil
		}
	}
	return nil, fmt.Errorf("len: cannot take the length of %s", describe(x))
}

// unit is one compiled expression together with what is needed to point
// errors back into the source the author wrote.
type unit struct {
	prog *vm.Program
	src  string  // the expression as compiled (after any rewriting)
	tpl  string  // the whole source string it was taken from
	off  int     // byte offset of src in tpl when m is nil
	m    *mapped // set when src was rewritten; maps src bytes to tpl bytes

	reads []WorldRead // world keys read by name, in source order
	// resultReads are the keys of result read by name, in source order.
	resultReads []WorldRead
	roots       []string // the roots it reads (world, slots, …), in source order, once each
	extra       string   // one more allowed root name (ValueRoot), "" for none
	menu        bool     // reads the menu root or calls a menu helper

	menuCalls []*ast.CallNode // menu helper calls, set by validate for passMenu
}

// WorldRead is a world key an expression reads by name (world.key,
// world?.key, world["key"] or get(world, "key")). Line and Col locate the
// key in the compiled source, as CompileError positions do.
type WorldRead struct {
	Key       string
	Line, Col int
}

// The compiler configurations are pooled: setting one up costs as much as
// compiling a short expression, and one compile at a time may use one
// (expr-lang's checker fills caches inside the configuration as it goes, so
// the loader's compile workers must not share one).
var (
	plainConfigs     = sync.Pool{New: func() any { return newConfig(plainOpts) }}
	rangeConfigs     = sync.Pool{New: func() any { return newConfig(rangeOpts) }}
	validatorConfigs = sync.Pool{New: func() any { return newConfig(validatorOpts) }}
)

func newConfig(opts []expr.Option) *conf.Config {
	config := conf.CreateNew()
	for _, op := range opts {
		op(config)
	}
	for name := range config.Disabled {
		delete(config.Builtins, name)
	}
	config.Check()
	return config
}

// compileExprWith compiles tpl[start:end] as a story expression. inRange
// allows the range-item shorthand (".", ".field"); asBool rejects an
// expression whose type is known at compile time and is not bool. A
// non-empty extra (ValueRoot) is one more name the expression may start
// from, and names (when not nil) renames the world keys and menu intents
// the expression refers to.
func compileExprWith(tpl string, start, end int, inRange, asBool bool, extra string, names Names) (*unit, error) {
	u := &unit{src: tpl[start:end], tpl: tpl, off: start, extra: extra}
	if i := strings.Index(u.src, dotName); i >= 0 {
		return nil, u.compileError(utf8.RuneCountInString(u.src[:i]), fmt.Sprintf("%q is a reserved name", dotName))
	}
	if err := u.rewriteDots(start, end, inRange); err != nil {
		return nil, err
	}
	pool := &plainConfigs
	switch {
	case inRange:
		pool = &rangeConfigs
	case extra != "":
		pool = &validatorConfigs
	}
	config := pool.Get().(*conf.Config)
	defer pool.Put(config)
	// This is expr.Compile with the whitelist check added between parsing
	// and type checking, so the source is parsed once.
	tree, err := parser.ParseWithConfig(u.src, config)
	if err != nil {
		return nil, u.fromLibError(err)
	}
	if names != nil {
		ast.Walk(&tree.Node, renameRefs{names})
	}
	if err := u.validate(tree.Node, inRange); err != nil {
		return nil, err
	}
	passMenu(u.menuCalls)
	u.menuCalls = nil
	ast.Walk(&tree.Node, coalesceChains{})
	t, err := checker.Check(tree, config)
	if err != nil {
		return nil, u.fromLibError(err)
	}
	if asBool && t != nil && t.Kind() != reflect.Bool && t.Kind() != reflect.Interface {
		return nil, u.compileError(0, fmt.Sprintf("a guard must yield a bool, but this expression yields %s", kindName(t)))
	}
	if err := optimizer.Optimize(&tree.Node, config); err != nil {
		return nil, u.fromLibError(err)
	}
	prog, err := compiler.Compile(tree, config)
	if err != nil {
		return nil, u.fromLibError(err)
	}
	u.prog = prog
	return u, nil
}

// coalesceChains makes the member chain on the left of ?? nil-safe, as
// if every step were ?.: world.note.route.intent ?? "" is "" when note or
// route is missing, as Kitsoki evaluates it (docs/expressions.md).
type coalesceChains struct{}

func (coalesceChains) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BinaryNode)
	if !ok || b.Operator != "??" {
		return
	}
	left := b.Left
	if c, ok := left.(*ast.ChainNode); ok {
		left = c.Node
	}
	m, ok := left.(*ast.MemberNode)
	if !ok {
		return
	}
	for cur := m; cur != nil; {
		cur.Optional = true
		switch next := cur.Node.(type) {
		case *ast.MemberNode:
			cur = next
		case *ast.ChainNode:
			cur, _ = next.Node.(*ast.MemberNode)
		default:
			cur = nil
		}
	}
	if _, ok := b.Left.(*ast.ChainNode); !ok {
		c := &ast.ChainNode{Node: b.Left}
		c.SetLocation(b.Left.Location())
		b.Left = c
	}
}

// rewriteDots turns the range-item shorthand into the hidden variable:
// ".name" becomes "__kitsoki_dot__.name" and a lone "." becomes
// "__kitsoki_dot__". A dot is the shorthand when it does not follow
// something it could be a member access of (a name, a literal or a closing
// bracket).
func (u *unit) rewriteDots(start, end int, inRange bool) error {
	if !strings.Contains(u.src, ".") || noItemDots(u.src) {
		return nil
	}
	toks, err := lexer.Lex(file.NewSource(u.src))
	if err != nil {
		return nil // the parser reports lexing errors with their position
	}
	var m *mapped
	pos := 0   // bytes of u.src already copied
	depth := 0 // open brackets
	for i, t := range toks {
		if t.Kind == lexer.Bracket {
			if strings.Contains("([{", t.Value) {
				depth++
			} else {
				depth--
			}
		}
		if t.Kind != lexer.Operator || t.Value != "." || (i > 0 && endsOperand(toks[i-1])) {
			continue
		}
		if !inRange {
			if depth > 0 {
				continue // expr-lang's predicate shorthand: the validator rejects it
			}
			return u.compileError(t.From, `"." refers to the current item and is only valid inside {{ range }}`)
		}
		if m == nil {
			m = &mapped{}
		}
		at := runeToByte(u.src, t.From)
		m.copy(u.tpl, start+pos, start+at)
		m.insert(dotName, start+at)
		if i+1 < len(toks) && toks[i+1].Kind == lexer.Identifier && toks[i+1].From == t.To {
			pos = at // ".name": keep the dot, a member access on the item
		} else {
			pos = at + 1 // ".": the item itself
		}
	}
	if m == nil {
		return nil
	}
	m.copy(u.tpl, start+pos, end)
	u.m = m
	u.src = m.String()
	return nil
}

// endsOperand reports whether t can end an operand, so that a following
// "." is a member access.
func endsOperand(t lexer.Token) bool {
	switch t.Kind {
	case lexer.Identifier, lexer.Number, lexer.String, lexer.Bytes:
		return true
	case lexer.Bracket:
		return t.Value == ")" || t.Value == "]" || t.Value == "}"
	}
	return false
}

// validate enforces the whitelist: only roots as names, only functions as
// calls, no closures, map literals, let or sequences. The violation nearest
// the start of the expression is reported.
func (u *unit) validate(root ast.Node, inRange bool) error {
	v := &validator{inRange: inRange}
	ast.Walk(&root, v)
	// Identifiers are checked after the walk: the walk visits a call's
	// callee before the call itself.
	for _, id := range v.idents {
		if id.Value == "menu" && !v.callees[id] {
			u.menu = true
		}
		if !v.callees[id] && slices.Contains(roots, id.Value) && !slices.Contains(u.roots, id.Value) {
			u.roots = append(u.roots, id.Value)
		}
		if v.callees[id] || (inRange && id.Value == dotName) || slices.Contains(roots, id.Value) || (u.extra != "" && id.Value == u.extra) {
			continue
		}
		hint := ""
		if !strings.HasPrefix(id.Value, "$") {
			hint = fmt.Sprintf(" (did you mean world.%s?)", id.Value)
		}
		v.add(id, fmt.Sprintf("unknown name %q: an expression must start from one of %s%s", id.Value, rootList, hint))
	}
	if v.first == nil {
		if len(v.menuCalls) > 0 {
			u.menu, u.menuCalls = true, v.menuCalls
		}
		for _, r := range v.reads {
			line, col := lineCol(u.tpl, u.tplOffset(r.at))
			u.reads = append(u.reads, WorldRead{Key: r.key, Line: line, Col: col})
		}
		for _, r := range v.resultReads {
			line, col := lineCol(u.tpl, u.tplOffset(r.at))
			u.resultReads = append(u.resultReads, WorldRead{Key: r.key, Line: line, Col: col})
		}
		return nil
	}
	return u.compileError(v.first.at, v.first.msg)
}

// worldRead is a world key read by name, at a rune offset in the expression.
type worldRead struct {
	key string
	at  int
}

type violation struct {
	at  int // rune offset in the expression
	msg string
}

type validator struct {
	inRange bool
	idents  []*ast.IdentifierNode
	callees map[ast.Node]bool // made on the first call: most expressions have none
	first   *violation
	reads   []worldRead
	// resultReads are keys of the result root read by name.
	resultReads []worldRead

	menuCalls []*ast.CallNode
}

// isRoot reports whether n is the root name root.
func isRoot(n ast.Node, root string) bool {
	id, ok := n.(*ast.IdentifierNode)
	return ok && id.Value == root
}

// isWorld reports whether n is the root name world.
func isWorld(n ast.Node) bool {
	id, ok := n.(*ast.IdentifierNode)
	return ok && id.Value == "world"
}

func (v *validator) add(n ast.Node, msg string) {
	at := n.Location().From
	if v.first == nil || at < v.first.at {
		v.first = &violation{at: at, msg: msg}
	}
}

func (v *validator) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		v.idents = append(v.idents, n)
	case *ast.MemberNode:
		if key, ok := n.Property.(*ast.StringNode); ok && isWorld(n.Node) {
			v.reads = append(v.reads, worldRead{key: key.Value, at: key.Location().From})
		}
		if key, ok := n.Property.(*ast.StringNode); ok && isRoot(n.Node, "result") {
			v.resultReads = append(v.resultReads, worldRead{key: key.Value, at: key.Location().From})
		}
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok {
			v.add(n, "calling methods is not allowed; use a function such as upper(x)")
			return
		}
		if v.callees == nil {
			v.callees = map[ast.Node]bool{}
		}
		v.callees[id] = true
		v.checkFunc(id, id.Value)
		if isMenuFunc(id.Value) {
			if len(n.Arguments) != 1 {
				v.add(n, fmt.Sprintf("%s takes one argument, the intent name, as in %s(\"start\"); got %d", id.Value, id.Value, len(n.Arguments)))
				return
			}
			v.menuCalls = append(v.menuCalls, n)
		}

	case *ast.BuiltinNode:
		for _, a := range n.Arguments {
			if _, isClosure := a.(*ast.PredicateNode); isClosure && !slices.Contains(functions, n.Name) {
				v.add(n, fmt.Sprintf("function %q and closures ({…}) are not allowed in story expressions; allowed functions: %s", n.Name, funcList))
				return
			}
		}
		v.checkFunc(n, n.Name)
		if n.Name == "get" && len(n.Arguments) == 2 && isWorld(n.Arguments[0]) {
			if key, ok := n.Arguments[1].(*ast.StringNode); ok {
				v.reads = append(v.reads, worldRead{key: key.Value, at: key.Location().From})
			}
		}
	case *ast.PredicateNode, *ast.PointerNode:
		v.add(n, "closures (lambdas) are not allowed in story expressions")
	case *ast.MapNode:
		// {} alone is allowed: comparing with the empty map (x != {})
		if len(n.Pairs) > 0 {
			v.add(n, "map literals are not allowed in story expressions (only the empty map {} is)")
		}
	case *ast.VariableDeclaratorNode:
		v.add(n, "let is not allowed in story expressions")
	case *ast.SequenceNode:
		v.add(n, "only one expression is allowed (found ';')")
	}
}

func (v *validator) checkFunc(n ast.Node, name string) {
	if slices.Contains(functions, name) {
		return
	}
	if _, known := builtin.Index[name]; known {
		v.add(n, fmt.Sprintf("function %q is not allowed in story expressions; allowed functions: %s", name, funcList))
		return
	}
	v.add(n, fmt.Sprintf("unknown function %q; allowed functions: %s", name, funcList))
}

// tplOffset maps a rune offset in u.src to a byte offset in u.tpl.
func (u *unit) tplOffset(runeOff int) int {
	b := runeToByte(u.src, runeOff)
	if u.m != nil {
		return u.m.sourceOffset(b)
	}
	return u.off + b
}

func (u *unit) compileError(runeOff int, msg string) *CompileError {
	line, col := lineCol(u.tpl, u.tplOffset(runeOff))
	return &CompileError{Line: line, Col: col, Msg: msg}
}

// fromLibError converts an expr-lang compile error.
func (u *unit) fromLibError(err error) error {
	var fe *file.Error
	if errors.As(err, &fe) {
		return u.compileError(fe.From, fe.Message)
	}
	// Not a positioned error (expr-lang's compiler reports an internal panic
	// this way, followed by a stack trace): keep the first line.
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return &CompileError{Line: 1, Col: 1, Msg: msg}
}

var vmPool = sync.Pool{New: func() any { return new(vm.VM) }}

// run evaluates the unit's compiled program with expr-lang's VM. env must
// be a plain map so expr-lang's fast variable lookup applies; a nil map is
// fine (every root is nil).
func (u *unit) run(env map[string]any) (any, error) {
	m := vmPool.Get().(*vm.VM)
	out, err := m.Run(u.prog, env)
	vmPool.Put(m)
	if err != nil {
		return nil, u.evalError(err)
	}
	return out, nil
}

func (u *unit) evalError(err error) *EvalError {
	var fe *file.Error
	if errors.As(err, &fe) {
		line, col := lineCol(u.tpl, u.tplOffset(fe.From))
		return &EvalError{Line: line, Col: col, Msg: fe.Message, Err: err}
	}
	return &EvalError{Msg: err.Error(), Err: err}
}

// kindName names a static type the way typeName names a value's type.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an int"
	case reflect.Float32, reflect.Float64:
		return "a float"
	case reflect.String:
		return "a string"
	case reflect.Map:
		return "a map"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "a " + t.String()
}

// typeName names a value's type the way an author thinks of it.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case string:
		return "string"
	case bool:
		return "bool"
	case map[string]any:
		return "map"
	case []any:
		return "list"
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Map:
		return "map"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return fmt.Sprintf("%T", v)
}
