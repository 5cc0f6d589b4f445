package codexcli

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/agentcli"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeopenai"
	"github.com/kitsoki/kitsoki/plugin"
)

// record rewrites testdata/*.jsonl with the real CLI's output, which the
// tests that need no CLI parse.
var record = flag.Bool("record", false, "rewrite testdata/*.jsonl from the real codex CLI")

const schema = `{"type":"object","properties":{"verdict":{"type":"string","enum":["yes","no"]}},"required":["verdict"],"additionalProperties":false}`

// realAgent is an agent on the real codex CLI pointed at a fake Responses
// endpoint on 127.0.0.1 (model provider kitsoki, base_url: the fake's),
// with a home of its own and the network closed.
func realAgent(t *testing.T, f *fakeopenai.Server, decl agent.Declaration, stdout *[]byte) *Agent {
	t.Helper()
	decl.Command = agentcli.Find(t, "codex", "KITSOKI_CODEX")
	decl.Alias = "agent.codex"
	if decl.BaseURL == "" {
		decl.BaseURL = f.Base()
	}
	if decl.Retries == nil {
		zero := 0
		decl.Retries = &zero
	}
	decl.Dir = t.TempDir()
	a := New(decl, Options{Environ: agentcli.Environ(t, "CODEX_HOME"), OnOutput: func(b []byte) {
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
	c.Alias, c.Model = "agent.codex", "gpt-5-codex"
	return c
}

// saveRecording keeps the CLI's stdout of the last call under testdata.
func saveRecording(t *testing.T, name string, stdout []byte) {
	t.Helper()
	if !*record {
		return
	}
	if err := os.WriteFile(filepath.Join("testdata", name), stdout, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRealCodexDecide(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Reply{Text: `{"verdict":"yes"}`, In: 900, Out: 12, Cached: 300})
	var stdout []byte
	a := realAgent(t, f, agent.Declaration{}, &stdout)
	resp, err := a.Ask(context.Background(), call(plugin.VerbDecide, "Is the change safe?", true))
	saveRecording(t, "decide.jsonl", stdout)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"verdict":"yes"}` {
		t.Errorf("submission %s", resp.Submission)
	}
	u, _ := resp.Meta["usage"].(map[string]any)
	if u["input_tokens"] != int64(900) || u["output_tokens"] != int64(12) || resp.Meta["sandbox"] != SandboxReadOnly || resp.Meta["session_id"] == "" {
		t.Errorf("meta %v", resp.Meta)
	}
	req := f.Request(0)
	if req.Path != "/v1/responses" || req.Body["model"] != "gpt-5-codex" {
		t.Errorf("request %s %v", req.Path, req.Body["model"])
	}
	format := req.Body["text"].(map[string]any)["format"].(map[string]any)
	if format["type"] != "json_schema" || format["strict"] != true {
		t.Errorf("--output-schema reaches the API as text.format: %v", format)
	}
	if !strings.Contains(mustString(req.Body), "Is the change safe?") {
		t.Error("the prompt (on stdin) did not reach the model")
	}
	if names := toolNames(req.Body); !strings.Contains(names, "submit_kitsoki") {
		t.Errorf("kitsoki's MCP tools are not offered to the model: %s", names)
	}
}

func mustString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// toolNames lists the functions a Responses request offers, comma-joined.
func toolNames(body map[string]any) string {
	var names []string
	tools, _ := body["tools"].([]any)
	for _, tl := range tools {
		m := tl.(map[string]any)
		if n, ok := m["name"].(string); ok {
			names = append(names, n)
		}
		if ns, ok := m["tools"].([]any); ok { // a namespace of tools
			for _, x := range ns {
				if n, ok := x.(map[string]any)["name"].(string); ok {
					names = append(names, n)
				}
			}
		}
	}
	return strings.Join(names, ",")
}

// mcpCall is a Responses function call of kitsoki's MCP tool, as codex
// offers it: a function of the mcp__kitsoki namespace.
func mcpCall(id, tool, args string) fakeopenai.Call {
	return fakeopenai.Call{ID: id, Name: tool, Args: args, Namespace: "mcp__" + "kitsoki"}
}

func TestRealCodexTaskToolRoundTrip(t *testing.T) {
	f := fakeopenai.New(t,
		fakeopenai.Reply{Calls: []fakeopenai.Call{mcpCall("call_w", "get_world_kitsoki", `{}`)}, In: 100, Out: 5},
		fakeopenai.Reply{Calls: []fakeopenai.Call{mcpCall("call_s", "submit_kitsoki", `{"verdict":"no"}`)}, In: 200, Out: 5},
		fakeopenai.Reply{Text: "Submitted: no.", In: 300, Out: 4},
	)
	var stdout []byte
	a := realAgent(t, f, agent.Declaration{}, &stdout)
	resp, err := a.Ask(context.Background(), call(plugin.VerbTask, "Judge pull request 7.", true))
	saveRecording(t, "task.jsonl", stdout)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"verdict":"no"}` || resp.Meta["sandbox"] != SandboxWorkspaceWrite {
		t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
	}
	var kinds []string
	for _, ev := range resp.SubEvents {
		kinds = append(kinds, ev.Kind)
	}
	if got := strings.Join(kinds, ","); got != "agent.codex.mcp.get_world_kitsoki,agent.codex.mcp.submit_kitsoki" {
		t.Errorf("sub-events %s", got)
	}
	// The world the tool read went back to the model as the call's output.
	items := f.Request(1).List("input")
	out := items[len(items)-1]
	if out["type"] != "function_call_output" || out["call_id"] != "call_w" || !strings.Contains(out["output"].(string), `"pr":7`) {
		t.Errorf("function_call_output %v", out)
	}
}

func TestRealCodexConverseResumesItsThread(t *testing.T) {
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
	if in := mustString(f.Request(1).Body["input"]); !strings.Contains(in, "I am Ann.") || !strings.Contains(in, "Hello, Ann.") {
		t.Errorf("the resumed thread did not carry the first exchange: %.300s", in)
	}
}

func TestRealCodexUnknownModel(t *testing.T) {
	notFound := fakeopenai.Reply{Status: 404, Body: `{"error":{"message":"The model ` + "`gpt-nope`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`}
	f := fakeopenai.New(t, notFound, notFound, notFound)
	var stdout []byte
	a := realAgent(t, f, agent.Declaration{}, &stdout)
	c := call(plugin.VerbDecide, "Is it safe?", true)
	c.Model = "gpt-nope"
	_, err := a.Ask(context.Background(), c)
	saveRecording(t, "model_not_found.jsonl", stdout)
	ae, ok := agent.AsAskError(err)
	if !ok || ae.Kind != agent.KindPluginCrash || !strings.HasPrefix(ae.Detail, "codex CLI reported a failure: ") || !strings.Contains(ae.Detail, "gpt-nope") {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(ae.Detail, "\n") || strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("not one line: %q", err)
	}
}

func TestRealCodexUnreachableBaseURL(t *testing.T) {
	f := fakeopenai.New(t)
	url := f.Base()
	f.Close()
	var stdout []byte
	a := realAgent(t, f, agent.Declaration{BaseURL: url}, &stdout)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := a.Ask(ctx, call(plugin.VerbDecide, "Is it safe?", true))
	want := "agent: transport_error: codex CLI cannot reach its model provider (Reconnecting... waiting for network (Connection failed: error sending request)): check base_url: under agent_plugins.agent.codex (and that the server is up)"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestRealCodexInvalidSubmitIsSentBack: a submission that does not match
// the call's schema is refused by kitsoki's submit tool, codex hands the
// refusal back to the model, and the model's corrected submission is the
// answer.
func TestRealCodexInvalidSubmitIsSentBack(t *testing.T) {
	f := fakeopenai.New(t,
		fakeopenai.Reply{Calls: []fakeopenai.Call{mcpCall("call_1", "submit_kitsoki", `{"verdict":"perhaps"}`)}, In: 100, Out: 5},
		fakeopenai.Reply{Calls: []fakeopenai.Call{mcpCall("call_2", "submit_kitsoki", `{"verdict":"no"}`)}, In: 200, Out: 5},
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
	var refusal string
	for _, it := range f.Request(1).List("input") {
		if it["type"] == "function_call_output" && it["call_id"] == "call_1" {
			refusal = mustString(it["output"])
		}
	}
	if !strings.Contains(refusal, "does not match the schema") || !strings.Contains(refusal, "verdict") {
		t.Errorf("the submit tool's refusal did not go back to the model: %q", refusal)
	}
}
