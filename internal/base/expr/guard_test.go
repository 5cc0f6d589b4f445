package expr

import (
	"errors"
	"strings"
	"testing"
)

func TestGuardEval(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{"world.a == 'b'", true},
		{`world.a == "c"`, false},
		{"world.missing == nil", true},
		{"world.verdict?.decision == 'approve' && world.amount <= world.auto_limit", true},
		{"world.missing?.decision == nil", true},
		{"(world.missing?.decision ?? 'none') == 'none'", true},
		{"(world.a ?? 'x') == 'b'", true},
		// The chain left of ?? is nil-safe, as if written with ?.
		{"(world.missing.decision ?? 'none') == 'none'", true},
		{"(world.nope.a.b.c ?? 'none') == 'none'", true},
		{"(world.missing?.a.b ?? 'd') == 'd'", true},
		{"len(world.missing) == 0", true},
		{"len(world.tags) == 2 && len(world.m) == 2 && len('héllo') == 5", true},
		{"run.turn == 3 and run.id == 'r1'", true},
		{"slots.amount > 10 or false", true},
		{"!(world.n > 5) && not (world.n > 5)", true},
		{"world.n in [1, 2, 3]", true},
		{"'red' in world.tags", true},
		{"world.n > 2 ? true : false", true},
		{"world.m != {} && {} == {} && world.missing != {}", true},
		{"world.a + 'c' == 'bc'", true},
		{"world.n * 2 + 1 == 7 && world.n % 2 == 1 && world.n / 2 == 1.5 && world.n - 4 == -1", true},
		{"world.t", true},
		{"world.t == true && world.empty == ''", true},
		{"upper(world.a) == 'B' && lower('X') == 'x' && trim(world.padded) == 'hi'", true},
		{"split(world.csv, ',')[1] == 'b' && join(world.tags, '+') == 'red+green'", true},
		{"hasPrefix(args.claim, 'lu') && hasSuffix(args.claim, 'ch')", true},
		{"int('7') == 7 && float('1.5') == 1.5 && string(world.n) == '3'", true},
		{"int(world.f) == 0 && int(2.9) == 2 && float(world.n) == 3.0", true},
		{"int(world.num) == 12 && float(world.num) == 12.5", true}, // json.Number
		{"abs(world.neg) == 2.5 && round(world.f) == 1", true},
		{"type(world.a) == 'string' && type(world.missing) == 'nil'", true},
		{"get(world, 'a') == 'b' && get(world, 'nope') == nil", true},
		{"len(keys(world.scores)) == 2", true},
		{"min(1, world.n) == 1 && max(1, world.n) == 3", true},
		{"now() != nil", true},
		{"event.type == 'turn.start' && result.data.ok && menu[1] == 'two' && item.label == 'first'", true},
		{"world.list[0].name == 'x'", true},
		// expr-lang operators beyond §10's list are available too.
		{"world.a contains 'b' && args.claim startsWith 'lu' && args.claim endsWith 'ch'", true},
		{"args.claim matches '^l.n'", true},
		{"world.n in 1..5 && 2 ** 3 == 8", true},
		{"(world.tags | join('-')) == 'red-green'", true},
		{"args.claim[1:3] == 'un'", true},
		{"if world.n > 2 { true } else { false }", true},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			g, err := CompileGuard(tt.src)
			if err != nil {
				t.Fatalf("CompileGuard: %v", err)
			}
			if g.Source() != tt.src {
				t.Errorf("Source() = %q", g.Source())
			}
			got, err := g.Eval(env)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if got != tt.want {
				t.Errorf("Eval = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGuardEvalErrors(t *testing.T) {
	tests := []struct {
		src     string
		env     Env
		wantErr string
		wantCol int
	}{
		{src: "world.x.y == 1", wantErr: "col 9: cannot fetch y from <nil>", wantCol: 9},
		{src: "world.x < 1", wantErr: "invalid operation: <nil> < int"},
		{src: "world.x >= 1", wantErr: "invalid operation: <nil> >= int"},
		{src: "slots.text == 'x'", env: Env{}, wantErr: "cannot fetch text from <nil>"},
		{src: "world.a", wantErr: "a guard must yield a bool, but this one produced a string"},
		{src: "world.missing", wantErr: "a guard must yield a bool, but this one produced nil"},
		{src: "world.n", wantErr: "produced an int"},
		{src: "world.f", wantErr: "produced a float"},
		{src: "world.m", wantErr: "produced a map"},
		{src: "world.tags", wantErr: "produced a list"},
		{src: "world.missing?.x ?? 'd'", wantErr: "produced a string"},
		{src: "len(world.n) == 1", wantErr: "len: cannot take the length of an int"},
		{src: "int(world.secret) == 1", env: Env{"world": map[string]any{"secret": "s3cr3t"}}, wantErr: "int: the string is not a whole number"},
		{src: "float(world.secret) == 1", env: Env{"world": map[string]any{"secret": "s3cr3t"}}, wantErr: "float: the string is not a number"},
		{src: "int(world.m) == 1", wantErr: "invalid operation: int(map[string]interface {})"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			g, err := CompileGuard(tt.src)
			if err != nil {
				t.Fatalf("CompileGuard: %v", err)
			}
			env := tt.env
			if env == nil {
				env = testEnv()
			}
			got, err := g.Eval(env)
			if got {
				t.Errorf("Eval = true alongside an error")
			}
			checkErr(t, err, tt.wantErr)
			if strings.Contains(errText(err), "s3cr3t") {
				t.Errorf("error quotes a world value: %v", err)
			}
			var ee *EvalError
			if !errors.As(err, &ee) {
				t.Fatalf("error is %T, want *EvalError", err)
			}
			if tt.wantCol != 0 && ee.Col != tt.wantCol {
				t.Errorf("Col = %d, want %d", ee.Col, tt.wantCol)
			}
		})
	}
}

func TestGuardCompileErrors(t *testing.T) {
	roots := "world, slots, args, event, run, result, menu, item"
	tests := []struct {
		src       string
		wantMsg   string
		line, col int
	}{
		{"foo == 1", `unknown name "foo": an expression must start from one of ` + roots + ` (did you mean world.foo?)`, 1, 1},
		{"world.a == bar", `unknown name "bar"`, 1, 12},
		{"state.path == 'x'", `unknown name "state"`, 1, 1},
		{"$env.world != nil", `unknown name "$env"`, 1, 1},
		{"date('2020-01-01') != nil", `function "date" is not allowed in story expressions; allowed functions: len, trim, upper, lower, split, join, hasPrefix, hasSuffix, now, int, float, string, abs, round, type, get, keys, min, max`, 1, 1},
		{"filter(world.tags, # == 'red') != nil", `function "filter" and closures ({…}) are not allowed`, 1, 1},
		{"all(world.tags, {# != ''})", `function "all" and closures ({…}) are not allowed in story expressions`, 1, 1},
		{"world.t && any(world.tags, .x)", `function "any" and closures ({…}) are not allowed`, 1, 12},
		{"sum(world.tags) > 0", `function "sum" is not allowed`, 1, 1},
		{"myfn(1)", `unknown function "myfn"`, 1, 1},
		{"{'a': 1} != nil", "map literals are not allowed in story expressions (only the empty map {} is)", 1, 1},
		{"let x = 1; x == 1", "let is not allowed", 1, 5},
		{"world.t; true", "only one expression is allowed", 1, 7},
		{"world.a.upper() == 'B'", "calling methods is not allowed", 1, 9},
		{".name == 'x'", `"." refers to the current item and is only valid inside {{ range }}`, 1, 1},
		{"__kitsoki_dot__ == 1", "reserved name", 1, 1},
		{"1 + 2", "a guard must yield a bool, but this expression yields an int", 1, 1},
		{"'yes'", "yields a string", 1, 1},
		{"world.a ==", "unexpected token EOF", 1, 10},
		{"world.a ?? 'x' == 'b'", "cannot be mixed", 1, 16},
		{"world.a == 'b' &&\n  nope", `unknown name "nope"`, 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			g, err := CompileGuard(tt.src)
			if g != nil {
				t.Errorf("CompileGuard returned a guard alongside an error")
			}
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v (%T), want *CompileError", err, err)
			}
			if !strings.Contains(ce.Msg, tt.wantMsg) {
				t.Errorf("Msg = %q, want it to contain %q", ce.Msg, tt.wantMsg)
			}
			if ce.Line != tt.line || ce.Col != tt.col {
				t.Errorf("position = line %d col %d, want line %d col %d", ce.Line, ce.Col, tt.line, tt.col)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&CompileError{Line: 1, Col: 5, Msg: "bad"}, "col 5: bad"},
		{&CompileError{Line: 3, Col: 2, Msg: "bad"}, "line 3, col 2: bad"},
		{&EvalError{Line: 1, Col: 9, Msg: "cannot fetch y from <nil>"}, "col 9: cannot fetch y from <nil>"},
		{&EvalError{Msg: "no position"}, "no position"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	inner := errors.New("inner")
	if !errors.Is(&EvalError{Msg: "x", Err: inner}, inner) {
		t.Errorf("EvalError does not unwrap to its cause")
	}
}

func TestGuardNilEnv(t *testing.T) {
	g, err := CompileGuard("world == nil")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := g.Eval(nil); err != nil || !ok {
		t.Errorf("Eval(nil) = %v, %v; want true, nil", ok, err)
	}
}
