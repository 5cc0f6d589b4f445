package story

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// A room and an intent written under overrides.states / overrides.intents
// load exactly as they would written in the imported story itself: every
// key of a state (and of an intent) is read by the same loader, in the
// imported story's names.
func TestImportOverridesLoadAsTheImportedStorysOwn(t *testing.T) {
	room := `description: "A whole room."
view: "n is {{ world.n }}"
type: compound
initial: inner
relevant_world: [n]
relevant_slots: [item]
default_intent: poke
write_mode: open
decider: human
intercept_drive: rest
timeout: {after: 30s, target: t}
contextual_routing: {room_chat: poke}
agent_off_ramp: true
intents:
  local: {description: "Only here."}
on_enter:
  - set: {n: 1}
  - say: "entered {{ world.n }}"
on:
  poke:
    - when: "world.n > 0"
      target: t
      effects: [{increment: {n: 1}}]
    - default: true
      target: .
      guard_hint: "n is not set"
states:
  inner: {view: "inner {{ world.n }}"}
`
	intent := `title: "Poke it"
description: "Poke the room."
examples: ["poke", "prod"]
priority: 2
hidden: false
synonyms: [prod, nudge]
slots:
  item:
    type: string
    required: true
    values: [stick, finger]
    description: "What to poke with."
    examples: [stick]
    format_hint: "one word"
    prompt: "With what?"
    validator: "value != 'toe'"
    synonyms: {stick: [twig]}
`
	indent := func(s, pad string) string {
		return pad + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pad) + "\n"
	}
	child := func(s, i string) string {
		return "app: {id: child}\nworld:\n  n: {type: int, default: 0}\nintents:\n  poke:\n" + indent(i, "    ") +
			"root: s\nstates:\n  s:\n" + indent(s, "    ") + "  t: {}\n"
	}
	parent := "app: {id: p}\nroot: main\nstates:\n  main: {}\nimports:\n  x:\n    source: ./child\n    entry: s\n"
	written := testkit.Tree(t, map[string]string{"app.yaml": parent, "child/app.yaml": child(room, intent)})
	overridden := testkit.Tree(t, map[string]string{
		"app.yaml": parent + "    overrides:\n      states:\n        s:\n" + indent(room, "          ") +
			"      intents:\n        poke:\n" + indent(intent, "          "),
		"child/app.yaml": child("view: theirs\n", "description: theirs\n"),
	})
	a, err := Load(filepath.Join(written, "app.yaml"), WithLookupEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Load(filepath.Join(overridden, "app.yaml"), WithLookupEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	opts := cmp.Options{
		cmpopts.IgnoreTypes(Pos{}),
		cmpopts.IgnoreUnexported(expr.Guard{}, expr.Value{}, expr.Text{}, expr.Tree{}),
		cmp.Comparer(func(x, y *expr.Text) bool { return (x == nil) == (y == nil) && (x == nil || x.Source() == y.Source()) }),
		cmp.Comparer(func(x, y *expr.Guard) bool { return (x == nil) == (y == nil) && (x == nil || x.Source() == y.Source()) }),
		cmp.Comparer(func(x, y *expr.Value) bool { return (x == nil) == (y == nil) && (x == nil || x.Source() == y.Source()) }),
		cmpopts.IgnoreFields(State{}, "Parent"),
	}
	for _, name := range []string{"x.s", "x.s.inner"} {
		if diff := cmp.Diff(a.States[name], b.States[name], opts...); diff != "" {
			t.Errorf("%s written in the child vs under overrides.states (-written +overridden):\n%s", name, diff)
		}
	}
	if b.States["x.s"] == nil || b.States["x.s"].Description != "A whole room." || len(b.States["x.s"].On["x__poke"]) != 2 {
		t.Fatalf("the overriding room did not load: %+v", b.States["x.s"])
	}
	if diff := cmp.Diff(a.Intents["x__poke"], b.Intents["x__poke"], opts...); diff != "" {
		t.Errorf("intent written in the child vs under overrides.intents (-written +overridden):\n%s", diff)
	}
	if got := b.Intents["x__poke"]; got == nil || got.Title != "Poke it" || got.Slots["item"] == nil || got.Slots["item"].Prompt != "With what?" {
		t.Fatalf("the overriding intent did not load: %+v", got)
	}
}

// version: is kept on the import (metadata, not enforced), and hosts:
// inherit joins the imported story's hosts to the importer's.
func TestImportVersionAndHosts(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml": "app: {id: p}\nhosts: [host.run]\nroot: main\nstates:\n  main: {}\nimports:\n" +
			"  x:\n    source: ./leaf\n    version: \">=0.3 <0.4\"\n    entry: s\n    exits: {done: {to: main}}\n    hosts: inherit\n",
		"leaf/app.yaml": strings.Replace(leafStory, "app: {id: leaf}", "app: {id: leaf}\nhosts: [host.agent.decide]", 1),
	})
	st := load(t, filepath.Join(dir, "app.yaml"), nil)
	if got := st.States["x"].Import.Version; got != ">=0.3 <0.4" {
		t.Errorf("version = %q", got)
	}
	if diff := cmp.Diff([]string{"host.run", "host.agent.decide"}, st.Hosts); diff != "" {
		t.Errorf("hosts (-want +got):\n%s", diff)
	}
}
