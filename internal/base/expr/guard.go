package expr

import (
	"fmt"
	"strings"
)

// Guard is a compiled when: expression (story-format.md §10).
type Guard struct {
	src string
	u   *unit
}

// CompileGuard compiles a guard expression. It fails with a *CompileError
// (carrying the column inside src) on a syntax error, on a name that is not
// one of roots, on a function that is not one of functions, on closures, map
// literals and let, and when the result is known at compile time not to be a
// bool.
func CompileGuard(src string, opts ...CompileOption) (*Guard, error) {
	u, err := compileExprWith(src, 0, len(src), false, true, "", configOf(opts).names)
	if err != nil {
		return nil, err
	}
	return &Guard{src: src, u: u}, nil
}

// CompileValidator compiles a slot validator: a guard that may also start
// from value (ValueRoot), the slot's value, bound with Env["value"].
func CompileValidator(src string, opts ...CompileOption) (*Guard, error) {
	u, err := compileExprWith(src, 0, len(src), false, true, ValueRoot, configOf(opts).names)
	if err != nil {
		return nil, err
	}
	return &Guard{src: src, u: u}, nil
}

// Source returns the expression text.
func (g *Guard) Source() string { return g.src }

// WorldReads lists the world keys the guard reads by name, in source order
// (a key read twice is listed twice). Keys computed at run time
// (world[x]) are not listed.
func (g *Guard) WorldReads() []WorldRead { return g.u.reads }

// Eval evaluates the guard against env. Any failure, including a result that
// is not a bool (nil included), is an *EvalError.
func (g *Guard) Eval(env Env) (bool, error) {
	out, err := g.u.run(env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, &EvalError{Msg: fmt.Sprintf("a guard must yield a bool, but this one produced %s", describe(out))}
	}
	return b, nil
}

// describe names the type of a non-bool guard result without printing the
// value itself (world values may be sensitive).
func describe(v any) string {
	if v == nil {
		return "nil"
	}
	t := typeName(v)
	if strings.ContainsRune("aeiou", rune(t[0])) {
		return "an " + t
	}
	return "a " + t
}
