package openai

import (
	"context"
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeopenai"
	"github.com/kitsoki/kitsoki/plugin"
)

// TestEffortOnTheWire: the call's effort (a declaration's, a route's or a
// live :effort switch's) is reasoning_effort on Chat Completions and
// reasoning.effort on the Responses API, and is in the meta; a call with
// none sends neither.
func TestEffortOnTheWire(t *testing.T) {
	each(t, func(t *testing.T, v variant) {
		e := setup(t, v, agent.Declaration{}, fakeopenai.Reply{Text: `{"verdict":"yes"}`}, fakeopenai.Reply{Text: `{"verdict":"yes"}`})
		c := decideCall("agent.gpt")
		c.Effort = "low"
		resp, err := e.agent.Ask(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		body := e.fake.Request(0).Body
		var got any
		if v.api == APIChat {
			got = body["reasoning_effort"]
		} else if r, ok := body["reasoning"].(map[string]any); ok {
			got = r["effort"]
		}
		if got != "low" || resp.Meta["effort"] != "low" {
			t.Errorf("effort on the wire %v, in the meta %v; want low", got, resp.Meta["effort"])
		}
		if _, err := e.agent.Ask(context.Background(), decideCall("agent.gpt")); err != nil {
			t.Fatal(err)
		}
		if b := e.fake.Request(1).Body; b["reasoning_effort"] != nil || b["reasoning"] != nil {
			t.Errorf("a call without effort sends %v / %v", b["reasoning_effort"], b["reasoning"])
		}
	})
}

// TestCutOffAndIncomplete: a Responses answer that stops incomplete at
// max_output_tokens is the same one line as a chat answer cut at length.
func TestCutOffAndIncomplete(t *testing.T) {
	for _, v := range variants[2:] {
		t.Run(v.name(), func(t *testing.T) {
			e := setup(t, v, agent.Declaration{MaxTokens: 300}, fakeopenai.Reply{Text: `{"verdict":`, Incomplete: true})
			c := decideCall("agent.gpt")
			c.Request.Verb, c.Request.Schema = plugin.VerbAsk, nil
			_, err := e.agent.Ask(context.Background(), c)
			want := "agent: transport_error: openai API: the answer was cut off at max_tokens 300: raise max_tokens: under agent_plugins.agent.gpt"
			if err == nil || err.Error() != want {
				t.Errorf("error:\n%v\nwant:\n%s", err, want)
			}
			if b := e.fake.Request(0).Body; b["max_output_tokens"] != float64(300) {
				t.Errorf("max_output_tokens %v", b["max_output_tokens"])
			}
		})
	}
}
