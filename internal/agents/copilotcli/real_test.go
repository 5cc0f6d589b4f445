package copilotcli

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/agentcli"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeopenai"
	"github.com/kitsoki/kitsoki/plugin"
)

// record rewrites testdata/*.jsonl with the real CLI's output, which the
// tests that need no CLI parse.
var record = flag.Bool("record", false, "rewrite testdata/*.jsonl from the real copilot CLI")

// sharedHome is the HOME the package's runs of the CLI share: its first
// run unpacks the CLI there, which takes seconds.
var sharedHome string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "kitsoki-copilot-home-")
	if err != nil {
		panic(err)
	}
	sharedHome = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const schema = `{"type":"object","properties":{"verdict":{"type":"string","enum":["yes","no"]}},"required":["verdict"],"additionalProperties":false}`

// realAgent is an agent on the real copilot CLI in BYOK mode against a
// fake Chat Completions endpoint on 127.0.0.1 (base_url: the fake's,
// offline), with a home of its own and the network closed.
func realAgent(t *testing.T, f *fakeopenai.Server, decl agent.Declaration, stdout *[]byte) *Agent {
	t.Helper()
	decl.Command = agentcli.Find(t, "copilot", "KITSOKI_COPILOT")
	decl.Alias = "agent.copilot"
	if decl.BaseURL == "" {
		decl.BaseURL = f.Base()
	}
	decl.Dir = t.TempDir()
	a := New(decl, Options{Environ: agentcli.EnvironAt(t, sharedHome, "COPILOT_HOME"), OnOutput: func(b []byte) {
		if stdout != nil {
			*stdout = b
		}
	}})
	t.Cleanup(func() { a.Close() })
	return a
}

func call(verb, prompt string, withSchema bool) *agent.Call {
	c := agent.NewCall(&agent.AskRequest{SessionID: "s1", CallID: "c1", Turn: 1, StatePath: "review", Verb: verb,
		Prompt: prompt, World: plugin.World{Vars: map[string]any{"pr": 7}}})
	if withSchema {
		c.Request.Schema = json.RawMessage(schema)
	}
	c.Alias, c.Model = "agent.copilot", "gpt-4.1-mini"
	return c
}

func saveRecording(t *testing.T, name string, stdout []byte) {
	t.Helper()
	if !*record {
		return
	}
	if err := os.WriteFile(filepath.Join("testdata", name), stdout, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// mcpTool is the name copilot gives a tool of kitsoki's MCP server.
func mcpTool(name string) string { return "kitsoki-" + name }

func TestRealCopilotDecide(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Reply{Text: `{"verdict":"yes"}`, In: 700, Out: 9, Cached: 100})
	var stdout []byte
	a := realAgent(t, f, agent.Declaration{}, &stdout)
	resp, err := a.Ask(context.Background(), call(plugin.VerbDecide, "Is the change safe?", true))
	saveRecording(t, "decide.jsonl", stdout)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"verdict":"yes"}` || resp.Meta["approval"] != ApprovalReadOnly {
		t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
	}
	u, _ := resp.Meta["usage"].(map[string]any)
	if u["input_tokens"] != int64(700) || u["output_tokens"] != int64(9) || u["cache_read_input_tokens"] != int64(100) {
		t.Errorf("usage %v", u)
	}
	req := f.Request(0)
	if req.Path != "/v1/chat/completions" || req.Body["model"] != "gpt-4.1-mini" || !strings.Contains(mustString(req.Body["messages"]), "Is the change safe?") {
		t.Errorf("request %s %v", req.Path, req.Body["model"])
	}
	if names := toolNames(req.Body); !strings.Contains(names, mcpTool("submit_kitsoki")) {
		t.Errorf("kitsoki's MCP tools are not offered to the model: %s", names)
	}
}

func toolNames(body map[string]any) string {
	var names []string
	tools, _ := body["tools"].([]any)
	for _, tl := range tools {
		if fn, ok := tl.(map[string]any)["function"].(map[string]any); ok {
			names = append(names, fn["name"].(string))
		}
	}
	return strings.Join(names, ",")
}

func TestRealCopilotTaskToolRoundTrip(t *testing.T) {
	f := fakeopenai.New(t,
		fakeopenai.Reply{Calls: []fakeopenai.Call{{ID: "call_w", Name: mcpTool("get_world_kitsoki"), Args: `{}`}}, In: 100, Out: 5},
		fakeopenai.Reply{Calls: []fakeopenai.Call{{ID: "call_s", Name: mcpTool("submit_kitsoki"), Args: `{"verdict":"no"}`}}, In: 200, Out: 5},
		fakeopenai.Reply{Text: "Submitted: no.", In: 300, Out: 4},
	)
	var stdout []byte
	a := realAgent(t, f, agent.Declaration{}, &stdout)
	resp, err := a.Ask(context.Background(), call(plugin.VerbTask, "Judge pull request 7.", true))
	saveRecording(t, "task.jsonl", stdout)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"verdict":"no"}` || resp.Meta["approval"] != ApprovalEdit {
		t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
	}
	var kinds []string
	for _, ev := range resp.SubEvents {
		kinds = append(kinds, ev.Kind)
	}
	if got := strings.Join(kinds, ","); got != "agent.copilot.mcp.get_world_kitsoki,agent.copilot.mcp.submit_kitsoki" {
		t.Errorf("sub-events %s", got)
	}
	msgs := f.Request(1).List("messages")
	last := msgs[len(msgs)-1]
	if last["role"] != "tool" || last["tool_call_id"] != "call_w" || !strings.Contains(mustString(last["content"]), `pr`) {
		t.Errorf("tool message %v", last)
	}
}

func TestRealCopilotConverseKeepsItsSession(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Reply{Text: "Hello, Ann.", In: 10, Out: 3}, fakeopenai.Reply{Text: "You are Ann.", In: 20, Out: 3})
	a := realAgent(t, f, agent.Declaration{}, nil)
	c := call(plugin.VerbConverse, "I am Ann.", false)
	first, err := a.Ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	c.Request.Prompt = "Who am I?"
	second, err := a.Ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if string(second.Submission) != `"You are Ann."` || second.Meta["session_resumed"] != true || first.Meta["session_id"] != second.Meta["session_id"] {
		t.Errorf("second %s %v (first %v)", second.Submission, second.Meta, first.Meta)
	}
	if in := mustString(f.Request(1).Body["messages"]); !strings.Contains(in, "I am Ann.") || !strings.Contains(in, "Hello, Ann.") {
		t.Errorf("the resumed session did not carry the first exchange: %.300s", in)
	}
}

func TestRealCopilotUnknownModel(t *testing.T) {
	notFound := fakeopenai.Reply{Status: 404, Body: `{"error":{"message":"The model ` + "`gpt-nope`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`}
	f := fakeopenai.New(t, notFound, notFound, notFound, notFound)
	var stdout []byte
	a := realAgent(t, f, agent.Declaration{}, &stdout)
	c := call(plugin.VerbDecide, "Is it safe?", true)
	c.Model = "gpt-nope"
	_, err := a.Ask(context.Background(), c)
	saveRecording(t, "model_not_found.jsonl", stdout)
	ae, ok := agent.AsAskError(err)
	if !ok || ae.Kind != agent.KindPluginCrash || !strings.HasPrefix(ae.Detail, "copilot CLI reported a failure: Model 'gpt-nope' not found") ||
		!strings.HasSuffix(ae.Detail, ": set model: under agent_plugins.agent.copilot to one its provider serves") {
		t.Fatalf("error %v", err)
	}
}

func TestRealCopilotUnreachableBaseURL(t *testing.T) {
	f := fakeopenai.New(t)
	url := f.Base()
	f.Close()
	var stdout []byte
	a := realAgent(t, f, agent.Declaration{BaseURL: url}, &stdout)
	_, err := a.Ask(context.Background(), call(plugin.VerbDecide, "Is it safe?", true))
	saveRecording(t, "unreachable.jsonl", stdout)
	want := "agent: transport_error: copilot CLI cannot reach its model provider (Could not connect to local model provider at " + url +
		". Check that the service is running and the port is correct.): check base_url: under agent_plugins.agent.copilot (and that the server is up)"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestRealCopilotInvalidSubmitIsSentBack: a submission that does not
// match the call's schema is refused by kitsoki's submit tool, copilot
// hands the refusal back to the model as the tool's result, and the
// model's corrected submission is the answer.
func TestRealCopilotInvalidSubmitIsSentBack(t *testing.T) {
	f := fakeopenai.New(t,
		fakeopenai.Reply{Calls: []fakeopenai.Call{{ID: "call_1", Name: mcpTool("submit_kitsoki"), Args: `{"verdict":"perhaps"}`}}, In: 100, Out: 5},
		fakeopenai.Reply{Calls: []fakeopenai.Call{{ID: "call_2", Name: mcpTool("submit_kitsoki"), Args: `{"verdict":"no"}`}}, In: 200, Out: 5},
		fakeopenai.Reply{Text: "Submitted: no.", In: 300, Out: 4},
	)
	a := realAgent(t, f, agent.Declaration{}, nil)
	resp, err := a.Ask(context.Background(), call(plugin.VerbTask, "Judge pull request 7.", true))
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"verdict":"no"}` {
		t.Errorf("submission %s, want the corrected one", resp.Submission)
	}
	msgs := f.Request(1).List("messages")
	last := msgs[len(msgs)-1]
	if last["role"] != "tool" || last["tool_call_id"] != "call_1" || !strings.Contains(mustString(last["content"]), "does not match the schema") {
		t.Errorf("the submit tool's refusal did not go back to the model: %v", last)
	}
}
