package story

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.yaml.in/yaml/v3"

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

// Every room and intent of a story, written under an importer's
// overrides.states / overrides.intents in place of the imported story's
// own (emptied there), loads exactly as the story written whole does: the
// story with every key a state and an intent take (testdata/overrides),
// and the conformance stories of Kitsoki's format.
func TestImportOverridesTakeEveryKey(t *testing.T) {
	stories := []string{"testdata/overrides/everykey"}
	for _, name := range []string{"anatomy", "conversational", "effects", "rooms", "slots", "templates", "views"} {
		stories = append(stories, filepath.Join("..", "..", "check", "kitsokiformat", "testdata", name))
	}
	for _, src := range stories {
		t.Run(filepath.Base(src), func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			root, stub, states, intents := emptiedStory(t, filepath.Join(dir, "app.yaml"))
			write := func(name, body string) string {
				t.Helper()
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			}
			write("stub.yaml", stub)
			head := "app: {id: importer}\nroot: main\nstates:\n  main: {}\nimports:\n  x:\n    entry: " + root + "\n"
			a, err := Load(write("written.yaml", head+"    source: ./app.yaml\n"), WithLookupEnv(mapEnv(nil)), WithStubbedHosts())
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			over := head + "    source: ./stub.yaml\n    overrides:\n      states:\n" + indentYAML(states, "        ")
			if intents != "" {
				over += "      intents:\n" + indentYAML(intents, "        ")
			}
			b, err := Load(write("overridden.yaml", over), WithLookupEnv(mapEnv(nil)), WithStubbedHosts())
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			compared := 0
			for name, st := range a.States {
				if !strings.HasPrefix(name, "x.") {
					continue
				}
				compared++
				if diff := cmp.Diff(st, b.States[name], overrideCmp...); diff != "" {
					t.Errorf("state %s written vs under overrides.states (-written +overridden):\n%s", name, diff)
				}
			}
			for name, in := range a.Intents {
				if strings.HasPrefix(name, "x__") {
					if diff := cmp.Diff(in, b.Intents[name], overrideCmp...); diff != "" {
						t.Errorf("intent %s written vs under overrides.intents (-written +overridden):\n%s", name, diff)
					}
				}
			}
			if compared < 1 {
				t.Fatalf("compared %d imported states", compared)
			}
		})
	}
}

var overrideCmp = cmp.Options{
	cmpopts.IgnoreTypes(Pos{}),
	cmpopts.IgnoreUnexported(expr.Guard{}, expr.Value{}, expr.Text{}, expr.Tree{}),
	cmp.Comparer(func(x, y *expr.Text) bool { return (x == nil) == (y == nil) && (x == nil || x.Source() == y.Source()) }),
	cmp.Comparer(func(x, y *expr.Guard) bool { return (x == nil) == (y == nil) && (x == nil || x.Source() == y.Source()) }),
	cmp.Comparer(func(x, y *expr.Value) bool { return (x == nil) == (y == nil) && (x == nil || x.Source() == y.Source()) }),
	cmpopts.IgnoreFields(State{}, "Parent"),
}

// emptiedStory reads a story file and returns its root state, the story
// with every state and intent emptied ({}), and its states: and intents:
// mappings as YAML text.
func emptiedStory(t *testing.T, path string) (root, stub, states, intents string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	top := doc.Content[0]
	text := func(n *yaml.Node) string {
		b, err := yaml.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i].Value, top.Content[i+1]
		switch k {
		case "root":
			root = v.Value
		case "states", "intents":
			if k == "states" {
				states = text(v)
			} else {
				intents = text(v)
			}
			empty := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			c := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: v.Style}
			for j := 0; j+1 < len(v.Content); j += 2 {
				c.Content = append(c.Content, v.Content[j], empty)
			}
			top.Content[i+1] = c
		}
	}
	if root == "" || states == "" {
		t.Fatalf("%s: no root: or states:", path)
	}
	return root, text(&doc), states, intents
}

func indentYAML(s, pad string) string {
	return pad + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pad) + "\n"
}

// An imported story's menu:, arm and effect emit:, and media
// annotate_intent: name its intents, renamed under the alias; its own
// prompts.shared is the @shared/ search path of its prompts (the
// importer's shared fragment of the same name is not taken), and its
// prompts.overlay is a warning (a run's overlay is the importer's).
func TestImportRenamesIntentListsAndKeepsItsPromptsShared(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml":     "app: {id: p}\nprompts: {shared: [frag]}\nroot: main\nstates:\n  main: {}\nimports:\n  x: {source: ./child, entry: s}\n",
		"frag/tone.md": "the importer's tone",
		"child/app.yaml": "app: {id: c}\nprompts: {shared: [frag], overlay: ov}\nhosts: [host.agent.ask]\nintents:\n  go: {}\n  tick: {}\n  note: {slots: {feedback: {type: string}}}\n" +
			"root: s\nstates:\n  s:\n    menu: [go, tick]\n    view:\n      - media: {handle: h, kind: image, annotate_intent: note}\n" +
			"    on_enter: [{emit: tick}]\n    on:\n      go: [{target: ., emit: [tick]}]\n      tick: [{target: .}]\n" +
			"      note: [{target: ., effects: [{invoke: host.agent.ask, with: {prompt: p.md}}]}]\n",
		"child/frag/tone.md": "the child's tone",
		"child/ov/p.md":      "overlay",
		"child/p.md":         `{% include "@shared/tone.md" %}`,
	})
	st := load(t, filepath.Join(dir, "app.yaml"), nil)
	s := st.States["x.s"]
	if d := cmp.Diff([]string{"x__go", "x__tick"}, s.Menu); d != "" {
		t.Errorf("menu (-want +got):\n%s", d)
	}
	for what, tree := range map[string]*expr.Tree{"arm emit": s.On["x__go"][0].Emit, "effect emit": s.OnEnter[0].Emit} {
		got, err := tree.Eval(expr.Env{})
		if err != nil || !strings.Contains(fmt.Sprint(got), "x__tick") {
			t.Errorf("%s = %v (%v), want x__tick", what, got, err)
		}
	}
	if got := s.ViewDoc.Elements[0].Media.AnnotateIntent; got != "x__note" {
		t.Errorf("annotate_intent = %q", got)
	}
	var prompt string
	for k, p := range st.Prompts {
		if strings.HasSuffix(k, "p.md") {
			prompt = p.Source()
		}
	}
	if !strings.Contains(prompt, "the child's tone") || strings.Contains(prompt, "importer") {
		t.Errorf("the child's prompt = %q, want its own shared fragment", prompt)
	}
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0].String(), "an imported story's prompts.overlay is not used") {
		t.Errorf("warnings = %v", st.Warnings)
	}
}
