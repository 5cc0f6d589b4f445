package compose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func parse(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

func dump(t *testing.T, n *yaml.Node) string {
	t.Helper()
	b, err := yaml.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// child is an imported story's document, its names as collected by the
// loader.
const child = `world:
  k: {type: string, default: ""}
  n: {type: int, default: 0}
intents:
  go: {description: "Say world.k out loud."}
  look: {}
host_interfaces:
  bell: {default: host.run}
states:
  s:
    description: "Reads world.k; goes to t."
    view: "{{ world.k }} and prose world.k"
    relevant_world: [k, other]
    on_enter:
      - invoke: iface.bell.ring
        with: {prompt: prompts/a.md, text: "world.k", target: t}
        bind: {n: count}
      - set: {k: "{{ world.n }}", other: "1"}
      - emit_intent: go
      - emit_intent: "{{ world.k }}"
    on:
      go:
        - target: t
          when: "world.k != ''"
      look:
        target: "@exit:done"
  t:
    contextual_routing: {pending_plan_path: world.k.plan}
    on:
      go: [{target: "{{ world.k }}"}, {target: s.inner}, {target: elsewhere}]
`

func childImport() *Import {
	return &Import{
		Alias:   "kid",
		States:  map[string]bool{"s": true, "t": true},
		World:   map[string]bool{"k": true, "n": true},
		Intents: map[string]bool{"go": true, "look": true},
		Ifaces:  map[string]bool{"bell": true},
		Exits:   map[string]bool{"done": true},
		Prompts: map[string]string{"prompts/a.md": "../mine.md"},
	}
}

// The fold renames names where the format names them and nothing else;
// text (descriptions, views, templates) is left for the compiler.
func TestFoldRenames(t *testing.T) {
	im := childImport()
	im.ExitTo = map[string]Exit{"done": {To: "landed"}}
	got := dump(t, im.Fold(parse(t, child)))
	want := `world:
    kid__k: {type: string, default: ""}
    kid__n: {type: int, default: 0}
intents:
    kid__go: {description: "Say world.k out loud."}
    kid__look: {}
host_interfaces:
    kid__bell: {default: host.run}
states:
    kid.s:
        description: "Reads world.k; goes to t."
        view: "{{ world.k }} and prose world.k"
        relevant_world: [kid__k, other]
        on_enter:
            - invoke: iface.kid__bell.ring
              with: {prompt: ../mine.md, text: "world.k", target: t}
              bind: {kid__n: count}
            - set: {kid__k: "{{ world.n }}", other: "1"}
            - emit_intent: kid__go
            - emit_intent: "{{ world.k }}"
        on:
            kid__go:
                - target: kid.t
                  when: "world.k != ''"
            kid__look:
                target: "landed"
    kid.t:
        contextual_routing: {pending_plan_path: kid__k.plan}
        on:
            kid__go: [{target: "{{ world.k }}"}, {target: kid.s.inner}, {target: elsewhere}]
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fold (-want +got):\n%s", diff)
	}
}

// The fold renames in place and copies nothing of what keeps its names;
// folding the same text twice under two aliases needs two parses.
func TestFoldInPlace(t *testing.T) {
	doc := parse(t, child)
	state := func(d *yaml.Node, name string) *yaml.Node { return valueOf(valueOf(d, "states"), name) }
	view, desc := valueOf(state(doc, "s"), "view"), valueOf(state(doc, "s"), "description")
	a := childImport()
	a.ExitTo = map[string]Exit{"done": {To: "x"}}
	if out := a.Fold(doc); out != doc {
		t.Fatalf("Fold returned another node")
	}
	s := state(doc, "kid.s")
	if s == nil || valueOf(s, "view") != view || valueOf(s, "description") != desc {
		t.Errorf("the view and description are not the parsed nodes")
	}
	b := childImport()
	b.Alias = "other"
	b.ExitTo = map[string]Exit{"done": {To: "y"}}
	other := b.Fold(parse(t, child))
	if !strings.Contains(dump(t, other), "other.s:") || strings.Contains(dump(t, other), "kid") {
		t.Errorf("each parse has its own names:\n%s", dump(t, other))
	}
	// A fold allocates the new names (one a state here: the arms' intent
	// and target names are made once) and its own maps, not copies.
	foldAllocs := func(states int) float64 {
		var b strings.Builder
		b.WriteString("states:\n")
		for i := range states {
			fmt.Fprintf(&b, "  s%d:\n    description: long text %d\n    view: more text\n    on_enter: [{say: hi}, {say: there}]\n    on:\n      go: [{target: t}]\n", i, i)
		}
		src := b.String()
		docs := make([]*yaml.Node, 25)
		for i := range docs {
			docs[i] = parse(t, src)
		}
		n := 0
		return testing.AllocsPerRun(20, func() {
			childImport().Fold(docs[n])
			n++
		})
	}
	small, large := foldAllocs(1), foldAllocs(40)
	t.Logf("allocations: %v folding 1 state, %v folding 40", small, large)
	if large-small > 2*39 {
		t.Errorf("folding 40 states allocates %v times, 1 state %v: it copies what it keeps", large, small)
	}
}

func valueOf(m *yaml.Node, key string) *yaml.Node {
	m = deref(m)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// An exit mapped with set: appends the importer's set: to each arm into
// it (after the arm's own effects) and to an on_complete target effect;
// Appended is told of each copy, placed at the target.
func TestFoldExitSets(t *testing.T) {
	im := childImport()
	set := parse(t, "{result: \"{{ world.kid__k }}\"}")
	im.ExitTo = map[string]Exit{"done": {To: "landed", Set: set}}
	var appended []*yaml.Node
	var targets []*yaml.Node
	im.Appended = func(n *yaml.Node) { appended = append(appended, n) }
	im.ExitTarget = func(n *yaml.Node, _ string) { targets = append(targets, n) }
	doc := parse(t, `states:
  s:
    on:
      go:
        - target: "@exit:done"
          effects: [{set: {k: "1"}}]
      look: {target: "@exit:done"}
    on_enter:
      - invoke: host.run
        background: true
        on_complete:
          - target: "@exit:done"
`)
	got := dump(t, im.Fold(doc))
	want := `states:
    kid.s:
        on:
            kid__go:
                - target: "landed"
                  effects: [{set: {kid__k: "1"}}, {set: {result: "{{ world.kid__k }}"}}]
            kid__look: {target: "landed", effects: [{set: {result: "{{ world.kid__k }}"}}]}
        on_enter:
            - invoke: host.run
              background: true
              on_complete:
                - target: "landed"
                  set: {result: "{{ world.kid__k }}"}
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fold (-want +got):\n%s", diff)
	}
	if len(appended) != 3 || len(targets) != 3 {
		t.Fatalf("appended %d sets, %d exit targets; want 3 and 3", len(appended), len(targets))
	}
	if appended[0].Line != targets[0].Line || appended[0] == set {
		t.Errorf("the set copy is at line %d, the target at %d (the copy must be placed at the target)", appended[0].Line, targets[0].Line)
	}
}

// An unmapped exit is reported once, naming the fix.
func TestFoldUnmappedExit(t *testing.T) {
	im := childImport()
	var msgs []string
	im.Report = func(_ *yaml.Node, msg string) { msgs = append(msgs, msg) }
	im.Fold(parse(t, "states:\n  s:\n    on:\n      go: [{target: \"@exit:done\"}, {target: \"@exit:done\"}, {target: \"@exit:nope\"}]\n"))
	want := []string{
		`@exit:done: imports.kid.exits does not map the imported story's exit "done" (add imports.kid.exits.done.to: <state of this story>)`,
		`@exit:nope referenced but not declared in exits:`,
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
}

// Intents the importer exports down stay bare (and the imported story's
// declaration of one gives way); lifted ones exist under both names.
func TestFoldIntentsExportedAndLifted(t *testing.T) {
	im := childImport()
	im.Bare = map[string]bool{"look": true}
	im.Lifted = map[string]bool{"go": true}
	got := dump(t, im.Fold(parse(t, "intents:\n  go: {}\n  look: {}\nstates:\n  s:\n    on:\n      go: [{target: t}]\n      look: [{target: s}]\n")))
	want := `intents:
    kid__go: {}
    go: {}
states:
    kid.s:
        on:
            kid__go: [{target: kid.t}]
            look: [{target: kid.s}]
            go: [{target: kid.t}]
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fold (-want +got):\n%s", diff)
	}
}

// A node reached through YAML aliases is folded once and stays shared.
func TestFoldAliases(t *testing.T) {
	im := childImport()
	doc := parse(t, "states:\n  s:\n    on:\n      go: &arms [{target: t}]\n      look: *arms\n")
	out := im.Fold(doc)
	on := valueOf(valueOf(valueOf(out, "states"), "kid.s"), "on")
	g, l := deref(valueOf(on, "kid__go")), deref(valueOf(on, "kid__look"))
	if g != l {
		t.Errorf("the aliased arms were folded twice")
	}
	if got := dump(t, g); got != "&arms [{target: kid.t}]\n" {
		t.Errorf("arms = %q", got)
	}
}

// Bind sets the importer's handler as the bound interfaces' default, a
// name binding the same name in nested imports; Without drops overridden
// entries.
func TestBindAndWithout(t *testing.T) {
	doc := parse(t, "host_interfaces:\n  ticket: {default: host.a}\n  bf__ticket: {default: host.a}\n  vcs: {default: host.a}\nstates:\n  s: {}\n  t/u: {}\n")
	b := Bind(doc, map[string]*yaml.Node{"ticket": Scalar("host.gh")})
	want := "host_interfaces:\n    ticket: {default: host.gh}\n    bf__ticket: {default: host.gh}\n    vcs: {default: host.a}\nstates:\n    s: {}\n    t/u: {}\n"
	if diff := cmp.Diff(want, dump(t, b)); diff != "" {
		t.Errorf("Bind (-want +got):\n%s", diff)
	}
	w := Without(doc, "states", map[string]bool{"t.u": true})
	if got := dump(t, valueOf(w, "states")); got != "s: {}\n" {
		t.Errorf("Without = %q", got)
	}
}

// A chain renames through each import, innermost first.
func TestChain(t *testing.T) {
	gc := &Import{Alias: "gc", World: map[string]bool{"k": true}, Intents: map[string]bool{"wave": true}}
	kid := &Import{Alias: "kid", World: map[string]bool{"gc__k": true, "own": true}, Intents: map[string]bool{"gc__wave": true}}
	var c Chain
	if !c.Empty() {
		t.Fatal("zero chain not empty")
	}
	c.Add(gc)
	c.Add(kid)
	if got, ok := c.WorldKey("k"); got != "kid__gc__k" || !ok {
		t.Errorf("WorldKey(k) = %q, %v", got, ok)
	}
	if got, ok := c.WorldKey("parent"); got != "parent" || ok {
		t.Errorf("WorldKey(parent) = %q, %v", got, ok)
	}
	if got, _ := c.Intent("wave"); got != "kid__gc__wave" {
		t.Errorf("Intent(wave) = %q", got)
	}
}
