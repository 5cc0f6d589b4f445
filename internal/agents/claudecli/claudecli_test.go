package claudecli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/plugin"
)

func TestMain(m *testing.M) {
	if os.Getenv("KITSOKI_FAKE_CLAUDE") == "1" {
		os.Exit(fakeClaude())
	}
	os.Exit(m.Run())
}

// harness runs agents against the fake claude with one script and log.
type harness struct {
	t      *testing.T
	bin    string
	log    string
	script string
}

func newHarness(t *testing.T, runs ...fakeRun) *harness {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h := &harness{t: t, bin: bin, log: filepath.Join(dir, "log.jsonl"), script: filepath.Join(dir, "script.json")}
	b, _ := json.Marshal(fakeScript{Runs: runs})
	if err := os.WriteFile(h.script, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// environ is the test process's environment without the variables the
// transport sets, plus the fake's switches.
func (h *harness) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CLAUDE_CODE_MAX_RETRIES" || k == "ENABLE_TOOL_SEARCH" || k == PermissionModeEnv || strings.HasPrefix(k, "ANTHROPIC_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "KITSOKI_FAKE_CLAUDE=1", "FAKE_CLAUDE_SCRIPT="+h.script, "FAKE_CLAUDE_LOG="+h.log)
}

func (h *harness) options() Options {
	return Options{Command: h.bin, Environ: h.environ()}
}

func (h *harness) builtin(mod ...func(*Options)) *Agent {
	o := h.options()
	for _, m := range mod {
		m(&o)
	}
	a := NewBuiltin(o)
	h.t.Cleanup(func() { _ = a.Close() })
	return a
}

func (h *harness) logs() []fakeLog {
	h.t.Helper()
	b, err := os.ReadFile(h.log)
	if err != nil {
		h.t.Fatalf("the fake claude never ran: %v", err)
	}
	var out []fakeLog
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l fakeLog
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

const verdictSchema = `{"type":"object","properties":{"decision":{"enum":["approve","reject"]},"reason":{"type":"string"}},"required":["decision","reason"],"additionalProperties":false}`

func request(verb, schema string) *agent.AskRequest {
	req := &agent.AskRequest{
		SessionID: "sess-1", Turn: 3, StatePath: "reviewing", Verb: verb,
		Prompt: "Audit the claim: taxi, 40.", World: plugin.World{Vars: map[string]any{"amount": 40}},
		CallID: "335599da002646d7",
	}
	if schema != "" {
		req.Schema = json.RawMessage(schema)
	}
	return req
}

var auditor = &agent.Persona{Name: "auditor", SystemPrompt: "You audit expense claims.", Model: "claude-sonnet-4-6", Tools: []string{"Read"}, ToolsSet: true}

// personaCall is the call the host builds for req on the built-in path
// with persona p (nil for none): the persona's model is the call's.
func personaCall(p *agent.Persona, req *agent.AskRequest) *agent.Call {
	c := &agent.Call{Request: req, Persona: p, SchemaPath: "schemas/audit.json"}
	if p != nil {
		c.Model = p.Model
	}
	return c
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// normalize replaces the per-call values of an argument list.
func normalize(t *testing.T, args []string) []string {
	out := append([]string(nil), args...)
	for i := 0; i+1 < len(out); i++ {
		switch out[i] {
		case "--mcp-config":
			if !strings.HasPrefix(filepath.Base(out[i+1]), "kitsoki-mcp-") {
				t.Errorf("mcp config path %q", out[i+1])
			}
			out[i+1] = "<mcp-config>"
		case "--session-id", "--resume":
			if !uuidRE.MatchString(out[i+1]) {
				t.Errorf("%s %q is not a UUIDv4", out[i], out[i+1])
			}
			out[i+1] = "<uuid>"
		}
	}
	return out
}

func kindOf(t *testing.T, err error) (agent.ErrorKind, string) {
	t.Helper()
	ae, ok := agent.AsAskError(err)
	if !ok {
		t.Fatalf("error %v (%T) is not an AskError", err, err)
	}
	return ae.Kind, ae.Detail
}

func TestFlagsAndStdinPerVerb(t *testing.T) {
	submit := fakeRun{Calls: []fakeCall{{Tool: "submit_kitsoki", Args: map[string]any{"decision": "approve", "reason": "within policy"}}}, Result: "Approved."}
	head := func(mode string) []string {
		return []string{"-p", "--permission-mode", mode, "--setting-sources", "project,local", "--disable-slash-commands", "--strict-mcp-config"}
	}
	tail := []string{"--disallowedTools", "AskUserQuestion,Agent,Task"}
	cases := []struct {
		name    string
		verb    string
		schema  string
		persona *agent.Persona
		plugin  bool
		want    []string
	}{
		{
			name: "decide with persona", verb: "decide", schema: verdictSchema, persona: auditor,
			want: cat(head("default"), []string{"--system-prompt", "You audit expense claims.\n\n" + submitInstructions, "--model", "claude-sonnet-4-6"}, tail,
				[]string{"--allowedTools", "Read,mcp__kitsoki__get_world_kitsoki,mcp__kitsoki__submit_kitsoki", "--mcp-config", "<mcp-config>",
					"--output-format", "stream-json", "--verbose", "--session-id", "<uuid>"}),
		},
		{
			name: "ask without schema or persona", verb: "ask",
			want: cat(head("default"), tail, []string{"--allowedTools", "mcp__kitsoki__get_world_kitsoki,mcp__kitsoki__submit_kitsoki",
				"--mcp-config", "<mcp-config>", "--output-format", "stream-json", "--verbose", "--session-id", "<uuid>"}),
		},
		{
			name: "extract with schema", verb: "extract", schema: verdictSchema,
			want: cat(head("default"), []string{"--append-system-prompt", submitInstructions}, tail,
				[]string{"--allowedTools", "mcp__kitsoki__get_world_kitsoki,mcp__kitsoki__submit_kitsoki", "--mcp-config", "<mcp-config>",
					"--output-format", "stream-json", "--verbose", "--session-id", "<uuid>"}),
		},
		{
			name: "task", verb: "task", persona: &agent.Persona{Name: "fixer", SystemPrompt: "Fix it.", Tools: []string{"Edit", "Bash(go test:*)"}, ToolsSet: true},
			want: cat(head("acceptEdits"), []string{"--system-prompt", "Fix it."}, tail,
				[]string{"--allowedTools", "Edit,Bash(go test:*),mcp__kitsoki__complete_step_kitsoki,mcp__kitsoki__emit_intent_kitsoki,mcp__kitsoki__get_world_kitsoki,mcp__kitsoki__submit_kitsoki",
					"--mcp-config", "<mcp-config>", "--output-format", "stream-json", "--verbose", "--session-id", "<uuid>"}),
		},
		{
			// inherit_claude_default: the persona goes on top of the CLI's
			// own default prompt.
			name: "task inheriting the default prompt", verb: "task",
			persona: &agent.Persona{Name: "helper", SystemPrompt: "Help out.", Tools: []string{"Read"}, ToolsSet: true, InheritDefault: true},
			want: cat(head("acceptEdits"), []string{"--append-system-prompt", "Help out."}, tail,
				[]string{"--allowedTools", "Read,mcp__kitsoki__complete_step_kitsoki,mcp__kitsoki__emit_intent_kitsoki,mcp__kitsoki__get_world_kitsoki,mcp__kitsoki__submit_kitsoki",
					"--mcp-config", "<mcp-config>", "--output-format", "stream-json", "--verbose", "--session-id", "<uuid>"}),
		},
		{
			name: "converse on the plugin route", verb: "converse", plugin: true,
			want: cat(head("default"), tail, []string{"--allowedTools", "mcp__kitsoki__get_world_kitsoki,mcp__kitsoki__submit_kitsoki",
				"--mcp-config", "<mcp-config>", "--output-format", "json", "--session-id", "<uuid>"}),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := fakeRun{Result: "Approved."}
			if tc.schema != "" {
				run = submit
			}
			h := newHarness(t, run)
			var a agent.Agent
			if tc.plugin {
				a, _ = Build(agent.Declaration{Alias: "agent.claude", Plugin: agent.PluginClaudeCLI, Command: h.bin}, agent.BuildEnv{})
				a.(*Agent).opts.Environ = h.environ()
				t.Cleanup(func() { _ = a.Close() })
			} else {
				a = h.builtin()
			}
			resp, err := a.Ask(context.Background(), personaCall(tc.persona, request(tc.verb, tc.schema)))
			if err != nil {
				t.Fatal(err)
			}
			logs := h.logs()
			if len(logs) != 1 {
				t.Fatalf("%d runs, want 1", len(logs))
			}
			if diff := cmp.Diff(tc.want, normalize(t, logs[0].Args)); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if logs[0].Stdin != "Audit the claim: taxi, 40." {
				t.Errorf("stdin = %q", logs[0].Stdin)
			}
			wantEnv := map[string]string{"ENABLE_TOOL_SEARCH": "false", "CLAUDE_CODE_MAX_RETRIES": "2", "KITSOKI_SESSION_ID": "sess-1"}
			if diff := cmp.Diff(wantEnv, logs[0].Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if tc.schema != "" && string(resp.Submission) != `{"decision":"approve","reason":"within policy"}` {
				t.Errorf("submission = %s", resp.Submission)
			}
			if tc.plugin && string(resp.Submission) != `"Approved."` {
				t.Errorf("plugin route without schema: submission = %s", resp.Submission)
			}
			if !tc.plugin && tc.schema == "" && resp.Submission != nil {
				t.Errorf("built-in route without schema: submission = %s", resp.Submission)
			}
		})
	}
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestMetaOfASuccessfulCall(t *testing.T) {
	h := newHarness(t, fakeRun{Result: "The claim is fine."})
	resp, err := h.builtin().Ask(context.Background(), personaCall(auditor, request("ask", "")))
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.Meta["session_id"].(string)
	if !uuidRE.MatchString(sid) || sid != h.logs()[0].Flags["--session-id"] {
		t.Errorf("session_id %q is not the --session-id passed", sid)
	}
	delete(resp.Meta, "session_id")
	want := map[string]any{
		"result": "The claim is fine.", "cost_usd": 0.25, "total_cost_usd": 0.25, "duration_ms": int64(1200),
		"num_turns": int64(2), "model": "claude-sonnet-4-6", "exit_code": 0, "permission_mode": "default",
		"usage": map[string]any{"input_tokens": 10.0, "output_tokens": 5.0, "server_tool_use": map[string]any{"web_search_requests": 0.0}},
	}
	if diff := cmp.Diff(want, resp.Meta); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
}

func TestResultParsing(t *testing.T) {
	cases := []struct {
		name string
		run  fakeRun
		kind agent.ErrorKind
		want string // the whole detail, or a prefix ending in "…"
	}{
		{"is_error with api_error_status", fakeRun{IsError: true, Result: "API Error: 529 Overloaded", APIErrorStatus: 529, Stderr: "retrying...\ngave up\n"},
			agent.KindPluginCrash, "claude CLI reported an error (api_error_status 529) [success]: API Error: 529 Overloaded; stderr: retrying...\ngave up"},
		{"error_max_turns", fakeRun{Subtype: "error_max_turns", NoResult: true, Exit: 1},
			agent.KindPluginCrash, "claude CLI stopped with error_max_turns after 2 turns"},
		{"garbage", fakeRun{Raw: "Segmentation fault\n", Stderr: "core dumped"},
			agent.KindPluginCrash, `claude CLI output has no result envelope (stdout: "Segmentation fault\n"); stderr: core dumped`},
		{"garbage with non-zero exit", fakeRun{Raw: "<html>", Exit: 137},
			agent.KindPluginCrash, `claude CLI exited with status 137 and no result envelope (stdout: "<html>")`},
		{"non-zero exit with an envelope", fakeRun{Result: "partial", Exit: 3, Stderr: "boom"},
			agent.KindPluginCrash, "claude CLI exited with status 3: partial; stderr: boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.run)
			_, err := h.builtin().Ask(context.Background(), agent.NewCall(request("ask", "")))
			kind, detail := kindOf(t, err)
			if kind != tc.kind || detail != tc.want {
				t.Errorf("got %s %q\nwant %s %q", kind, detail, tc.kind, tc.want)
			}
		})
	}
	t.Run("long stderr keeps its tail", func(t *testing.T) {
		h := newHarness(t, fakeRun{Raw: "x", Stderr: strings.Repeat("a", 1000) + "THE END"})
		_, err := h.builtin().Ask(context.Background(), agent.NewCall(request("ask", "")))
		_, detail := kindOf(t, err)
		if !strings.HasSuffix(detail, "aaa"+"THE END") || strings.Count(detail, "a") > 300 {
			t.Errorf("detail = %q", detail)
		}
	})
}

func TestParseOutputReadsFieldsByName(t *testing.T) {
	cases := map[string]string{
		"single envelope, unusual key order": `{"usage":{"output_tokens":7},"result":"hi","session_id":"s1","num_turns":1,"subtype":"success","type":"result","is_error":false,"total_cost_usd":0.5,"new_field":[1]}`,
		"json array (json with --verbose)":   `[{"type":"system","subtype":"init","session_id":"s1","model":"m"},{"type":"result","subtype":"success","result":"hi","session_id":"s1","total_cost_usd":0.5,"num_turns":1,"usage":{"output_tokens":7}}]`,
		"stream-json with noise":             "warming up\n{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s1\"}\n{broken\n{\"type\":\"result\",\"result\":\"hi\",\"session_id\":\"s1\",\"total_cost_usd\":0.5,\"num_turns\":1,\"usage\":{\"output_tokens\":7}}\n",
	}
	for name, out := range cases {
		r := parseOutput([]byte(out))
		if !r.hasEnvelope || r.reply != "hi" || r.sessionID != "s1" || r.totalCost != 0.5 || r.numTurns != 1 || r.usage["output_tokens"] != 7.0 {
			t.Errorf("%s: %+v", name, r)
		}
	}
	r := parseOutput([]byte("{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"one\"},{\"type\":\"tool_use\",\"name\":\"x\"}]}}\n{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"two\"}]}}\n"))
	if r.hasEnvelope || r.reply != "one\ntwo" {
		t.Errorf("assistant text fallback: %+v", r)
	}
}

func TestSubmitLoop(t *testing.T) {
	h := newHarness(t, fakeRun{Calls: []fakeCall{
		{Tool: "submit_kitsoki", Args: map[string]any{"decision": "maybe"}},
		{Tool: "submit_kitsoki", Args: map[string]any{"decision": "reject", "reason": "no receipt"}},
	}, Result: "Rejected: no receipt."})
	resp, err := h.builtin().Ask(context.Background(), personaCall(auditor, request("decide", verdictSchema)))
	if err != nil {
		t.Fatal(err)
	}
	res := h.logs()[0].Results
	if len(res) != 2 {
		t.Fatalf("results = %+v", res)
	}
	if !res[0].IsError || !strings.Contains(res[0].Text, "/: missing property 'reason'") || !strings.Contains(res[0].Text, "/decision:") {
		t.Errorf("invalid submit did not come back as a tool error naming the violations: %+v", res[0])
	}
	if res[1].IsError {
		t.Errorf("corrected submit refused: %+v", res[1])
	}
	if string(resp.Submission) != `{"decision":"reject","reason":"no receipt"}` {
		t.Errorf("submission = %s", resp.Submission)
	}
	if _, ok := resp.Meta["nudges"]; ok {
		t.Error("a call that submitted was nudged")
	}
	// Each tool call is a sub-event of the agent call, without arguments.
	want := []agent.Event{
		{Turn: 3, Kind: "agent.claude.mcp.submit_kitsoki", StatePath: "reviewing", CallID: "335599da002646d7", Payload: map[string]any{"tool": "submit_kitsoki", "outcome": "tool_error"}},
		{Turn: 3, Kind: "agent.claude.mcp.submit_kitsoki", StatePath: "reviewing", CallID: "335599da002646d7", Payload: map[string]any{"tool": "submit_kitsoki", "outcome": "ok"}},
	}
	got := append([]agent.Event(nil), resp.SubEvents...)
	for i := range got {
		if _, err := time.Parse(time.RFC3339Nano, got[i].TS); err != nil {
			t.Errorf("sub-event ts %q", got[i].TS)
		}
		got[i].TS = ""
		delete(got[i].Payload, "duration_ms")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sub-events (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(resp.SubEvents)
	if strings.Contains(string(b), "no receipt") || strings.Contains(string(b), "maybe") {
		t.Errorf("sub-events carry arguments: %s", b)
	}
}

func TestNudgesThenSchemaInvalid(t *testing.T) {
	h := newHarness(t, fakeRun{Result: "I think it should be approved."})
	_, err := h.builtin().Ask(context.Background(), personaCall(auditor, request("decide", verdictSchema)))
	kind, detail := kindOf(t, err)
	if kind != agent.KindSchemaInvalid || detail != "host.agent.decide: model exited without calling submit — no verdict captured" {
		t.Fatalf("got %s %q", kind, detail)
	}
	if err.Error() != "agent: schema_invalid: host.agent.decide: model exited without calling submit — no verdict captured" {
		t.Errorf("error text %q", err.Error())
	}
	logs := h.logs()
	if len(logs) != 1+DefaultNudges {
		t.Fatalf("%d runs, want %d", len(logs), 1+DefaultNudges)
	}
	first := logs[0].Flags["--session-id"]
	if first == "" || logs[0].Flags["--resume"] != "" {
		t.Fatalf("first run flags %v", logs[0].Flags)
	}
	for i, l := range logs[1:] {
		if l.Flags["--resume"] != first || l.Flags["--session-id"] != "" {
			t.Errorf("nudge %d did not resume session %s: %v", i+1, first, l.Flags)
		}
		if l.Stdin != nudgeText {
			t.Errorf("nudge %d stdin = %q", i+1, l.Stdin)
		}
	}

	t.Run("other verbs", func(t *testing.T) {
		h := newHarness(t, fakeRun{Result: "no"})
		_, err := h.builtin(func(o *Options) { o.Nudges = -1 }).Ask(context.Background(), agent.NewCall(request("extract", verdictSchema)))
		_, detail := kindOf(t, err)
		if detail != "host.agent.extract: model exited without calling submit — no submission captured" {
			t.Errorf("detail %q", detail)
		}
		if n := len(h.logs()); n != 1 {
			t.Errorf("%d runs with nudges disabled", n)
		}
	})
	t.Run("a nudge that works", func(t *testing.T) {
		h := newHarness(t, fakeRun{Result: "approve"}, fakeRun{Calls: []fakeCall{{Tool: "submit_kitsoki", Args: map[string]any{"decision": "approve", "reason": "ok"}}}, Result: "Submitted."})
		resp, err := h.builtin().Ask(context.Background(), agent.NewCall(request("decide", verdictSchema)))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta["nudges"] != 1 || resp.Meta["result"] != "Submitted." || resp.Meta["cost_usd"] != 0.5 || resp.Meta["num_turns"] != int64(4) {
			t.Errorf("meta = %v", resp.Meta)
		}
	})
}

func TestSessionReuse(t *testing.T) {
	h := newHarness(t, fakeRun{Result: "hello"})
	a := h.builtin()
	ctx := context.Background()
	r1, err := a.Ask(ctx, personaCall(auditor, request("converse", "")))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Ask(ctx, personaCall(auditor, request("converse", "")))
	if err != nil {
		t.Fatal(err)
	}
	other := request("converse", "")
	other.SessionID = "sess-2"
	r3, _ := a.Ask(ctx, personaCall(auditor, other))
	a.Ask(ctx, personaCall(auditor, request("ask", "")))
	a.Ask(ctx, personaCall(auditor, request("ask", "")))

	logs := h.logs()
	id := logs[0].Flags["--session-id"]
	switch {
	case id == "" || logs[0].Flags["--resume"] != "":
		t.Errorf("first converse: %v", logs[0].Flags)
	case logs[1].Flags["--resume"] != id || logs[1].Flags["--session-id"] != "":
		t.Errorf("second converse did not resume %s: %v", id, logs[1].Flags)
	case logs[2].Flags["--session-id"] == "" || logs[2].Flags["--session-id"] == id:
		t.Errorf("another kitsoki session reused the claude session: %v", logs[2].Flags)
	case logs[3].Flags["--session-id"] == "" || logs[4].Flags["--session-id"] == logs[3].Flags["--session-id"]:
		t.Errorf("ask calls share a claude session: %v / %v", logs[3].Flags, logs[4].Flags)
	}
	if r1.Meta["session_resumed"] != false || r2.Meta["session_resumed"] != true || r3.Meta["session_resumed"] != false {
		t.Errorf("session_resumed: %v %v %v", r1.Meta["session_resumed"], r2.Meta["session_resumed"], r3.Meta["session_resumed"])
	}
	if r1.Meta["session_id"] != id || r2.Meta["session_id"] != id {
		t.Errorf("meta session ids %v %v, want %s", r1.Meta["session_id"], r2.Meta["session_id"], id)
	}
}

func TestProviderEnvReachesTheChildNotTheTrace(t *testing.T) {
	const secret = "sk-provider-0123456789"
	provider := &agent.Provider{Name: "glm", Model: "glm-4.6",
		Env: map[string]string{"ANTHROPIC_BASE_URL": "https://glm.example/anthropic", "ANTHROPIC_AUTH_TOKEN": secret}, Secrets: []string{secret}}
	ctx := context.Background()
	call := func() *agent.Call {
		return &agent.Call{Request: request("ask", ""), Persona: auditor, ProviderName: "glm", Provider: provider, Model: provider.Model}
	}

	h := newHarness(t, fakeRun{Calls: []fakeCall{{Tool: "get_world_kitsoki"}}, Result: "fine"})
	a := h.builtin(func(o *Options) {
		o.Env = map[string]string{"DECL_VAR": "from-declaration"}
	})
	resp, err := a.Ask(ctx, call())
	if err != nil {
		t.Fatal(err)
	}
	l := h.logs()[0]
	if l.Env["ANTHROPIC_AUTH_TOKEN"] != secret || l.Env["ANTHROPIC_BASE_URL"] != "https://glm.example/anthropic" || l.Env["DECL_VAR"] != "from-declaration" {
		t.Errorf("child env = %v", l.Env)
	}
	if l.Flags["--model"] != "glm-4.6" {
		t.Errorf("model = %q, want the call's", l.Flags["--model"])
	}
	b, _ := json.Marshal(resp)
	if strings.Contains(string(b), secret) {
		t.Errorf("secret in the response: %s", b)
	}
	if resp.Meta["provider"] != "glm" || resp.Meta["model"] != "glm-4.6" {
		t.Errorf("meta = %v", resp.Meta)
	}

	t.Run("errors are redacted", func(t *testing.T) {
		h := newHarness(t, fakeRun{IsError: true, Result: "401 invalid x-api-key " + secret, Stderr: "auth " + secret + " rejected"})
		_, err := h.builtin().Ask(ctx, call())
		if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "REDACTED") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("unresolved provider", func(t *testing.T) {
		_, err := newHarness(t).builtin().Ask(ctx, &agent.Call{Request: request("ask", ""), ProviderName: "nope"})
		kind, detail := kindOf(t, err)
		if kind != agent.KindTransportError || !strings.Contains(detail, `provider "nope" was named but not resolved`) {
			t.Errorf("got %s %q", kind, detail)
		}
	})
}

func TestMissingBinary(t *testing.T) {
	a, err := Build(agent.Declaration{Alias: "agent.helper", Plugin: agent.PluginClaudeCLI, Command: "kitsoki-no-such-claude"}, agent.BuildEnv{})
	if err != nil {
		t.Fatalf("building must not look for the binary: %v", err)
	}
	defer a.Close()
	_, err = a.Ask(context.Background(), agent.NewCall(request("ask", "")))
	kind, detail := kindOf(t, err)
	if kind != agent.KindTransportError {
		t.Fatalf("kind = %s", kind)
	}
	for _, want := range []string{`claude CLI "kitsoki-no-such-claude" not found`, "npm install -g @anthropic-ai/claude-code", "set command: <path to claude> under agent_plugins.agent.helper"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail %q lacks %q", detail, want)
		}
	}
}

func TestClaudeFoundOnPath(t *testing.T) {
	h := newHarness(t, fakeRun{Result: "hi"})
	dir := t.TempDir()
	if err := os.Symlink(h.bin, filepath.Join(dir, "claude")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	a := h.builtin(func(o *Options) { o.Command = "" })
	if _, err := a.Ask(context.Background(), agent.NewCall(request("ask", ""))); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err := NewBuiltin(Options{}).Ask(context.Background(), agent.NewCall(request("ask", "")))
	if kind, detail := kindOf(t, err); kind != agent.KindTransportError || !strings.Contains(detail, `claude CLI "claude" not found`) || !strings.Contains(detail, "agent_plugins.agent.claude") {
		t.Errorf("got %s %q", kind, detail)
	}
}

func TestPermissionModes(t *testing.T) {
	cases := []struct {
		name string
		verb string
		opt  string
		env  string
		want string
	}{
		{"task edits", "task", "", "", "acceptEdits"},
		{"judgement", "decide", "", "", "default"},
		{"environment", "ask", "", "plan", "plan"},
		{"option beats environment", "task", "default", "plan", "default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(PermissionModeEnv, tc.env)
			a := NewBuiltin(Options{PermissionMode: tc.opt})
			got, err := a.permissionMode(tc.verb)
			if err != nil || got != tc.want {
				t.Errorf("mode = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	t.Run("bypass", func(t *testing.T) {
		h := newHarness(t, fakeRun{Result: "ok"})
		_, err := h.builtin(func(o *Options) { o.PermissionMode = "bypassPermissions" }).Ask(context.Background(), agent.NewCall(request("task", "")))
		if !isRoot() {
			if err != nil {
				t.Fatalf("bypass as a normal user: %v", err)
			}
			if got := h.logs()[0].Flags["--permission-mode"]; got != "bypassPermissions" {
				t.Errorf("mode = %q", got)
			}
			return
		}
		kind, detail := kindOf(t, err)
		if kind != agent.KindTransportError || !strings.Contains(detail, "permission mode bypassPermissions is refused when running as root") {
			t.Errorf("got %s %q", kind, detail)
		}
	})
}

func TestDeadlineBoundsTheChild(t *testing.T) {
	h := newHarness(t, fakeRun{SleepMS: 20000, Result: "late"})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := h.builtin().Ask(ctx, agent.NewCall(request("ask", "")))
	kind, detail := kindOf(t, err)
	if kind != agent.KindDeadlineExceeded || !strings.Contains(detail, "did not finish before the call's deadline") {
		t.Errorf("got %s %q", kind, detail)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the call took %v: the child was not stopped", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error does not wrap the deadline: %v", err)
	}
}

// liveRun is a host-side agent.LiveRun for TestRunReachesTheTools.
type liveRun struct {
	titles []string
	world  map[string]any
}

func (l *liveRun) World() map[string]any                               { return l.world }
func (l *liveRun) AskOperator(context.Context, string) (string, error) { return "yes", nil }
func (l *liveRun) AskParent(context.Context, string) (string, error) {
	return "", errors.New("no parent")
}
func (l *liveRun) SetTitle(_ context.Context, t string) error {
	l.titles = append(l.titles, t)
	return nil
}
func (l *liveRun) CompleteStep(context.Context, string) error { return nil }
func (l *liveRun) EmitIntent(context.Context, string, map[string]any) error {
	return nil
}

func TestRunReachesTheTools(t *testing.T) {
	live := &liveRun{world: map[string]any{"amount": 40}}
	ctx := context.Background()
	run := &agent.Run{ID: "run-9", TitleOwned: true, Live: live}
	h := newHarness(t, fakeRun{Calls: []fakeCall{
		{Tool: "set_task_title_kitsoki", Args: map[string]any{"title": "Taxi claim"}},
		{Tool: "ask_user_question_kitsoki", Args: map[string]any{"question": "Receipt?"}},
	}, Result: "done"})
	resp, err := h.builtin().Ask(ctx, &agent.Call{Request: request("task", ""), Run: run})
	if err != nil {
		t.Fatal(err)
	}
	l := h.logs()[0]
	wantListed := []string{"ask_user_question_kitsoki", "complete_step_kitsoki", "emit_intent_kitsoki", "get_world_kitsoki", "set_task_title_kitsoki", "submit_kitsoki"}
	if diff := cmp.Diff(wantListed, l.Listed); diff != "" {
		t.Errorf("listed tools (-want +got):\n%s", diff)
	}
	if len(l.Denied) != 0 || len(l.Results) != 2 || l.Results[0].IsError || l.Results[1].IsError {
		t.Errorf("calls: %+v denied %v", l.Results, l.Denied)
	}
	if diff := cmp.Diff([]string{"Taxi claim"}, live.titles); diff != "" {
		t.Error(diff)
	}
	if len(resp.SubEvents) != 2 || resp.SubEvents[1].Kind != "agent.claude.mcp.ask_user_question_kitsoki" {
		t.Errorf("sub-events %+v", resp.SubEvents)
	}
}

func TestPluginRouteNamespacesSubEventsByAlias(t *testing.T) {
	h := newHarness(t, fakeRun{Calls: []fakeCall{{Tool: "get_world_kitsoki"}}, Result: "ok"})
	a, _ := Build(agent.Declaration{Alias: "agent.router", Plugin: agent.PluginClaudeCLI, Command: h.bin, Model: "claude-haiku-4-5"}, agent.BuildEnv{})
	a.(*Agent).opts.Environ = h.environ()
	defer a.Close()
	resp, err := a.Ask(context.Background(), &agent.Call{Request: request("ask", ""), Alias: "agent.router", Model: "claude-haiku-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.SubEvents) != 1 || resp.SubEvents[0].Kind != "agent.router.mcp.get_world_kitsoki" {
		t.Errorf("sub-events %+v", resp.SubEvents)
	}
	if got := h.logs()[0].Flags["--model"]; got != "claude-haiku-4-5" {
		t.Errorf("model = %q, want the call's", got)
	}
}

func TestToolSearchMustBeDisabled(t *testing.T) {
	// The fake, like Claude Code 2.1, hides MCP tools unless
	// ENABLE_TOOL_SEARCH=false; a base environment that sets it otherwise
	// is overridden.
	h := newHarness(t, fakeRun{Calls: []fakeCall{{Tool: "submit_kitsoki", Args: map[string]any{"decision": "approve", "reason": "r"}}}, Result: "ok"})
	a := h.builtin(func(o *Options) { o.Environ = append(o.Environ, "ENABLE_TOOL_SEARCH=true") })
	if _, err := a.Ask(context.Background(), agent.NewCall(request("decide", verdictSchema))); err != nil {
		t.Fatal(err)
	}
	if l := h.logs()[0]; len(l.Denied) != 0 || l.Env["ENABLE_TOOL_SEARCH"] != "false" {
		t.Errorf("denied %v env %v", l.Denied, l.Env)
	}
}

func TestMCPConfigFileIsRemoved(t *testing.T) {
	h := newHarness(t, fakeRun{Result: "ok"})
	if _, err := h.builtin().Ask(context.Background(), agent.NewCall(request("ask", ""))); err != nil {
		t.Fatal(err)
	}
	path := h.logs()[0].Flags["--mcp-config"]
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("MCP config %s still exists (%v)", path, err)
	}
}

func TestTheCallsModelAndEffortAreUsed(t *testing.T) {
	// The host resolved the call's model (here an eval pin's, over the
	// persona's and the declaration's) and effort: the CLI runs with
	// exactly those, and without a model it gets no --model at all.
	h := newHarness(t, fakeRun{Result: "ok"})
	a, _ := Build(agent.Declaration{Alias: "agent.router", Plugin: agent.PluginClaudeCLI, Command: h.bin, Model: "claude-haiku-4-5"}, agent.BuildEnv{})
	a.(*Agent).opts.Environ = h.environ()
	defer a.Close()
	ctx := context.Background()
	if _, err := a.Ask(ctx, &agent.Call{Request: request("ask", ""), Alias: "agent.router",
		Persona: &agent.Persona{Name: "p", Model: "persona-model"}, Model: "claude-opus-4-1", Effort: "low"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Ask(ctx, &agent.Call{Request: request("ask", ""), Alias: "agent.router", Persona: &agent.Persona{Name: "p", Model: "persona-model"}}); err != nil {
		t.Fatal(err)
	}
	logs := h.logs()
	if l := logs[0]; l.Flags["--model"] != "claude-opus-4-1" || l.Flags["--effort"] != "low" {
		t.Errorf("--model %q --effort %q, want the call's", l.Flags["--model"], l.Flags["--effort"])
	}
	if _, ok := logs[1].Flags["--model"]; ok {
		t.Errorf("a call without a model ran with --model %q", logs[1].Flags["--model"])
	}
}

func TestMetaModelIsTheOneTheCLIReports(t *testing.T) {
	// With --output-format json there is no init event: the model comes
	// from the envelope's modelUsage, which names the resolved model even
	// when an alias was requested.
	h := newHarness(t, fakeRun{Result: "ok", UsageModel: "claude-sonnet-4-6-20260101"})
	a, _ := Build(agent.Declaration{Alias: "agent.claude", Plugin: agent.PluginClaudeCLI, Command: h.bin, Model: "sonnet"}, agent.BuildEnv{})
	a.(*Agent).opts.Environ = h.environ()
	defer a.Close()
	resp, err := a.Ask(context.Background(), &agent.Call{Request: request("ask", ""), Alias: "agent.claude", Model: "sonnet"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.logs()[0].Flags["--model"]; got != "sonnet" {
		t.Errorf("--model %q, want the call's alias", got)
	}
	if resp.Meta["model"] != "claude-sonnet-4-6-20260101" {
		t.Errorf("meta model = %v, want the model the CLI reported", resp.Meta["model"])
	}
}

func TestTaskSessionReuse(t *testing.T) {
	// task, like converse, keeps one claude session per kitsoki session and
	// persona; a different persona starts its own.
	h := newHarness(t, fakeRun{Result: "done"})
	a := h.builtin()
	ctx := context.Background()
	r1, err := a.Ask(ctx, personaCall(auditor, request("task", "")))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Ask(ctx, personaCall(auditor, request("task", "")))
	if err != nil {
		t.Fatal(err)
	}
	r3, err := a.Ask(context.Background(), personaCall(&agent.Persona{Name: "fixer", SystemPrompt: "Fix it."}, request("task", "")))
	if err != nil {
		t.Fatal(err)
	}
	logs := h.logs()
	id := logs[0].Flags["--session-id"]
	if id == "" || logs[0].Flags["--resume"] != "" {
		t.Fatalf("first task call: %v", logs[0].Flags)
	}
	if logs[1].Flags["--resume"] != id || logs[1].Flags["--session-id"] != "" {
		t.Errorf("second task call did not resume %s: %v", id, logs[1].Flags)
	}
	if logs[2].Flags["--session-id"] == "" || logs[2].Flags["--session-id"] == id {
		t.Errorf("another persona reused the claude session: %v", logs[2].Flags)
	}
	if r1.Meta["session_resumed"] != false || r2.Meta["session_resumed"] != true || r3.Meta["session_resumed"] != false {
		t.Errorf("session_resumed: %v %v %v", r1.Meta["session_resumed"], r2.Meta["session_resumed"], r3.Meta["session_resumed"])
	}
	if r2.Meta["session_id"] != id {
		t.Errorf("meta session_id %v, want %s", r2.Meta["session_id"], id)
	}
}
