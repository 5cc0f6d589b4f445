package copilotcli

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

// The tests in this file need no copilot CLI: they check the arguments
// and read output the real CLI recorded (testdata/*.jsonl, rewritten by
// go test -record with the CLI installed).

func TestArgs(t *testing.T) {
	a := New(agent.Declaration{Sandbox: "on", Args: []string{"--no-custom-instructions"}, APIKeyEnv: "MY_KEY"}, Options{})
	got := a.args(run{model: "gpt-4.1-mini", effort: "low", approval: ApprovalEdit, mcpConfig: "/tmp/m.json", usageFile: "/tmp/u.json",
		session: "0f5c8e9a-0000-4000-8000-000000000001", secretEnv: []string{"MY_KEY"}})
	want := []string{"--output-format", "json", "--no-auto-update", "--no-ask-user", "--disable-builtin-mcps", "--log-level", "none",
		"--additional-mcp-config", "@/tmp/m.json", "--allow-tool", "kitsoki", "--allow-tool", "write", "--deny-tool", "shell", "--sandbox",
		"--model", "gpt-4.1-mini", "--reasoning-effort", "low", "--usage-output-file", "/tmp/u.json",
		"--session-id", "0f5c8e9a-0000-4000-8000-000000000001", "--secret-env-vars", "MY_KEY", "--no-custom-instructions"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	for mode, flags := range map[string]string{ApprovalReadOnly: "--deny-tool write --deny-tool shell", ApprovalAll: "--allow-all-tools"} {
		if got := strings.Join(New(agent.Declaration{}, Options{}).args(run{approval: mode}), " "); !strings.Contains(got, flags) || strings.Contains(got, "--sandbox") {
			t.Errorf("%s: %s", mode, got)
		}
	}
}

func TestApprovalDefaults(t *testing.T) {
	c := func(verb string, ro bool) *agent.Call {
		x := agent.NewCall(&agent.AskRequest{Verb: verb})
		x.ReadOnly = ro
		return x
	}
	plain, all := New(agent.Declaration{}, Options{}), New(agent.Declaration{Approval: ApprovalAll}, Options{})
	for i, tc := range []struct {
		a    *Agent
		c    *agent.Call
		want string
	}{
		{plain, c(plugin.VerbDecide, false), ApprovalReadOnly},
		{plain, c(plugin.VerbTask, false), ApprovalEdit},
		{all, c(plugin.VerbTask, false), ApprovalAll},
		{all, c(plugin.VerbTask, true), ApprovalReadOnly},
	} {
		if got := tc.a.approval(tc.c); got != tc.want {
			t.Errorf("%d: approval %s, want %s", i, got, tc.want)
		}
	}
}

func TestProviderEnv(t *testing.T) {
	a := New(agent.Declaration{BaseURL: "http://127.0.0.1:11434/v1/", API: "responses", APIKeyEnv: "MY_KEY"},
		Options{LookupEnv: func(k string) (string, bool) { return "sk-local", k == "MY_KEY" }})
	env, secrets := a.providerEnv("qwen2.5")
	want := map[string]string{"COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:11434/v1", "COPILOT_OFFLINE": "true",
		"COPILOT_PROVIDER_WIRE_API": "responses", "COPILOT_MODEL": "qwen2.5", "COPILOT_PROVIDER_API_KEY": "sk-local"}
	if diff := cmp.Diff(want, env); diff != "" || len(secrets) != 1 {
		t.Errorf("env (-want +got):\n%s (secrets %v)", diff, secrets)
	}
	if env, _ := New(agent.Declaration{}, Options{}).providerEnv("x"); env != nil {
		t.Errorf("no base_url, no BYOK: %v", env)
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
	if r.reply() != `{"verdict":"yes"}` || r.sessionID == "" || !r.hasResult || r.exitCode != 0 || r.failure() != "" {
		t.Errorf("decide: %+v", r)
	}
	if err := check(r, clirun.Output{}, secret.New(), "w"); err != nil {
		t.Errorf("decide: %v", err)
	}
	r = parseOutput(recorded(t, "task.jsonl"))
	if r.toolCalls != 2 || r.reply() != "Submitted: no." {
		t.Errorf("task: %+v", r)
	}
	r = parseOutput(recorded(t, "model_not_found.jsonl"))
	err := check(r, clirun.Output{ExitCode: 1}, secret.New(), "agent_plugins.agent.copilot")
	if err == nil || !strings.HasPrefix(err.Error(), "agent: plugin_crash: copilot CLI reported a failure: Model 'gpt-nope' not found on provider at http://127.0.0.1:") ||
		!strings.HasSuffix(err.Error(), ": set model: under agent_plugins.agent.copilot to one its provider serves") {
		t.Errorf("model not found: %v", err)
	}
	r = parseOutput(recorded(t, "unreachable.jsonl"))
	err = check(r, clirun.Output{ExitCode: 1}, secret.New(), "agent_plugins.agent.copilot")
	if ae, ok := agent.AsAskError(err); !ok || ae.Kind != agent.KindTransportError || !strings.HasPrefix(ae.Detail, "copilot CLI cannot reach its model provider (Could not connect") {
		t.Errorf("unreachable: %v", err)
	}
}

func TestUsageFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "u.json")
	os.WriteFile(f, []byte(`{"totalPremiumRequestCost":1,"modelMetrics":{"a":{"usage":{"inputTokens":12,"outputTokens":5,"cacheReadTokens":2,"cacheWriteTokens":1}},"b":{"usage":{"inputTokens":3,"outputTokens":1,"cacheReadTokens":0,"cacheWriteTokens":0}}}}`), 0o600)
	r := &result{}
	r.readUsage(f)
	if !r.hasUsage || r.usage != (usage{Input: 15, Output: 6, CacheRead: 2, CacheWrite: 1}) || r.premiumReqs != 1 {
		t.Errorf("%+v", r)
	}
}

func TestCLINotOnPath(t *testing.T) {
	a := New(agent.Declaration{Alias: "agent.copilot", Command: "copilot-not-installed-here"}, Options{})
	_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: plugin.VerbDecide, Schema: json.RawMessage(schema)}))
	want := `agent: transport_error: copilot CLI "copilot-not-installed-here" not found (exec: "copilot-not-installed-here": executable file not found in $PATH): install it (scripts/setup-agent-clis.sh, or npm install -g @github/copilot) so that copilot is on PATH, or set command: <path to copilot> under agent_plugins.agent.copilot`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

func TestMissingProviderKey(t *testing.T) {
	a := New(agent.Declaration{Alias: "agent.copilot", Command: os.Args[0], BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "NOT_SET_ANYWHERE_KEY"},
		Options{LookupEnv: func(string) (string, bool) { return "", false }})
	c := agent.NewCall(&agent.AskRequest{Verb: plugin.VerbAsk})
	c.Model = "gpt-4.1-mini" // a base_url without a model is refused first
	_, err := a.Ask(context.Background(), c)
	want := "agent: transport_error: copilot CLI: api_key_env NOT_SET_ANYWHERE_KEY is not set; export NOT_SET_ANYWHERE_KEY=<your key>, or remove api_key_env: under agent_plugins.agent.copilot"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

func TestABaseURLNeedsAModel(t *testing.T) {
	a := New(agent.Declaration{Alias: "agent.copilot", Command: os.Args[0], BaseURL: "http://127.0.0.1:1/v1"}, Options{})
	_, err := a.Ask(context.Background(), agent.NewCall(&agent.AskRequest{Verb: plugin.VerbAsk}))
	want := "agent: transport_error: copilot CLI: a base_url: provider needs a model (Copilot's own models do not apply): set model: under agent_plugins.agent.copilot"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}
