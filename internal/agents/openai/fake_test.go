package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeAPI is an OpenAI API on 127.0.0.1: POST /v1/chat/completions and
// POST /v1/responses, each answered with the next scripted reply, whole
// or streamed as OpenAI documents it (chat.completion.chunk lines ending
// in [DONE]; the Responses API's semantic events), as the request asks.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	requests []recorded
}

type recorded struct {
	path   string
	header http.Header
	body   map[string]any
}

// reply is one scripted answer: the model's text and/or function calls
// (the same script serves both APIs), or an HTTP error.
type reply struct {
	text      string
	calls     []fcall
	finish    string // chat: stop (default), length, tool_calls...
	in, out   int
	cached    int
	incomplet bool // responses: incomplete at max_output_tokens
	status    int
	body      string
	header    http.Header
	model     string // the model the answer names (default: a priced one)
}

func (rep reply) modelOr(def string) string {
	if rep.model != "" {
		return rep.model
	}
	return def
}

type fcall struct{ id, name, args string }

func newFake(t *testing.T, replies ...reply) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) base() string { return f.srv.URL + "/v1" }

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		f.t.Errorf("request body is not JSON: %v", err)
	}
	f.mu.Lock()
	f.requests = append(f.requests, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
	if len(f.replies) == 0 {
		f.mu.Unlock()
		f.t.Errorf("unscripted request %d", len(f.requests))
		w.WriteHeader(500)
		return
	}
	rep := f.replies[0]
	f.replies = f.replies[1:]
	f.mu.Unlock()
	for k, v := range rep.header {
		w.Header()[k] = v
	}
	stream := body["stream"] == true
	switch {
	case rep.status != 0:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		io.WriteString(w, rep.body)
	case r.URL.Path == "/v1/chat/completions" && stream:
		chatStream(w, rep)
	case r.URL.Path == "/v1/chat/completions":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(chatCompletion(rep))
	case r.URL.Path == "/v1/responses" && stream:
		responsesStream(w, rep)
	case r.URL.Path == "/v1/responses":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(response(rep))
	default:
		w.WriteHeader(404)
		io.WriteString(w, `{"error":{"message":"Invalid URL (POST `+r.URL.Path+`)","type":"invalid_request_error","param":null,"code":null}}`)
	}
}

func (rep reply) finishReason() string {
	switch {
	case rep.finish != "":
		return rep.finish
	case len(rep.calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func (rep reply) chatUsage() map[string]any {
	return map[string]any{"prompt_tokens": rep.in, "completion_tokens": rep.out, "total_tokens": rep.in + rep.out,
		"prompt_tokens_details": map[string]any{"cached_tokens": rep.cached}}
}

func chatCompletion(rep reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if rep.text != "" || len(rep.calls) == 0 {
		msg["content"] = rep.text
	}
	if len(rep.calls) > 0 {
		var tcs []any
		for _, c := range rep.calls {
			tcs = append(tcs, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}})
		}
		msg["tool_calls"] = tcs
	}
	return map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": rep.modelOr("gpt-4.1-mini-2025-04-14"),
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": rep.finishReason()}},
		"usage": rep.chatUsage()}
}

// chatStream sends a completion as chunks: the role, the content in two
// deltas, each tool call's id and name, then its arguments in pieces, the
// finish reason, the usage chunk (stream_options.include_usage) and
// [DONE].
func chatStream(w http.ResponseWriter, rep reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(choices []any, usage any) {
		c := map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1767225600, "model": rep.modelOr("gpt-4.1-mini-2025-04-14"), "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	delta := func(d map[string]any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "logprobs": nil, "finish_reason": nil}}
	}
	chunk(delta(map[string]any{"role": "assistant", "content": ""}), nil)
	if rep.text != "" {
		half := len(rep.text) / 2
		chunk(delta(map[string]any{"content": rep.text[:half]}), nil)
		chunk(delta(map[string]any{"content": rep.text[half:]}), nil)
	}
	for i, c := range rep.calls {
		chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": ""}}}}), nil)
		for s := 0; s < len(c.args); s += 5 {
			chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": c.args[s:min(s+5, len(c.args))]}}}}), nil)
		}
	}
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": rep.finishReason()}}, nil)
	chunk([]any{}, rep.chatUsage())
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (rep reply) outputItems() []any {
	var out []any
	out = append(out, map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{}, "encrypted_content": "gAAAA-opaque"})
	if rep.text != "" {
		out = append(out, map[string]any{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rep.text, "annotations": []any{}}}})
	}
	for _, c := range rep.calls {
		out = append(out, map[string]any{"type": "function_call", "id": "fc_" + c.id, "call_id": c.id, "name": c.name, "arguments": c.args, "status": "completed"})
	}
	return out
}

func response(rep reply) map[string]any {
	r := map[string]any{"id": "resp_1", "object": "response", "created_at": 1767225600, "status": "completed", "model": rep.modelOr("gpt-5-mini-2025-08-07"),
		"output": rep.outputItems(), "error": nil, "incomplete_details": nil,
		"usage": map[string]any{"input_tokens": rep.in, "input_tokens_details": map[string]any{"cached_tokens": rep.cached},
			"output_tokens": rep.out, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": rep.in + rep.out}}
	if rep.incomplet {
		r["status"] = "incomplete"
		r["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	}
	return r
}

// responsesStream sends a response as response.created, each output
// item's added/deltas/done events, and the closing response.completed
// (or response.incomplete) with the whole response.
func responsesStream(w http.ResponseWriter, rep reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	send := func(typ string, ev map[string]any) {
		ev["type"], ev["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	full := response(rep)
	send("response.created", map[string]any{"response": map[string]any{"id": "resp_1", "object": "response", "status": "in_progress", "output": []any{}}})
	for i, item := range full["output"].([]any) {
		it := item.(map[string]any)
		send("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": it["type"], "id": it["id"]}})
		switch it["type"] {
		case "message":
			text := rep.text
			for _, part := range []string{text[:len(text)/2], text[len(text)/2:]} {
				send("response.output_text.delta", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "delta": part})
			}
			send("response.output_text.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "text": text})
		case "function_call":
			send("response.function_call_arguments.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": it["arguments"]})
			send("response.function_call_arguments.done", map[string]any{"item_id": it["id"], "output_index": i, "arguments": it["arguments"]})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	closing := "response.completed"
	if rep.incomplet {
		closing = "response.incomplete"
	}
	send(closing, map[string]any{"response": full})
}

func (f *fakeAPI) request(n int) recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n >= len(f.requests) {
		f.t.Fatalf("request %d was not made (%d were)", n, len(f.requests))
	}
	return f.requests[n]
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// messages are a chat request's messages; items a responses request's
// input.
func (r recorded) list(key string) []map[string]any {
	var out []map[string]any
	for _, m := range r.body[key].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

func joinNames(tools []any, name func(map[string]any) string) string {
	var names []string
	for _, t := range tools {
		names = append(names, name(t.(map[string]any)))
	}
	return strings.Join(names, ",")
}
