package story

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// mapEnv is a lookup function over a fixed map, so tests never read the
// machine's environment.
func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// loadErr loads a fixture that must fail and returns its diagnostics, one
// formatted line each.
func loadErr(t *testing.T, path string, env map[string]string) []string {
	t.Helper()
	s, err := Load(path, WithLookupEnv(mapEnv(env)), WithProvidedHandlers(fixtureHandlers...))
	if err == nil {
		s.Close()
		t.Fatalf("Load(%s) succeeded, want errors", path)
	}
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load(%s) error is %T, want *LoadError: %v", path, err, err)
	}
	if got, want := err.Error(), strings.Join(lines(le.Diagnostics), "\n"); got != want {
		t.Errorf("Error() = %q, want one line per diagnostic %q", got, want)
	}
	return lines(le.Diagnostics)
}

func lines(ds []Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

// TestLoadErrors checks every load error class with its exact text:
// file:line:col, key path, message. Each fixture holds several errors, all
// of which must be reported.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		want []string
	}{
		{
			name: "targets",
			file: "errors/targets.yaml",
			want: []string{
				`targets.yaml:9:19: states.review.on.accept[0].target: unknown state "mrege" (did you mean "merge"?)`,
				`targets.yaml:11:19: states.review.on.nested[0].target: unknown state "merge/chek" (resolved: "merge.chek") (did you mean "merge.check"?)`,
				`targets.yaml:13:19: states.review.on.leave[0].target: @exit:done referenced but not declared in exits:`,
				// on_error: reviw (line 18) is only a warning: an on_error
				// naming no state is looked up when the call fails
				// (TestWarnings, onerror/app.yaml).
			},
		},
		{
			name: "templated targets",
			file: "errors/templated_targets.yaml",
			want: []string{
				`templated_targets.yaml:8:34: states.review.on.a[0].target: invalid template: unexpected token EOF`,
				`templated_targets.yaml:10:20: states.review.on.b[0].target: invalid template: {{ is not closed: add }}`,
				`templated_targets.yaml:13:19: states.review.on.c[1].target: unknown state "revew" (did you mean "review"?)`,
				`templated_targets.yaml:18:19: states.review.on_enter[0].on_error: on_error must name a state, "." or @exit:<name>; a template target is allowed only in an arm's target:`,
			},
		},
		{
			name: "state names that a configuration cannot hold",
			file: "errors/statenames.yaml",
			want: []string{
				`statenames.yaml:9:3: states.a#b: state name "a#b" contains "#", which writes a parallel state's configuration (p#a|b, nested in parentheses); rename the state without any of #|()`,
				`statenames.yaml:10:3: states.x|y: state name "x|y" contains "|", which writes a parallel state's configuration (p#a|b, nested in parentheses); rename the state without any of #|()`,
				`statenames.yaml:14:7: states.p.states.(r): state name "(r)" contains "(", which writes a parallel state's configuration (p#a|b, nested in parentheses); rename the state without any of #|()`,
			},
		},
		{
			name: "hosts allow-list",
			file: "errors/hosts.yaml",
			want: []string{
				`hosts.yaml:8:17: states.start.on_enter[1].invoke: state "start": on_enter invoke "host.shell.run" is not declared in app hosts`,
				`hosts.yaml:13:23: states.start.on.go[0].effects[0].invoke: state "start": on.go invoke "host.git.push" is not declared in app hosts`,
			},
		},
		{
			name: "host interfaces",
			file: "errors/interfaces.yaml",
			want: []string{
				`interfaces.yaml:9:3: host_interfaces: key "bad-name" must be an interface name (letters, digits, _), invoked as iface.<name>.<op>`,
				`interfaces.yaml:10:20: host_interfaces.notes.default: "iface.transport" is not a handler name: write the handler that answers iface.notes.<op>, e.g. host.run`,
				`interfaces.yaml:11:18: host_interfaces.vcs.default: "git" is not a handler name: write the handler that answers iface.vcs.<op>, e.g. host.run`,
				`interfaces.yaml:12:27: host_interfaces.ci.operations.run.inputs: unknown key "inputs" (did you mean "input"?)`,
				`interfaces.yaml:12:41: host_interfaces.ci.defualt: unknown key "defualt" (did you mean "default"?)`,
				// A declared interface's operations need no hosts: entry; an
				// undeclared one's do.
				`interfaces.yaml:19:17: states.start.on_enter[1].invoke: state "start": on_enter invoke "iface.ticket.search" is not declared in app hosts`,
			},
		},
		{
			name: "personas and plugin aliases",
			file: "errors/agents.yaml",
			want: []string{
				`agents.yaml:11:23: states.start.on_enter[0].with.agent: with.agent "auditr" is not declared in agents`,
				`agents.yaml:15:16: states.start.on_enter[2].agent: agent "agent.fixr" is not declared in agent_plugins (did you mean "agent.fixer"?)`,
				`agents.yaml:22:26: states.start.on_enter[5].with.provider: with.provider "glm" is not declared in providers`,
			},
		},
		{
			name: "once without bind",
			file: "errors/once.yaml",
			want: []string{
				`once.yaml:7:9: states.start.on_enter[0].once: once: true needs bind: (once skips the call when every bind target is already set)`,
			},
		},
		{
			name: "emit_intent",
			file: "errors/emit.yaml",
			want: []string{
				`emit.yaml:9:22: states.start.on_enter[0].emit_intent: emit_intent "aprove" is not declared on state "start"'s on: arcs (nor any ancestor's)`,
				`emit.yaml:12:9: states.start.on_enter[2].target: emit_intent cannot be combined with target: on the same effect`,
				`emit.yaml:19:28: states.start.on.go[0].effects[0].emit_intent: emit_intent "approve" is not declared on state "done"'s on: arcs (nor any ancestor's)`,
			},
		},
		{
			name: "root unknown",
			file: "errors/root_unknown.yaml",
			want: []string{`root_unknown.yaml:2:7: root: unknown state "strat" (did you mean "start"?)`},
		},
		{
			name: "root and app id missing",
			file: "errors/root_missing.yaml",
			want: []string{
				`root_missing.yaml:1:1: root: is required (the name of the state the story starts in)`,
				`root_missing.yaml:1:6: app: id: is required`,
			},
		},
		{
			name: "unknown keys",
			file: "errors/keys.yaml",
			want: []string{
				`keys.yaml:3:1: stats: unknown key "stats" (did you mean "states"?)`,
				`keys.yaml:6:5: states.start.descripton: unknown key "descripton" (did you mean "description"?)`,
				`keys.yaml:9:11: states.start.on.go[0].tagret: unknown key "tagret" (did you mean "target"?)`,
				`keys.yaml:12:9: states.start.on_enter[0].invok: unknown key "invok" (did you mean "invoke"?)`,
				`keys.yaml:14:9: states.start.on_enter[1].wen: unknown key "wen" (did you mean "when"?)`,
			},
		},
		{
			name: "structure",
			file: "errors/structure.yaml",
			want: []string{
				`structure.yaml:4:3: world.a: duplicate key "a"`,
				`structure.yaml:9:9: states.start.on_enter[0]: effect has no action: use one of set, increment, say, emit, invoke or emit_intent`,
				`structure.yaml:10:9: states.start.on_enter[1].bind: bind: is only valid on an invoke effect (add invoke: <handler>)`,
				`structure.yaml:11:9: states.start.on_enter[1].with: with: is only valid on an invoke effect (add invoke: <handler>)`,
				`structure.yaml:13:9: states.start.on_enter[2].slots: slots: is only valid with emit_intent:`,
				`structure.yaml:14:24: states.start.on_enter[3].increment.n: expected an integer, got the scalar "lots"`,
				`structure.yaml:17:25: states.start.relevant_world[1]: world key "b" is not declared in world: (did you mean "a"?)`,
				`structure.yaml:21:7: states.other.on.stop: intent "stop" has no transitions; give it a list of arms`,
			},
		},
		{
			name: "duplicate key in a large mapping",
			file: "errors/dupkeys.yaml",
			want: []string{
				`dupkeys.yaml:22:3: intents.i03: duplicate key "i03"`,
			},
		},
		{
			name: "YAML syntax",
			file: "errors/syntax.yaml",
			// on: [1 is on line 4; yaml.v3 says 3 (a parser error's line
			// counted from 0).
			want: []string{`syntax.yaml:4:1: YAML syntax error: did not find expected ',' or ']'`},
		},
		{
			name: "personas and exits",
			file: "errors/personas.yaml",
			want: []string{
				`personas.yaml:3:30: agents.both: set only one of system_prompt and system_prompt_path`,
				`personas.yaml:4:3: agents.neither: needs one of system_prompt or system_prompt_path`,
				`personas.yaml:5:33: agents.missing.system_prompt_path: cannot read system prompt file "prompts/nope.md": no such file or directory`,
				`personas.yaml:8:30: exits.done.requires[1]: world key "verdcit" is not declared in world: (did you mean "verdict"?)`,
			},
		},
		{
			name: "agent_plugins",
			file: "errors/plugins.yaml",
			want: []string{
				`plugins.yaml:5:3: agent_plugins.agent.empty: empty declaration`,
				`plugins.yaml:6:3: agent_plugins: key "fixer" must start with 'agent.' prefix`,
				`plugins.yaml:7:3: agent_plugins.agent.noplugin: plugin: is required`,
				`plugins.yaml:8:25: agent_plugins.agent.weird: unknown plugin "websocket" (supported: builtin.claude_cli, builtin.inprocess, subprocess, mcp_http, builtin.local_llm, builtin.anthropic, builtin.openai, builtin.codex_cli, builtin.copilot_cli)`,
				`plugins.yaml:9:24: agent_plugins.agent.tape: plugin "cassette" cannot be declared in agent_plugins: a cassette replays a run instead (kitsoki run --cassette FILE, a flow's host_cassette:, or kitsoki.WithCassette in Go tests)`,
				`plugins.yaml:10:3: agent_plugins.agent.sub: subprocess plugin requires command:`,
				`plugins.yaml:11:3: agent_plugins.agent.remote: mcp_http plugin requires endpoint:`,
				`plugins.yaml:12:3: agent_plugins.agent.local: builtin.local_llm plugin requires model: or endpoint:`,
			},
		},
		{
			name: "backend keys",
			file: "errors/backends.yaml",
			want: []string{
				`backends.yaml:5:74: agent_plugins.agent.claude_api.sandbox: sandbox: does not apply to builtin.anthropic (it is a key of builtin.codex_cli, builtin.copilot_cli); remove it`,
				`backends.yaml:6:44: agent_plugins.agent.gpt.api: api "completions": builtin.openai takes chat, responses`,
				`backends.yaml:6:69: agent_plugins.agent.gpt.max_tokens: max_tokens must be from 1 to 1048576, got 0`,
				`backends.yaml:6:81: agent_plugins.agent.gpt.retries: retries must be 0 to 10 (how often a refused or failed request is sent again), got 11`,
				`backends.yaml:7:53: agent_plugins.agent.codex.sandbox: sandbox "yolo": builtin.codex_cli takes read-only, workspace-write, danger-full-access`,
				`backends.yaml:7:69: agent_plugins.agent.codex.approval: approval "always": builtin.codex_cli takes untrusted, on-failure, on-request, never`,
				`backends.yaml:8:58: agent_plugins.agent.copilot.approval: approval "never": builtin.copilot_cli takes read-only, edit, all`,
				`backends.yaml:9:51: agent_plugins.agent.priced.pricing: pricing needs input_per_mtok and output_per_mtok (US dollars per million tokens)`,
				`backends.yaml:10:70: agent_plugins.agent.badprice.pricing.input_per_mtok: input_per_mtok must be a number of US dollars per million tokens (0 or more)`,
				`backends.yaml:10:91: agent_plugins.agent.badprice.pricing.output_per_mtok: output_per_mtok must be a number of US dollars per million tokens (0 or more)`,
				`backends.yaml:11:79: agent_plugins.agent.local.sandbox: sandbox: does not apply to builtin.local_llm (it is a key of builtin.codex_cli, builtin.copilot_cli); remove it`,
			},
		},
		{
			name: "env and headers interpolation",
			file: "errors/envvars.yaml",
			env:  map[string]string{"SET_VAR": "v"},
			want: []string{
				`envvars.yaml:9:16: agent_plugins.agent.sub: env var MISSING_KEY referenced in env.API_KEY not set`,
				`envvars.yaml:10:13: agent_plugins.agent.sub: env var ALSO_MISSING referenced in env.MODE not set`,
				`envvars.yaml:11:15: agent_plugins.agent.sub: unterminated ${ reference (missing }) in env.BROKEN`,
				`envvars.yaml:16:22: agent_plugins.agent.remote: env var NO_TOKEN referenced in headers.Authorization not set`,
			},
		},
		{
			name: "schemas and prompt files",
			file: "errors/schemas.yaml",
			want: []string{
				`schemas.yaml:9:24: states.start.on_enter[1].with.schema: schema "schemas/parent_ref.json": $ref "../../outside.json" in schemas/parent_ref.json leaves the story directory: references must stay inside the story directory`,
				`schemas.yaml:11:24: states.start.on_enter[2].with.schema: schema "schemas/abs_ref.json": $ref "/etc/schema.json" in schemas/abs_ref.json is an absolute path: references must stay inside the story directory`,
				`schemas.yaml:13:24: states.start.on_enter[3].with.schema: schema "schemas/url_ref.json": $ref "https://example.com/evil.json" in schemas/url_ref.json is a URL: references must stay inside the story directory`,
				`schemas.yaml:15:24: states.start.on_enter[4].with.schema: schema "schemas/missing.json": no such file or directory`,
				`schemas.yaml:19:29: states.start.on_enter[6].with.prompt_path: cannot read prompt file "prompts/missing.md": no such file or directory`,
				// A failing schema is reported wherever it is named.
				`schemas.yaml:23:24: states.start.on_enter[8].with.schema: schema "schemas/missing.json": no such file or directory`,
			},
		},
		{
			name: "include errors",
			file: "include_bad/app.yaml",
			want: []string{
				`app.yaml:3:5: include[0]: include "rooms/*.yaml" matches no file`,
				`app.yaml:4:5: include[1]: bad include pattern "[unclosed": syntax error in pattern`,
				`app.yaml:5:5: include[2]: include "missing.yaml" matches no file`,
			},
		},
		{
			name: "duplicates across included files, errors inside an included file",
			file: "include_dup/app.yaml",
			want: []string{
				`rooms/merge.yaml:1:1: app: include: app is already declared`,
				`rooms/merge.yaml:2:1: root: include: root is already declared`,
				`rooms/merge.yaml:4:3: agents.judge: include: agent "judge" is already declared`,
				`rooms/merge.yaml:6:3: agent_plugins.agent.fixer: include: agent_plugins "agent.fixer" is already declared`,
				`rooms/merge.yaml:8:3: exits.done: include: exit "done" is already declared`,
				`rooms/merge.yaml:10:3: world.count: include: world "count" is already declared`,
				`rooms/merge.yaml:12:3: intents.accept: include: intent "accept" is already declared`,
				`rooms/merge.yaml:14:3: states.merge: include: state "merge" is already declared`,
				`rooms/merge.yaml:18:19: states.review.on.accept[0].target: unknown state "mrege" (did you mean "merge"?)`,
			},
		},
		{
			name: "missing root file",
			file: "errors/nope.yaml",
			want: []string{`testdata/errors/nope.yaml: cannot read story file: no such file or directory`},
		},
		{
			name: "empty root file",
			file: "empty/app.yaml",
			want: []string{`app.yaml: story file is empty`},
		},
		{
			name: "two documents",
			file: "twodocs/app.yaml",
			want: []string{`app.yaml:5:1: a story file holds one YAML document; found a second one`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := loadErr(t, filepath.Join("testdata", tc.file), tc.env)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompileErrors checks that guard and template syntax errors fail the
// load at the exact character of the YAML file. The message text after the
// prefix comes from internal/base/expr and is not pinned here.
func TestCompileErrors(t *testing.T) {
	got := loadErr(t, "testdata/errors/compile.yaml", nil)
	wantPrefixes := []string{
		`compile.yaml:5:`, // view: position inside the string depends on where pongo2 notices
		`compile.yaml:7:25: states.start.on_enter[0].when: invalid guard: `,
		`compile.yaml:8:26: states.start.on_enter[0].say: invalid template: `,
		`compile.yaml:11:43: states.start.on_enter[1].set.bad.nested[1]: invalid template: `,
		`compile.yaml:15:30: states.start.on_enter[2].bind.tmpl: invalid template: `,
		`compile.yaml:16:19: states.start.on_enter[2].bind.broken: invalid bind source "result..x": write a dotted path such as submitted.items[0], or a {{ }} template`,
		// A guard in a literal block: the column is found on the line.
		`compile.yaml:23:21: states.other.on_enter[1].when: invalid guard: `,
		// A prompt file's error points into the prompt file.
		`prompts/bad.md:2:41: states.other.on_enter[0].with.prompt: invalid template in prompt file: `,
	}
	if len(got) != len(wantPrefixes) {
		t.Fatalf("got %d diagnostics, want %d:\n%s", len(got), len(wantPrefixes), strings.Join(got, "\n"))
	}
	for i, p := range wantPrefixes {
		if !strings.HasPrefix(got[i], p) {
			t.Errorf("diagnostic %d = %q, want prefix %q", i, got[i], p)
		}
	}
	if !strings.Contains(got[0], "states.start.view: invalid template: ") {
		t.Errorf("view diagnostic = %q, want the view key path and 'invalid template'", got[0])
	}
}

// TestIssueExample reproduces the diagnostic quoted in the issue.
func TestIssueExample(t *testing.T) {
	got := loadErr(t, "testdata/issue/app.yaml", nil)
	want := []string{`rooms/merge.yaml:42:7: states.merge.on.accept[0].target: unknown state "mrege" (did you mean "merge"?)`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestHostPluginErrors checks every host_plugins: error with its exact
// text (the workspace directory written as <ws>).
func TestHostPluginErrors(t *testing.T) {
	abs, _ := filepath.Abs("testdata/errors/hostplugins.yaml")
	ws, err := workspace.Find(abs)
	if err != nil {
		t.Fatal(err)
	}
	got := loadErr(t, "testdata/errors/hostplugins.yaml", nil)
	for i := range got {
		got[i] = strings.ReplaceAll(got[i], ws.Dir(), "<ws>")
	}
	want := []string{
		`hostplugins.yaml:4:3: host_plugins: key "tickets" must be a handler name under host. (e.g. host.tickets)`,
		`hostplugins.yaml:5:3: host_plugins: key "host.agent.tickets" is reserved: the host.agent.* verbs are built in; name the plugin e.g. host.tickets`,
		`hostplugins.yaml:6:3: host_plugins.host.empty: empty declaration (write plugin: subprocess and command:)`,
		`hostplugins.yaml:7:3: host_plugins.host.nocmd: subprocess host plugin requires command:`,
		`hostplugins.yaml:8:23: host_plugins.host.kind.plugin: unknown host plugin type "subproces" (supported: subprocess) (did you mean "subprocess"?)`,
		`hostplugins.yaml:9:47: host_plugins.host.outside.command: command "../../../../../../../../bin/sh" is outside the workspace <ws> (widen the workspace with --workspace DIR); a host plugin's command must be inside the workspace, or a bare name found in PATH`,
		`hostplugins.yaml:10:49: host_plugins.host.keys.comand: unknown key "comand" (did you mean "command"?)`,
		`hostplugins.yaml:11:58: host_plugins.host.slow.timeout: timeout "soon" is not a positive duration (write e.g. 30s or 2m)`,
		`hostplugins.yaml:11:73: host_plugins.host.slow: env var UNSET_VAR referenced in env.K not set`,
		`hostplugins.yaml:12:3: host_plugins.host.noplugin: plugin: is required (plugin: subprocess)`,
		`hostplugins.yaml:13:3: host_plugins: key "host.artifacts_dir" would replace kitsoki's own host.artifacts_dir (see kitsoki hosts); name the plugin e.g. host.my_artifacts_dir`,
		`hostplugins.yaml:18:17: states.start.on_enter[0].invoke: state "start": on_enter invoke "host.other.create": no handler provides host.other.create: it is not built in, no host plugin serves it and it is no interface's; declare a host plugin that serves it (host_plugins:) or remove the call (kitsoki hosts lists the handlers kitsoki provides)`,
		`hostplugins.yaml:18:17: states.start.on_enter[0].invoke: state "start": on_enter invoke "host.other.create" is not declared in app hosts`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}
