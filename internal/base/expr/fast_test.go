package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/flosch/pongo2/v6"
	"github.com/google/go-cmp/cmp"
)

type fastPoint struct{ X int }

// fastValues are values of every kind a template may meet: what decoded
// JSON and YAML hold, and Go values a caller's Env may carry.
func fastValues() map[string]any {
	var nilPtr *fastPoint
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
		"point": fastPoint{X: 3}, "ptr": &fastPoint{X: 4}, "nilptr": nilPtr,
		"fn":     func() string { return "called" },
		"pvalue": pongo2.AsValue("wrapped"),
		"nilmap": map[string]any(nil), "nillist": []any(nil),
		"Env": Env{"a": "b"},
	}
}

func fastEnv() Env {
	vals := fastValues()
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

// fastTemplates are template shapes: some have a plain form, some do not.
var fastTemplates = []struct {
	src   string
	plain bool
}{
	{"", true},
	{"plain text, no tags", true},
	{"Audit this claim: {{ args.claim }} for {{ args.amount }}.\nAnswer with a verdict.", true},
	{"{{ args.s }}", true},
	{"{{args.s}}", true},
	{"{{\targs.s \t}}", true},
	{"[{{ args.s }}|{{ world.one }}|{{ str }}|{{ num }}]", true},
	{"{{ args }}", true},
	{"{{ state.path }} — {{ state.description }}", true},
	{"{{ args.nested.a.b.c }} {{ args.nested.a.l.1 }} {{ args.nested.a.l.2 }}", true},
	{`{{ args["s"] }} {{ args['html'] }} {{ args.nested["a"] }} {{ args.list[0] }} {{ args.list[9] }}`, true},
	{"{{ args.list.0 }}|{{ args.list.1.name }}|{{ args.list.2 }}|{{ args.list.2.x }}|{{ args.list.3.0 }}", true},
	{"{{ missing }}{{ missing.a.b }}{{ args.missing }}{{ args.nil.x }}", true},
	{"{{ args.s.x }}", true},         // a field of a string: pongo2's error
	{"{{ args.s.0 }}", true},         // an index of a string: a byte
	{"{{ args.map.0 }}", true},       // an index of a map: pongo2's error
	{"{{ args.map[0] }}", true},      // a subscript of a map by an int
	{`{{ args.list["a"] }}`, true},   // a subscript of a list by a string
	{"{{ args.one.x }}", true},       // a field of an int
	{"{{ args.point.X }}", true},     // a struct field
	{"{{ args.ptr.X }}", true},       // through a pointer
	{"{{ args.nilptr.X }}", true},    // through a nil pointer
	{"{{ args.strmap.a }}", true},    // another map type
	{"{{ args.anymap.k }}", true},    // a map with other keys
	{"{{ args.strs.1 }}", true},      // another slice type
	{"{{ args.fn }} {{ fn }}", true}, // functions are called
	{"{{ args.pvalue }}", true},
	{"{{ args.Env.a }}", true},
	{"{{ args.num.String }}", true}, // a method
	{"{{ args.map.a.1 }} {{ args._x }} {{ args.map.0abc }}", true},
	{"{% if args.s %}yes{% endif %}", true},
	{"{% if args.empty %}yes{% else %}no{% endif %}", true},
	{"{%if args.zero%}a{%elif args.numzero%}b{% else %}c{%endif%}", true},
	{"{% if args.nil %}a{% elif args.missing.x %}b{% elif args.emptymap %}c{% elif args.nolist %}d{% else %}e{% endif %}", true},
	{"{% if args.fzero %}a{% elif args.nan %}b{% endif %}|{% if args.inf %}c{% endif %}", true},
	{"{% if args.map %}{% if args.list.1 %}[{{ args.list.1.name }}]{% endif %}{% endif %}", true},
	{"{% if args.strs %}x{% endif %}{% if args.point %}p{% endif %}{% if args.nilptr %}n{% endif %}{% if args.int8 %}i{% endif %}", true},
	{"{% if args.f32 %}f{% endif %}{% if args.uint %}u{% endif %}{% if args.bytes %}b{% endif %}{% if args.fn %}F{% endif %}", true},
	{"{% if args.s.x %}x{% endif %}", true},
	{"a { b } c {x} }} %} #}", true},
	{"{ {{ args.s }} }", true},
	{"{{ args.s }}}", true},
	{"line one\r\nline {{ args.uni }} two\n", true},
	{"{% if world.t %}\n  {{ world.s }}\n{% endif %}\n", true},
	{"{% block intro %}Hi {{ args.s }}{% endblock %}\n{% block rest %}{% if args.t %}{% block inner %}[{{ args.one }}]{% endblock inner %}{% endif %}{% endblock rest %}", true},
	{"{% block a %}x{% endblock %}[{{ block.Super }}]", false},
	// no plain form
	{"{{ true }} {{ 5 }}", false},
	{"{{ args.s|upper }}", false},
	{"{{ args.s ?? 'x' }}", true},
	{`{{ args.missing ?? "none" }}|{{ args.zero ?? 5 }}|{{ args.empty??args.s }}|{{ args.nil ?? args.nil ?? "" }}`, true},
	{`{{ args.zero ?? args.missing ?? 'a ?? b' }} {{ args.emptymap ?? args.nolist ?? args.fzero }}`, true},
	{`{{ args.numzero ?? "n" }} {{ args.s ?? args.s.x }} {{ args.nil ?? args.fn }} {{ args.map ?? 'm' }}`, true},
	{`{% if args.missing ?? args.t %}y{% else %}n{% endif %}{% if args.nil ?? "" %}a{% elif args.zero ?? 0 %}b{% endif %}`, true},
	{`{{ args.s ?? "%}" }} {{ args.nil ?? "}}" }}`, true},
	{`{{ args.list[0] ?? "x" }}`, false},
	{`{{ args.s ?? args.list[0] }}`, false},
	{`{{ args.s ?? 1.5 }}`, false},
	{`{{ args.s ?? true }}`, false},
	{`{{ args.s ?? "a\"b" }}`, false},
	{"{{ args.one + 1 }}", false},
	{"{{ args.t ? 'y' : 'n' }}", false},
	{"{{- args.s }}", false},
	{"{{ args.s -}}", false},
	{"{{ args . s }}", false},
	{"{# comment #}{{ args.s }}", false},
	{"{% for x in args.list %}{{ x }}{% endfor %}", false},
	{"{% if not args.s %}n{% endif %}", false},
	{"{% if args.s == 'x' %}n{% endif %}", false},
	{"{%- if args.s %}y{% endif %}", false},
	{"{% verbatim %}{{ x }}{% endverbatim %}", false},
	{"{{ available }}", false},
	{"{{ pongo2.version }}", false},
	{`{{ args["a\"b"] }}`, false},
	{"{{ args[args.s] }}", false},
	{"{{ args.list[-1] }}", false},
}

// compareText renders tpl with the plain form, with Render and with pongo2
// alone, and fails unless Render gives pongo2's output and error and the
// plain form, wherever it answers, gives pongo2's output. It reports
// whether the plain form answered.
func compareText(t *testing.T, tpl *Text, env Env) bool {
	t.Helper()
	want, werr := tpl.renderPongo2(env)
	got, gerr := tpl.Render(env)
	if diff := cmp.Diff(errDesc(werr), errDesc(gerr)); diff != "" {
		t.Fatalf("%q: Render's error differs from pongo2's (-pongo2 +Render):\n%s", tpl.src, diff)
	}
	if got != want {
		t.Fatalf("%q: Render = %q, pongo2 = %q", tpl.src, got, want)
	}
	if tpl.plain() == nil {
		return false
	}
	out, ok := tpl.plain().render(env)
	if !ok {
		return false
	}
	if werr != nil {
		t.Fatalf("%q: the plain form rendered %q where pongo2 fails with %v", tpl.src, out, werr)
	}
	if out != want {
		t.Fatalf("%q: plain form = %q, pongo2 = %q", tpl.src, out, want)
	}
	return true
}

// errDesc is an error as the caller sees it: its text and, for an
// *EvalError, its position.
func errDesc(err error) string {
	if err == nil {
		return ""
	}
	var ee *EvalError
	if errors.As(err, &ee) {
		return fmt.Sprintf("%d:%d %s", ee.Line, ee.Col, ee.Error())
	}
	return err.Error()
}

func TestFastTextMatchesPongo2(t *testing.T) {
	envs := map[string]Env{"full": fastEnv(), "nil": nil, "empty": {}, "args nil": {"args": nil},
		"args a string": {"args": "text", "world": 3}, "args a list": {"args": []any{1, 2}}}
	answered := 0
	for _, tc := range fastTemplates {
		tpl, err := CompileText(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if got := tpl.plain() != nil; got != tc.plain {
			t.Errorf("%q: has a plain form = %v, want %v", tc.src, got, tc.plain)
		}
		for _, env := range envs {
			if compareText(t, tpl, env) {
				answered++
			}
		}
	}
	// Not a count to keep in step with the table: a check that the plain
	// form does answer for most of it, so the comparison is not vacuous.
	if answered < len(fastTemplates)*len(envs)/3 {
		t.Errorf("the plain form answered %d of %d renders", answered, len(fastTemplates)*len(envs))
	}
}

// TestFastTextAnswers pins which renders the plain form answers itself and
// which it leaves to pongo2, on the common shapes.
func TestFastTextAnswers(t *testing.T) {
	env := fastEnv()
	tests := []struct {
		src    string
		answer bool
		want   string
	}{
		{benchPrompt, true, "Audit this claim:  for .\nAnswer with a verdict."},
		{"{{ args.s }} for {{ args.one }}: {{ args.f }} {{ args.t }} {{ args.num }} {{ args.nil }}", true, "taxi 40 for 1: 0.85 true 12.50 "},
		{"{{ args.map }} {{ args.list.3 }}", true, `{"a":[1,"x",null],"b":2,"html":"<&>"} [1.5,true]`},
		{"{{ args.html }}", true, "<b>a & b</b>"},
		{"{{ args.missing.x.y }}|{{ args.list.9 }}|{{ args.nil.x }}", true, "||"},
		{"{{ args.fbig }} {{ args.fsmall }} {{ args.i64 }} {{ args.int8 }} {{ args.uint }}", true, "1e+21 1e-07 1099511627776 -8 7"},
		{"{% if args.num %}n{% endif %}{% if args.numzero %}z{% endif %}{% if args.zero %}0{% else %}-{% endif %}", true, "nz-"},
		{"{{ args.point }} {{ args.bytes }}", true, "{3} [104 105]"},
		{`{{ args.missing ?? "none" }} {{ args.zero ?? 5 }} {{ args.numzero ?? "n" }} {{ args.nil ?? args.s }}`, true, "none 5 0 taxi 40"},
		{`{{ args.s ?? args.s.x }}`, false, ""},
		{"{{ args.s.x }}", false, ""},
		{"{{ args.s.0 }}", false, "116"},
		{"{{ args.fn }}", false, "called"},
		{"{{ args.point.X }}", false, "3"},
		{"{{ args.pvalue }}", false, "wrapped"},
	}
	for _, tc := range tests {
		tpl, err := CompileText(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if tpl.plain() == nil {
			t.Fatalf("%q has no plain form", tc.src)
		}
		out, ok := tpl.plain().render(env)
		if ok != tc.answer {
			t.Errorf("%q: the plain form answered = %v, want %v", tc.src, ok, tc.answer)
		}
		if ok && out != tc.want {
			t.Errorf("%q: plain form = %q, want %q", tc.src, out, tc.want)
		}
		if got, err := tpl.Render(env); err == nil && got != tc.want {
			t.Errorf("%q: Render = %q, want %q", tc.src, got, tc.want)
		}
		compareText(t, tpl, env)
	}
}

// TestFastTextKeepsPongo2Errors checks that a template with a plain form
// still fails with pongo2's message and position.
func TestFastTextKeepsPongo2Errors(t *testing.T) {
	env := fastEnv()
	tests := []struct{ src, want string }{
		{"ok {{ args.s.x }}", "col 7: can't access a field by name on type string (variable args.s.x)"},
		{"line\n  {{ args.map.0 }}", "line 2, col 6: can't access an index on type map (variable args.map.0)"},
		{"{% if args.one.x %}y{% endif %}", "col 7: can't access a field by name on type int (variable args.one.x)"},
		// pongo2 panics building this message; it is an error instead
		{`{{ args.one["k"] }}`, "a variable with a [ ] subscript reads a field or an index of a value that has none (pongo2 cannot say which); check the value each step of it reads"},
	}
	for _, tc := range tests {
		tpl, err := CompileText(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if tpl.plain() == nil {
			t.Fatalf("%q has no plain form", tc.src)
		}
		_, err = tpl.Render(env)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: err = %v, want %q", tc.src, err, tc.want)
		}
		compareText(t, tpl, env)
	}
}

// valueSources are value templates and guards over paths and other shapes.
var valueSources = []string{
	"{{ world.s }}", "{{ world.one }}", "{{ world.map }}", "{{ world.nil }}", "{{ world.missing }}",
	"{{ world }}", "{{ slots }}", "{{ world.nested.a.b.c }}", `{{ world["s"] }}`, `{{ world.nested["a"].l[1] }}`,
	"{{ world.list[0] }}", "{{ world.list[1].name }}", "{{ world.list[9] }}", "{{ world.list.x }}",
	"{{ world.missing.x }}", "{{ world.nil.x }}", "{{ world.s.x }}", "{{ world.s[0] }}", "{{ world.map[0] }}",
	"{{ world.point.X }}", "{{ world.ptr.X }}", "{{ world.strmap.a }}", "{{ world.strs[1] }}", "{{ world.anymap.k }}",
	"{{ world.num.String }}", "{{ world.Env.a }}", "{{ world.list[-1] }}", "{{ world?.s }}", "{{ world.s ?? 'x' }}",
	"{{ world.missing.a.b ?? 'x' }}", "{{ world.nil ?? world.zero ?? 1 }}", "{{ world.s.x ?? 'x' }}", "{{ world.list[9] ?? 'x' }}",
	"{{ world.missing?.x }}", "{{ world.nested?.a.b }}", "{{ world.nested.a?.zz.c }}", "{{ world.nilptr?.X }}", "{{ world.nilptr ?? 'p' }}",
	"{{ world.nilmap?.x }}", "{{ world.nilmap ?? 'm' }}", "{{ world.nilmap }}", "{{ world.nilmap?.x ?? world.nillist }}", "{{ world.nillist?.x }}",
	"{{ world.emptymap ?? 'e' }}", "{{ world.empty ?? 'e' }}", "{{ world.false ?? 'f' }}", "{{ world.s ?? 2.5 }}", "{{ world.nil ?? true }}",
	"{{ world.fn ?? 1 }}", "{{ world.missing ?? nil }}", "{{ world.missing ?? world.missing?.x }}", "{{ world.list?.[0] }}",
	"claim {{ world.s }} for {{ world.one }} ({{ world.f }})", "{{ world.list[2] }}{{ world.nested.a.l }}",
	"{{ range world.list }}[{{ . }}]{{ end }}", "{{ range world.nested.a.l }}{{ .x }}{{ end }}",
}

func TestFastValueMatchesTheVM(t *testing.T) {
	envs := []Env{fastEnv(), nil, {"world": nil}, {"world": "text"}, {"world": []any{1}}}
	answered := 0
	for _, src := range valueSources {
		v, err := CompileValue(src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		for _, env := range envs {
			got, gerr := v.Eval(env)
			want, werr := evalVM(v, env)
			if diff := cmp.Diff(errDesc(werr), errDesc(gerr)); diff != "" {
				t.Fatalf("%q: error (-vm +fast):\n%s", src, diff)
			}
			if diff := cmp.Diff(fmt.Sprintf("%#v", want), fmt.Sprintf("%#v", got)); diff != "" {
				t.Fatalf("%q: value (-vm +fast):\n%s", src, diff)
			}
			if v.single != nil && v.single.fast != nil {
				if _, ok := v.single.fast.get(env); ok {
					answered++
				}
			}
		}
	}
	if answered < 20 {
		t.Errorf("the plain path answered %d evaluations", answered)
	}
}

// evalVM evaluates v as Eval did before the plain paths: every expression
// through the VM.
func evalVM(v *Value, env Env) (any, error) {
	var units []*unit
	collectUnits(&units, v.nodes)
	if v.single != nil {
		units = append(units, v.single)
	}
	defer withoutPaths(units...)()
	return v.Eval(env)
}

func collectUnits(units *[]*unit, nodes []vnode) {
	for i := range nodes {
		n := &nodes[i]
		if n.u != nil {
			*units = append(*units, n.u)
		}
		collectUnits(units, n.body)
		collectUnits(units, n.alt)
		for _, b := range n.branches {
			if b.cond != nil {
				*units = append(*units, b.cond)
			}
			collectUnits(units, b.body)
		}
	}
}

// withoutPaths takes the plain paths off units and returns the function
// that puts them back.
func withoutPaths(units ...*unit) func() {
	saved := make([]exprFast, len(units))
	for i, u := range units {
		saved[i], u.fast = u.fast, nil
	}
	return func() {
		for i, u := range units {
			u.fast = saved[i]
		}
	}
}

func TestFastPathsRecognised(t *testing.T) {
	world := func(steps ...step) *exprPath { return &exprPath{root: "world", steps: steps} }
	tests := []struct {
		src  string
		want exprFast
	}{
		{"world.s", world(step{key: "s"})},
		{`world["a b"].l[2]`, world(step{key: "a b"}, step{key: "l"}, step{index: 2, isIdx: true})},
		{"args", &exprPath{root: "args"}},
		{"world?.s", &exprPath{root: "world", steps: []step{{key: "s", optional: true}}, normalize: true}},
		{"world.a?.b", &exprPath{root: "world", steps: []step{{key: "a"}, {key: "b", optional: true}}, normalize: true}},
		{"world.s ?? 1", &exprCoalesce{
			left:  &exprPath{root: "world", steps: []step{{key: "s", optional: true}}},
			right: exprLit{1}}},
		{"world ?? 'x' ?? nil", &exprCoalesce{left: &exprCoalesce{left: &exprPath{root: "world"}, right: exprLit{"x"}}, right: exprLit{nil}}},
		{"world.f ?? 1.5", &exprCoalesce{
			left:  &exprPath{root: "world", steps: []step{{key: "f", optional: true}}},
			right: exprLit{1.5}}},
		{"world.s ?? world.t", &exprCoalesce{
			left:  &exprPath{root: "world", steps: []step{{key: "s", optional: true}}},
			right: world(step{key: "t"})}},
		{"world.l[-1]", nil},
		{"world.l[world.i]", nil},
		{"len(world.s)", nil},
		{"world.s == 'a'", nil},
		{"world.s ?? len(world.t)", nil},
		{"world.s ?? -1", &exprCoalesce{ // the optimizer folds -1
			left:  &exprPath{root: "world", steps: []step{{key: "s", optional: true}}},
			right: exprLit{-1}}},
		{"world.s ?? [1]", nil},
	}
	for _, tc := range tests {
		u, err := compileExpr(tc.src, 0, len(tc.src), false, false)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, u.fast, cmp.AllowUnexported(exprPath{}, step{}, exprCoalesce{}, exprLit{})); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.src, diff)
		}
	}
	g, err := CompileGuard("world.t")
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []Env{fastEnv(), {"world": map[string]any{"t": "no"}}} {
		got, gerr := g.Eval(env)
		restore := withoutPaths(g.u)
		want, werr := g.Eval(env)
		restore()
		if got != want || errDesc(gerr) != errDesc(werr) {
			t.Errorf("guard: %v %v, want %v %v", got, gerr, want, werr)
		}
	}
}

// FuzzFastTextMatchesPongo2 renders any template that compiles against a
// fixed Env of every kind of value plus args decoded from the fuzzer's
// JSON, through Render and through pongo2 alone, and compares output and
// error.
func FuzzFastTextMatchesPongo2(f *testing.F) {
	for _, tc := range fastTemplates {
		f.Add(tc.src, `{"s":"x","list":[1,{"a":null}],"m":{"k":[true,2.5]}}`, false)
	}
	f.Add("{{ args.s }}{{ args.list.1.a }}{% if args.m.k %}{{ args.m.k.0 }}{% endif %}", `{"s":"<&>","m":{"k":[0]}}`, true)
	f.Add("{{ args.0 }}{{ args[1] }}", `[1e400,"a"]`, true)
	f.Fuzz(func(t *testing.T, src, args string, useNumber bool) {
		tpl, err := CompileText(src)
		if err != nil {
			return
		}
		env := fastEnv()
		dec := json.NewDecoder(strings.NewReader(args))
		if useNumber {
			dec.UseNumber()
		}
		var a any
		if dec.Decode(&a) == nil {
			env["args"] = a
		}
		compareText(t, tpl, env)
	})
}

// FuzzFastValueMatchesVM evaluates any value template that compiles with
// and without the plain paths and compares value and error.
func FuzzFastValueMatchesVM(f *testing.F) {
	for _, src := range valueSources {
		f.Add(src, `{"a":{"b":[1,"x",null]},"n":2}`)
	}
	f.Fuzz(func(t *testing.T, src, world string) {
		v, err := CompileValue(src)
		if err != nil {
			return
		}
		env := fastEnv()
		var w any
		dec := json.NewDecoder(strings.NewReader(world))
		dec.UseNumber()
		if dec.Decode(&w) == nil {
			env["slots"] = w
		}
		got, gerr := v.Eval(env)
		want, werr := evalVM(v, env)
		if errDesc(gerr) != errDesc(werr) {
			t.Fatalf("%q: error %q, the VM's %q", src, errDesc(gerr), errDesc(werr))
		}
		if g, w := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", want); g != w {
			t.Fatalf("%q: %s, the VM's %s", src, g, w)
		}
	})
}
