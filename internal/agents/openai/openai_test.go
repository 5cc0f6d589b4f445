package openai

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
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeopenai"
	"github.com/kitsoki/kitsoki/plugin"
)

const (
	schema = `{"type":"object","properties":{"verdict":{"type":"string","enum":["yes","no"]}},"required":["verdict"],"additionalProperties":false}`
	key    = "sk-proj-test-0123456789"
)

var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// variant is one wire API and streaming choice; every test runs all four.
type variant struct {
	api    string
	stream bool
}

func (v variant) name() string {
	s := v.api
	if v.stream {
		s += "/stream"
	}
	return s
}

var variants = []variant{{APIChat, false}, {APIChat, true}, {APIResponses, false}, {APIResponses, true}}

type env struct {
	fake  *fakeopenai.Server
	clock *clock.Fake
	agent *Agent
}

func setup(t *testing.T, v variant, decl agent.Declaration, replies ...fakeopenai.Reply) *env {
	t.Helper()
	f := fakeopenai.New(t, replies...)
	decl.Alias, decl.API, decl.Stream = "agent.gpt", v.api, &v.stream
	if decl.BaseURL == "" {
		decl.BaseURL = f.Base()
	}
	if decl.APIKeyEnv == "" {
		decl.APIKeyEnv = DefaultKeyEnv
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
	c.Alias, c.Model = alias, "gpt-4.1-mini"
	c.Persona = &agent.Persona{Name: "reviewer", SystemPrompt: "You review changes."}
	return c
}

func each(t *testing.T, f func(t *testing.T, v variant)) {
	for _, v := range variants {
		t.Run(v.name(), func(t *testing.T) { f(t, v) })
	}
}

func TestDecide(t *testing.T) {
	each(t, func(t *testing.T, v variant) {
		e := setup(t, v, agent.Declaration{}, fakeopenai.Reply{Text: `{"verdict":"yes"}`, In: 1000, Out: 20, Cached: 400})
		resp, err := e.agent.Ask(context.Background(), decideCall("agent.gpt"))
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Submission) != `{"verdict":"yes"}` || resp.Meta["strict"] != true {
			t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
		}
		req := e.fake.Request(0)
		if got := req.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("Authorization %q", got)
		}
		if got, _ := req.Body["stream"].(bool); got != v.stream {
			t.Errorf("stream %v", req.Body["stream"])
		}
		var want any
		json.Unmarshal([]byte(schema), &want)
		if v.api == APIChat {
			if req.Path != "/v1/chat/completions" {
				t.Errorf("path %s", req.Path)
			}
			wantRF := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "submission", "strict": true, "schema": want}}
			if diff := cmp.Diff(wantRF, req.Body["response_format"]); diff != "" {
				t.Errorf("response_format (-want +got):\n%s", diff)
			}
			msgs := req.List("messages")
			if msgs[0]["role"] != "system" || msgs[0]["content"] != "You review changes." || msgs[1]["content"] != "Is the change safe?" {
				t.Errorf("messages %v", msgs)
			}
			if v.stream && !cmp.Equal(map[string]any{"include_usage": true}, req.Body["stream_options"]) {
				t.Errorf("stream_options %v", req.Body["stream_options"])
			}
		} else {
			if req.Path != "/v1/responses" || req.Body["instructions"] != "You review changes." || req.Body["store"] != false {
				t.Errorf("path %s, body %v", req.Path, req.Body)
			}
			wantText := map[string]any{"format": map[string]any{"type": "json_schema", "name": "submission", "strict": true, "schema": want}}
			if diff := cmp.Diff(wantText, req.Body["text"]); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
		}
		if req.Body["tools"] != nil {
			t.Errorf("a decide is offered no tools: %v", req.Body["tools"])
		}
		u := meta.FromMeta(resp.Meta)
		if u.InputTokens != 1000 || u.OutputTokens != 20 || !u.HasCost {
			t.Errorf("usage %+v", u)
		}
	})
}

func TestCostFromTheReportedModel(t *testing.T) {
	e := setup(t, variants[0], agent.Declaration{}, fakeopenai.Reply{Text: `{"verdict":"yes"}`, In: 1_000_000, Out: 1_000_000, Cached: 500_000})
	resp, err := e.agent.Ask(context.Background(), decideCall("agent.gpt"))
	if err != nil {
		t.Fatal(err)
	}
	// gpt-4.1-mini: 500k uncached input at $0.40/MTok, 500k cached at
	// $0.10/MTok, 1M output at $1.60/MTok.
	if got := resp.Meta["cost_usd"].(float64); got < 1.8499 || got > 1.8501 {
		t.Errorf("cost %v, want 1.85", got)
	}
}

func TestTaskToolRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, v variant) {
		e := setup(t, v, agent.Declaration{},
			fakeopenai.Reply{Calls: []fakeopenai.Call{{ID: "call_a", Name: "get_world_kitsoki", Args: `{}`}}, In: 300, Out: 10},
			fakeopenai.Reply{Text: `{"verdict":"no"}`, In: 400, Out: 10},
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
		name := func(m map[string]any) string {
			if fn, ok := m["function"].(map[string]any); ok {
				return fn["name"].(string)
			}
			return m["name"].(string)
		}
		if got := fakeopenai.JoinNames(first.Body["tools"].([]any), name); got != "complete_step_kitsoki,emit_intent_kitsoki,get_world_kitsoki" {
			t.Errorf("tools %s (submit is not offered: the answer is the constrained final message)", got)
		}
		second := e.fake.Request(1)
		if v.api == APIChat {
			msgs := second.List("messages")
			asst, tool := msgs[len(msgs)-2], msgs[len(msgs)-1]
			calls := asst["tool_calls"].([]any)
			if asst["role"] != "assistant" || calls[0].(map[string]any)["id"] != "call_a" {
				t.Errorf("assistant message %v", asst)
			}
			if tool["role"] != "tool" || tool["tool_call_id"] != "call_a" || !strings.Contains(tool["content"].(string), `"pr":7`) {
				t.Errorf("tool message %v", tool)
			}
		} else {
			items := second.List("input")
			var kinds []string
			for _, it := range items {
				kinds = append(kinds, fmtType(it))
			}
			if got := strings.Join(kinds, ","); got != "user,reasoning,function_call,function_call_output" {
				t.Errorf("input items %s", got)
			}
			fc, out := items[2], items[3]
			if fc["call_id"] != "call_a" || fc["id"] != nil || out["call_id"] != "call_a" || !strings.Contains(out["output"].(string), `"pr":7`) {
				t.Errorf("function call %v, output %v", fc, out)
			}
			if items[1]["encrypted_content"] != "gAAAA-opaque" {
				t.Errorf("the reasoning item goes back whole: %v", items[1])
			}
		}
		if len(resp.SubEvents) != 1 || resp.SubEvents[0].Kind != "agent.claude.mcp.get_world_kitsoki" {
			t.Errorf("sub-events %+v", resp.SubEvents)
		}
	})
}

func fmtType(m map[string]any) string {
	if t, ok := m["type"].(string); ok {
		return t
	}
	return m["role"].(string)
}

func TestSchemaInvalidAnswerIsRetried(t *testing.T) {
	each(t, func(t *testing.T, v variant) {
		e := setup(t, v, agent.Declaration{}, fakeopenai.Reply{Text: `{"verdict":"perhaps"}`}, fakeopenai.Reply{Text: "```json\n{\"verdict\": \"no\"}\n```"})
		resp, err := e.agent.Ask(context.Background(), decideCall("agent.gpt"))
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Submission) != `{"verdict":"no"}` || resp.Meta["repairs"] != 1 {
			t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
		}
		key := "messages"
		if v.api == APIResponses {
			key = "input"
		}
		items := e.fake.Request(1).List(key)
		last := items[len(items)-1]
		if last["role"] != "user" || !strings.Contains(last["content"].(string), "does not match the required JSON schema: /verdict:") {
			t.Errorf("the violations go back: %v", last)
		}
	})
	t.Run("every try invalid", func(t *testing.T) {
		bad := fakeopenai.Reply{Text: "not json"}
		e := setup(t, variants[0], agent.Declaration{}, bad, bad, bad)
		_, err := e.agent.Ask(context.Background(), decideCall("agent.gpt"))
		ae, ok := agent.AsAskError(err)
		if !ok || ae.Kind != agent.KindSchemaInvalid || ae.Detail != "host.agent.decide: the model's answer did not match the schema after 3 tries: the answer is not JSON (not json)" {
			t.Fatalf("error %v", err)
		}
	})
}

func TestRateLimitThenSuccess(t *testing.T) {
	each(t, func(t *testing.T, v variant) {
		e := setup(t, v, agent.Declaration{},
			fakeopenai.Reply{Status: 429, Header: http.Header{"Retry-After-Ms": {"1500"}},
				Body: `{"error":{"message":"Rate limit reached for gpt-4.1-mini","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
			fakeopenai.Reply{Text: `{"verdict":"yes"}`},
		)
		resp, err := e.agent.Ask(context.Background(), decideCall("agent.gpt"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta["http_retries"] != 1 || e.clock.Now().Sub(start) != 1500*time.Millisecond {
			t.Errorf("meta %v, waited %s", resp.Meta, e.clock.Now().Sub(start))
		}
	})
}

func TestServerErrorExhausted(t *testing.T) {
	each(t, func(t *testing.T, v variant) {
		fail := fakeopenai.Reply{Status: 500, Body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`}
		e := setup(t, v, agent.Declaration{}, fail, fail, fail)
		_, err := e.agent.Ask(context.Background(), decideCall("agent.gpt"))
		want := "agent: transport_error: openai API: http 500 server_error: The server had an error while processing your request. (after 3 attempts): the provider failed; run again later (retries: under agent_plugins.agent.gpt sets how often kitsoki retries)"
		if err == nil || err.Error() != want {
			t.Fatalf("error:\n%v\nwant:\n%s", err, want)
		}
		if e.fake.Count() != 3 || e.clock.Now().Sub(start) != 3*time.Second {
			t.Errorf("%d requests, backoff waited %s on the clock; want 3 and 1s+2s", e.fake.Count(), e.clock.Now().Sub(start))
		}
	})
}

func TestCostCap(t *testing.T) {
	each(t, func(t *testing.T, v variant) {
		// 100k input tokens of gpt-4.1-mini: $0.04, over the $0.01 cap.
		e := setup(t, v, agent.Declaration{}, fakeopenai.Reply{Calls: []fakeopenai.Call{{ID: "call_a", Name: "get_world_kitsoki", Args: `{}`}}, In: 100_000, Out: 10})
		c := decideCall("agent.gpt")
		c.Request.Verb = plugin.VerbTask
		c.Budgets = []*agent.Budget{agent.NewBudget("--max-cost", "raise --max-cost", 0.01, 0)}
		_, err := e.agent.Ask(context.Background(), c)
		var cap *agent.CostCapError
		if !errors.As(err, &cap) || e.fake.Count() != 1 {
			t.Fatalf("error %v after %d requests, want the cost cap after one", err, e.fake.Count())
		}
	})
}

func TestConverse(t *testing.T) {
	each(t, func(t *testing.T, v variant) {
		e := setup(t, v, agent.Declaration{}, fakeopenai.Reply{Text: "Hello, Ann."}, fakeopenai.Reply{Text: "You are Ann."})
		c := decideCall("agent.gpt")
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
		if string(second.Submission) != `"You are Ann."` || second.Meta["session_resumed"] != true || first.Meta["session_id"] != second.Meta["session_id"] {
			t.Errorf("second %s %v", second.Submission, second.Meta)
		}
		key := "messages"
		if v.api == APIResponses {
			key = "input"
		}
		var texts []string
		for _, m := range e.fake.Request(1).List(key) {
			if s, ok := m["content"].(string); ok {
				texts = append(texts, s)
			}
		}
		if got := strings.Join(texts, "|"); !strings.Contains(got, "I am Ann.") || !strings.HasSuffix(got, "Who am I?") {
			t.Errorf("the thread goes back: %s", got)
		}
	})
}

func TestStrictOnlyWhereTheSchemaAllows(t *testing.T) {
	loose := `{"type":"object","properties":{"verdict":{"type":"string"},"note":{"type":"string"}},"required":["verdict"]}`
	e := setup(t, variants[0], agent.Declaration{}, fakeopenai.Reply{Text: `{"verdict":"yes"}`})
	c := decideCall("agent.gpt")
	c.Request.Schema = json.RawMessage(loose)
	if _, err := e.agent.Ask(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	rf := e.fake.Request(0).Body["response_format"].(map[string]any)["json_schema"].(map[string]any)
	if rf["strict"] != false {
		t.Errorf("a schema strict mode refuses is sent with strict false: %v", rf)
	}
	// A schema whose root is not an object is wrapped and unwrapped.
	e = setup(t, variants[0], agent.Declaration{}, fakeopenai.Reply{Text: `{"value":["a","b"]}`})
	c.Request.Schema = json.RawMessage(`{"type":"array","items":{"type":"string"}}`)
	resp, err := e.agent.Ask(context.Background(), c)
	if err != nil || string(resp.Submission) != `["a","b"]` {
		t.Fatalf("%s %v", resp.Submission, err)
	}
}

func TestAnyCompatibleEndpoint(t *testing.T) {
	// A local server needs no key: none is sent.
	f := fakeopenai.New(t, fakeopenai.Reply{Text: "hi", Model: "qwen2.5"})
	a, err := New(agent.Declaration{Alias: "agent.local", BaseURL: f.Base(), Model: "qwen2.5"}, Config{LookupEnv: func(string) (string, bool) { return "", false }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := decideCall("agent.local")
	c.Request.Verb, c.Request.Schema, c.Model = plugin.VerbAsk, nil, "qwen2.5"
	resp, err := a.Ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	req := f.Request(0)
	if req.Header.Get("Authorization") != "" || req.Body["model"] != "qwen2.5" || resp.Meta["cost_usd"] != nil {
		t.Errorf("header %v, body %v, meta %v", req.Header, req.Body, resp.Meta)
	}
}

func TestMaxTokensParameter(t *testing.T) {
	e := setup(t, variants[0], agent.Declaration{MaxTokens: 300}, fakeopenai.Reply{Text: `{"verdict":"yes"}`})
	e.agent.Ask(context.Background(), decideCall("agent.gpt"))
	if b := e.fake.Request(0).Body; b["max_tokens"] != float64(300) || b["max_completion_tokens"] != nil {
		t.Errorf("a compatible server gets max_tokens: %v", b)
	}
	e.agent.official = true // as for api.openai.com
	e.fake.Add(fakeopenai.Reply{Text: `{"verdict":"yes"}`})
	e.agent.Ask(context.Background(), decideCall("agent.gpt"))
	if b := e.fake.Request(1).Body; b["max_completion_tokens"] != float64(300) || b["max_tokens"] != nil {
		t.Errorf("the OpenAI API gets max_completion_tokens: %v", b)
	}
	e = setup(t, variants[0], agent.Declaration{MaxTokens: 300}, fakeopenai.Reply{Text: `{"verdict":`, Finish: "length"})
	if _, err := e.agent.Ask(context.Background(), decideCall("agent.gpt")); err == nil ||
		err.Error() != "agent: transport_error: openai API: the answer was cut off at max_tokens 300: raise max_tokens: under agent_plugins.agent.gpt" {
		t.Errorf("truncated: %v", err)
	}
}

func TestBadInputIsOneClearLine(t *testing.T) {
	t.Run("missing key", func(t *testing.T) {
		e := setup(t, variants[0], agent.Declaration{APIKeyEnv: "MY_OPENAI_KEY"})
		_, err := e.agent.Ask(context.Background(), decideCall("agent.gpt"))
		want := "agent: transport_error: openai API key missing: MY_OPENAI_KEY is not set; export MY_OPENAI_KEY=<your key>, or name the variable that holds it with api_key_env: under agent_plugins.agent.gpt"
		if err == nil || err.Error() != want {
			t.Errorf("error:\n%v\nwant:\n%s", err, want)
		}
	})
	t.Run("unknown model", func(t *testing.T) {
		e := setup(t, variants[2], agent.Declaration{}, fakeopenai.Reply{Status: 404,
			Body: `{"error":{"message":"The model ` + "`gpt-nope`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`})
		c := decideCall("agent.gpt")
		c.Model = "gpt-nope"
		_, err := e.agent.Ask(context.Background(), c)
		want := "agent: transport_error: openai API has no model \"gpt-nope\" (openai API: http 404 model_not_found: The model `gpt-nope` does not exist or you do not have access to it.): set model: under agent_plugins.agent.gpt to one it serves (e.g. gpt-4.1-mini)"
		if err == nil || err.Error() != want {
			t.Errorf("error:\n%v\nwant:\n%s", err, want)
		}
	})
	t.Run("unreachable base URL", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String() + "/v1"
		ln.Close()
		e := setup(t, variants[0], agent.Declaration{BaseURL: url})
		_, err = e.agent.Ask(context.Background(), decideCall("agent.gpt"))
		if err == nil || !strings.HasPrefix(err.Error(), "agent: transport_error: openai API at "+url+"/chat/completions is unreachable after 3 attempts (") ||
			!strings.HasSuffix(err.Error(), "): check base_url: under agent_plugins.agent.gpt (and that the server is up)") || strings.Contains(err.Error(), key) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("bad api", func(t *testing.T) {
		_, err := New(agent.Declaration{API: "completions"}, Config{}, nil)
		if err == nil || err.Error() != `builtin.openai api: "completions": want chat (Chat Completions) or responses (the Responses API)` {
			t.Errorf("error %v", err)
		}
	})
}

// An extract is answered as a decide is: the schema as the response
// format, strict, and no tools.
func TestExtract(t *testing.T) {
	each(t, func(t *testing.T, v variant) {
		e := setup(t, v, agent.Declaration{}, fakeopenai.Reply{Text: `{"verdict":"no"}`, In: 300, Out: 8})
		c := decideCall("agent.gpt")
		c.Request.Verb = plugin.VerbExtract
		resp, err := e.agent.Ask(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Submission) != `{"verdict":"no"}` || resp.Meta["strict"] != true {
			t.Errorf("submission %s, meta %v", resp.Submission, resp.Meta)
		}
		req := e.fake.Request(0)
		format := req.Body["response_format"]
		if v.api == APIResponses {
			format = req.Body["text"]
		}
		if format == nil || req.Body["tools"] != nil || e.fake.Count() != 1 {
			t.Errorf("format %v, tools %v, %d requests", format, req.Body["tools"], e.fake.Count())
		}
	})
}
