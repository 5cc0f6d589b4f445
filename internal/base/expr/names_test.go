package expr

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mapNames renames the world keys and intents it lists.
type mapNames struct{ world, intents map[string]string }

func (m mapNames) WorldKey(k string) (string, bool) { to, ok := m.world[k]; return to, ok }
func (m mapNames) Intent(n string) (string, bool)   { to, ok := m.intents[n]; return to, ok }

var kidNames = mapNames{
	world:   map[string]string{"k": "kid__k", "n": "kid__n"},
	intents: map[string]string{"go": "kid__go"},
}

// Renamed world keys: only references are renamed, never text in a string
// literal; the source stays as written.
func TestNamesGuard(t *testing.T) {
	tests := []struct {
		src   string
		world map[string]any
		want  bool
	}{
		{`world.k == "x"`, map[string]any{"kid__k": "x", "k": "y"}, true},
		{`world?.k == "x"`, map[string]any{"kid__k": "x"}, true},
		{`world["k"] == "x"`, map[string]any{"kid__k": "x"}, true},
		{`get(world, "k") == "x"`, map[string]any{"kid__k": "x"}, true},
		{`"world.k" == "world.k"`, map[string]any{}, true},                                // a string literal is text
		{`world.other == "world.k"`, map[string]any{"other": "world.k"}, true},            // a key not renamed; a literal kept
		{`world.k + world.n == "ab"`, map[string]any{"kid__k": "a", "kid__n": "b"}, true}, // every reference
		{`slots.world.k == 1`, map[string]any{}, false},                                   // not the world root
	}
	for _, tt := range tests {
		g, err := CompileGuard(tt.src, WithNames(kidNames))
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if g.Source() != tt.src {
			t.Errorf("Source() = %q, want the text as written %q", g.Source(), tt.src)
		}
		got, err := g.Eval(Env{"world": tt.world, "slots": map[string]any{"world": map[string]any{"k": 2}}})
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if got != tt.want {
			t.Errorf("%s = %v, want %v", tt.src, got, tt.want)
		}
	}
	g, _ := CompileGuard(`world.k != "" && world.other != ""`, WithNames(kidNames))
	var keys []string
	for _, r := range g.WorldReads() {
		keys = append(keys, r.Key)
	}
	if diff := cmp.Diff([]string{"kid__k", "other"}, keys); diff != "" {
		t.Errorf("WorldReads (-want +got):\n%s", diff)
	}
}

// Value templates and trees: the expressions inside {{ }} are renamed, the
// text around them is not.
func TestNamesValue(t *testing.T) {
	env := Env{"world": map[string]any{"kid__k": "K", "k": "parent", "kid__n": 2}}
	tests := []struct {
		src  string
		want any
	}{
		{"{{ world.k }}", "K"},
		{"world.k is {{ world.k }}", "world.k is K"},
		{`{{ "world.k" }}`, "world.k"},
		{"{{ if world.n > 1 }}{{ world.k }}{{ else }}no{{ end }}", "K"},
		{"{{ world.n + 1 }}", 3},
	}
	for _, tt := range tests {
		v, err := CompileValue(tt.src, WithNames(kidNames))
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		got, err := v.Eval(env)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if got != tt.want {
			t.Errorf("%s = %#v, want %#v", tt.src, got, tt.want)
		}
	}
	tr, err := CompileTree(map[string]any{"a": "{{ world.k }}", "b": []any{"world.k", "{{ world.n }}"}}, WithNames(kidNames))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.Eval(env)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"a": "K", "b": []any{"world.k", 2}}, got); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
}

// Text templates: renamed on pongo2's tokens, so prose, string literals and
// comments keep world.k as written.
func TestNamesText(t *testing.T) {
	env := Env{"world": map[string]any{"kid__k": "K", "k": "parent", "kid__n": 2, "other": "o"}}
	tests := []struct{ src, want string }{
		{"{{ world.k }}", "K"},
		{"Prose about world.k: {{ world.k }}", "Prose about world.k: K"},
		{`{{ "world.k" }}`, "world.k"},
		{`{{ world["k"] }}`, "K"},
		{"{# world.k is a comment #}{{ world.k }}", "K"},
		{"{% comment %}{{ world.k }}{% endcomment %}{{ world.n }}", "2"},
		{"{% if world.n > 1 %}{{ world.k|upper }}{% endif %}", "K"},
		{"{% for x in world.list %}{% endfor %}{{ world.other }}", "o"},
		{"{{ world.k ?? 'none' }}", "K"},
		{"{{ world.n > 1 ? world.k : 'small' }}", "K"},
		{"{% verbatim %}{{ world.k }}{% endverbatim %}", "{{ world.k }}"},
		{"line one\n  {{ world.k }} and {{ world.n }}\n{{ 'world.n' }}", "line one\n  K and 2\nworld.n"},
		{"ünïcode {{ world.k }}", "ünïcode K"},
	}
	for _, tt := range tests {
		x, err := CompileText(tt.src, WithNames(kidNames))
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		if x.Source() != tt.src {
			t.Errorf("Source() = %q, want %q", x.Source(), tt.src)
		}
		got, err := x.Render(env)
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		if got != tt.want {
			t.Errorf("%q renders %q, want %q", tt.src, got, tt.want)
		}
	}
}

// Menu helpers' literal intent names are renamed in all three languages.
func TestNamesMenuHelpers(t *testing.T) {
	menu := Menu([]MenuEntry{{Intent: "kid__go", Primary: true}, {Intent: "go"}})
	env := Env{"menu": menu}
	g, err := CompileGuard(`available("go")`, WithNames(kidNames))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := g.Eval(env); err != nil || !ok {
		t.Errorf(`available("go") = %v, %v; want true (kid__go is primary)`, ok, err)
	}
	x, err := CompileText(`{{ intent_status('go') }} {{ intent_status("other") }} {{ 'available("go")' }}`, WithNames(kidNames))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := x.Render(env); got != `available unknown available("go")` {
		t.Errorf("text = %q", got)
	}
}

// Errors in a renamed text point at the text as written.
func TestNamesErrorPositions(t *testing.T) {
	_, err := CompileText("{{ world.k }} {{ world.n }}\n{% if %}", WithNames(kidNames))
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
	plain, err := CompileText("{{ world.k }} {{ world.n }}\n{% if %}")
	_ = plain
	var pe *CompileError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v", err)
	}
	if ce.Line != pe.Line || ce.Col != pe.Col {
		t.Errorf("renamed error at %d:%d, unrenamed at %d:%d: want the same place", ce.Line, ce.Col, pe.Line, pe.Col)
	}
	x, err := CompileText("{{ world.k }} {{ world.n|nosuchfilter }}", WithNames(kidNames))
	if err == nil {
		t.Fatalf("compiled %v", x)
	}
	if !errors.As(err, &ce) || ce.Line != 1 || ce.Col < 15 {
		t.Errorf("err = %#v, want line 1 past col 15", err)
	}
	_, err = CompileGuard(`world.k == && true`, WithNames(kidNames))
	if !errors.As(err, &ce) || ce.Col != 12 {
		t.Errorf("guard err = %#v, want col 12", err)
	}
}

// A render error of a renamed text points into the source as written,
// although the text pongo2 ran had the longer names (the rewritten text is
// made again for the error, not kept with the template).
func TestNamesTextRenderErrorPosition(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
	}{
		{"one line", "{{ world.k }} {{ world.k|col }}", 1, 26},
		{"second line", "line one\n{{ world.n }} {{ world.k|col }}", 2, 26},
		{"after a renamed intent", `{{ intent_status("go") }} {{ world.k|wordwrap }}`, 1, 38},
	}
	env := Env{"world": map[string]any{"kid__k": "K", "kid__n": 2}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := CompileText(tt.src, WithNames(kidNames))
			if err != nil {
				t.Fatal(err)
			}
			_, err = x.Render(env)
			var ee *EvalError
			if !errors.As(err, &ee) {
				t.Fatalf("Render error = %v (%T), want an *EvalError", err, err)
			}
			if diff := cmp.Diff([2]int{tt.line, tt.col}, [2]int{ee.Line, ee.Col}); diff != "" {
				t.Errorf("position (line, col) (-want +got):\n%s", diff)
			}
		})
	}
}
