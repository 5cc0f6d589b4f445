package story

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// The Kitsoki keys kitsoki implements load into the model.
func TestLoadKitsokiKeys(t *testing.T) {
	s, err := Load("testdata/keys/ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", s.Warnings)
	}
	abs, _ := filepath.Abs("testdata/keys")
	abs, _ = filepath.EvalSymlinks(abs)
	f := false
	tests := []struct {
		name      string
		got, want any
	}{
		{"app.context", s.App.Context, "A story about keys."},
		{"reader", *s.Agents["reader"], agent.Persona{Name: "reader", SystemPrompt: "Read things.", Tools: []string{"Read", "Bash"}, ToolsSet: true,
			Effort: "high", Provider: "cheap", Cwd: filepath.Join(abs, "sub"), ExternalSideEffect: &f, Bash: &agent.BashProfile{ReadOnly: true}}},
		{"lister bash", s.Agents["lister"].Bash, &agent.BashProfile{Commands: []string{"git", "jq"}}},
		{"inherit_claude_default", s.Agents["heir"].InheritDefault, true},
		{"builder bash", s.Agents["builder"].Bash, &agent.BashProfile{Sandboxed: true, SandboxBase: filepath.Join(abs, ".scratch")}},
		{"world types", worldTypesOf(s, "cost", "blob", "name", "items"), []string{"float", "object", "string", "list"}},
		{"world.ide seeded", worldTypesOf(s, "ide"), []string{"object"}},
		{"slot type alias", s.Intents["go"].Slots["dir"].Type, "string"},
		{"slot list", s.Intents["go"].Slots["tags"].Type, "list"},
		{"validator", s.Intents["go"].Slots["dir"].Validator.Source(), "value != 'down'"},
		{"inline root", s.Root, InlineRoot},
		{"root write_mode", s.States[InlineRoot].WriteMode, WriteReadOnly},
		{"root decider", s.States[InlineRoot].Decider, DeciderLLM},
		{"hall decider", s.States["hall"].Decider, DeciderHuman},
		{"arm view", s.States[InlineRoot].On["go"][0].View.Source(), "You go {{ slots.dir }}."},
		{"push_history", []bool{s.States[InlineRoot].On["go"][0].NoHistory, s.States["hall"].On["pick"][0].NoHistory}, []bool{false, true}},
		// hall's pick leads to another state and nothing emits it.
		{"gates", []bool{s.States[InlineRoot].DecisionGate, s.States["hall"].DecisionGate}, []bool{true, true}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, tt.got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

func worldTypesOf(s *Story, names ...string) []string {
	var out []string
	for _, n := range names {
		for _, v := range s.World {
			if v.Name == n {
				out = append(out, v.Type)
			}
		}
	}
	return out
}

// A Kitsoki key kitsoki does not run, or a bad value of one it does, is a
// load error at the key, saying what to write instead.
func TestLoadKitsokiKeyErrors(t *testing.T) {
	got := loadErr(t, "testdata/keys/bad.yaml", nil)
	want := []string{
		`bad.yaml:1:21: app.context_file: unknown key "context_file"`,
		`bad.yaml:2:1: phases.template: phases: needs template: (the phase_templates entry each phase instantiates)`,
		`bad.yaml:2:1: phases.graph: phases: needs graph: (one entry per phase: its parameters, next: arcs, cycle_budgets:)`,
		`bad.yaml:7:13: agents.a.effort: unknown effort "huge": use one of low, medium, high, xhigh, max (did you mean "high"?)`,
		`bad.yaml:8:15: agents.a.provider: provider "nope" is not declared in providers:`,
		`bad.yaml:9:19: agents.a.bash_profile: unknown bash profile "write-all": write read-only, {commands: [git, jq]} or {sandboxed_write: DIR}`,
		`bad.yaml:13:31: agents.b.bash_profile.commands[0]: "rm -rf" is not a program name; list bare names such as git`,
		`bad.yaml:16:20: agents.c.bash_profile.sandboxed: unknown bash profile "sandboxed": write read-only, {commands: [git, jq]} or {sandboxed_write: DIR} (did you mean "sandboxed_write"?)`,
		`bad.yaml:21:24: routing.embedding.enabled: expected true or false, got the scalar "maybe"`,
		`bad.yaml:22:14: routing.cache_cap: routing.cache_cap must be a whole number of at least 1, got 0`,
		`bad.yaml:26:35: intents.go.slots.dir.format: unknown slot format "emial": use one of date, date-time, duration, email, hostname, ipv4, ipv6, iri, iri-reference, jql, json-pointer, period, relative-json-pointer, semver, time, uri, uri-reference, uri-template, uuid (did you mean "email"?)`,
		`bad.yaml:26:54: intents.go.slots.dir.validator: invalid validator: unknown name "nope": an expression must start from one of world, slots, args, event, run, result, menu, item (did you mean world.nope?)`,
		`bad.yaml:30:17: states.start.write_mode: unknown write_mode "readonly": use open or read_only (did you mean "read_only"?)`,
		`bad.yaml:31:14: states.start.decider: unknown decider "robot": use human (the room always waits for the operator) or llm (its emit_intent chain always runs)`,
		`bad.yaml:41:17: states.quiet.write_mode: write_mode: read_only restricts the agents a room dispatches, and state "quiet" invokes none; add the host.agent.* invoke or remove write_mode`,
		`bad.yaml:44:9: states.quiet.on_enter[1].target: target: on an effect is only valid inside a background invoke's on_complete: (for a transition, write target: on the arm)`,
		`bad.yaml:46:17: states.loud.write_mode: write_mode: read_only conflicts with agent "d" (invoked at bad.yaml:48:17), which declares external_side_effect: true; make the room open or the agent external_side_effect: false`,
		`bad.yaml:49:47: states.loud.on_enter[0].with.acceptance.schema: schema "s.json": no such file or directory`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}
