package expr

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/flosch/pongo2/v6"
	"github.com/google/go-cmp/cmp"
)

type point struct{ X int }

// kindsOfValue are values of every kind a template may meet: what decoded
// JSON and YAML hold, and Go values a caller's Env may carry.
func kindsOfValue() map[string]any {
	var nilPtr *point
	return map[string]any{
		"nil": nil, "empty": "", "s": "taxi 40", "html": "<b>a & b</b>", "uni": "日本 ✓",
		"zero": 0, "one": 1, "neg": -3, "big": 123456789, "i64": int64(1) << 40,
		"f": 0.85, "fzero": 0.0, "fwhole": 40.0, "fbig": 1e21, "fsmall": 1e-7, "nan": math.NaN(), "inf": math.Inf(-1),
		"t": true, "false": false,
		"num": json.Number("12.50"), "numzero": json.Number("0"),
		"map":      map[string]any{"b": 2, "a": []any{1, "x", nil}, "html": "<&>"},
		"emptymap": map[string]any{},
		"list":     []any{"red", map[string]any{"name": "x", "n": 1}, nil, []any{1.5, true}},
		"nolist":   []any{},
		"nested":   map[string]any{"a": map[string]any{"b": map[string]any{"c": "deep"}, "l": []any{"p", "q"}}},
		"strmap":   map[string]string{"a": "b"},
		"anymap":   map[any]any{1: "one", "k": "v"},
		"strs":     []string{"a", "b"},
		"bytes":    []byte("hi"),
		"int8":     int8(-8), "uint": uint(7), "f32": float32(1.5),
		"point": point{X: 3}, "ptr": &point{X: 4}, "nilptr": nilPtr,
		"fn":     func() string { return "called" },
		"pvalue": pongo2.AsValue("wrapped"),
		"nilmap": map[string]any(nil), "nillist": []any(nil),
		"Env": Env{"a": "b"},
	}
}

// kindsEnv offers kindsOfValue as args and as world, with a few roots of
// other kinds beside them.
func kindsEnv() Env {
	vals := kindsOfValue()
	return Env{
		"args":  vals,
		"world": vals,
		"state": map[string]any{"path": "a.b", "description": "Waiting."},
		"str":   "top",
		"num":   7,
		"fn":    func() string { return "called" },
		"list":  []any{"x", "y"},
	}
}

// TestTextRenderKindsOfValue pins what pongo2, as kitsoki configures it,
// makes of every kind of value a text template may meet: how each prints,
// how paths step through maps, lists, structs and pointers, and how {% if %}
// and ?? (pongo2's default filter) test them.
func TestTextRenderKindsOfValue(t *testing.T) {
	tests := []struct{ src, want string }{
		{benchPrompt, "Audit this claim:  for .\nAnswer with a verdict."},
		{"{{ args.s }} for {{ args.one }}: {{ args.f }} {{ args.t }} {{ args.num }} {{ args.nil }}", "taxi 40 for 1: 0.85 true 12.50 "},
		{"[{{ args.s }}|{{ world.one }}|{{ str }}|{{ num }}]", "[taxi 40|1|top|7]"},
		{"{{args.s}}|{{\targs.s \t}}", "taxi 40|taxi 40"},
		{"{{ args.map }} {{ args.list.3 }}", `{"a":[1,"x",null],"b":2,"html":"<&>"} [1.5,true]`},
		{"{{ args.html }}", "<b>a & b</b>"},
		{"{{ args.fbig }} {{ args.fsmall }} {{ args.i64 }} {{ args.int8 }} {{ args.uint }}", "1e+21 1e-07 1099511627776 -8 7"},
		{"{{ args.point }} {{ args.bytes }}", "{3} [104 105]"},
		{"{{ state.path }} — {{ state.description }}", "a.b — Waiting."},
		{"line one\r\nline {{ args.uni }} two\n", "line one\r\nline 日本 ✓ two\n"},
		{"a { b } c {x} }} %} #}", "a { b } c {x} }} %} #}"},
		{"{ {{ args.s }} }|{{ args.s }}}", "{ taxi 40 }|taxi 40}"},
		// Paths.
		{"{{ args.nested.a.b.c }} {{ args.nested.a.l.1 }} [{{ args.nested.a.l.2 }}]", "deep q []"},
		{`{{ args["s"] }} {{ args['html'] }} {{ args.nested["a"] }} {{ args.list[0] }} [{{ args.list[9] }}]`,
			`taxi 40 <b>a & b</b> {"b":{"c":"deep"},"l":["p","q"]} red []`},
		{"{{ args.list.0 }}|{{ args.list.1.name }}|{{ args.list.2 }}|{{ args.list.2.x }}|{{ args.list.3.0 }}", "red|x|||1.5"},
		{"[{{ missing }}{{ missing.a.b }}{{ args.missing }}{{ args.nil.x }}{{ args.missing.x.y }}{{ args.list.9 }}]", "[]"},
		{"{{ args.s.0 }}", "116"}, // an index of a string is a byte
		{"{{ args.point.X }} {{ args.ptr.X }} [{{ args.nilptr.X }}]", "3 4 []"},
		{"{{ args.strmap.a }} {{ args.anymap.k }} {{ args.strs.1 }} {{ args.Env.a }}", "b v b b"},
		{"{{ args.fn }} {{ fn }}", "called called"}, // functions are called
		{"{{ args.pvalue }} {{ args.num.String }}", "wrapped 12.50"},
		{"{{ args.map.a.1 }} [{{ args._x }}] [{{ args.map.0abc }}]", "x [] []"},
		// {% if %} and ?? test values as pongo2 does: a JSON number is a
		// string to it (true unless empty), an empty list or map false.
		{"{% if args.num %}n{% endif %}{% if args.numzero %}z{% endif %}{% if args.zero %}0{% else %}-{% endif %}", "nz-"},
		{"{% if args.nil %}a{% elif args.missing.x %}b{% elif args.emptymap %}c{% elif args.nolist %}d{% else %}e{% endif %}", "e"},
		{"{% if args.fzero %}a{% elif args.nan %}b{% endif %}|{% if args.inf %}c{% endif %}", "b|c"},
		{"{% if args.strs %}x{% endif %}{% if args.point %}p{% endif %}{% if args.nilptr %}n{% endif %}{% if args.int8 %}i{% endif %}", "xpi"},
		{"{% if args.f32 %}f{% endif %}{% if args.uint %}u{% endif %}{% if args.bytes %}b{% endif %}{% if args.fn %}F{% endif %}", "fubF"},
		{`{{ args.missing ?? "none" }}|{{ args.zero ?? 5 }}|{{ args.empty??args.s }}|{{ args.nil ?? args.nil ?? "" }}`, "none|5|taxi 40|"},
		{`{{ args.zero ?? args.missing ?? 'a ?? b' }} {{ args.emptymap ?? args.nolist ?? args.fzero }}`, "a ?? b 0"},
		{`{{ args.numzero ?? "n" }} {{ args.nil ?? args.s }} {{ args.list[0] ?? "x" }}`, "0 taxi 40 red"},
		{`{% if args.missing ?? args.t %}y{% else %}n{% endif %}{% if args.nil ?? "" %}a{% elif args.zero ?? 0 %}b{% endif %}`, "y"},
		{`{{ args.s ?? "%}" }} {{ args.nil ?? "}}" }}`, "taxi 40 }}"},
		// Blocks without extends render where they stand.
		{"{% block intro %}Hi {{ args.s }}{% endblock %}\n{% block rest %}{% if args.t %}{% block inner %}[{{ args.one }}]{% endblock inner %}{% endif %}{% endblock rest %}", "Hi taxi 40\n[1]"},
		{"{% if world.t %}\n  {{ world.s }}\n{% endif %}\n", "\n  taxi 40\n\n"},
	}
	env := kindsEnv()
	for _, tc := range tests {
		tpl, err := CompileText(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		got, err := tpl.Render(env)
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%q: Render = %q, want %q", tc.src, got, tc.want)
		}
	}
}

// TestTextRenderErrorsOnKindsOfValue: a path pongo2 cannot follow fails with
// pongo2's message, at the position in the template as written.
func TestTextRenderErrorsOnKindsOfValue(t *testing.T) {
	tests := []struct{ src, want string }{
		{"ok {{ args.s.x }}", "col 7: can't access a field by name on type string (variable args.s.x)"},
		{"line\n  {{ args.map.0 }}", "line 2, col 6: can't access an index on type map (variable args.map.0)"},
		{"{% if args.one.x %}y{% endif %}", "col 7: can't access a field by name on type int (variable args.one.x)"},
		{"{{ args.s ?? args.s.x }}", "col 14: can't access a field by name on type string (variable args.s.x)"},
		// pongo2 panics building this message; it is an error instead
		{`{{ args.one["k"] }}`, "a variable with a [ ] subscript reads a field or an index of a value that has none (pongo2 cannot say which); check the value each step of it reads"},
	}
	env := kindsEnv()
	for _, tc := range tests {
		tpl, err := CompileText(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		out, err := tpl.Render(env)
		var ee *EvalError
		if !errors.As(err, &ee) || err.Error() != tc.want {
			t.Errorf("%q: err = %v, want the *EvalError %q", tc.src, err, tc.want)
		}
		if out != "" {
			t.Errorf("%q: output %q alongside the error", tc.src, out)
		}
	}
}

// TestValueNilRules pins the nil rules of value templates and guards
// (docs/expressions.md, "nil rules") on every kind of value: a missing key
// is nil, a step from nil fails except after ?. and on the left of ??,
// and ?? replaces nil (a nil map, list or pointer included) but keeps
// every other value, false and empty ones too.
func TestValueNilRules(t *testing.T) {
	tests := []struct {
		src  string
		want any
		err  string
	}{
		{src: "{{ world.missing }}", want: nil},
		{src: "{{ world.nil }}", want: nil},
		{src: "{{ world.missing.x }}", err: "col 18: cannot fetch x from <nil>"},
		{src: "{{ world.nil.x }}", err: "col 14: cannot fetch x from <nil>"},
		{src: "{{ world.missing?.x }}", want: nil},
		{src: "{{ world.nested?.a.b }}", want: map[string]any{"c": "deep"}},
		{src: "{{ world.nested.a?.zz.c }}", err: "col 23: cannot fetch c from <nil>"},
		{src: "{{ world.nilptr?.X }}", want: nil},
		{src: "{{ world.nilmap?.x }}", want: nil},
		{src: "{{ world.nillist?.x }}", want: nil},
		{src: "{{ world.list?.[0] }}", want: "red"},
		// The chain left of ?? is nil-safe, as if every step were ?.
		{src: "{{ world.missing.a.b ?? 'x' }}", want: "x"},
		{src: "{{ world.nil.a ?? world.missing?.b ?? 'd' }}", want: "d"},
		{src: "{{ world.missing ?? world.missing?.x }}", want: nil},
		{src: "{{ world.missing ?? nil }}", want: nil},
		// ?? replaces nil only.
		{src: "{{ world.nil ?? world.zero ?? 1 }}", want: 0},
		{src: "{{ world.nilptr ?? 'p' }}", want: "p"},
		{src: "{{ world.nilmap ?? 'm' }}", want: "m"},
		{src: "{{ world.nilmap?.x ?? world.nillist }}", want: []any(nil)},
		{src: "{{ world.emptymap ?? 'e' }}", want: map[string]any{}},
		{src: "{{ world.empty ?? 'e' }}", want: ""},
		{src: "{{ world.false ?? 'f' }}", want: false},
		{src: "{{ world.nil ?? true }}", want: true},
		{src: "{{ world.s ?? 2.5 }}", want: "taxi 40"},
		// ?? does not hide other failures.
		{src: "{{ world.s.x ?? 'x' }}", err: "col 12: invalid operation: int(string)"},
		{src: "{{ world.list[9] ?? 'x' }}", err: "col 14: index out of range: 9 (array length is 4)"},
		// Paths through other kinds.
		{src: "{{ world.list[-1] }}", want: []any{1.5, true}},
		{src: "{{ world.point.X }}", want: 3},
		{src: "{{ world.ptr.X }}", want: 4},
		{src: "{{ world.strmap.a }}", want: "b"},
		{src: "{{ world.anymap.k }}", want: "v"},
		{src: "{{ world.strs[1] }}", want: "b"},
		{src: "{{ world.s[0] }}", want: uint8('t')},
		{src: "{{ world.nilmap }}", want: map[string]any(nil)},
		{src: "claim {{ world.s }} for {{ world.one }} ({{ world.f }})", want: "claim taxi 40 for 1 (0.85)"},
		{src: "[{{ world.list[2] }}]{{ world.nested.a.l }}", want: `[]["p","q"]`},
		{src: "{{ range world.list }}[{{ . }}]{{ end }}", want: `[red][{"n":1,"name":"x"}][][[1.5,true]]`},
	}
	env := kindsEnv()
	for _, tc := range tests {
		v, err := CompileValue(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		got, err := v.Eval(env)
		if tc.err != "" {
			var ee *EvalError
			if !errors.As(err, &ee) || err.Error() != tc.err {
				t.Errorf("%q: err = %v, want the *EvalError %q", tc.src, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.src, diff)
		}
	}
}

// TestGuardsAndValuesAgree: a guard and a value template of the same
// expression read the same value.
func TestGuardsAndValuesAgree(t *testing.T) {
	for _, src := range []string{"world.t", "world.missing?.x == nil", "(world.missing.a ?? 'd') == 'd'", "world.nilptr == nil"} {
		g, err := CompileGuard(src)
		if err != nil {
			t.Fatal(err)
		}
		v, err := CompileValue("{{ " + src + " }}")
		if err != nil {
			t.Fatal(err)
		}
		env := kindsEnv()
		gb, gerr := g.Eval(env)
		vv, verr := v.Eval(env)
		if gerr != nil || verr != nil || vv != any(gb) || !gb {
			t.Errorf("%q: guard %v %v, value %v %v; want true from both", src, gb, gerr, vv, verr)
		}
	}
}
