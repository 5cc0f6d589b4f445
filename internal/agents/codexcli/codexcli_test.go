package codexcli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/clirun"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/plugin"
)

// The tests in this file need no codex CLI: they check the arguments and
// read output the real CLI recorded (testdata/*.jsonl, rewritten by go
// test -record with the CLI installed).

func TestArgs(t *testing.T) {
	zero := 1
	a := New(agent.Declaration{Alias: "agent.codex", BaseURL: "http://127.0.0.1:8000/v1/", APIKeyEnv: "MY_KEY", Retries: &zero, Args: []string{"--strict-config"}}, Options{})
	got := a.args(run{model: "gpt-5-codex", effort: "low", sandbox: SandboxReadOnly, approval: ApprovalNever, mcpURL: "http://127.0.0.1:4000/mcp",
		schemaFile: "/tmp/s.json", dir: "/work", ephemeral: true, instructions: "You review \"changes\".\nBe brief."})
	want := []string{"exec", "--json", "--skip-git-repo-check", "--ephemeral",
		"-c", `sandbox_mode="read-only"`, "-c", `approval_policy="never"`, "-m", "gpt-5-codex", "-c", `model_reasoning_effort="low"`,
		"-c", `mcp_servers.kitsoki.url="http://127.0.0.1:4000/mcp"`, "-c", `mcp_servers.kitsoki.bearer_token_env_var="KITSOKI_MCP_TOKEN"`,
		"-c", `developer_instructions="You review \"changes\".\nBe brief."`, "--output-schema", "/tmp/s.json", "-C", "/work",
		"-c", `model_provider="kitsoki"`, "-c", `model_providers.kitsoki.name="kitsoki"`, "-c", `model_providers.kitsoki.base_url="http://127.0.0.1:8000/v1"`,
		"-c", `model_providers.kitsoki.wire_api="responses"`, "-c", `model_providers.kitsoki.env_key="MY_KEY"`,
		"-c", "model_providers.kitsoki.request_max_retries=1", "-c", "model_providers.kitsoki.stream_max_retries=1",
		"--strict-config", "-"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	// A converse call continuing its thread: exec resume <id>, persisted.
	got = New(agent.Declaration{}, Options{}).args(run{sandbox: SandboxReadOnly, approval: ApprovalNever, mcpURL: "u", resume: "thread-1", dir: "/work"})
	if strings.Join(got[:5], " ") != "exec resume thread-1 --json --skip-git-repo-check" || strings.Contains(strings.Join(got, " "), "--ephemeral") || strings.Contains(strings.Join(got, " "), " -C ") {
		t.Errorf("resume args %v", got)
	}
}

func TestSandboxAndApproval(t *testing.T) {
	c := func(verb string, ro bool) *agent.Call {
		x := agent.NewCall(&agent.AskRequest{Verb: verb})
		x.ReadOnly = ro
		return x
	}
	plain := New(agent.Declaration{}, Options{})
	declared := New(agent.Declaration{Sandbox: "danger-full-access", Approval: "on-request"}, Options{})
	cases := []struct {
		a    *Agent
		call *agent.Call
		want string
	}{
		{plain, c(plugin.VerbDecide, false), SandboxReadOnly},
		{plain, c(plugin.VerbTask, false), SandboxWorkspaceWrite},
		{plain, c(plugin.VerbTask, true), SandboxReadOnly},
		{declared, c(plugin.VerbDecide, false), "danger-full-access"},
		{declared, c(plugin.VerbTask, true), SandboxReadOnly},
	}
	for i, tc := range cases {
		if got := tc.a.sandbox(tc.call); got != tc.want {
			t.Errorf("%d: sandbox %s, want %s", i, got, tc.want)
		}
	}
	if plain.approval() != ApprovalNever || declared.approval() != "on-request" {
		t.Errorf("approval %s / %s", plain.approval(), declared.approval())
	}
}

func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRecordedOutput(t *testing.T) {
	r := parseOutput(recorded(t, "decide.jsonl"))
	if r.reply() != `{"verdict":"yes"}` || r.threadID == "" || r.failure() == "" || r.failed != "" || !r.hasUsage ||
		r.usage != (usage{InputTokens: 900, CachedInputTokens: 300, OutputTokens: 12}) || r.turns != 1 {
		t.Errorf("decide: %+v", r)
	}
	if err := check(r, clirun.Output{}, secret.New(), "agent_plugins.agent.codex"); err != nil {
		t.Errorf("a model-metadata notice is no failure: %v", err)
	}
	r = parseOutput(recorded(t, "task.jsonl"))
	if r.mcpCalls != 2 || r.reply() != "Submitted: no." || r.usage.InputTokens != 600 {
		t.Errorf("task: %+v", r)
	}
	r = parseOutput(recorded(t, "model_not_found.jsonl"))
	err := check(r, clirun.Output{ExitCode: 1}, secret.New(), "agent_plugins.agent.codex")
	want := "agent: plugin_crash: codex CLI reported a failure: The model `gpt-nope` does not exist or you do not have access to it.: set model: under agent_plugins.agent.codex to one its provider serves"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

func TestFailuresAreOneMaskedLine(t *testing.T) {
	mask := secret.New([]string{"sk-live-123456"})
	err := check(&result{}, clirun.Output{ExitCode: 2, Stderr: []byte("boom: key sk-live-123456\n")}, mask, "x")
	if err == nil || err.Error() != `agent: plugin_crash: codex CLI exited with status 2 and reported nothing (stdout: ""); stderr: boom: key REDACTED` {
		t.Errorf("error %v", err)
	}
}

func TestCLINotOnPath(t *testing.T) {
	a := New(agent.Declaration{Alias: "agent.codex", Command: "codex-not-installed-here"}, Options{})
	c := agent.NewCall(&agent.AskRequest{Verb: plugin.VerbDecide, Schema: json.RawMessage(schema)})
	_, err := a.Ask(context.Background(), c)
	want := `agent: transport_error: codex CLI "codex-not-installed-here" not found (exec: "codex-not-installed-here": executable file not found in $PATH): install it (scripts/setup-agent-clis.sh, or npm install -g @openai/codex) so that codex is on PATH, or set command: <path to codex> under agent_plugins.agent.codex`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// A declared api_key_env that is not set fails before the CLI runs, in
// kitsoki's words (codex's own is "Missing environment variable"); the
// declaration's env: counts as set.
func TestMissingProviderKey(t *testing.T) {
	decl := agent.Declaration{Alias: "agent.codex", Command: os.Args[0], BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "NOT_SET_ANYWHERE_KEY"}
	a := New(decl, Options{Environ: []string{"PATH=/usr/bin"}})
	_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: plugin.VerbAsk}))
	want := "agent: transport_error: codex CLI: api_key_env NOT_SET_ANYWHERE_KEY is not set; export NOT_SET_ANYWHERE_KEY=<your key>, or remove api_key_env: under agent_plugins.agent.codex"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
	if v, ok := clirun.Lookup("NOT_SET_ANYWHERE_KEY", map[string]string{"NOT_SET_ANYWHERE_KEY": "k"}, []string{"PATH=/usr/bin"}); !ok || v != "k" {
		t.Errorf("env: is not looked up: %q %v", v, ok)
	}
	if v, ok := clirun.Lookup("PATH", nil, []string{"PATH=/usr/bin"}); !ok || v != "/usr/bin" {
		t.Errorf("the base environment is not looked up: %q %v", v, ok)
	}
}
