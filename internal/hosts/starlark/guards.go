package starlark

import (
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// The guards: builtins the rewritten program calls (rewrite.go) and the
// predeclared names that shadow the universe's, each working out the size
// of what an operation would make and charging the call's budget before
// doing it the interpreter's way.

// reservedPrefix starts the names of the guard builtins; a script may not
// use a name that starts with it.
const reservedPrefix = "_kitsoki_"

// Names of the guard builtins the rewrite calls.
const (
	guardAdd      = reservedPrefix + "add"      // x + y
	guardMul      = reservedPrefix + "mul"      // x * y
	guardMod      = reservedPrefix + "mod"      // x % y
	guardOr       = reservedPrefix + "or"       // x | y
	guardShl      = reservedPrefix + "shl"      // x << y
	guardAug      = reservedPrefix + "aug"      // the right side of x += y, x *= y, x |= y
	guardAttr     = reservedPrefix + "attr"     // x.name for a method that makes values
	guardStar     = reservedPrefix + "star"     // f(*x)
	guardStarStar = reservedPrefix + "starstar" // f(**x)
)

// guardedMethods are the methods of the built-in types whose result can
// be much larger than their receiver and arguments, or that grow their
// receiver: x.name goes through guardAttr.
var guardedMethods = map[string]bool{
	"join": true, "replace": true, "format": true, "split": true, "rsplit": true, "splitlines": true,
	"upper": true, "lower": true, "title": true, "capitalize": true,
	"append": true, "extend": true, "insert": true,
	"items": true, "keys": true, "values": true, "update": true,
}

// shadowed are the universe builtins replaced by a guarded version.
var shadowed = []string{"str", "repr", "list", "tuple", "sorted", "reversed", "enumerate", "zip", "dict", "bytes", "print", "fail", "getattr"}

// guardEnv returns the predeclared names of a call: json and math, the
// guard builtins and the shadowing universe builtins.
func guardEnv() starlark.StringDict {
	env := starlark.StringDict{
		"json":        guardedJSON(),
		"math":        starmathModule(),
		guardAdd:      binaryGuard(guardAdd, syntax.PLUS),
		guardMul:      binaryGuard(guardMul, syntax.STAR),
		guardMod:      binaryGuard(guardMod, syntax.PERCENT),
		guardOr:       binaryGuard(guardOr, syntax.PIPE),
		guardShl:      binaryGuard(guardShl, syntax.LTLT),
		guardAug:      starlark.NewBuiltin(guardAug, augGuard),
		guardAttr:     starlark.NewBuiltin(guardAttr, attrGuard),
		guardStar:     starlark.NewBuiltin(guardStar, starGuard(slotSize)),
		guardStarStar: starlark.NewBuiltin(guardStarStar, starGuard(entrySize)),
	}
	for _, name := range shadowed {
		env[name] = universeGuard(name)
	}
	return env
}

// limitOf is how far a size walk for thread's call needs to go: past the
// limit nothing more matters.
func limitOf(thread *starlark.Thread) int64 {
	if b := budgetOf(thread); b != nil {
		return b.limit + 1
	}
	return 1 << 40
}

func binaryGuard(name string, op syntax.Token) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x, y := args[0], args[1]
		cost := binaryCost(op, x, y, limitOf(thread))
		if err := charge(thread, cost, func() string { return fmt.Sprintf("%s %s %s", x.Type(), op, y.Type()) }); err != nil {
			return nil, err
		}
		return starlark.Binary(op, x, y)
	})
}

// binaryCost bounds what x op y makes.
func binaryCost(op syntax.Token, x, y starlark.Value, limit int64) int64 {
	switch op {
	case syntax.PLUS:
		return plusCost(x, y)
	case syntax.STAR:
		return starCost(x, y)
	case syntax.PERCENT:
		if s, ok := x.(starlark.String); ok {
			return percentCost(string(s), y, limit)
		}
	case syntax.PIPE:
		if xd, ok := x.(*starlark.Dict); ok {
			if yd, ok := y.(*starlark.Dict); ok {
				return satMul(entrySize, int64(xd.Len()+yd.Len()))
			}
		}
	case syntax.LTLT:
		if xi, ok := x.(starlark.Int); ok {
			return intBytes(xi) + 96
		}
	}
	if xi, ok := x.(starlark.Int); ok {
		if yi, ok := y.(starlark.Int); ok {
			return intCost(op, xi, yi)
		}
	}
	return 0
}

// intCost bounds an operation on two ints: the result, and for a product
// the multiplication's scratch space (Karatsuba's, about three times the
// result).
func intCost(op syntax.Token, x, y starlark.Int) int64 {
	n := intBytes(x) + intBytes(y)
	if op == syntax.STAR {
		n *= 4
	}
	return n
}

func plusCost(x, y starlark.Value) int64 {
	switch x := x.(type) {
	case starlark.String:
		if y, ok := y.(starlark.String); ok {
			return int64(len(x)) + int64(len(y)) + boxSize
		}
	case starlark.Bytes:
		if y, ok := y.(starlark.Bytes); ok {
			return int64(len(x)) + int64(len(y)) + boxSize
		}
	case *starlark.List:
		if y, ok := y.(*starlark.List); ok {
			return slotSize*int64(x.Len()+y.Len()) + tupleExtra
		}
	case starlark.Tuple:
		if y, ok := y.(starlark.Tuple); ok {
			return slotSize*int64(len(x)+len(y)) + tupleExtra
		}
	}
	return 0
}

// starCost bounds a repetition (seq * n, n * seq).
func starCost(x, y starlark.Value) int64 {
	seq, n := x, y
	if _, ok := x.(starlark.Int); ok {
		if _, ok := y.(starlark.Int); !ok {
			seq, n = y, x
		}
	}
	ni, ok := n.(starlark.Int)
	if !ok {
		return 0
	}
	count, ok := ni.Int64()
	if !ok {
		if xi, ok := seq.(starlark.Int); ok {
			return intCost(syntax.STAR, xi, ni)
		}
		return 0 // the interpreter refuses the count
	}
	if count <= 0 {
		return 0
	}
	switch s := seq.(type) {
	case starlark.String:
		return satMul(int64(len(s)), count)
	case starlark.Bytes:
		return satMul(int64(len(s)), count)
	case *starlark.List:
		return satMul(slotSize*int64(s.Len()), count)
	case starlark.Tuple:
		return satMul(slotSize*int64(len(s)), count)
	case starlark.Int:
		return intCost(syntax.STAR, s, ni)
	}
	return 0
}

// percentCost bounds format % args: the format, and each argument's text
// once per directive that can use it.
func percentCost(format string, args starlark.Value, limit int64) int64 {
	ts := newTextSizer(limit)
	n := int64(len(format)) + boxSize
	switch a := args.(type) {
	case starlark.Tuple:
		for _, e := range a {
			n = sat(n, ts.strText(e))
		}
	case starlark.Mapping:
		directives := int64(strings.Count(format, "%"))
		most := int64(0)
		if d, ok := a.(*starlark.Dict); ok {
			for _, kv := range d.Items() {
				most = max(most, ts.strText(kv[1]))
			}
		}
		n = sat(n, max(satMul(directives, most), ts.strText(args)))
	default:
		n = sat(n, ts.strText(args))
	}
	return n
}

// augOperand is the right side of an augmented assignment: the
// interpreter hands it the left side through Binary, which works out the
// cost and then does what the interpreter does (in place for a list's +=
// and a dict's |=).
type augOperand struct {
	v starlark.Value
	b *budget
}

var _ starlark.HasBinary = (*augOperand)(nil)

func augGuard(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return &augOperand{v: args[0], b: budgetOf(thread)}, nil
}

func (a *augOperand) String() string        { return a.v.String() }
func (a *augOperand) Type() string          { return a.v.Type() }
func (a *augOperand) Freeze()               { a.v.Freeze() }
func (a *augOperand) Truth() starlark.Bool  { return a.v.Truth() }
func (a *augOperand) Hash() (uint32, error) { return a.v.Hash() }

func (a *augOperand) Binary(op syntax.Token, x starlark.Value, side starlark.Side) (starlark.Value, error) {
	if side == starlark.Left {
		return nil, nil
	}
	y := a.v
	limit := int64(1 << 40)
	if a.b != nil {
		limit = a.b.limit + 1
	}
	var cost int64
	xl, isList := x.(*starlark.List)
	yi, isIter := y.(starlark.Iterable)
	xd, isDict := x.(*starlark.Dict)
	yd, isDictY := y.(*starlark.Dict)
	switch {
	case op == syntax.PLUS && isList && isIter:
		cost = growCost(int64(xl.Len()), seqLen(y, limit/slotSize))
	case op == syntax.PIPE && isDict && isDictY:
		cost = satMul(entrySize, int64(xd.Len()+yd.Len()))
	default:
		cost = binaryCost(op, x, y, limit)
	}
	if a.b != nil {
		if err := a.b.charge(cost, func() string { return fmt.Sprintf("%s %s= %s", x.Type(), op, y.Type()) }); err != nil {
			return nil, err
		}
	}
	switch {
	case op == syntax.PLUS && isList && isIter:
		return xl, extendInPlace(xl, yi)
	case op == syntax.PIPE && isDict && isDictY:
		for _, kv := range yd.Items() {
			if err := xd.SetKey(kv[0], kv[1]); err != nil {
				return nil, fmt.Errorf("cannot apply |= to %s", strings.TrimPrefix(err.Error(), "cannot insert into "))
			}
		}
		return xd, nil
	}
	return starlark.Binary(op, x, y)
}

// extendInPlace is list += iterable: the list grows in place.
func extendInPlace(l *starlark.List, it starlark.Iterable) error {
	var elems []starlark.Value
	iter := it.Iterate()
	var e starlark.Value
	for iter.Next(&e) {
		elems = append(elems, e)
	}
	iter.Done()
	for _, e := range elems {
		if err := l.Append(e); err != nil {
			return fmt.Errorf("cannot apply += to %s", strings.TrimPrefix(err.Error(), "cannot append to "))
		}
	}
	return nil
}

// growCost bounds adding m elements to a list of n: the slots, and, for a
// large list, the new array the growth may copy it into.
func growCost(n, m int64) int64 {
	c := satMul(slotSize, m)
	if total := sat(n, m); satMul(slotSize, total) >= largeCharge {
		c = sat(c, satMul(slotSize*5/4, total))
	}
	return c
}

func starGuard(per int64) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x := args[0]
		n := seqLen(x, limitOf(thread)/per)
		if err := charge(thread, satMul(per, n), func() string { return fmt.Sprintf("unpacking a %s of %d elements into arguments", x.Type(), n) }); err != nil {
			return nil, err
		}
		return x, nil
	}
}

// getAttr is x.name, worded as the interpreter words a missing one.
func getAttr(x starlark.Value, name string) (starlark.Value, error) {
	ha, ok := x.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	v, err := ha.Attr(name)
	if err != nil {
		if nsa, ok := err.(starlark.NoSuchAttrError); ok {
			return nil, withHint(string(nsa), name, ha)
		}
		return nil, err
	}
	if v == nil {
		return nil, withHint(fmt.Sprintf("%s has no .%s field or method", x.Type(), name), name, ha)
	}
	return v, nil
}

func withHint(msg, name string, ha starlark.HasAttrs) error {
	// As the interpreter: a hint within half the name's length.
	if n := nearmiss.Closest(name, ha.AttrNames(), (len(name)+1)/2-1); n != "" {
		return fmt.Errorf("%s (did you mean .%s?)", msg, n)
	}
	return fmt.Errorf("%s", msg)
}

func callMethod(thread *starlark.Thread, recv starlark.Value, name string, m starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	cost := methodCost(recv, name, args, kwargs, limitOf(thread))
	if err := charge(thread, cost, func() string { return fmt.Sprintf("%s.%s()", recv.Type(), name) }); err != nil {
		return nil, err
	}
	return starlark.Call(thread, m, args, kwargs)
}

// attrGuard is recv.name for a guarded method name: the bound method comes
// back wrapped, so that calling it is charged.
func attrGuard(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	recv, name := args[0], string(args[1].(starlark.String))
	m, err := getAttr(recv, name)
	if err != nil {
		return nil, err
	}
	return wrapMethod(recv, name, m), nil
}

func wrapMethod(recv starlark.Value, name string, m starlark.Value) starlark.Value {
	if _, ok := m.(*starlark.Builtin); !ok {
		return m
	}
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return callMethod(thread, recv, name, m, args, kwargs)
	})
}

// methodCost bounds what recv.name(args) makes or grows its receiver by.
func methodCost(recv starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple, limit int64) int64 {
	switch r := recv.(type) {
	case starlark.String:
		return stringMethodCost(string(r), name, args, kwargs, limit)
	case *starlark.List:
		switch name {
		case "append", "insert":
			return growCost(int64(r.Len()), 1)
		case "extend":
			if len(args) == 1 {
				return growCost(int64(r.Len()), seqLen(args[0], limit/slotSize))
			}
		}
	case *starlark.Dict:
		n := int64(r.Len())
		switch name {
		case "items":
			return satMul(pairSize, n) + tupleExtra
		case "keys", "values":
			return satMul(slotSize, n) + tupleExtra
		case "update":
			m := int64(len(kwargs))
			if len(args) == 1 {
				m = sat(m, seqLen(args[0], limit/entrySize))
			}
			return satMul(entrySize, sat(n, m))
		}
	}
	return 0
}

func stringMethodCost(s, name string, args starlark.Tuple, kwargs []starlark.Tuple, limit int64) int64 {
	strArg := func(i int) (string, bool) {
		if i >= len(args) {
			return "", false
		}
		v, ok := args[i].(starlark.String)
		return string(v), ok
	}
	switch name {
	case "join":
		if len(args) != 1 {
			return 0
		}
		return joinCost(s, args[0], limit)
	case "replace":
		old, ok1 := strArg(0)
		repl, ok2 := strArg(1)
		if !ok1 || !ok2 {
			return 0
		}
		occ := int64(strings.Count(s, old))
		if len(args) > 2 {
			if c, ok := args[2].(starlark.Int); ok {
				if ci, ok := c.Int64(); ok && ci >= 0 {
					occ = min(occ, ci)
				}
			}
		}
		return int64(len(s)) + satMul(occ, max(int64(len(repl)-len(old)), 0)) + boxSize
	case "format":
		return formatCost(s, args, kwargs, limit)
	case "split", "rsplit":
		sep, hasSep := strArg(0)
		parts := int64(0)
		if hasSep && sep != "" {
			parts = int64(strings.Count(s, sep)) + 1
		} else {
			parts = fieldsBound(s)
		}
		return satMul(slotSize+boxSize, parts) + tupleExtra
	case "splitlines":
		return satMul(slotSize+boxSize, int64(strings.Count(s, "\n")+strings.Count(s, "\r")+1)) + tupleExtra
	case "upper", "lower", "title", "capitalize":
		n := int64(len(s)) + boxSize
		if !isASCII(s) {
			n = int64(len(s))*3/2 + boxSize
		}
		return n
	}
	return 0
}

// joinCost bounds sep.join(it): every element's length and a separator
// between each two.
func joinCost(sep string, it starlark.Value, limit int64) int64 {
	iterable, ok := it.(starlark.Iterable)
	if !ok {
		return 0
	}
	iter := iterable.Iterate()
	defer iter.Done()
	var n, count int64
	var e starlark.Value
	for n <= limit && iter.Next(&e) {
		if s, ok := e.(starlark.String); ok {
			n = sat(n, int64(len(s)))
		}
		count++
	}
	if count > 1 {
		n = sat(n, satMul(int64(len(sep)), count-1))
	}
	return n + boxSize
}

// formatCost bounds format.format(args, kwargs): the format, and the
// largest argument's text once per replacement field.
func formatCost(format string, args starlark.Tuple, kwargs []starlark.Tuple, limit int64) int64 {
	ts := newTextSizer(limit)
	most := int64(0)
	for _, a := range args {
		most = max(most, ts.strText(a))
	}
	for _, kv := range kwargs {
		most = max(most, ts.strText(kv[1]))
	}
	return int64(len(format)) + satMul(int64(strings.Count(format, "{")), most) + boxSize
}

// fieldsBound bounds the fields split() without a separator makes.
func fieldsBound(s string) int64 {
	if !isASCII(s) {
		return int64(len(s))/2 + 1
	}
	var n int64
	in := false
	for i := 0; i < len(s); i++ {
		space := s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// universeGuard is the universe builtin name behind a size check.
func universeGuard(name string) *starlark.Builtin {
	inner := starlark.Universe[name]
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if name == "getattr" && len(args) >= 2 {
			if attr, ok := args[1].(starlark.String); ok && guardedMethods[string(attr)] {
				v, err := starlark.Call(thread, inner, args, kwargs)
				if err != nil {
					return nil, err
				}
				return wrapMethod(args[0], string(attr), v), nil
			}
		}
		cost := universeCost(name, args, kwargs, limitOf(thread))
		if err := charge(thread, cost, func() string { return name + "()" }); err != nil {
			return nil, err
		}
		return starlark.Call(thread, inner, args, kwargs)
	})
}

// universeCost bounds what the universe builtin name makes of args.
func universeCost(name string, args starlark.Tuple, kwargs []starlark.Tuple, limit int64) int64 {
	first := func(per int64) int64 {
		if len(args) == 0 {
			return 0
		}
		return seqLen(args[0], limit/per)
	}
	switch name {
	case "str", "repr":
		if len(args) != 1 {
			return 0
		}
		ts := newTextSizer(limit)
		if name == "str" {
			if _, ok := args[0].(starlark.String); ok {
				return 0
			}
			return ts.strText(args[0])
		}
		return ts.text(args[0], 0)
	case "list", "tuple", "reversed":
		return satMul(slotSize, first(slotSize)) + tupleExtra
	case "sorted":
		return satMul(2*slotSize, first(2*slotSize)) + tupleExtra
	case "enumerate":
		return satMul(pairSize, first(pairSize)) + tupleExtra
	case "zip":
		if len(args) == 0 {
			return 0
		}
		per := int64(tupleExtra + slotSize*(len(args)+1))
		n := int64(-1)
		for _, a := range args {
			l := seqLen(a, limit/per)
			if n < 0 || l < n {
				n = l
			}
		}
		return satMul(per, n) + tupleExtra
	case "dict":
		return satMul(entrySize, sat(first(entrySize), int64(len(kwargs))))
	case "bytes":
		if len(args) == 1 {
			if s, ok := args[0].(starlark.String); ok {
				return int64(len(s)) + boxSize
			}
			return first(1) + boxSize
		}
	case "print", "fail":
		ts := newTextSizer(limit)
		n := int64(boxSize)
		for _, a := range args {
			n = sat(n, ts.strText(a)+1)
		}
		for _, kv := range kwargs {
			n = sat(n, ts.strText(kv[1]))
		}
		return n
	}
	return 0
}

// guardedJSON is the json module with each function behind a size check.
func guardedJSON() *starlarkstruct.Module {
	m := starjson.Module
	members := starlark.StringDict{}
	for name, v := range m.Members {
		members[name] = jsonGuard(name, v)
	}
	return &starlarkstruct.Module{Name: m.Name, Members: members}
}

func jsonGuard(name string, inner starlark.Value) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		cost := jsonCost(name, args, kwargs, limitOf(thread))
		if err := charge(thread, cost, func() string { return "json." + name + "()" }); err != nil {
			return nil, err
		}
		return starlark.Call(thread, inner, args, kwargs)
	})
}

// jsonCost bounds what json.name(args) makes: encode, the text; decode, 16
// bytes a byte of input (a one-digit number in a list is two bytes of
// JSON and a slot); indent, the text with a line per element.
func jsonCost(name string, args starlark.Tuple, kwargs []starlark.Tuple, limit int64) int64 {
	if len(args) != 1 {
		return 0
	}
	kw := func(key, def string) int64 {
		for _, kv := range kwargs {
			if k, ok := kv[0].(starlark.String); ok && string(k) == key {
				if v, ok := kv[1].(starlark.String); ok {
					return int64(len(v))
				}
			}
		}
		return int64(len(def))
	}
	switch name {
	case "encode":
		return newTextSizer(limit).text(args[0], 0) + boxSize
	case "encode_indent":
		ts := newTextSizer(limit)
		ts.prefix, ts.indent = kw("prefix", ""), kw("indent", "\t")
		return satMul(ts.text(args[0], 0), 2) + boxSize
	case "decode":
		if s, ok := args[0].(starlark.String); ok {
			return satMul(16, int64(len(s)))
		}
	case "indent":
		if s, ok := args[0].(starlark.String); ok {
			return indentSize(string(s), kw("prefix", ""), kw("indent", "\t")) + boxSize
		}
	}
	return 0
}

// indentSize bounds json.Indent's output for src: the text, and for each
// element a newline, the prefix and the indent once per depth.
func indentSize(src string, prefix, indent int64) int64 {
	n := int64(len(src))
	var depth int64
	inString, escaped := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			n = sat(n, 1+prefix+satMul(indent, depth))
		case ',':
			n = sat(n, 1+prefix+satMul(indent, depth))
		case '}', ']':
			depth = max(depth-1, 0)
			n = sat(n, 1+prefix+satMul(indent, depth))
		case ':':
			n++
		}
	}
	return n
}
