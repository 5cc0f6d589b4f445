package story

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/expr"
)

// load loads a fixture that must succeed.
func load(t *testing.T, path string, env map[string]string) *Story {
	t.Helper()
	s, err := Load(path, WithLookupEnv(mapEnv(env)), WithProvidedHandlers(fixtureHandlers...))
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fixtureHandlers are the made-up handlers the fixtures invoke; a run's
// host would have them registered (as the orchestrator's tests do), so
// load and loadErr provide them. TestUnprovidedHandlers loads without.
var fixtureHandlers = []string{"host.echo", "host.git.push", "host.probe", "host.search", "host.shell.run", "host.tool.run",
	"iface.ticket.search", "iface.transport.post"}

// armView is the comparable part of an Arm.
type armView struct {
	Target    string
	Stay      bool
	Default   bool
	When      string
	GuardHint string
	Effects   []string
}

func viewArms(arms []*Arm) []armView {
	out := make([]armView, len(arms))
	for i, a := range arms {
		v := armView{Target: a.Target, Stay: a.Stay, Default: a.Default, GuardHint: a.GuardHint, Effects: describeEffects(a.Effects)}
		if a.When != nil {
			v.When = a.When.Source()
		}
		out[i] = v
	}
	return out
}

// describeEffects summarises effects as one line each.
func describeEffects(es []*Effect) []string {
	var out []string
	for _, e := range es {
		var parts []string
		if e.When != nil {
			parts = append(parts, "when "+e.When.Source())
		}
		if len(e.Set) > 0 {
			var keys []string
			for _, s := range e.Set {
				keys = append(keys, s.Key)
			}
			parts = append(parts, "set "+strings.Join(keys, ","))
		}
		for _, in := range e.Increment {
			parts = append(parts, fmt.Sprintf("increment %s+%d", in.Key, in.By))
		}
		if e.Say != nil {
			parts = append(parts, "say")
		}
		if in := e.Invoke; in != nil {
			p := "invoke " + in.Name
			if in.ID != "" {
				p += " id=" + in.ID
			}
			if in.Once {
				p += " once"
			}
			if in.Agent != "" {
				p += " agent=" + in.Agent
			}
			for _, b := range in.Bind {
				if b.Template != nil {
					p += " bind " + b.Key + "<-template"
				} else {
					p += " bind " + b.Key + "<-" + b.Path
				}
			}
			if in.OnError != "" {
				p += " on_error=" + in.OnError
			}
			if in.With != nil {
				p += " with"
			}
			parts = append(parts, p)
		}
		if e.EmitIntent != nil {
			p := "emit_intent"
			var keys []string
			for k := range e.EmitSlots {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(keys) > 0 {
				p += " slots=" + strings.Join(keys, ",")
			}
			parts = append(parts, p)
		}
		out = append(out, strings.Join(parts, "; "))
	}
	return out
}

// TestLoadExample loads story-format.md §13's example and checks the model
// others code against.
func TestLoadExample(t *testing.T) {
	s := load(t, "testdata/expense/app.yaml", nil)
	abs, _ := filepath.Abs("testdata/expense")
	if s.Dir != abs || s.File != filepath.Join(abs, "app.yaml") {
		t.Errorf("Dir, File = %q, %q; want %q, %q", s.Dir, s.File, abs, filepath.Join(abs, "app.yaml"))
	}
	if diff := cmp.Diff(App{ID: "expense-triage", Version: "0.1.0", Title: "Expense triage"}, s.App); diff != "" {
		t.Errorf("App (-want +got):\n%s", diff)
	}
	if s.Root != "intake" {
		t.Errorf("Root = %q, want intake", s.Root)
	}
	if diff := cmp.Diff([]string{"host.agent.decide"}, s.Hosts); diff != "" {
		t.Errorf("Hosts (-want +got):\n%s", diff)
	}
	wantPersona := &Persona{Name: "auditor", SystemPrompt: "Check expense claims against policy; return a typed verdict.",
		Model: "claude-sonnet-4-6", Tools: []string{}, ToolsSet: true}
	if diff := cmp.Diff(map[string]*Persona{"auditor": wantPersona}, s.Agents); diff != "" {
		t.Errorf("Agents (-want +got):\n%s", diff)
	}
	wantPlugins := map[string]agent.Declaration{
		"agent.claude": {Alias: "agent.claude", Plugin: agent.PluginClaudeCLI, Tool: "ask", Enabled: true, Dir: abs},
	}
	if diff := cmp.Diff(wantPlugins, s.Plugins); diff != "" {
		t.Errorf("Plugins (-want +got):\n%s", diff)
	}
	submit := s.Intents["submit"]
	if submit == nil || !cmp.Equal(submit.SlotOrder, []string{"text", "amount"}) || !submit.Slots["text"].Required ||
		submit.Slots["amount"].Type != "int" {
		t.Errorf("intent submit = %+v", submit)
	}

	wantArms := map[string]map[string][]armView{
		"intake": {"submit": {{Target: "reviewing", Effects: []string{"set amount,claim_text,verdict"}}}},
		"reviewing": {
			"approve": {{Target: "approved", When: "world.verdict?.decision == 'approve'",
				GuardHint: "Auditor did not recommend approval; reject instead.", Effects: []string{"set approver,status"}}},
			"reject": {{Target: "rejected", Effects: []string{"set status"}}},
		},
		"approved": {},
		"rejected": {},
	}
	gotArms := map[string]map[string][]armView{}
	for name, st := range s.States {
		gotArms[name] = map[string][]armView{}
		for intent, arms := range st.On {
			gotArms[name][intent] = viewArms(arms)
		}
	}
	if diff := cmp.Diff(wantArms, gotArms); diff != "" {
		t.Errorf("arms (-want +got):\n%s", diff)
	}
	wantOnEnter := []string{
		"invoke host.agent.decide id=audit once bind verdict<-submitted on_error=intake with",
		"when world.verdict?.decision == 'approve' && world.amount <= world.auto_limit; emit_intent slots=approver",
	}
	if diff := cmp.Diff(wantOnEnter, describeEffects(s.States["reviewing"].OnEnter)); diff != "" {
		t.Errorf("reviewing on_enter (-want +got):\n%s", diff)
	}
	if !s.States["approved"].Terminal || s.States["intake"].Terminal {
		t.Errorf("terminal flags wrong")
	}

	// Compiled artefacts: views, prompt files, schemas.
	out, err := s.States["intake"].View.Render(expr.Env{"world": map[string]any{"status": "open"}})
	if err != nil || out != "No open claim. Status: open" {
		t.Errorf("intake view = %q, %v", out, err)
	}
	p := s.Prompts["prompts/audit.md"]
	if p == nil {
		t.Fatalf("Prompts = %v, want prompts/audit.md compiled", s.Prompts)
	}
	out, err = p.Render(expr.Env{"args": map[string]any{"claim": "taxi", "amount": 40}})
	if err != nil || !strings.Contains(out, "Claim: taxi\nAmount: 40") {
		t.Errorf("prompt render = %q, %v", out, err)
	}
	sch := s.Schemas["schemas/audit_verdict.json"]
	if sch == nil || len(sch.Raw) == 0 || len(s.Schemas) != 1 {
		t.Fatalf("Schemas = %v, want schemas/audit_verdict.json compiled", s.Schemas)
	}
	if _, err := sch.ValidateJSON([]byte(`{"decision":"approve","reason":"ok","confidence":0.9}`)); err != nil {
		t.Errorf("valid verdict rejected: %v", err)
	}
	if _, err := sch.ValidateJSON([]byte(`{"decision":"maybe"}`)); err == nil {
		t.Errorf("invalid verdict accepted")
	}
	if s.SchemaCompiler == nil || s.SchemaCompiler.Dir() != abs {
		t.Errorf("SchemaCompiler not rooted at the story dir")
	}
	if len(s.Warnings) != 0 {
		t.Errorf("Warnings = %v, want none", lines(s.Warnings))
	}
}

// TestTransitions covers target resolution: stay, re-entry, slash paths,
// @exit rewriting, on_error targets, the single-arm shorthand and parents.
func TestTransitions(t *testing.T) {
	s := load(t, "testdata/machine/app.yaml", nil)
	flow, review := s.States["flow"], s.States["flow.review"]
	want := map[string][]armView{
		"wait": {{Target: "flow", Stay: true}},
		"*":    {{Target: "flow.review"}},
	}
	got := map[string][]armView{}
	for k, v := range flow.On {
		got[k] = viewArms(v)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flow arms (-want +got):\n%s", diff)
	}
	want = map[string][]armView{
		"again": {{Target: "flow.review"}}, // own name: re-entry, not stay
		"next":  {{Target: "flow.review.deep"}},
		"ship": {
			{Target: "__exit__shipped", When: "world.ticket != ''"},
			{Target: "flow.review", Stay: true, Default: true, Effects: []string{"say"}},
		},
	}
	got = map[string][]armView{}
	for k, v := range review.On {
		got[k] = viewArms(v)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flow.review arms (-want +got):\n%s", diff)
	}
	var onErr []string
	for _, e := range review.OnEnter {
		onErr = append(onErr, e.Invoke.OnError)
	}
	if diff := cmp.Diff([]string{"flow.review", "__exit__shipped", "flow"}, onErr); diff != "" {
		t.Errorf("on_error targets (-want +got):\n%s", diff)
	}
	parents := map[string]string{}
	for n, st := range s.States {
		parents[n] = st.Parent
	}
	wantParents := map[string]string{
		"flow": "", "flow.review": "flow", "flow.review.deep": "flow.review", "flow.x.orphan": "flow", "__exit__shipped": "",
	}
	if diff := cmp.Diff(wantParents, parents); diff != "" {
		t.Errorf("parents (-want +got):\n%s", diff)
	}
	x := s.States["__exit__shipped"]
	if x == nil || !x.Terminal || x.Exit != "shipped" || x.Description != "Handed off." {
		t.Errorf("exit state = %+v", x)
	}
	if diff := cmp.Diff(&Exit{Name: "shipped", Description: "Handed off.", Requires: []string{"ticket"}}, s.Exits["shipped"]); diff != "" {
		t.Errorf("exit (-want +got):\n%s", diff)
	}
}

// TestWorld checks world typing, defaults and seeded keys.
func TestWorld(t *testing.T) {
	s := load(t, "testdata/world/app.yaml", nil)
	want := []*WorldVar{
		{Name: "name", Type: "string", Default: "Ada", HasDefault: true},
		{Name: "count", Type: "int", Default: 3, HasDefault: true},
		{Name: "ratio", Type: "float", Default: 2.0, HasDefault: true}, // int default of a float key becomes float64
		{Name: "price", Type: "float", Default: 1.5, HasDefault: true},
		{Name: "ready", Type: "bool", Default: false, HasDefault: true},
		{Name: "status", Type: "enum", Description: "Claim status.", Default: "open", HasDefault: true, Values: []any{"open", "closed"}},
		{Name: "verdict", Type: "object"}, // no default: absent, not a zero value
		{Name: "tags", Type: "list", Default: []any{"a", "b"}, HasDefault: true},
		{Name: "config", Default: map[string]any{"retries": 2, "mode": "fast"}, HasDefault: true}, // a map without type/default/values is the default
		{Name: "plain", Default: 7, HasDefault: true},
		{Name: "items", Default: []any{"x", "y"}, HasDefault: true},
		{Name: "nothing"},
		{Name: "turn_cost_usd", Type: "float", Default: 1.0, HasDefault: true}, // declared: not re-seeded
		{Name: "session_cost_usd", Type: "float", Default: 0.0, HasDefault: true},
		{Name: "last_error", Type: "string", Default: "", HasDefault: true},
		{Name: "write_mode_scope", Type: "string", Default: "", HasDefault: true},
		{Name: "session_id", Type: "string", Default: "", HasDefault: true},
	}
	if diff := cmp.Diff(want, s.World); diff != "" {
		t.Errorf("World (-want +got):\n%s", diff)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("Warnings = %v", lines(s.Warnings))
	}
}

// TestInclude checks globs, hosts union and that a file matched twice loads
// once.
func TestInclude(t *testing.T) {
	s := load(t, "testdata/include/app.yaml", nil)
	if diff := cmp.Diff([]string{"host.agent.decide", "host.shell.run"}, s.Hosts); diff != "" {
		t.Errorf("Hosts (-want +got):\n%s", diff)
	}
	var states []string
	for n := range s.States {
		states = append(states, n)
	}
	sort.Strings(states)
	if diff := cmp.Diff([]string{"lobby", "merge", "review"}, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if s.Intents["accept"] == nil || s.Intents["open"] == nil {
		t.Errorf("intents = %v", s.Intents)
	}
	var world []string
	for _, w := range s.World {
		world = append(world, w.Name)
	}
	if diff := cmp.Diff([]string{"count", "verdict", "session_cost_usd", "turn_cost_usd", "last_error", "write_mode_scope", "session_id"}, world); diff != "" {
		t.Errorf("world (-want +got):\n%s", diff)
	}
	if got := s.States["review"].Pos; got != (Pos{File: "rooms/review.yaml", Line: 2, Col: 3}) {
		t.Errorf("review Pos = %+v", got)
	}
}

// TestPlugins checks declarations, ${VAR} resolution and secrets.
func TestPlugins(t *testing.T) {
	env := map[string]string{
		"FIXER_KEY": "k3y",
		"TRICKY":    "${FIXER_KEY}", // a resolved value containing ${ is not re-expanded
		"EMPTY_VAR": "",
		"TOKEN":     "t0ken",
	}
	s := load(t, "testdata/plugins/app.yaml", env)
	abs, _ := filepath.Abs("testdata/plugins")
	want := map[string]agent.Declaration{
		"agent.claude": {Alias: "agent.claude", Plugin: "builtin.claude_cli", Tool: "ask", Enabled: true, Dir: abs},
		"agent.fixer": {
			Alias: "agent.fixer", Plugin: "subprocess", Command: "./bin/fixer", Args: []string{"--mode", "fast"},
			Env: map[string]string{
				"API_KEY": "k3y", "TWICE": "k3y-k3y", "NESTED": "pre-${FIXER_KEY}-post", "LITERAL": "$HOME stays", "EMPTY": "",
			},
			Tool: "ask", Enabled: true, Dir: abs, Secrets: []string{"k3y", "${FIXER_KEY}"},
		},
		"agent.remote": {
			Alias: "agent.remote", Plugin: "mcp_http", Endpoint: "http://127.0.0.1:7301/mcp",
			Headers: map[string]string{"Authorization": "Bearer t0ken"}, Tool: "ask", Enabled: true, Dir: abs,
			Secrets: []string{"t0ken"},
		},
		"agent.local": {
			Alias: "agent.local", Plugin: "builtin.local_llm", Endpoint: "http://127.0.0.1:8080", Model: "qwen2.5-1.5b",
			Grammar: true, JSONSchema: true, APIKeyEnv: "GLM_API_KEY", Port: 8081, ServerBin: "/opt/llama-server",
			Tool: "ask", Enabled: false, Dir: abs,
		},
		"agent.inproc": {Alias: "agent.inproc", Plugin: "builtin.inprocess", Tool: "ask", Enabled: true, Dir: abs},
	}
	if diff := cmp.Diff(want, s.Plugins); diff != "" {
		t.Errorf("Plugins (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"k3y", "${FIXER_KEY}", "t0ken"}, s.Secrets); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}

// TestInterpolate pins the ${VAR} rules: one left-to-right pass, substituted
// text never re-scanned, unset and malformed references reported.
func TestInterpolate(t *testing.T) {
	env := mapEnv(map[string]string{"A": "1", "B": "${A}", "LOOP": "${LOOP}", "E": ""})
	tests := []struct {
		in       string
		want     string
		problems []interpProblem
		secrets  []string
	}{
		{in: "plain", want: "plain"},
		{in: "${A}", want: "1", secrets: []string{"1"}},
		{in: "x${A}y${A}z", want: "x1y1z", secrets: []string{"1"}},
		{in: "${B}", want: "${A}", secrets: []string{"${A}"}},
		{in: "${LOOP}-${A}", want: "${LOOP}-1", secrets: []string{"${LOOP}", "1"}},
		{in: "$A and $ {A}", want: "$A and $ {A}"},
		{in: "${E}", want: ""},
		{in: "${MISSING}!", want: "!", problems: []interpProblem{{unset: "MISSING"}}},
		{in: "${X}${Y}", want: "", problems: []interpProblem{{unset: "X"}, {unset: "Y"}}},
		{in: "${A", want: "${A", problems: []interpProblem{{malformed: "unterminated ${ reference (missing })"}}},
		{in: "${1A}", want: "", problems: []interpProblem{{malformed: `invalid variable name "1A" in ${...} reference`}}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var secrets []string
			got, problems := interpolate(tc.in, env, &secrets)
			if got != tc.want {
				t.Errorf("interpolate(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if diff := cmp.Diff(tc.problems, problems, cmp.AllowUnexported(interpProblem{})); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.secrets, secrets); diff != "" {
				t.Errorf("secrets (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWarnings checks that [later] keys and suspicious constructs load
// with warnings in the diagnostic format.
func TestWarnings(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"errors/later.yaml", []string{}},
		{"errors/warnings.yaml", []string{
			`warnings.yaml:4:16: world.mode.type: unknown world type "enmu" (did you mean "enum"?): values of this key are not converted`,
			`warnings.yaml:5:53: world.level.default: default "mid" is not one of the enum values`,
			`warnings.yaml:6:31: world.count.default: default "many" does not match type "int"`,
			`warnings.yaml:15:11: states.start.on.go[0].when: when is ignored on a default: true arm`,
			`warnings.yaml:17:11: states.start.on.go[1]: arm is never tried: arm [0] before it always matches`,
			`warnings.yaml:18:7: states.start.on.og: intent "og" is not declared in intents: (did you mean "go"?); only emit_intent can reach this arm`,
			`warnings.yaml:22:24: states.start.on_enter[0].with.prompt: "prompts/welcome.md" looks like a file name but no such file exists in the story directory; it is sent as inline prompt text`,
			`warnings.yaml:23:9: states.start.on_enter[1]: effect has several actions (set, say): only set runs; put each in its own item`,
			`warnings.yaml:30:13: states.other.on_enter[1].id: invoke id "fetch" is also used at warnings.yaml:28:13; call sites are found by id, so keep ids unique`,
		}},
		// An on_error naming no state of the story as written is kept and
		// looked up when the call fails.
		{"onerror/app.yaml", []string{
			`app.yaml:16:25: states.s.on.run[0].effects[0].on_error: unknown state "idle" (did you mean "kid.idle"?); kept as written and looked up when the call fails (a failure it cannot resolve ends the turn with an error)`,
		}},
		// Guards reading undeclared world keys; declarations in an included
		// file, the seeded keys and host_error count. The position is the
		// key's own where the scalar can be mapped, else the scalar's.
		{"guardreads/app.yaml", []string{
			`app.yaml:13:24: states.start.on.go[0].when: the guard reads world key "verdikt", which is not declared in world: (did you mean "verdict"?)`,
			`app.yaml:19:26: states.start.on.go[2].when: the guard reads world key "colour", which is not declared in world:`,
			`app.yaml:21:17: states.start.on.go[3].when: the guard reads world key "folded", which is not declared in world:`,
			`app.yaml:25:22: states.start.on_enter[0].when: the guard reads world key "spaced key", which is not declared in world:`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			s := load(t, filepath.Join("testdata", tc.file), nil)
			if diff := cmp.Diff(tc.want, lines(s.Warnings)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
	s := load(t, "testdata/errors/warnings.yaml", nil)
	if e := s.States["start"].OnEnter[1]; e.Say != nil || len(e.Set) != 1 {
		t.Errorf("several actions: want only set kept, got %+v", e)
	}
	if w := s.World[0]; w.Default != 1.0 {
		t.Errorf("float default = %#v, want 1.0", w.Default)
	}
}

func TestSuggest(t *testing.T) {
	cands := []string{"merge", "review", "review.deep", "description", "target"}
	tests := []struct{ name, want string }{
		{"mrege", "merge"},
		{"merg", "merge"},
		{"reveiw", "review"},
		{"deep", "review.deep"},
		{"descripton", "description"},
		{"tagret", "target"},
		{"zzz", ""},
		{"merge", ""}, // exact names are not suggestions
		{"", ""},
	}
	for _, tc := range tests {
		if got := suggest(tc.name, cands); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDiagnosticString(t *testing.T) {
	tests := []struct {
		d    Diagnostic
		want string
	}{
		{Diagnostic{Pos{"a.yaml", 3, 7}, "states.x", "bad"}, "a.yaml:3:7: states.x: bad"},
		{Diagnostic{Pos{"a.yaml", 3, 0}, "", "bad"}, "a.yaml:3:1: bad"},
		{Diagnostic{Pos{"a.yaml", 0, 0}, "", "unreadable"}, "a.yaml: unreadable"},
	}
	for _, tc := range tests {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// TestHostPlugins reads host_plugins: (a path command resolved inside the
// workspace, a bare one kept for PATH, env: secrets) and lets the hosts:
// check accept the invokes a host plugin answers.
func TestHostPlugins(t *testing.T) {
	s := load(t, "testdata/hostplugins/app.yaml", map[string]string{"TICKETS_TOKEN": "tk-secret-9"})
	abs, _ := filepath.Abs("testdata/hostplugins")
	real, _ := filepath.EvalSymlinks(abs)
	want := map[string]*HostPlugin{
		"host.tickets": {Name: "host.tickets", Plugin: "subprocess", Command: filepath.Join(real, "plugins/tickets"), Args: []string{"--verbose"},
			Env: map[string]string{"TOKEN": "tk-secret-9", "MODE": "fast"}, Dir: abs, Timeout: 30 * time.Second,
			Secrets: []string{"tk-secret-9"}, Pos: Pos{File: "app.yaml", Line: 7, Col: 3}},
		"host.search": {Name: "host.search", Plugin: "subprocess", Command: "python3", Dir: abs, Pos: Pos{File: "app.yaml", Line: 13, Col: 3}},
	}
	if diff := cmp.Diff(want, s.HostPlugins); diff != "" {
		t.Errorf("HostPlugins (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tk-secret-9"}, s.Secrets); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{"host.tickets.create": "host.tickets", "host.tickets": "host.tickets", "host.search.a.b": "host.search", "host.ticketsx": ""} {
		hp, ok := s.HostPluginFor(name)
		if got := ""; ok {
			got = hp.Name
			if got != want {
				t.Errorf("HostPluginFor(%s) = %s, want %q", name, got, want)
			}
		} else if want != "" {
			t.Errorf("HostPluginFor(%s) found nothing, want %s", name, want)
		}
	}
}
