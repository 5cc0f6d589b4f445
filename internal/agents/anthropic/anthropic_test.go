package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	meta "github.com/kitsoki/kitsoki/internal/observe/usage"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeanthropic"
	"github.com/kitsoki/kitsoki/plugin"
)

const (
	schema = `{"type":"object","properties":{"verdict":{"type":"string","enum":["yes","no"]}},"required":["verdict"],"additionalProperties":false}`
	key    = "sk-ant-test-0123456789"
)

var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

type env struct {
	fake  *fakeanthropic.Server
	clock *clock.Fake
	agent *Agent
}

func setup(t *testing.T, decl agent.Declaration, replies ...fakeanthropic.Reply) *env {
	t.Helper()
	f := fakeanthropic.New(t, replies...)
	decl.Alias = "agent.api"
	if decl.BaseURL == "" {
		decl.BaseURL = f.URL()
	}
	clk := clock.NewFake(start)
	a, err := New(decl, Config{Clock: clk, LookupEnv: func(k string) (string, bool) {
		if k == DefaultKeyEnv {
			return key, true
		}
		return "", false
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return &env{fake: f, clock: clk, agent: a}
}

func decideCall(alias string) *agent.Call {
	c := agent.NewCall(&agent.AskRequest{SessionID: "s1", CallID: "c1", Turn: 1, StatePath: "review", Verb: plugin.VerbDecide,
		Prompt: "Is the change safe?", Schema: json.RawMessage(schema), World: plugin.World{Vars: map[string]any{"pr": 7}}})
	c.Alias, c.Model = alias, "claude-sonnet-4-5"
	c.Persona = &agent.Persona{Name: "reviewer", SystemPrompt: "You review changes."}
	return c
}

func TestDecideStreamedAndWhole(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "whole"}[stream], func(t *testing.T) {
			e := setup(t, agent.Declaration{Stream: &stream},
				fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 1200, 40, fakeanthropic.ToolUse("toolu_1", "submit_kitsoki", map[string]any{"verdict": "yes"}))})
			resp, err := e.agent.Ask(context.Background(), decideCall("agent.api"))
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Submission) != `{"verdict":"yes"}` {
				t.Errorf("submission %s", resp.Submission)
			}
			req := e.fake.Request(0)
			if got, _ := req["stream"].(bool); got != stream {
				t.Errorf("stream %v, want %v", req["stream"], stream)
			}
			checkDecideRequest(t, req)
			h := e.fake.Header(0)
			if h.Get("x-api-key") != key || h.Get("anthropic-version") != Version {
				t.Errorf("headers %v", h)
			}
			u := meta.FromMeta(resp.Meta)
			// 1200 input tokens at $3/MTok and 40 output at $15/MTok.
			want := meta.Usage{InputTokens: 1200, OutputTokens: 40, HasTokens: true, CostUSD: 0.0042, HasCost: true}
			if diff := cmp.Diff(want, u, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 })); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			if resp.Meta["model"] != "claude-sonnet-4-5-20250929" || resp.Meta["stop_reason"] != "tool_use" || resp.Meta["num_turns"] != 1 {
				t.Errorf("meta %v", resp.Meta)
			}
			if len(resp.SubEvents) != 1 || resp.SubEvents[0].Kind != "agent.api.mcp.submit_kitsoki" {
				t.Errorf("sub-events %+v", resp.SubEvents)
			}
		})
	}
}

// checkDecideRequest checks a decide's request as Anthropic documents
// it: the submit tool with the call's schema as input_schema, forced with
// tool_choice, the persona and instructions as a cached system block.
func checkDecideRequest(t *testing.T, req map[string]any) {
	t.Helper()
	if req["model"] != "claude-sonnet-4-5" || req["max_tokens"] != float64(DefaultMaxTokens) {
		t.Errorf("model/max_tokens: %v %v", req["model"], req["max_tokens"])
	}
	if diff := cmp.Diff(map[string]any{"type": "tool", "name": "submit_kitsoki"}, req["tool_choice"]); diff != "" {
		t.Errorf("tool_choice (-want +got):\n%s", diff)
	}
	tools := req["tools"].([]any)
	if len(tools) != 1 {
		t.Fatalf("tools %v", tools)
	}
	tl := tools[0].(map[string]any)
	var want any
	json.Unmarshal([]byte(schema), &want)
	if tl["name"] != "submit_kitsoki" || !cmp.Equal(want, tl["input_schema"]) || !cmp.Equal(map[string]any{"type": "ephemeral"}, tl["cache_control"]) {
		t.Errorf("tool %v", tl)
	}
	sys := req["system"].([]any)[0].(map[string]any)
	if !strings.HasPrefix(sys["text"].(string), "You review changes.\n\nDeliver your result by calling the submit_kitsoki tool") ||
		!cmp.Equal(map[string]any{"type": "ephemeral"}, sys["cache_control"]) {
		t.Errorf("system %v", sys)
	}
	msgs := req["messages"].([]any)
	first := msgs[0].(map[string]any)
	if first["role"] != "user" || first["content"].([]any)[0].(map[string]any)["text"] != "Is the change safe?" {
		t.Errorf("messages %v", msgs)
	}
}

func TestTaskToolRoundTrip(t *testing.T) {
	e := setup(t, agent.Declaration{},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 500, 20, fakeanthropic.Text("Let me look at the world."), fakeanthropic.ToolUse("toolu_a", "get_world_kitsoki", map[string]any{}))},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 700, 30, fakeanthropic.ToolUse("toolu_b", "submit_kitsoki", map[string]any{"verdict": "no"}))},
	)
	c := decideCall("")
	c.Request.Verb = plugin.VerbTask
	resp, err := e.agent.Ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"verdict":"no"}` || resp.Meta["num_turns"] != 2 {
		t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
	}
	first := e.fake.Request(0)
	if first["tool_choice"] != nil {
		t.Errorf("a task does not force a tool: %v", first["tool_choice"])
	}
	var names []string
	for _, tl := range first["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, ","); got != "complete_step_kitsoki,emit_intent_kitsoki,get_world_kitsoki,submit_kitsoki" {
		t.Errorf("tools %s", got)
	}
	msgs := e.fake.Request(1)["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("second request's messages: %v", msgs)
	}
	asst := msgs[1].(map[string]any)
	if asst["role"] != "assistant" || len(asst["content"].([]any)) != 2 {
		t.Errorf("the assistant turn is sent back as it came: %v", asst)
	}
	res := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	if res["type"] != "tool_result" || res["tool_use_id"] != "toolu_a" || !strings.Contains(res["content"].(string), `"pr":7`) || res["is_error"] != nil {
		t.Errorf("tool_result %v", res)
	}
	// On the built-in path the sub-events are agent.claude's.
	if len(resp.SubEvents) != 2 || resp.SubEvents[0].Kind != "agent.claude.mcp.get_world_kitsoki" {
		t.Errorf("sub-events %+v", resp.SubEvents)
	}
	if u := meta.FromMeta(resp.Meta); u.InputTokens != 1200 || u.OutputTokens != 50 {
		t.Errorf("usage summed over the turns: %+v", u)
	}
}

func TestSchemaInvalidAnswerIsSentBackAndRetried(t *testing.T) {
	bad := fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 100, 10, fakeanthropic.ToolUse("toolu_1", "submit_kitsoki", map[string]any{"verdict": "perhaps"}))}
	good := fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 150, 10, fakeanthropic.ToolUse("toolu_2", "submit_kitsoki", map[string]any{"verdict": "yes"}))}
	e := setup(t, agent.Declaration{}, bad, good)
	resp, err := e.agent.Ask(context.Background(), decideCall("agent.api"))
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"verdict":"yes"}` || resp.Meta["repairs"] != 1 {
		t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
	}
	msgs := e.fake.Request(1)["messages"].([]any)
	res := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	if res["is_error"] != true || !strings.Contains(res["content"].(string), "does not match the schema") {
		t.Errorf("the violation goes back as an error tool_result: %v", res)
	}
	if e.fake.Request(1)["tool_choice"] == nil {
		t.Error("the retry still forces submit")
	}

	t.Run("every try invalid", func(t *testing.T) {
		e := setup(t, agent.Declaration{}, bad, bad, bad)
		_, err := e.agent.Ask(context.Background(), decideCall("agent.api"))
		ae, ok := agent.AsAskError(err)
		if !ok || ae.Kind != agent.KindSchemaInvalid || !strings.Contains(ae.Detail, "did not match the schema after 3 tries") {
			t.Fatalf("error %v", err)
		}
		if e.fake.Count() != 3 {
			t.Errorf("%d requests, want 3 (1 + %d repairs)", e.fake.Count(), Repairs)
		}
	})
}

func TestRateLimitThenSuccessOnTheClock(t *testing.T) {
	e := setup(t, agent.Declaration{},
		fakeanthropic.Reply{Status: 429, Header: http.Header{"Retry-After": {"3"}}, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 10, 5, fakeanthropic.ToolUse("toolu_1", "submit_kitsoki", map[string]any{"verdict": "yes"}))},
	)
	resp, err := e.agent.Ask(context.Background(), decideCall("agent.api"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Meta["http_retries"] != 1 || e.clock.Now().Sub(start) != 3*time.Second {
		t.Errorf("meta %v; waited %s, want the 3s retry-after on the clock", resp.Meta, e.clock.Now().Sub(start))
	}
}

func TestServerErrorExhausted(t *testing.T) {
	fail := fakeanthropic.Reply{Status: 500, Body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`}
	e := setup(t, agent.Declaration{}, fail, fail, fail)
	_, err := e.agent.Ask(context.Background(), decideCall("agent.api"))
	want := "agent: transport_error: anthropic API: http 500 api_error: Internal server error (after 3 attempts): the provider failed; run again later (retries: under agent_plugins.agent.api sets how often kitsoki retries)"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
	if e.clock.Now().Sub(start) != 3*time.Second {
		t.Errorf("backoff waited %s on the clock, want 1s+2s", e.clock.Now().Sub(start))
	}
}

func TestOverloadedStreamIsRetried(t *testing.T) {
	e := setup(t, agent.Declaration{},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("end_turn", 10, 1), StreamErr: "overloaded_error"},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 10, 5, fakeanthropic.ToolUse("toolu_1", "submit_kitsoki", map[string]any{"verdict": "no"}))},
	)
	resp, err := e.agent.Ask(context.Background(), decideCall("agent.api"))
	if err != nil || string(resp.Submission) != `{"verdict":"no"}` || e.fake.Count() != 2 {
		t.Fatalf("%v %v after %d requests", resp, err, e.fake.Count())
	}
}

func TestCostCapStopsTheToolLoop(t *testing.T) {
	e := setup(t, agent.Declaration{},
		// 10000 input tokens at $3/MTok: $0.03, over the $0.02 cap.
		fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 10000, 10, fakeanthropic.ToolUse("toolu_a", "get_world_kitsoki", map[string]any{}))},
	)
	c := decideCall("agent.api")
	c.Request.Verb = plugin.VerbTask
	c.Budgets = []*agent.Budget{agent.NewBudget("--max-cost", "raise --max-cost", 0.02, 0)}
	_, err := e.agent.Ask(context.Background(), c)
	var cap *agent.CostCapError
	if !errors.As(err, &cap) {
		t.Fatalf("error %v, want a cost cap", err)
	}
	if !strings.Contains(err.Error(), "cost cap reached: --max-cost is $0.0200 and this run's agent calls have cost $0.0301 (0 finished calls and the one in flight); raise --max-cost to go on") {
		t.Errorf("error %q", err)
	}
	if e.fake.Count() != 1 {
		t.Errorf("%d requests: the loop must stop before the second", e.fake.Count())
	}
}

func TestAskWithoutSchema(t *testing.T) {
	e := setup(t, agent.Declaration{},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("end_turn", 10, 5, fakeanthropic.Text("It is safe."))},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("end_turn", 10, 5, fakeanthropic.Text("It is safe."))},
	)
	c := decideCall("")
	c.Request.Verb, c.Request.Schema = plugin.VerbAsk, nil
	resp, err := e.agent.Ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Submission != nil || resp.Meta["result"] != "It is safe." {
		t.Errorf("built-in path: submission %s, result %v", resp.Submission, resp.Meta["result"])
	}
	for _, tl := range e.fake.Request(0)["tools"].([]any) {
		if tl.(map[string]any)["name"] == "submit_kitsoki" {
			t.Error("an ask without a schema is offered submit")
		}
	}
	c.Alias = "agent.api"
	resp, _ = e.agent.Ask(context.Background(), c)
	if string(resp.Submission) != `"It is safe."` {
		t.Errorf("plugin alias: submission %s", resp.Submission)
	}
}

func TestConverseKeepsTheThread(t *testing.T) {
	e := setup(t, agent.Declaration{},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("end_turn", 10, 5, fakeanthropic.Text("Hello, Ann."))},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("end_turn", 20, 5, fakeanthropic.Text("You said Ann."))},
	)
	c := decideCall("agent.api")
	c.Request.Verb, c.Request.Schema, c.Request.Prompt = plugin.VerbConverse, nil, "I am Ann."
	first, err := e.agent.Ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	c.Request.Prompt = "Who am I?"
	second, err := e.agent.Ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	msgs := e.fake.Request(1)["messages"].([]any)
	if len(msgs) != 3 || msgs[1].(map[string]any)["role"] != "assistant" {
		t.Errorf("second converse request: %v", msgs)
	}
	if first.Meta["session_id"] != second.Meta["session_id"] || second.Meta["session_resumed"] != true || first.Meta["session_resumed"] != false {
		t.Errorf("meta %v / %v", first.Meta, second.Meta)
	}
}

func TestEffortIsAThinkingBudget(t *testing.T) {
	e := setup(t, agent.Declaration{},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("end_turn", 10, 5, fakeanthropic.Text("done"))},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 10, 5, fakeanthropic.ToolUse("toolu_1", "submit_kitsoki", map[string]any{"verdict": "no"}))},
	)
	c := decideCall("agent.api")
	c.Request.Verb, c.Request.Schema, c.Effort = plugin.VerbAsk, nil, "medium"
	if _, err := e.agent.Ask(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	req := e.fake.Request(0)
	if !cmp.Equal(map[string]any{"type": "enabled", "budget_tokens": float64(4096)}, req["thinking"]) || req["max_tokens"] != float64(DefaultMaxTokens+4096) {
		t.Errorf("thinking %v, max_tokens %v", req["thinking"], req["max_tokens"])
	}
	d := decideCall("agent.api")
	d.Effort = "medium"
	resp, err := e.agent.Ask(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if e.fake.Request(1)["thinking"] != nil || !strings.Contains(resp.Meta["effort_skipped"].(string), "forced submit") {
		t.Errorf("a forced decide sends no thinking: %v, meta %v", e.fake.Request(1)["thinking"], resp.Meta)
	}
	c.Effort = "extreme"
	if _, err := e.agent.Ask(context.Background(), c); err == nil || !strings.Contains(err.Error(), `effort "extreme" is not one of low, medium, high, xhigh, max`) {
		t.Errorf("unknown effort: %v", err)
	}
}

func TestBadInputIsOneClearLine(t *testing.T) {
	t.Run("missing key", func(t *testing.T) {
		e := setup(t, agent.Declaration{APIKeyEnv: "MY_ANTHROPIC_KEY"})
		_, err := e.agent.Ask(context.Background(), decideCall("agent.api"))
		want := "agent: transport_error: anthropic API key missing: MY_ANTHROPIC_KEY is not set; export MY_ANTHROPIC_KEY=<your key>, or name the variable that holds it with api_key_env: under agent_plugins.agent.api"
		if err == nil || err.Error() != want {
			t.Errorf("error:\n%v\nwant:\n%s", err, want)
		}
	})
	t.Run("unknown model", func(t *testing.T) {
		e := setup(t, agent.Declaration{}, fakeanthropic.Reply{Status: 404, Body: `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`})
		c := decideCall("agent.api")
		c.Model = "claude-nope"
		_, err := e.agent.Ask(context.Background(), c)
		want := `agent: transport_error: anthropic API has no model "claude-nope" (anthropic API: http 404 not_found_error: model: claude-nope): set model: under agent_plugins.agent.api to one it serves (e.g. claude-sonnet-4-5)`
		if err == nil || err.Error() != want {
			t.Errorf("error:\n%v\nwant:\n%s", err, want)
		}
	})
	t.Run("bad key", func(t *testing.T) {
		e := setup(t, agent.Declaration{}, fakeanthropic.Reply{Status: 401, Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`})
		_, err := e.agent.Ask(context.Background(), decideCall("agent.api"))
		if err == nil || !strings.Contains(err.Error(), "anthropic API refused the key in ANTHROPIC_API_KEY") || strings.Contains(err.Error(), key) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("unreachable base URL", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String()
		ln.Close()
		e := setup(t, agent.Declaration{BaseURL: url})
		_, err = e.agent.Ask(context.Background(), decideCall("agent.api"))
		want := "agent: transport_error: anthropic API at " + url + "/v1/messages is unreachable after 3 attempts ("
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "): check base_url: under agent_plugins.agent.api (and that the server is up)") {
			t.Errorf("error:\n%v\nwant it to start:\n%s", err, want)
		}
	})
	t.Run("bad base_url", func(t *testing.T) {
		_, err := New(agent.Declaration{BaseURL: "api.anthropic.com"}, Config{}, nil)
		if err == nil || err.Error() != `builtin.anthropic base_url: "api.anthropic.com" is not an http(s) URL (e.g. https://api.anthropic.com)` {
			t.Errorf("error %v", err)
		}
	})
}

// An extract is answered as a decide is: the submit tool alone, forced.
func TestExtract(t *testing.T) {
	e := setup(t, agent.Declaration{},
		fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 300, 8, fakeanthropic.ToolUse("toolu_1", "submit_kitsoki", map[string]any{"verdict": "no"}))})
	c := decideCall("agent.api")
	c.Request.Verb = plugin.VerbExtract
	resp, err := e.agent.Ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Submission) != `{"verdict":"no"}` {
		t.Errorf("submission %s", resp.Submission)
	}
	checkDecideRequest(t, e.fake.Request(0))
}
