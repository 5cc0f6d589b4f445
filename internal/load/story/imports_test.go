package story

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// The fold: states, world keys, intents and interfaces renamed under the
// alias (two levels deep), targets resolved, world_in on the wrapper,
// exits mapped with their set:, paths resolved in the child's directory.
func TestImportsFold(t *testing.T) {
	st := load(t, "testdata/imports/fold/parent/app.yaml", nil)

	var states []string
	for name := range st.States {
		states = append(states, name)
	}
	sort.Strings(states)
	want := []string{"kid", "kid.gc", "kid.gc.hello", "kid.start", "kid.work", "landed", "main"}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	var world []string
	for _, w := range st.World {
		if strings.HasPrefix(w.Name, "kid") {
			world = append(world, w.Name)
		}
	}
	sort.Strings(world)
	if diff := cmp.Diff([]string{"kid__gc__greeting", "kid__outcome", "kid__ticket"}, world); diff != "" {
		t.Errorf("world (-want +got):\n%s", diff)
	}
	var intents []string
	for name := range st.Intents {
		intents = append(intents, name)
	}
	sort.Strings(intents)
	// begin is lifted (intents.import): both names; home is exported down.
	if diff := cmp.Diff([]string{"begin", "enter_kid", "home", "kid__begin", "kid__finish", "kid__gc__wave"}, intents); diff != "" {
		t.Errorf("intents (-want +got):\n%s", diff)
	}

	if got := st.States["main"].On["enter_kid"][0].Target; got != "kid.start" {
		t.Errorf("main.on.enter_kid target = %q, want the entry kid.start", got)
	}
	w := st.States["kid"]
	if w.Import == nil || w.Import.Entry != "kid.start" || w.Import.Alias != "kid" || w.Import.Source != "../child/app.yaml" {
		t.Fatalf("kid wrapper Import = %+v", w.Import)
	}
	if got := w.Import.Intents["finish"]; got != "kid__finish" {
		t.Errorf("wrapper intent alias finish = %q, want kid__finish", got)
	}
	if got := st.States["kid.gc"].Import; got == nil || got.Entry != "kid.gc.hello" || got.Intents["wave"] != "kid__gc__wave" {
		t.Errorf("kid.gc wrapper Import = %+v", got)
	}
	if len(w.OnEnter) != 1 || len(w.OnEnter[0].Set) != 1 || w.OnEnter[0].Set[0].Key != "kid__ticket" {
		t.Errorf("wrapper on_enter = %+v, want world_in's set of kid__ticket", w.OnEnter)
	}
	// Guards read the renamed keys; the lifted intent reaches the same arm.
	begin := st.States["kid.start"].On["kid__begin"][0]
	if begin.Target != "kid.work" || begin.When.Source() != "world.ticket != ''" {
		t.Errorf("kid.start.on.kid__begin = target %q when %q", begin.Target, begin.When.Source())
	}
	for _, tt := range []struct {
		world map[string]any
		want  bool
	}{{map[string]any{"kid__ticket": "T1"}, true}, {map[string]any{"ticket": "T1", "kid__ticket": ""}, false}} {
		if got, err := begin.When.Eval(expr.Env{"world": tt.world}); err != nil || got != tt.want {
			t.Errorf("when %q with world %v = %v, %v; want %v (it reads kid__ticket)", begin.When.Source(), tt.world, got, err, tt.want)
		}
	}
	if got := st.States["kid.start"].On["begin"]; len(got) != 1 || got[0].Target != "kid.work" {
		t.Errorf("kid.start.on.begin (lifted) = %+v", got)
	}
	// The exported intent keeps its name inside the child.
	if got := st.States["kid.start"].On["home"]; len(got) != 1 {
		t.Errorf("kid.start.on.home (exported) = %+v", got)
	}
	// @exit:finished → the parent's landed, with its set: after the child's.
	fin := st.States["kid.work"].On["kid__finish"][0]
	if fin.Target != "landed" {
		t.Errorf("exit arm target = %q, want landed", fin.Target)
	}
	var keys []string
	for _, e := range fin.Effects {
		for _, s := range e.Set {
			keys = append(keys, s.Key)
		}
	}
	if diff := cmp.Diff([]string{"kid__outcome", "result"}, keys); diff != "" {
		t.Errorf("exit arm sets (-want +got):\n%s", diff)
	}
	// The grandchild's exit maps to the child's work, renamed.
	if got := st.States["kid.gc.hello"].On["kid__gc__wave"][0].Target; got != "kid.work" {
		t.Errorf("grandchild exit target = %q, want kid.work", got)
	}
	if got := st.States["kid.work"].On["kid__begin"][0].Target; got != "kid.gc.hello" {
		t.Errorf("target into the grandchild = %q, want its entry kid.gc.hello", got)
	}
	// host_bindings rebinds the child's interface; its invoke follows.
	if in := st.Interfaces["kid__reporter"]; in == nil || in.Default != "host.run" {
		t.Errorf("kid__reporter interface = %+v, want default host.run", in)
	}
	inv := st.States["kid.work"].OnEnter[0].Invoke
	if inv == nil || !strings.HasPrefix(inv.Name, "iface.kid__reporter.announce") && inv.Name != "host.run.announce" && inv.Name != "host.run" {
		t.Errorf("child invoke = %+v", inv)
	}
	// Files named by the child are the child's.
	if _, ok := st.Prompts["../child/prompts/brief.md"]; !ok {
		t.Errorf("prompt of the child not compiled under ../child/prompts/brief.md; have %v", keysOf(st.Prompts))
	}
	if _, ok := st.Schemas["../child/schemas/out.json"]; !ok {
		t.Errorf("schema of the child not compiled under ../child/schemas/out.json; have %v", keysOf(st.Schemas))
	}
	if got := st.Prompts["../child/prompts/brief.md"].Source(); !strings.Contains(got, "world.ticket") {
		t.Errorf("prompt file text = %q", got)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// A standalone load of the child ends its exits in __exit__<name>.
func TestImportsChildStandalone(t *testing.T) {
	st := load(t, "testdata/imports/fold/child/app.yaml", nil)
	if got := st.States["work"].On["finish"][0].Target; got != "__exit__finished" {
		t.Errorf("standalone exit target = %q, want __exit__finished", got)
	}
	if got := st.States["work"].On["begin"][0].Target; got != "gc.hello" {
		t.Errorf("target into gc = %q, want gc.hello", got)
	}
}

// Rendered targets and emit_intent names inside an import are the
// imported story's own names.
func TestImportsRuntimeNames(t *testing.T) {
	st := load(t, "testdata/imports/fold/parent/app.yaml", nil)
	tests := []struct{ from, rendered, want string }{
		{"kid.start", "work", "kid.work"},
		{"kid.gc.hello", "hello", "kid.gc.hello"},
		{"kid.gc.hello", "work", "kid.work"},
		{"kid.start", "gc", "kid.gc.hello"},
		{"main", "kid", "kid.start"},
		{"kid.start", "landed", "landed"},
	}
	for _, tt := range tests {
		got, _, err := st.ResolveTarget(tt.from, tt.rendered)
		if err != nil || got != tt.want {
			t.Errorf("ResolveTarget(%q, %q) = %q, %v; want %q", tt.from, tt.rendered, got, err, tt.want)
		}
	}
	if _, _, err := st.ResolveTarget("kid.start", "nowhere"); err == nil {
		t.Errorf("ResolveTarget of an unknown name: no error")
	}
	// An exit rendered inside an import is not mapped at run time.
	_, _, err := st.ResolveTarget("kid.work", "@exit:finished")
	if want := `which names an exit inside the import kid: an imported story's exits are mapped where it is folded, so only a literal target: "@exit:finished" can take one; render a state name`; err == nil || err.Error() != want {
		t.Errorf("ResolveTarget(@exit inside an import) = %v\nwant %s", err, want)
	}
	intents := []struct{ from, name, want string }{
		{"kid.work", "finish", "kid__finish"},
		{"kid.gc.hello", "wave", "kid__gc__wave"},
		{"kid.gc.hello", "finish", "kid__finish"},
		{"main", "finish", "finish"},
		{"kid.work", "home", "home"},
	}
	for _, tt := range intents {
		if got := st.ResolveIntent(tt.from, tt.name); got != tt.want {
			t.Errorf("ResolveIntent(%q, %q) = %q, want %q", tt.from, tt.name, got, tt.want)
		}
	}
}

const leafStory = `app: {id: leaf}
world:
  n: {type: int, default: 0}
intents:
  poke: {}
  secret: {}
exits:
  done: {}
host_interfaces:
  bell: {default: host.run}
root: s
states:
  s:
    on:
      poke:
        - target: "@exit:done"
`

// Load errors of imports: where, what, and how to fix it.
func TestImportErrors(t *testing.T) {
	parent := func(imp string) string {
		return "app: {id: p}\nintents:\n  go: {}\nroot: main\nstates:\n  main:\n    on:\n      go:\n        - target: main\nimports:\n" + imp
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"missing source", map[string]string{"app.yaml": parent("  x:\n    entry: s\n")},
			[]string{"app.yaml:11:3: imports.x: source: is required (a path to the imported story, or @kitsoki/<name>)"}},
		{"no story there", map[string]string{"app.yaml": parent("  x:\n    source: ./nope\n")},
			[]string{`app.yaml:12:13: imports.x.source: cannot read imported story "./nope": no story file at nope (source names a story directory holding app.yaml, or its .yaml file)`}},
		{"unknown entry", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entry: z\n    exits: {done: {to: main}}\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:13:12: imports.x.entry: the imported story leaf/app.yaml has no state "z" (did you mean "s"?)`}},
		{"unmapped exit", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entry: s\n"), "leaf/app.yaml": leafStory},
			[]string{`leaf/app.yaml:16:19: @exit:done: imports.x.exits does not map the imported story's exit "done" (add imports.x.exits.done.to: <state of this story>)`}},
		{"exit not declared by the child", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entry: s\n    exits:\n      done: {to: main}\n      dnoe: {to: main}\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:16:7: imports.x.exits.dnoe: the imported story declares no exit "dnoe" (did you mean "done"?)`}},
		{"exit to an unknown state", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entry: s\n    exits:\n      done: {to: mian}\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:15:18: imports.x.exits.done.to: unknown state "mian" (did you mean "main"?)`}},
		{"exit to an undeclared exit", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entry: s\n    exits:\n      done: {to: \"@exit:out\"}\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:15:18: imports.x.exits.done.to: @exit:out: this story declares no exit "out" in exits:`}},
		{"world_in key", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entry: s\n    exits: {done: {to: main}}\n    world_in:\n      m: \"1\"\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:16:7: imports.x.world_in.m: the imported story declares no world key "m" (did you mean "n"?)`}},
		{"host_bindings name", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entry: s\n    exits: {done: {to: main}}\n    host_bindings:\n      bel: host.run\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:16:7: imports.x.host_bindings.bel: the imported story declares no host interface "bel" (did you mean "bell"?)`}},
		{"intents.import of an unexported intent", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entry: s\n    exits: {done: {to: main}}\n    intents: {import: [secret]}\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:15:24: imports.x.intents.import: cannot import intent "secret": the imported story does not list it in exports.intents`}},
		{"intents.export of an unknown intent", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entry: s\n    exits: {done: {to: main}}\n    intents: {export: [og]}\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:15:24: imports.x.intents.export: cannot export intent "og": this story declares no such intent (did you mean "go"?)`}},
		{"alias is a state", map[string]string{"app.yaml": parent("  main:\n    source: ./leaf\n    entry: s\n    exits: {done: {to: main}}\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:11:3: imports.main: import alias "main" is also a state of this story: rename the alias or the state`}},
		{"bad alias", map[string]string{"app.yaml": parent("  a__b:\n    source: ./leaf\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:11:3: imports.a__b: import alias "a__b" must be a name (a letter, then letters, digits, - or _, without "__"): it prefixes the imported story's states (a__b.<state>) and world keys (a__b__<key>)`}},
		{"hosts declared", map[string]string{"app.yaml": "hosts: [host.run]\n" + parent("  x:\n    source: ./h\n    entry: s\n    hosts: declared\n"), "h/app.yaml": "app: {id: h}\nhosts: [host.run, host.transport.post]\nroot: s\nstates:\n  s: {}\n"},
			[]string{`app.yaml:15:12: imports.x.hosts: hosts: declared, but the imported story x uses hosts this story does not list: host.transport.post (add them to hosts:, or drop hosts: declared)`}},
		{"cycle", map[string]string{"app.yaml": parent("  x:\n    source: ./a\n    entry: s\n"),
			"a/app.yaml": "app: {id: a}\nroot: s\nstates:\n  s: {}\nimports:\n  y:\n    source: ../b\n    entry: s\n",
			"b/app.yaml": "app: {id: b}\nroot: s\nstates:\n  s: {}\nimports:\n  z:\n    source: ../a\n    entry: s\n"},
			[]string{`b/app.yaml:7:13: imports.z.source: import cycle: a/app.yaml → b/app.yaml → a/app.yaml`}},
		{"self import", map[string]string{"app.yaml": parent("  x:\n    source: ./app.yaml\n    entry: main\n")},
			[]string{`app.yaml:12:13: imports.x.source: import cycle: app.yaml → app.yaml`}},
		{"override of an unknown state", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entry: s\n    exits: {done: {to: main}}\n    overrides:\n      states:\n        t: {}\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:17:9: imports.x.overrides.states.t: the imported story has no state "t" to override (did you mean "s"?)`}},
		{"unknown import key", map[string]string{"app.yaml": parent("  x:\n    source: ./leaf\n    entyr: s\n"), "leaf/app.yaml": leafStory},
			[]string{`app.yaml:13:5: imports.x.entyr: unknown key "entyr" (did you mean "entry"?)`}},
		{"exit to a state of no story in the chain", map[string]string{"app.yaml": parent("  x:\n    source: ./mid\n    entry: s\n"),
			"mid/app.yaml":  "app: {id: mid}\nroot: s\nstates:\n  s: {}\nimports:\n  y:\n    source: ../leaf\n    entry: s\n    exits:\n      done: {to: nowhere}\n",
			"leaf/app.yaml": leafStory},
			[]string{`mid/app.yaml:10:18: imports.y.exits.done.to: unknown state "nowhere": it is neither a state of this story nor of a story importing it`}},
		{"exports of an unknown intent", map[string]string{"app.yaml": "app: {id: e}\nintents: {go: {}}\nexports:\n  intents: [og]\nroot: s\nstates:\n  s: {}\n"},
			[]string{`app.yaml:4:13: exports.intents[0]: exports.intents names "og", which is not a declared intent (did you mean "go"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testkit.Tree(t, tt.files)
			_, err := Load(filepath.Join(dir, "app.yaml"), WithLookupEnv(mapEnv(nil)))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			le, ok := err.(*LoadError)
			if !ok {
				t.Fatalf("error %T: %v", err, err)
			}
			if diff := cmp.Diff(tt.want, lines(le.Diagnostics)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// An intent the importer exports down replaces the imported story's
// declaration of the same name.
func TestImportExportedIntentDeclaredByChild(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml":      "app: {id: p}\nintents:\n  poke: {description: mine}\nroot: main\nstates:\n  main: {}\nimports:\n  x:\n    source: ./leaf\n    entry: s\n    exits: {done: {to: main}}\n    intents: {export: [poke]}\n",
		"leaf/app.yaml": leafStory,
	})
	st, err := Load(filepath.Join(dir, "app.yaml"), WithLookupEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Intents["poke"].Description != "mine" || st.Intents["x__poke"] != nil {
		t.Errorf("poke = %+v, x__poke = %+v", st.Intents["poke"], st.Intents["x__poke"])
	}
	if got := st.States["x.s"].On["poke"]; len(got) != 1 || got[0].Target != "main" {
		t.Errorf("x.s.on.poke = %+v, want the child's arm under the bare name, exiting to main", got)
	}
}

// An import outside the workspace is refused like an include.
func TestImportOutsideWorkspace(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"ws/app.yaml":   "app: {id: p}\nroot: main\nstates:\n  main: {}\nimports:\n  x:\n    source: ../leaf\n    entry: s\n    exits: {done: {to: main}}\n",
		"leaf/app.yaml": leafStory,
	})
	_, err := Load(filepath.Join(dir, "ws", "app.yaml"), WithWorkspace(filepath.Join(dir, "ws")), WithLookupEnv(mapEnv(nil)))
	if err == nil || !strings.Contains(err.Error(), `app.yaml:7:13: imports.x.source: imported story "../leaf" is outside the workspace`) {
		t.Fatalf("err = %v", err)
	}
}

// @kitsoki/NAME: --stories-path first, then KITSOKI_STORIES_PATH, then
// $KITSOKI_REPO/stories; unresolved names the path tried.
func TestImportStoriesPath(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml":                   "app: {id: p}\nroot: main\nstates:\n  main: {}\nimports:\n  x:\n    source: \"@kitsoki/leaf\"\n    entry: s\n    exits: {done: {to: main}}\n",
		"flag/leaf/app.yaml":         strings.Replace(leafStory, "root: s", "root: s\n# flag", 1),
		"env/leaf/app.yaml":          strings.Replace(leafStory, "app: {id: leaf}", "app: {id: leaf-env}", 1),
		"repo/stories/leaf/app.yaml": strings.Replace(leafStory, "app: {id: leaf}", "app: {id: leaf-repo}", 1),
	})
	root := filepath.Join(dir, "app.yaml")
	tests := []struct {
		name string
		opts []Option
		env  map[string]string
		want string // the imported file
	}{
		{"flag first", []Option{WithStoriesPath(filepath.Join(dir, "flag"))}, map[string]string{"KITSOKI_STORIES_PATH": filepath.Join(dir, "env"), "KITSOKI_REPO": filepath.Join(dir, "repo")}, "flag/leaf/app.yaml"},
		{"env list", nil, map[string]string{"KITSOKI_STORIES_PATH": filepath.Join(dir, "none") + string(filepath.ListSeparator) + filepath.Join(dir, "env"), "KITSOKI_REPO": filepath.Join(dir, "repo")}, "env/leaf/app.yaml"},
		{"repo", nil, map[string]string{"KITSOKI_REPO": filepath.Join(dir, "repo")}, "repo/stories/leaf/app.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Load(root, append(tt.opts, WithLookupEnv(mapEnv(tt.env)))...)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if got := st.States["x"].Import.Source; got != tt.want {
				t.Errorf("imported %q, want %q", got, tt.want)
			}
		})
	}
	_, err := Load(root, WithStoriesPath(filepath.Join(dir, "none")), WithLookupEnv(mapEnv(nil)))
	want := `app.yaml:7:13: imports.x.source: cannot resolve @kitsoki/leaf: no leaf/app.yaml in the stories search path ` + filepath.Join(dir, "none")
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// overrides: a whole state or intent of the imported story replaced (in
// its names, renamed like its own), a prompt file swapped for the
// importer's.
func TestImportOverrides(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml": `app: {id: p}
hosts: [host.agent.decide]
root: main
states:
  main: {}
imports:
  x:
    source: ./leaf
    entry: s
    exits: {done: {to: main}}
    hosts: declared
    overrides:
      states:
        s:
          view: "mine {{ world.n }}"
          on:
            poke:
              - target: t
      intents:
        poke: {description: "Overridden."}
      prompts:
        prompts/a.md: prompts/mine.md
`,
		"prompts/mine.md":   "Mine: {{ world.n }}\n",
		"leaf/prompts/a.md": "Theirs\n",
		"leaf/app.yaml": `app: {id: leaf}
hosts: [host.agent.decide]
world:
  n: {type: int, default: 0}
  v: {type: object, default: {}}
intents:
  poke: {description: "Theirs."}
exits:
  done: {}
root: s
states:
  s:
    view: "theirs"
  t:
    on_enter:
      - invoke: host.agent.decide
        with: {prompt: prompts/a.md}
        bind: {v: submitted}
    on:
      poke:
        - target: "@exit:done"
`,
	})
	st, err := Load(filepath.Join(dir, "app.yaml"), WithLookupEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.States["x.s"]
	if s.View == nil || s.View.Source() != "mine {{ world.n }}" {
		t.Errorf("overridden view = %v", s.View)
	} else if got, err := s.View.Render(expr.Env{"world": map[string]any{"n": 1, "x__n": 2}}); err != nil || got != "mine 2" {
		t.Errorf("overridden view renders %q, %v; want %q (it reads x__n)", got, err, "mine 2")
	}
	if got := s.On["x__poke"]; len(got) != 1 || got[0].Target != "x.t" {
		t.Errorf("overridden arms = %+v", got)
	}
	if got := st.Intents["x__poke"].Description; got != "Overridden." {
		t.Errorf("overridden intent description = %q", got)
	}
	p, ok := st.Prompts["prompts/mine.md"]
	if !ok || p.Source() != "Mine: {{ world.n }}\n" {
		t.Errorf("swapped prompt: have %v", keysOf(st.Prompts))
	}
	if _, ok := st.Prompts["leaf/prompts/a.md"]; ok {
		t.Errorf("the swapped-out prompt was compiled too")
	}
}

// An importer's host_bindings entry for an interface name also rebinds the
// interfaces of that name in the stories its child imports, unless one is
// bound by its own name.
func TestImportBindingsReachNestedImports(t *testing.T) {
	iface := "host_interfaces:\n  ticket:\n    operations: {comment: {}}\n    default: host.local_files.ticket\n  vcs:\n    operations: {commit: {}}\n    default: host.git\n"
	files := map[string]string{
		"app.yaml": "app: {id: top}\nroot: core\nstates: {}\nimports:\n  core:\n    source: ./mid\n    entry: s\n" +
			"    host_bindings:\n      ticket: host.gh.ticket\n      vcs: host.run\n      bf__vcs: host.local\n",
		"mid/app.yaml":  "app: {id: mid}\n" + iface + "root: s\nstates:\n  s: {}\nimports:\n  bf:\n    source: ../leaf\n    entry: s\n",
		"leaf/app.yaml": "app: {id: leaf}\n" + iface + "root: s\nstates:\n  s: {}\n",
	}
	st, err := Load(filepath.Join(testkit.Tree(t, files), "app.yaml"), WithLookupEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := map[string]string{}
	for name, in := range st.Interfaces {
		got[name] = in.Default
	}
	want := map[string]string{
		"core__ticket": "host.gh.ticket", "core__bf__ticket": "host.gh.ticket",
		"core__vcs": "host.run", "core__bf__vcs": "host.local",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("interface defaults (-want +got):\n%s", diff)
	}
}

// A menu helper's literal intent name in an imported story's view is the
// child's intent, renamed with it; other names are left alone.
func TestImportRenamesMenuHelperNames(t *testing.T) {
	files := map[string]string{
		"app.yaml": "app: {id: top}\nroot: kid\nstates: {}\nimports:\n  kid:\n    source: ./child\n    entry: s\n",
		"child/app.yaml": "app: {id: child}\nintents: {go: {}}\nroot: s\nstates:\n  s:\n" +
			"    view:\n      - prose: \"{% if blocked('go') %}{{ blocked_reason(\\\"go\\\") }}{% endif %}{{ intent_status('other') }}\"\n        when: \"available('go')\"\n" +
			"    on:\n      go: [{target: s}]\n",
	}
	st, err := Load(filepath.Join(testkit.Tree(t, files), "app.yaml"), WithLookupEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	el := st.States["kid.s"].ViewDoc.Elements[0]
	menu := expr.Menu([]expr.MenuEntry{{Intent: "kid__go", Reason: "kid's"}, {Intent: "go", Primary: true, Reason: "parent's"}, {Intent: "other", Primary: true}})
	env := expr.Env{"menu": menu}
	if got, err := el.When.Eval(env); err != nil || got != false {
		t.Errorf("when %q = %v, %v; want false (kid__go is blocked)", el.When.Source(), got, err)
	}
	if got, err := el.Body.Render(env); err != nil || got != "kid'savailable" {
		t.Errorf("prose %q renders %q, %v; want %q", el.Body.Source(), got, err, "kid'savailable")
	}
}

// Only real references to the imported story's world are renamed: text
// that mentions world.k in a description, in prose around a template, in
// a string literal or in a template comment keeps it as written.
func TestImportRenamesOnlyReferences(t *testing.T) {
	files := map[string]string{
		"app.yaml": "app: {id: top}\nworld:\n  k: {type: string, default: \"P\"}\nroot: kid\nstates: {}\nimports:\n  kid:\n    source: ./child\n    entry: s\n",
		"child/app.yaml": `app: {id: child}
hosts: [host.run]
world:
  k: {type: string, default: ""}
  note: {type: string, default: ""}
intents:
  go: {description: "Copies world.k into the note."}
root: s
states:
  s:
    description: "Shows world.k."
    view: "{# world.k is the ticket #}Prose about world.k: {{ world.k }} {{ 'world.k' }}"
    on_enter:
      - say: "{% comment %}{{ world.k }}{% endcomment %}say world.k={{ world.k }}"
      - invoke: host.run
        with: {cmd: "echo world.k", cwd: "{{ world.k }}"}
    on:
      go:
        - when: 'world.k == "world.k" || world.k != ""'
          target: s
          effects:
            - set: {note: "world.k is {{ world.k }} ({{ \"world.k\" }})"}
`,
	}
	st, err := Load(filepath.Join(testkit.Tree(t, files), "app.yaml"), WithLookupEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	env := expr.Env{"world": map[string]any{"kid__k": "K", "k": "P"}}
	s := st.States["kid.s"]
	if s.Description != "Shows world.k." {
		t.Errorf("description = %q, want it as written", s.Description)
	}
	if got := st.Intents["kid__go"].Description; got != "Copies world.k into the note." {
		t.Errorf("intent description = %q, want it as written", got)
	}
	if got, err := s.View.Render(env); err != nil || got != "Prose about world.k: K world.k" {
		t.Errorf("view renders %q, %v", got, err)
	}
	if got, err := s.OnEnter[0].Say.Render(env); err != nil || got != "say world.k=K" {
		t.Errorf("say renders %q, %v", got, err)
	}
	with, err := s.OnEnter[1].Invoke.With.Eval(env)
	if diff := cmp.Diff(map[string]any{"cmd": "echo world.k", "cwd": "K"}, with); err != nil || diff != "" {
		t.Errorf("with (-want +got): %v\n%s", err, diff)
	}
	arm := s.On["kid__go"][0]
	for _, tt := range []struct {
		k    string
		want bool
	}{{"world.k", true}, {"", false}, {"K", true}} {
		if got, err := arm.When.Eval(expr.Env{"world": map[string]any{"kid__k": tt.k, "k": "parent"}}); err != nil || got != tt.want {
			t.Errorf("guard with kid__k=%q = %v, %v; want %v", tt.k, got, err, tt.want)
		}
	}
	set := arm.Effects[0].Set[0]
	if set.Key != "kid__note" {
		t.Errorf("set key = %q, want kid__note", set.Key)
	}
	if got, err := set.Value.Eval(env); err != nil || got != "world.k is K (world.k)" {
		t.Errorf("set value = %v, %v", got, err)
	}
}

// A story imported twice is parsed once and folded twice: each import has
// its own names, and neither fold changes what the other sees.
func TestImportTwiceSharesTheParse(t *testing.T) {
	files := map[string]string{
		"app.yaml": "app: {id: top}\nintents: {go: {}}\nroot: main\nstates:\n  main:\n    on:\n      go: [{target: a}]\nimports:\n" +
			"  a:\n    source: ./leaf\n    entry: s\n    exits: {done: {to: main}}\n  b:\n    source: ./leaf\n    entry: s\n    exits: {done: {to: b}}\n",
		"leaf/app.yaml": leafStory,
	}
	st := load(t, filepath.Join(testkit.Tree(t, files), "app.yaml"), nil)
	for _, tt := range []struct{ state, intent, target string }{{"a.s", "a__poke", "main"}, {"b.s", "b__poke", "b.s"}} {
		arms := st.States[tt.state].On[tt.intent]
		if len(arms) != 1 || arms[0].Target != tt.target {
			t.Errorf("%s.on.%s = %+v, want target %s", tt.state, tt.intent, arms, tt.target)
		}
	}
	if st.Interfaces["a__bell"] == nil || st.Interfaces["b__bell"] == nil || st.Interfaces["a__b__bell"] != nil {
		t.Errorf("interfaces = %v", keysOf(st.Interfaces))
	}
}

// The story library shipped with kitsoki (WithLibrary) is searched last,
// and its files are read although they are outside the workspace.
func TestImportLibrary(t *testing.T) {
	ws := testkit.Tree(t, map[string]string{
		"app.yaml": "app: {id: p}\nroot: main\nstates:\n  main: {}\nimports:\n  x:\n    source: \"@kitsoki/leaf\"\n    entry: s\n    exits: {done: {to: main}}\n",
	})
	lib := testkit.Tree(t, map[string]string{"leaf/app.yaml": strings.Replace(leafStory, "app: {id: leaf}", "app: {id: leaf-lib}", 1)})
	root := filepath.Join(ws, "app.yaml")
	st, err := Load(root, WithWorkspace(ws), WithLibrary(lib), WithLookupEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.States["x"].Import.Source; !strings.HasSuffix(got, "leaf/app.yaml") {
		t.Errorf("imported %q", got)
	}
	// Without it the import is outside every search path.
	if _, err := Load(root, WithWorkspace(ws), WithLookupEnv(mapEnv(nil))); err == nil || !strings.Contains(err.Error(), "cannot resolve @kitsoki/leaf") {
		t.Errorf("without the library: %v", err)
	}
}

// An imported story's templates read its world under their own names: the
// typo check renames them through the import before looking them up, so a
// key the imported story declares is no warning and a typo still is.
func TestImportTemplateReadsCheckedUnderTheImport(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml": "app: {id: p}\nroot: main\nstates:\n  main: {}\nimports:\n  x:\n    source: ./leaf/app.yaml\n    entry: s\n",
		"leaf/app.yaml": "app: {id: leaf}\nworld:\n  answer: {type: string, default: \"\"}\nroot: s\nstates:\n" +
			"  s:\n    view: \"{{ world.answer }} {{ world.answr }}\"\n",
	})
	st, err := Load(filepath.Join(dir, "app.yaml"), WithLookupEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []string
	for _, w := range st.Warnings {
		if strings.Contains(w.Message, "renders empty") {
			got = append(got, w.Message)
		}
	}
	want := []string{`the template reads world key "answr", which world: does not declare and no set:, increment: or bind: writes (did you mean "answer"?); it renders empty`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
