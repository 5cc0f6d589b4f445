package localllm

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/testsupport/fakeopenai"
)

// TestEndpointModeThroughTheOpenAIEndpoint: endpoint mode talks to an
// OpenAI-compatible server through builtin.openai's Endpoint: a 429 is
// retried after the server's retry-after on the run's clock, stream: true
// reads the answer from the chat.completion.chunk stream, and a 5xx
// retried twice fails with the attempts counted.
func TestEndpointModeThroughTheOpenAIEndpoint(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	call := func() *agent.Call {
		return &agent.Call{Request: &agent.AskRequest{Verb: "decide", Prompt: "Approve?", CallID: "c1", Schema: json.RawMessage(inSubsetSchema)}, Model: "qwen"}
	}
	t.Run("429 then a streamed answer", func(t *testing.T) {
		f := fakeopenai.New(t,
			fakeopenai.Reply{Status: 429, Header: http.Header{"Retry-After": {"2"}}, Body: `{"error":{"code":429,"message":"busy","type":"unavailable_error"}}`},
			fakeopenai.Reply{Text: `{"verdict":"approve"}`, In: 30, Out: 6, Model: "qwen"},
		)
		clk := clock.NewFake(start)
		on := true
		a := newEndpointAgent(t, agent.Declaration{Endpoint: f.URL(), Model: "qwen", JSONSchema: true, Stream: &on}, Config{Options: Options{Clock: clk}})
		resp, err := a.Ask(context.Background(), call())
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Submission) != `{"verdict":"approve"}` || resp.Meta["http_retries"] != 1 || clk.Now().Sub(start) != 2*time.Second {
			t.Errorf("submission %s, meta %v, waited %s (want the 2s retry-after)", resp.Submission, resp.Meta, clk.Now().Sub(start))
		}
		if req := f.Request(1); req.Path != "/v1/chat/completions" || req.Body["stream"] != true {
			t.Errorf("request %s %v", req.Path, req.Body)
		}
		if u, _ := resp.Meta["usage"].(map[string]any); u["input_tokens"] != int64(30) || u["output_tokens"] != int64(6) {
			t.Errorf("the stream's usage chunk is not read: %v", resp.Meta)
		}
	})
	t.Run("5xx exhausted", func(t *testing.T) {
		fail := fakeopenai.Reply{Status: 503, Body: `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`}
		f := fakeopenai.New(t, fail, fail, fail)
		a := newEndpointAgent(t, agent.Declaration{Endpoint: f.URL(), Model: "qwen"}, Config{})
		_, err := a.Ask(context.Background(), call())
		want := `agent: transport_error: local_llm agent: http 503: {"error":{"code":503,"message":"Loading model","type":"unavailable_error"}} (after 3 attempts)`
		if err == nil || err.Error() != want || f.Count() != 3 {
			t.Errorf("error after %d requests:\n%v\nwant:\n%s", f.Count(), err, want)
		}
	})
}
