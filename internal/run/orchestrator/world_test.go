package orchestrator

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

const typedWorldStory = `
app: {id: typed}
world:
  n: {type: int, default: 0}
  f: {type: float}
  b: {type: bool}
  s: {type: string}
  e: {type: enum, values: [low, high]}
  o: {type: object}
  l: {type: list}
  free: {default: null}
root: a
states:
  a: {terminal: true}
`

// Initial world values (a flow's initial_world, an MCP client's world) are
// checked against the declared types when the session is made.
func TestInitialWorldTypes(t *testing.T) {
	st, err := story.Load(writeStory(t, files{"app.yaml": typedWorldStory}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		kv   map[string]any
		want string // "" = accepted
	}{
		{"int from YAML", map[string]any{"n": 3}, ""},
		{"int from JSON", map[string]any{"n": 3.0}, ""},
		{"int64", map[string]any{"n": int64(3)}, ""},
		{"fraction for int", map[string]any{"n": 2.5}, `world key "n" is declared int; the initial value 2.5 is not an int`},
		{"string for int", map[string]any{"n": "3"}, `world key "n" is declared int; the initial value "3" is not an int`},
		{"int for float", map[string]any{"f": 1}, ""},
		{"bool", map[string]any{"b": false}, ""},
		{"string for bool", map[string]any{"b": "yes"}, `world key "b" is declared bool; the initial value "yes" is not true or false`},
		{"number for string", map[string]any{"s": 5}, `world key "s" is declared string; the initial value 5 is not a string`},
		{"listed enum", map[string]any{"e": "high"}, ""},
		{"unlisted enum", map[string]any{"e": "mid"}, `world key "e" is declared enum; the initial value "mid" is not one of low, high`},
		{"object", map[string]any{"o": map[string]any{"k": 1}}, ""},
		{"list for object", map[string]any{"o": []any{1}}, `world key "o" is declared object; the initial value [1] is not a JSON object`},
		{"list", map[string]any{"l": []any{}}, ""},
		{"null for anything", map[string]any{"n": nil, "l": nil}, ""},
		{"untyped key", map[string]any{"free": []any{"x"}}, ""},
		{"undeclared key", map[string]any{"zzz": 1}, ""}, // left to the caller
		{"first bad key by name", map[string]any{"s": 1, "b": "x"}, `world key "b" is declared bool; the initial value "x" is not true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(st, nil, nil, WithWorld(tt.kv))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("New: %q, want %q", got, tt.want)
			}
		})
	}
}

// WithWorldAsGiven (a flow fixture's seed) takes values that misfit their
// declared types as they are, in the initial world and in world overrides;
// WorldMisfits lists every misfit, by key, for the caller's warnings.
func TestWorldAsGiven(t *testing.T) {
	st, err := story.Load(writeStory(t, files{"app.yaml": typedWorldStory}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	kv := map[string]any{"s": []any{map[string]any{"id": "1"}}, "b": "x", "n": 2}
	want := []string{
		`world key "b" is declared bool; the initial value "x" is not true or false`,
		`world key "s" is declared string; the initial value [{"id":"1"}] is not a string`,
	}
	if d := cmp.Diff(want, WorldMisfits(st, kv)); d != "" {
		t.Errorf("WorldMisfits (-want +got):\n%s", d)
	}
	s, err := New(st, nil, nil, WithWorld(kv), WithWorldAsGiven())
	if err != nil {
		t.Fatalf("New with WithWorldAsGiven: %v", err)
	}
	if d := cmp.Diff(kv["s"], s.World()["s"]); d != "" {
		t.Errorf("world s (-want +got):\n%s", d)
	}
	if err := s.OverrideWorld(map[string]any{"n": "many"}); err != nil {
		t.Errorf("OverrideWorld as given: %v", err)
	}
	strict, err := New(st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := strict.OverrideWorld(map[string]any{"n": "many"}); err == nil ||
		err.Error() != `world override: world key "n" is declared int; the initial value "many" is not an int` {
		t.Errorf("strict OverrideWorld: %v", err)
	}
}
