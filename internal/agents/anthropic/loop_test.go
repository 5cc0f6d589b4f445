package anthropic

import (
	"context"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeanthropic"
	"github.com/kitsoki/kitsoki/plugin"
)

// withCache sets a message's cache counts, as the API reports them
// (message_start's usage when streamed).
func withCache(msg map[string]any, write, read int) map[string]any {
	u := msg["usage"].(map[string]any)
	u["cache_creation_input_tokens"], u["cache_read_input_tokens"] = write, read
	return msg
}

// TestPromptCachingOnATask: on a task with several tools the system block
// and the last tool carry the cache marker (the prefix Anthropic caches),
// no other tool does, the declaration's headers go with every request,
// and the cache writes and reads the streamed answers report are in the
// usage and priced at 1.25x and 0.1x the input price.
func TestPromptCachingOnATask(t *testing.T) {
	e := setup(t, agent.Declaration{Headers: map[string]string{"anthropic-beta": "token-efficient-tools-2025-02-19"}},
		fakeanthropic.Reply{Msg: withCache(fakeanthropic.Message("tool_use", 100, 20, fakeanthropic.ToolUse("toolu_a", "get_world_kitsoki", map[string]any{})), 2000, 0)},
		fakeanthropic.Reply{Msg: withCache(fakeanthropic.Message("tool_use", 150, 10, fakeanthropic.ToolUse("toolu_b", "submit_kitsoki", map[string]any{"verdict": "yes"})), 0, 2000)},
	)
	c := decideCall("agent.api")
	c.Request.Verb = plugin.VerbTask
	resp, err := e.agent.Ask(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	for n := range 2 {
		req := e.fake.Request(n)
		tools := req["tools"].([]any)
		for i, tl := range tools {
			_, marked := tl.(map[string]any)["cache_control"]
			if marked != (i == len(tools)-1) {
				t.Errorf("request %d tool %d (%v): cache_control %v, want it on the last tool only", n, i, tl.(map[string]any)["name"], marked)
			}
		}
		if sys := req["system"].([]any)[0].(map[string]any); sys["cache_control"] == nil {
			t.Errorf("request %d: the system block is not marked for the cache", n)
		}
		if got := e.fake.Header(n).Get("anthropic-beta"); got != "token-efficient-tools-2025-02-19" {
			t.Errorf("request %d: anthropic-beta %q, want the declaration's header", n, got)
		}
	}
	u := resp.Meta["usage"].(map[string]any)
	if u["cache_creation_input_tokens"] != int64(2000) || u["cache_read_input_tokens"] != int64(2000) || u["input_tokens"] != int64(250) {
		t.Errorf("usage %v", u)
	}
	// claude-sonnet-4-5: 250 input at $3/MTok, 30 output at $15/MTok,
	// 2000 cache writes at $3.75/MTok and 2000 cache reads at $0.30/MTok.
	want := (250*3 + 30*15 + 2000*3.75 + 2000*0.3) / 1e6
	if got := resp.Meta["cost_usd"].(float64); got-want > 1e-12 || want-got > 1e-12 {
		t.Errorf("cost %v, want %v", got, want)
	}
}

// TestTurnsThatEndBadly: a structured task whose turn ends without a
// submission is asked for one (submit forced); an answer cut at
// max_tokens, a loop past max_turns and a stream cut before message_stop
// each end as the docs say.
func TestTurnsThatEndBadly(t *testing.T) {
	t.Run("no submission: submit is forced", func(t *testing.T) {
		e := setup(t, agent.Declaration{},
			fakeanthropic.Reply{Msg: fakeanthropic.Message("end_turn", 10, 5, fakeanthropic.Text("I think it is safe."))},
			fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 10, 5, fakeanthropic.ToolUse("toolu_1", "submit_kitsoki", map[string]any{"verdict": "yes"}))},
		)
		c := decideCall("agent.api")
		c.Request.Verb = plugin.VerbTask
		resp, err := e.agent.Ask(context.Background(), c)
		if err != nil || string(resp.Submission) != `{"verdict":"yes"}` {
			t.Fatalf("%v %v", resp, err)
		}
		if e.fake.Request(0)["tool_choice"] != nil || e.fake.Request(1)["tool_choice"] == nil {
			t.Errorf("tool_choice %v then %v: the second request must force submit", e.fake.Request(0)["tool_choice"], e.fake.Request(1)["tool_choice"])
		}
		msgs := e.fake.Request(1)["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
		if last["type"] != "text" || !strings.Contains(last["text"].(string), "submit_kitsoki") {
			t.Errorf("the nudge %v", last)
		}
	})
	t.Run("cut off at max_tokens", func(t *testing.T) {
		e := setup(t, agent.Declaration{MaxTokens: 300},
			fakeanthropic.Reply{Msg: fakeanthropic.Message("max_tokens", 10, 300, fakeanthropic.Text("It is"))})
		c := decideCall("agent.api")
		c.Request.Verb, c.Request.Schema = plugin.VerbAsk, nil
		_, err := e.agent.Ask(context.Background(), c)
		want := "agent: transport_error: anthropic API: the answer was cut off at max_tokens 300: raise max_tokens: under agent_plugins.agent.api"
		if err == nil || err.Error() != want {
			t.Errorf("error:\n%v\nwant:\n%s", err, want)
		}
	})
	t.Run("past max_turns", func(t *testing.T) {
		world := fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 10, 5, fakeanthropic.ToolUse("toolu_a", "get_world_kitsoki", map[string]any{}))}
		e := setup(t, agent.Declaration{MaxTurns: 2}, world, world)
		c := decideCall("agent.api")
		c.Request.Verb = plugin.VerbTask
		_, err := e.agent.Ask(context.Background(), c)
		ae, ok := agent.AsAskError(err)
		if !ok || ae.Kind != agent.KindPluginCrash || !strings.Contains(err.Error(), "anthropic API: the model had not finished after 2 turns: raise max_turns: under agent_plugins.agent.api") {
			t.Errorf("error %v", err)
		}
		if e.fake.Count() != 2 {
			t.Errorf("%d requests, want 2", e.fake.Count())
		}
	})
	t.Run("stream cut before message_stop is retried", func(t *testing.T) {
		e := setup(t, agent.Declaration{},
			fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 10, 5, fakeanthropic.ToolUse("toolu_1", "submit_kitsoki", map[string]any{"verdict": "no"})), Cut: true},
			fakeanthropic.Reply{Msg: fakeanthropic.Message("tool_use", 10, 5, fakeanthropic.ToolUse("toolu_1", "submit_kitsoki", map[string]any{"verdict": "yes"}))},
		)
		resp, err := e.agent.Ask(context.Background(), decideCall("agent.api"))
		if err != nil || string(resp.Submission) != `{"verdict":"yes"}` || e.fake.Count() != 2 || resp.Meta["http_retries"] != 1 {
			t.Fatalf("%v %v after %d requests", resp, err, e.fake.Count())
		}
	})
}
