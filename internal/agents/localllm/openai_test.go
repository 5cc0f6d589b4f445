package localllm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeopenai"
	"github.com/kitsoki/kitsoki/plugin"
)

// The tests of this file check that endpoint mode runs its calls through
// the builtin.openai agent: the tool loop of a task, the repair of an
// answer that does not match the schema, usage and cost, with local_llm's
// grammar: rule kept.

func localCall(verb string) *agent.Call {
	c := agent.NewCall(&agent.AskRequest{SessionID: "s1", CallID: "c1", Turn: 1, StatePath: "review", Verb: verb,
		Prompt: "Approve?", Schema: json.RawMessage(inSubsetSchema), World: plugin.World{Vars: map[string]any{"pr": 7}}})
	c.Alias, c.Model = "agent.local", "qwen"
	return c
}

// TestEndpointTaskToolRoundTrip: a task gets kitsoki's tools as
// functions; the model's call is run in process, its result sent back,
// and the final answer (grammar-constrained) is the submission.
func TestEndpointTaskToolRoundTrip(t *testing.T) {
	f := fakeopenai.New(t,
		fakeopenai.Reply{Calls: []fakeopenai.Call{{ID: "call_a", Name: "get_world_kitsoki", Args: `{}`}}, In: 300, Out: 10, Model: "qwen"},
		fakeopenai.Reply{Text: `{"verdict":"reject"}`, In: 400, Out: 10, Model: "qwen"},
	)
	a := newEndpointAgent(t, agent.Declaration{Alias: "agent.local", Endpoint: f.URL(), Model: "qwen", Grammar: true}, Config{})
	resp, err := a.Ask(context.Background(), localCall(plugin.VerbTask))
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"verdict":"reject"}` || resp.Meta["num_turns"] != 2 || resp.Meta["grammar"] != true {
		t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
	}
	first := f.Request(0)
	if first.Path != "/v1/chat/completions" || first.Body["response_format"] == nil || first.Body["stream"] != nil {
		t.Errorf("first request %s %v", first.Path, first.Body)
	}
	name := func(m map[string]any) string { return m["function"].(map[string]any)["name"].(string) }
	if got := fakeopenai.JoinNames(first.Body["tools"].([]any), name); !strings.Contains(got, "get_world_kitsoki") {
		t.Errorf("tools offered: %s", got)
	}
	msgs := f.Request(1).List("messages")
	tool := msgs[len(msgs)-1]
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_a" || !strings.Contains(tool["content"].(string), `"pr":7`) {
		t.Errorf("tool result message %v", tool)
	}
	if len(resp.SubEvents) != 1 || !strings.HasSuffix(resp.SubEvents[0].Kind, ".mcp.get_world_kitsoki") {
		t.Errorf("sub-events %+v", resp.SubEvents)
	}
}

// TestEndpointRepairsAnInvalidAnswer: an answer outside the schema goes
// back with the violations, and the corrected one is the submission.
func TestEndpointRepairsAnInvalidAnswer(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Reply{Text: `{"verdict":"maybe"}`, Model: "qwen"}, fakeopenai.Reply{Text: "```json\n{\"verdict\": \"approve\"}\n```", Model: "qwen"})
	a := newEndpointAgent(t, agent.Declaration{Endpoint: f.URL(), Model: "qwen", JSONSchema: true}, Config{})
	resp, err := a.Ask(context.Background(), localCall(plugin.VerbDecide))
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"verdict":"approve"}` || resp.Meta["repairs"] != 1 || resp.Meta["json_schema"] != true {
		t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
	}
	msgs := f.Request(1).List("messages")
	if last := msgs[len(msgs)-1]; last["role"] != "user" || !strings.Contains(last["content"].(string), "does not match the required JSON schema: /verdict:") {
		t.Errorf("the violations go back: %v", last)
	}
}

// TestEndpointUsageAndCost: the usage of every turn is summed into meta,
// and pricing: prices it into cost_usd.
func TestEndpointUsageAndCost(t *testing.T) {
	f := fakeopenai.New(t,
		fakeopenai.Reply{Calls: []fakeopenai.Call{{ID: "call_a", Name: "get_world_kitsoki", Args: `{}`}}, In: 1_000_000, Out: 100_000, Model: "qwen"},
		fakeopenai.Reply{Text: `{"verdict":"approve"}`, In: 1_000_000, Out: 100_000, Model: "qwen"},
	)
	decl := agent.Declaration{Endpoint: f.URL(), Model: "qwen", Pricing: &agent.Pricing{InputPerMTok: 0.5, OutputPerMTok: 2}}
	a := newEndpointAgent(t, decl, Config{})
	resp, err := a.Ask(context.Background(), localCall(plugin.VerbTask))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := resp.Meta["usage"].(map[string]any)
	if u["input_tokens"] != int64(2_000_000) || u["output_tokens"] != int64(200_000) {
		t.Errorf("usage %v", resp.Meta["usage"])
	}
	if c, _ := resp.Meta["cost_usd"].(float64); c < 1.399 || c > 1.401 { // 2 × (0.5 + 0.2)
		t.Errorf("cost_usd %v, want 1.4", resp.Meta["cost_usd"])
	}
	if resp.Meta["provider"] != "local_llm" || resp.Meta["model"] != "qwen" {
		t.Errorf("meta %v", resp.Meta)
	}
}

// TestEndpointGrammarSkipped: under grammar: true a schema outside the
// llama.cpp grammar subset is sent without response_format, meta naming
// the first construct outside it; the answer is still validated.
func TestEndpointGrammarSkipped(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Reply{Text: `{"tags":["a"]}`, Model: "qwen"})
	a := newEndpointAgent(t, agent.Declaration{Endpoint: f.URL(), Model: "qwen", Grammar: true}, Config{})
	c := localCall(plugin.VerbDecide)
	c.Request.Schema = json.RawMessage(outSubsetSchema)
	resp, err := a.Ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if _, sent := f.Request(0).Body["response_format"]; sent {
		t.Error("response_format sent for a schema outside the grammar subset")
	}
	want := "uniqueItems at /properties/tags/uniqueItems is outside the llama.cpp grammar subset"
	if resp.Meta["grammar_skipped"] != want || resp.Meta["grammar"] != false || string(resp.Submission) != `{"tags":["a"]}` {
		t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
	}
}

// TestEndpointConverseKeepsTheThread: a converse call continues the
// session's thread, as builtin.openai keeps it.
func TestEndpointConverseKeepsTheThread(t *testing.T) {
	f := fakeopenai.New(t, fakeopenai.Reply{Text: "Hello.", Model: "qwen"}, fakeopenai.Reply{Text: "Again.", Model: "qwen"})
	a := newEndpointAgent(t, agent.Declaration{Endpoint: f.URL(), Model: "qwen"}, Config{})
	for i, prompt := range []string{"hi", "once more"} {
		c := agent.NewCall(&agent.AskRequest{SessionID: "s1", CallID: "c", Verb: plugin.VerbConverse, Prompt: prompt})
		c.Alias, c.Model = "agent.local", "qwen"
		resp, err := a.Ask(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta["session_resumed"] != (i == 1) {
			t.Errorf("call %d: meta %v", i, resp.Meta)
		}
	}
	msgs := f.Request(1).List("messages")
	var got []string
	for _, m := range msgs {
		got = append(got, m["role"].(string)+":"+m["content"].(string))
	}
	if strings.Join(got, "|") != "user:hi|assistant:Hello.|user:once more" {
		t.Errorf("second request's thread: %v", got)
	}
}
