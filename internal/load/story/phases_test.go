package story

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A phase template's mistakes are load errors at the key: a state name
// placeholder that is no parameter, a budget that is not positive, a
// missing required parameter. What Kitsoki lets through (a value of
// another type than declared, an unknown type name, a graph key the
// template does not read, a {{ tpl.X }} the phase gives no value) loads,
// and the loader warns.
func TestPhaseTemplateErrors(t *testing.T) {
	got := loadErr(t, "testdata/phases/bad.yaml", nil)
	want := []string{
		`bad.yaml:15:25: states.a_executing.on.go[0].target: unknown state "b_executing" (did you mean "a_executing"?)`,
		`bad.yaml:16:7: phase_templates.step.states.{idd}_extra: state name "{idd}_extra" uses {idd}, which is not a parameter of the template (id, title, count, flag) (did you mean "id"?)`,
		`bad.yaml:26:27: phases.graph.a.cycle_budgets.go: a cycle budget must be a positive number of times, got 0`,
		`bad.yaml:27:5: phases.graph.b: phase "b" needs parameter "title" (phase template "step" declares it required)`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
	_, err := Load("testdata/phases/bad.yaml", WithProvidedHandlers(fixtureHandlers...))
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatal(err)
	}
	for _, w := range []string{
		`bad.yaml:9:35: phase_templates.step.parameters.count.default: parameter "count" is declared type: int, got the scalar "two"; it is substituted as written`,
		`bad.yaml:10:20: phase_templates.step.parameters.flag.type: unknown parameter type "boolen" is not checked: use string, int, float, bool, list, object or any (did you mean "boolean"?)`,
		`bad.yaml:13:15: phases.graph.a: {{ tpl.titel }}: phase "a" gives "titel" no value (no default either), so it is left empty (did you mean "title"?)`,
		`bad.yaml:24:7: phases.graph.a.colour: "colour" is not a parameter of phase template "step", which neither declares nor reads it (it declares id, title, count, flag; next:, cycle_budgets: and on_enter: are the other keys)`,
	} {
		if !slices.Contains(lines(le.Warnings), w) {
			t.Errorf("no warning %s in\n%s", w, strings.Join(lines(le.Warnings), "\n"))
		}
	}
	got = loadErr(t, "testdata/phases/missing.yaml", nil)
	want = []string{`missing.yaml:4:13: phases.template: phase template "stepp" is not declared in phase_templates: (did you mean "step"?)`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}

// Templates nothing instantiates and checkpoint intents without phases
// change nothing, and the loader says so.
func TestPhaseTemplateUnusedWarns(t *testing.T) {
	s, err := Load("testdata/phases/unused.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []string{
		`unused.yaml:3:1: checkpoint_intents: checkpoint_intents: are merged into the <phase>_awaiting_reply rooms phases: stamps out, and this story declares no phases:`,
		`unused.yaml:6:3: phase_templates.step: phase template "step" is never instantiated (no phases: names it)`,
	}
	if d := cmp.Diff(want, lines(s.Warnings)); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}

// A room the story writes out itself replaces the stamped one, and the
// phase's cycle budgets still cap its arcs: an arc it has gets the count
// and the guard, an arc it lacks gets the next: target, and both fall
// through to the phase's error room.
func TestPhaseHandWrittenRoomKeepsBudgets(t *testing.T) {
	s, err := Load("testdata/phases/handwritten.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.States["b_executing"]
	if b.View == nil || b.View.Source() != "written out" {
		t.Fatalf("b_executing is not the story's own room: %+v", b.View)
	}
	type arm struct {
		Target, When string
		Default      bool
		Incr         string
	}
	summary := func(intent string) []arm {
		var out []arm
		for _, a := range b.On[intent] {
			x := arm{Target: a.Target, Default: a.Default}
			if a.When != nil {
				x.When = a.When.Source()
			}
			for _, e := range a.Effects {
				for _, in := range e.Increment {
					x.Incr = in.Key
				}
			}
			out = append(out, x)
		}
		return out
	}
	want := map[string][]arm{
		"go": {
			{Target: "terminated", When: "(world.ready) && (world.cycle__b__go < 1)", Incr: "cycle__b__go"},
			{Target: "b_error", Default: true},
		},
		"again": {
			{Target: "a_executing", When: "world.cycle__b__again < 2", Incr: "cycle__b__again"},
			{Target: "b_error", Default: true},
		},
	}
	for intent, w := range want {
		if d := cmp.Diff(w, summary(intent)); d != "" {
			t.Errorf("on.%s (-want +got):\n%s", intent, d)
		}
	}
	if got := worldTypesOf(s, "cycle__b__go", "cycle__b__again"); !cmp.Equal(got, []string{"int", "int"}) {
		t.Errorf("counters declared as %v", got)
	}
	if s.States["b_error"] == nil || s.States["a_executing"] == nil {
		t.Error("the template's other rooms were not stamped")
	}
}

// A phase template's states take every key a state takes, references
// filled in per phase.
func TestPhaseTemplateTakesEveryStateKey(t *testing.T) {
	s, err := Load("testdata/phases/everykey.yaml", WithStubbedHosts())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.States["b_executing"]
	if b == nil {
		t.Fatal("b_executing was not stamped")
	}
	got := []any{b.Description, b.Mode, b.Decider, b.WriteMode, len(b.ViewDoc.Elements), b.ViewDoc.Elements[1].Marker, b.Menu,
		b.DefaultIntent, b.RelevantWorld, b.RelevantSlots, b.Footer != nil, b.Transcript, b.Theme, b.InterceptDrive,
		b.Timeout != nil, b.Contextual != nil && b.Contextual.Enabled, b.Intents["poke"].Description, len(b.OnEnter),
		b.OnEnter[3].Invoke.ID, b.On["go"][0].Target, b.On["go"][0].GuardHint, b.On["go"][0].NoHistory}
	want := []any{"Bee", ModeConversational, DeciderLLM, WriteOpen, 2, "+", []string{"go", "talk"},
		"talk", []string{"n"}, []string{"message"}, true, TranscriptTransient, "meta-blue", "rest",
		true, true, "Poke Bee.", 6,
		"b_run", "terminated", "not yet", true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stamped room (-want +got):\n%s", d)
	}
}

// A story folded in by imports: may use phases: its phases are stamped
// out in its own names before the fold, so the importer gets every room
// (and cycle counter, and checkpoint intent) a standalone load of it has,
// under the alias, with targets and guards renamed like any room's.
func TestPhasesInAnImportedStory(t *testing.T) {
	for _, src := range []string{"testdata/phases/everykey.yaml", "testdata/phases/handwritten.yaml", "../../check/kitsokiformat/testdata/phases/app.yaml"} {
		t.Run(filepath.Base(filepath.Dir(src))+"/"+filepath.Base(src), func(t *testing.T) {
			alone, err := Load(src, WithStubbedHosts(), WithLookupEnv(mapEnv(nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer alone.Close()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(filepath.Join(dir, "child"), os.DirFS(filepath.Dir(src))); err != nil {
				t.Fatal(err)
			}
			parent := "app: {id: p}\nroot: x\nstates: {}\nimports:\n  x:\n    source: ./child/" + filepath.Base(src) + "\n    entry: " + alone.Root + "\n"
			if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(parent), 0o644); err != nil {
				t.Fatal(err)
			}
			st, err := Load(filepath.Join(dir, "app.yaml"), WithStubbedHosts(), WithLookupEnv(mapEnv(nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rename := func(s string) string {
				if s == "" || strings.HasPrefix(s, ExitStatePrefix) {
					return s
				}
				return "x." + s
			}
			n := 0
			for name, s := range alone.States {
				if strings.HasPrefix(name, ExitStatePrefix) {
					continue
				}
				got := st.States["x."+name]
				if got == nil {
					t.Errorf("state %s is not imported as x.%s", name, name)
					continue
				}
				n++
				for intent, arms := range s.On {
					garms := got.On["x__"+intent]
					if intent == "*" {
						garms = got.On["*"]
					}
					if len(garms) != len(arms) {
						t.Errorf("x.%s.on.x__%s: %d arms, want %d", name, intent, len(garms), len(arms))
						continue
					}
					for i, a := range arms {
						if want := rename(a.Target); garms[i].Target != want {
							t.Errorf("x.%s.on.x__%s[%d].target = %q, want %q", name, intent, i, garms[i].Target, want)
						}
					}
				}
				for in := range s.Intents {
					if got.Intents["x__"+in] == nil {
						t.Errorf("x.%s lacks its intent x__%s", name, in)
					}
				}
			}
			for _, w := range alone.World {
				if strings.HasPrefix(w.Name, "cycle__") && !slices.ContainsFunc(st.World, func(v *WorldVar) bool { return v.Name == "x__"+w.Name }) {
					t.Errorf("counter %s is not declared as x__%s", w.Name, w.Name)
				}
			}
			if n < 3 {
				t.Fatalf("compared %d states", n)
			}
			t.Logf("%d rooms, %d of them stamped", n, stampedRooms(alone))
		})
	}
}

// stampedRooms counts the rooms a phase template stamped (named
// <phase>_<suffix> by the template, not written under states:).
func stampedRooms(s *Story) int {
	n := 0
	for name := range s.States {
		if strings.HasSuffix(name, "_executing") || strings.HasSuffix(name, "_error") || strings.HasSuffix(name, "_awaiting_reply") || strings.HasSuffix(name, "_done") {
			n++
		}
	}
	return n
}
