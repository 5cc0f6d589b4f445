package starlark

import (
	"fmt"
	"strconv"
	"strings"

	"go.starlark.net/syntax"
)

// guardFile rewrites a parsed script so that every operation that can make
// a large value in one step goes through a guard (guards.go) first:
//
//   - x + y, x * y, x % y, x | y and x << y become calls of the binary
//     guards, unless an operand is a number literal (then the result is a
//     number, or the interpreter's error);
//   - the right side of x += y, x *= y and x |= y is wrapped (augGuard), so
//     the interpreter hands the guard the left side without evaluating it
//     twice; x %= y and x <<= y on a plain name or a side-effect-free
//     target become x = guard(x, y);
//   - x.name of a method in guardedMethods becomes guardAttr(x, "name"),
//     whose result charges each call (x.name(...) is guardAttr(x,
//     "name")(...), so errors keep the interpreter's positions);
//   - f(*x) and f(**x) unpack through guardStar and guardStarStar.
//
// The guards do what the interpreter would, at the same position, so a
// script behaves the same; a name starting with reservedPrefix is refused.
func guardFile(f *syntax.File) error {
	rw := &rewriter{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if id, ok := n.(*syntax.Ident); ok && strings.HasPrefix(id.Name, reservedPrefix) && rw.err == nil {
			rw.err = fmt.Errorf("%s: the name %s is reserved (names starting with %s are kitsoki's)", id.NamePos, id.Name, reservedPrefix)
		}
		return rw.err == nil
	})
	if rw.err != nil {
		return rw.err
	}
	f.Stmts = rw.stmts(f.Stmts)
	return rw.err
}

type rewriter struct{ err error }

func (rw *rewriter) stmts(list []syntax.Stmt) []syntax.Stmt {
	for i, s := range list {
		list[i] = rw.stmt(s)
	}
	return list
}

func (rw *rewriter) stmt(s syntax.Stmt) syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		return rw.assign(s)
	case *syntax.DefStmt:
		rw.params(s.Params)
		s.Body = rw.stmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rw.expr(s.X)
	case *syntax.IfStmt:
		s.Cond = rw.expr(s.Cond)
		s.True = rw.stmts(s.True)
		s.False = rw.stmts(s.False)
	case *syntax.ForStmt:
		s.Vars = rw.target(s.Vars)
		s.X = rw.expr(s.X)
		s.Body = rw.stmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rw.expr(s.Cond)
		s.Body = rw.stmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rw.expr(s.Result)
		}
	}
	return s
}

// assign rewrites an assignment, augmented ones as the package comment
// says.
func (rw *rewriter) assign(s *syntax.AssignStmt) syntax.Stmt {
	s.RHS = rw.expr(s.RHS)
	switch s.Op {
	case syntax.EQ:
		s.LHS = rw.target(s.LHS)
	case syntax.PLUS_EQ, syntax.STAR_EQ, syntax.PIPE_EQ:
		s.LHS = rw.target(s.LHS)
		s.RHS = mkCall(guardAug, s.OpPos, s.RHS)
	case syntax.PERCENT_EQ, syntax.LTLT_EQ:
		name := guardMod
		if s.Op == syntax.LTLT_EQ {
			name = guardShl
		}
		if !pure(s.LHS) {
			rw.fail(fmt.Errorf("%s: %s on a computed target is not supported: assign the result to a plain name (v = x %s y)",
				s.OpPos, s.Op, strings.TrimSuffix(s.Op.String(), "=")))
			return s
		}
		load := rw.expr(clone(s.LHS))
		s.LHS = rw.target(s.LHS)
		return &syntax.AssignStmt{OpPos: s.OpPos, Op: syntax.EQ, LHS: s.LHS, RHS: mkCall(name, s.OpPos, load, s.RHS)}
	default:
		s.LHS = rw.target(s.LHS)
	}
	return s
}

func (rw *rewriter) fail(err error) {
	if rw.err == nil {
		rw.err = err
	}
}

// target rewrites the expressions an assignment target evaluates (the
// operands of x[i] and x.f), leaving the target itself.
func (rw *rewriter) target(e syntax.Expr) syntax.Expr {
	switch t := e.(type) {
	case *syntax.IndexExpr:
		t.X = rw.expr(t.X)
		t.Y = rw.expr(t.Y)
	case *syntax.DotExpr:
		t.X = rw.expr(t.X)
	case *syntax.TupleExpr:
		for i, x := range t.List {
			t.List[i] = rw.target(x)
		}
	case *syntax.ListExpr:
		for i, x := range t.List {
			t.List[i] = rw.target(x)
		}
	case *syntax.ParenExpr:
		t.X = rw.target(t.X)
	}
	return e
}

// params rewrites default values of parameters.
func (rw *rewriter) params(ps []syntax.Expr) {
	for _, p := range ps {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = rw.expr(b.Y)
		}
	}
}

var binaryGuards = map[syntax.Token]string{
	syntax.PLUS: guardAdd, syntax.STAR: guardMul, syntax.PERCENT: guardMod, syntax.PIPE: guardOr, syntax.LTLT: guardShl,
}

func (rw *rewriter) expr(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.BinaryExpr:
		x.X, x.Y = rw.expr(x.X), rw.expr(x.Y)
		if name, ok := binaryGuards[x.Op]; ok && !numeric(x) {
			return mkCall(name, x.OpPos, x.X, x.Y)
		}
	case *syntax.UnaryExpr:
		if x.X != nil {
			x.X = rw.expr(x.X)
		}
	case *syntax.CallExpr:
		return rw.call(x)
	case *syntax.DotExpr:
		x.X = rw.expr(x.X)
		if guardedMethods[x.Name.Name] {
			return mkCall(guardAttr, x.Dot, x.X, str(x.Name.Name, x.NamePos))
		}
	case *syntax.IndexExpr:
		x.X, x.Y = rw.expr(x.X), rw.expr(x.Y)
	case *syntax.SliceExpr:
		x.X = rw.expr(x.X)
		for _, p := range []*syntax.Expr{&x.Lo, &x.Hi, &x.Step} {
			if *p != nil {
				*p = rw.expr(*p)
			}
		}
	case *syntax.ParenExpr:
		x.X = rw.expr(x.X)
	case *syntax.CondExpr:
		x.Cond, x.True, x.False = rw.expr(x.Cond), rw.expr(x.True), rw.expr(x.False)
	case *syntax.ListExpr:
		rw.list(x.List)
	case *syntax.TupleExpr:
		rw.list(x.List)
	case *syntax.DictExpr:
		for _, en := range x.List {
			if de, ok := en.(*syntax.DictEntry); ok {
				de.Key, de.Value = rw.expr(de.Key), rw.expr(de.Value)
			}
		}
	case *syntax.Comprehension:
		x.Body = rw.comprehensionBody(x.Body)
		for _, cl := range x.Clauses {
			switch c := cl.(type) {
			case *syntax.ForClause:
				c.Vars = rw.target(c.Vars)
				c.X = rw.expr(c.X)
			case *syntax.IfClause:
				c.Cond = rw.expr(c.Cond)
			}
		}
	case *syntax.LambdaExpr:
		rw.params(x.Params)
		x.Body = rw.expr(x.Body)
	}
	return e
}

func (rw *rewriter) comprehensionBody(e syntax.Expr) syntax.Expr {
	if de, ok := e.(*syntax.DictEntry); ok {
		de.Key, de.Value = rw.expr(de.Key), rw.expr(de.Value)
		return de
	}
	return rw.expr(e)
}

func (rw *rewriter) list(l []syntax.Expr) {
	for i, x := range l {
		l[i] = rw.expr(x)
	}
}

// call rewrites a call: its function, its arguments, and *x and **x
// unpacking.
func (rw *rewriter) call(c *syntax.CallExpr) syntax.Expr {
	for i, a := range c.Args {
		switch a := a.(type) {
		case *syntax.BinaryExpr:
			if a.Op == syntax.EQ { // name=value
				a.Y = rw.expr(a.Y)
				continue
			}
		case *syntax.UnaryExpr:
			if a.Op == syntax.STAR || a.Op == syntax.STARSTAR {
				name := guardStar
				if a.Op == syntax.STARSTAR {
					name = guardStarStar
				}
				a.X = mkCall(name, a.OpPos, rw.expr(a.X))
				continue
			}
		}
		c.Args[i] = rw.expr(a)
	}
	c.Fn = rw.expr(c.Fn)
	return c
}

// call builds name(args...) at pos.
func mkCall(name string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: ident(name, pos), Lparen: pos, Args: args, Rparen: pos}
}

func ident(name string, pos syntax.Position) *syntax.Ident {
	return &syntax.Ident{NamePos: pos, Name: name}
}

func str(s string, pos syntax.Position) *syntax.Literal {
	return &syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: strconv.Quote(s), Value: s}
}

// numeric reports a binary operation whose result is a number or small:
// + and | with a number literal operand; * of two numbers, or with a float
// literal (seq * 2 repeats, so an int literal does not do); % and << with a
// number literal on the right (a format with one number, a shift of a few
// bits).
func numeric(b *syntax.BinaryExpr) bool {
	switch b.Op {
	case syntax.PLUS, syntax.PIPE:
		return isNumber(b.X) || isNumber(b.Y)
	case syntax.STAR:
		return (isNumber(b.X) && isNumber(b.Y)) || isFloat(b.X) || isFloat(b.Y)
	case syntax.PERCENT, syntax.LTLT:
		return isNumber(b.Y)
	}
	return false
}

func isFloat(e syntax.Expr) bool {
	l, ok := e.(*syntax.Literal)
	return ok && l.Token == syntax.FLOAT
}

// isNumber reports a number literal (possibly negated).
func isNumber(e syntax.Expr) bool {
	switch x := e.(type) {
	case *syntax.Literal:
		return x.Token == syntax.INT || x.Token == syntax.FLOAT
	case *syntax.UnaryExpr:
		return (x.Op == syntax.MINUS || x.Op == syntax.PLUS) && x.X != nil && isNumber(x.X)
	case *syntax.ParenExpr:
		return isNumber(x.X)
	}
	return false
}

// pure reports an assignment target whose operands have no side effects,
// so evaluating it twice is evaluating it once.
func pure(e syntax.Expr) bool {
	switch x := e.(type) {
	case *syntax.Ident, *syntax.Literal:
		return true
	case *syntax.DotExpr:
		return pure(x.X)
	case *syntax.IndexExpr:
		return pure(x.X) && pure(x.Y)
	case *syntax.ParenExpr:
		return pure(x.X)
	case *syntax.UnaryExpr:
		return x.X != nil && x.Op == syntax.MINUS && pure(x.X)
	}
	return false
}

// clone copies a pure expression (the resolver annotates nodes in place,
// so a node is not used twice).
func clone(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.Ident:
		return &syntax.Ident{NamePos: x.NamePos, Name: x.Name}
	case *syntax.Literal:
		c := *x
		return &c
	case *syntax.DotExpr:
		return &syntax.DotExpr{X: clone(x.X), Dot: x.Dot, NamePos: x.NamePos, Name: &syntax.Ident{NamePos: x.Name.NamePos, Name: x.Name.Name}}
	case *syntax.IndexExpr:
		return &syntax.IndexExpr{X: clone(x.X), Lbrack: x.Lbrack, Y: clone(x.Y), Rbrack: x.Rbrack}
	case *syntax.ParenExpr:
		return &syntax.ParenExpr{Lparen: x.Lparen, X: clone(x.X), Rparen: x.Rparen}
	case *syntax.UnaryExpr:
		return &syntax.UnaryExpr{OpPos: x.OpPos, Op: x.Op, X: clone(x.X)}
	}
	return e
}
