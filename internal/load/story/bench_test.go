package story

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeLargeStory writes a story of nStates states spread over include files
// (20 per file) that reference nSchemas schemas and 10 prompt files, each
// state with a view, an agent invoke, a guarded arm and a set.
func writeLargeStory(tb testing.TB, dir string, nStates, nSchemas int) string {
	tb.Helper()
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	for _, d := range []string{"rooms", "schemas", "prompts"} {
		must(os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(dir, "schemas", "common.json"),
		[]byte(`{"$defs": {"reason": {"type": "string", "minLength": 1}}}`), 0o644))
	for i := range nSchemas {
		doc := fmt.Sprintf(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["decision", "reason", "confidence"],
  "properties": {
    "decision": {"enum": ["approve", "reject", "unsure", "v%d"]},
    "reason": {"$ref": "common.json#/$defs/reason"},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "tags": {"type": "array", "items": {"type": "string"}},
    "score": {"type": "integer"}
  },
  "additionalProperties": false
}`, i)
		must(os.WriteFile(filepath.Join(dir, "schemas", fmt.Sprintf("s%02d.json", i)), []byte(doc), 0o644))
	}
	for i := range 10 {
		p := fmt.Sprintf("Review item {{ args.item }} (round %d).\n{%% if args.notes %%}Notes: {{ args.notes }}{%% endif %%}\n", i)
		must(os.WriteFile(filepath.Join(dir, "prompts", fmt.Sprintf("p%d.md", i)), []byte(p), 0o644))
	}
	var root strings.Builder
	root.WriteString(`app: {id: large, version: 1.0.0, title: "Generated"}
hosts: [host.agent.decide, host.tool.run]
include: ["rooms/*.yaml"]
agents:
  judge: {system_prompt: "Judge carefully.", model: claude-sonnet-4-6, tools: []}
agent_plugins:
  agent.local: {plugin: builtin.local_llm, endpoint: "http://127.0.0.1:8080", model: qwen}
world:
  verdict: {type: object, default: {}}
  count: {type: int, default: 0}
  note: {type: string, default: ""}
intents:
  next: {description: "Move on.", slots: {reason: {type: string}}}
  back: {description: "Go back."}
  retry: {description: "Try again."}
root: s000
`)
	must(os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(root.String()), 0o644))
	var room strings.Builder
	for i := range nStates {
		if i%20 == 0 {
			room.Reset()
			room.WriteString("states:\n")
		}
		next := fmt.Sprintf("s%03d", (i+1)%nStates)
		prev := fmt.Sprintf("s%03d", (i+nStates-1)%nStates)
		// Every guard and template differs from state to state, so no
		// compile cache could make this cheaper than a real story.
		fmt.Fprintf(&room, `  s%03[1]d:
    description: "State %[1]d."
    view: "State %[1]d: {{ world.note }} ({{ world.count }}) {{ world.verdict.decision ?? 'pending' }}"
    relevant_world: [verdict, count]
    on_enter:
      - invoke: host.agent.decide
        id: call%03[1]d
        once: true
        agent: agent.local
        with:
          agent: judge
          prompt: prompts/p%[2]d.md
          schema: schemas/s%02[3]d.json
          args: {item: "{{ world.note + '-%[1]d' }}", notes: "{{ world.count + %[1]d }}"}
        bind: {verdict: submitted, note: "{{ result.submitted.reason + ' (%[1]d)' }}"}
        on_error: %[4]s
      - when: "world.verdict?.decision == 'approve' && world.count < %[1]d"
        emit_intent: next
        slots: {reason: "{{ world.verdict.reason ?? 'r%[1]d' }}"}
    on:
      next:
        - when: "world.count > %[1]d && world.verdict?.decision != 'reject'"
          target: %[5]s
          effects:
            - set: {note: "{{ slots.reason ?? 'none-%[1]d' }}", count: 0}
          guard_hint: "Needs more rounds."
        - default: true
          target: .
          effects:
            - increment: {count: 1}
            - say: "Round {{ world.count }} of state %[1]d done."
      back:
        - target: %[4]s
      retry:
        - target: s%03[1]d
`, i, i%10, i%nSchemas, prev, next)
		if i%20 == 19 || i == nStates-1 {
			must(os.WriteFile(filepath.Join(dir, "rooms", fmt.Sprintf("r%02d.yaml", i/20)), []byte(room.String()), 0o644))
		}
	}
	return filepath.Join(dir, "app.yaml")
}

// TestLargeStoryLoads keeps the benchmark's story honest: it must load
// cleanly and have what it claims.
func TestLargeStoryLoads(t *testing.T) {
	path := writeLargeStory(t, t.TempDir(), 200, 20)
	s := load(t, path, nil)
	if len(s.States) != 200 || len(s.Schemas) != 20 || len(s.Prompts) != 10 {
		t.Fatalf("states=%d schemas=%d prompts=%d, want 200/20/10", len(s.States), len(s.Schemas), len(s.Prompts))
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", lines(s.Warnings))
	}
	// Spot-check that compiled results landed where they belong.
	st := s.States["s007"]
	if st.View == nil || len(st.OnEnter) != 2 || st.OnEnter[1].When == nil || st.OnEnter[1].EmitSlots["reason"] == nil {
		t.Fatalf("s007 not fully compiled: %+v", st)
	}
	in := st.OnEnter[0].Invoke
	if in.With == nil || len(in.Bind) != 2 || in.Bind[0].Key != "note" || in.Bind[0].Template == nil ||
		in.Bind[1].Key != "verdict" || in.Bind[1].Path != "submitted" || in.Bind[1].Template != nil {
		t.Errorf("s007 invoke = %+v, binds %+v", in, in.Bind)
	}
	next := st.On["next"]
	if len(next) != 2 || next[0].When == nil || next[0].Target != "s008" || len(next[0].Effects[0].Set) != 2 ||
		next[0].Effects[0].Set[0].Key != "count" || next[0].Effects[0].Set[1].Value == nil || next[1].Effects[1].Say == nil {
		t.Errorf("s007 next arms not fully compiled")
	}
}

// BenchmarkLoadLarge loads a generated story of 200 states and 20 schemas.
// Target: under 50 ms per load.
func BenchmarkLoadLarge(b *testing.B) {
	path := writeLargeStory(b, b.TempDir(), 200, 20)
	b.ReportAllocs()
	for b.Loop() {
		s, err := Load(path)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// writeTypedViewStory writes a story of n states whose views are typed:
// even states an element list with a choice, odd ones extends/blocks over
// views/base.pongo.
func writeTypedViewStory(tb testing.TB, dir string, n int) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString("app: {id: typed-bench}\nroot: s000\nworld:\n  count: {type: int, default: 0}\n  items: {type: list, default: []}\nintents:\n  next: {}\nstates:\n")
	for i := range n {
		next := fmt.Sprintf("s%03d", (i+1)%n)
		if i%2 == 0 {
			fmt.Fprintf(&b, `  s%03[1]d:
    description: "State %[1]d"
    view:
      - banner: {text: "STATE %[1]d", subtitle: "count {{ world.count }}"}
      - kv: {pairs: {Count: "{{ world.count }}", Items: "{{ world.items|length }}", State: "{{ state.path }}"}}
      - prose: "Items: {{ world.items|join:', ' }}"
        when: "world.items"
      - list: {items: [{label: "next", hint: "go on"}, {label: "{{ world.count }}", when: "world.count > 1"}]}
      - choice: {prompt: "Go", items: [{label: "next", intent: next, hint: "to %[2]s"}]}
    on: {next: [{target: %[2]s, effects: [{increment: {count: 1}}]}]}
`, i, next)
		} else {
			fmt.Fprintf(&b, `  s%03[1]d:
    description: "State %[1]d"
    view:
      extends: base
      blocks:
        body: [{prose: "Body %[1]d {{ world.count }}"}, {kv: {pairs: {A: "1", B: "{{ world.count }}"}}}]
    on: {next: [{target: %[2]s}]}
`, i, next)
		}
	}
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "views"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "views", "base.pongo"), []byte("{% block status %}{{ world.count }}{% endblock %}\n{% block heading %}{{ state.description }}{% endblock %}\n{% block body %}{% endblock %}\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(b.String()), 0o644))
	return filepath.Join(dir, "app.yaml")
}

// TestTypedViewStoryLoads keeps the typed-view benchmark's story honest.
func TestTypedViewStoryLoads(t *testing.T) {
	s := load(t, writeTypedViewStory(t, t.TempDir(), 20), nil)
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", lines(s.Warnings))
	}
	if d := s.States["s000"].ViewDoc; d == nil || len(d.Elements) != 5 {
		t.Fatalf("s000 view = %+v", d)
	}
	if d := s.States["s001"].ViewDoc; d == nil || len(d.Blocks["body"]) != 2 || d.NoBase {
		t.Fatalf("s001 view = %+v", d)
	}
}

// BenchmarkLoadTypedViews loads a generated story of 200 states with typed
// views (element lists and extends/blocks).
func BenchmarkLoadTypedViews(b *testing.B) {
	path := writeTypedViewStory(b, b.TempDir(), 200)
	b.ReportAllocs()
	for b.Loop() {
		s, err := Load(path)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// writeImportingStory writes a parent story that imports a generated large
// story (nStates states) under four aliases and a typed-view story under
// one, each with world_in and an exit mapping back.
func writeImportingStory(tb testing.TB, dir string, nStates int) string {
	tb.Helper()
	writeLargeStory(tb, filepath.Join(dir, "large"), nStates, 10)
	writeTypedViewStory(tb, filepath.Join(dir, "views"), nStates)
	var b strings.Builder
	b.WriteString(`app: {id: importing}
hosts: [host.agent.decide, host.tool.run]
world:
  note: {type: string, default: "n"}
intents:
  go: {}
root: hub
states:
  hub:
    view: "Hub {{ world.note }}"
    on:
      go:
        - target: a
imports:
`)
	for _, alias := range []string{"a", "b", "c", "d"} {
		fmt.Fprintf(&b, "  %s:\n    source: ./large\n    entry: s000\n    world_in:\n      note: \"{{ world.note }}-%s\"\n", alias, alias)
	}
	b.WriteString("  v:\n    source: ./views\n")
	p := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestImportingStoryLoads keeps BenchmarkLoadImports' story honest.
func TestImportingStoryLoads(t *testing.T) {
	s := load(t, writeImportingStory(t, t.TempDir(), 50), nil)
	if _, ok := s.States["d.s049"]; !ok || len(s.States) < 4*50+50 {
		t.Fatalf("states = %d, want the four large imports and the views", len(s.States))
	}
	if got := s.States["c.s010"].On["c__next"][0].Target; got != "c.s011" {
		t.Errorf("c.s010 next target = %q, want c.s011", got)
	}
}

// BenchmarkLoadImports loads a story importing four copies of a 50-state
// generated story and a 50-state typed-view story (about 250 states).
func BenchmarkLoadImports(b *testing.B) {
	path := writeImportingStory(b, b.TempDir(), 50)
	b.ReportAllocs()
	for b.Loop() {
		s, err := Load(path)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	b.ReportMetric(liveHeap(b, path)/1e6, "live-MB")
}
