// Package fakeopenai is an OpenAI API on 127.0.0.1 for tests: POST
// /v1/chat/completions and POST /v1/responses answered with scripted
// replies, whole or streamed as OpenAI documents them, every request
// kept. The openai transport's tests and the agent CLIs' (codex, copilot)
// point at it.
package fakeopenai

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

// Server is an OpenAI API on 127.0.0.1: POST /v1/chat/completions and
// POST /v1/responses, each answered with the next scripted Reply, whole
// or streamed as OpenAI documents it (chat.completion.chunk lines ending
// in [DONE]; the Responses API's semantic events), as the request asks.
type Server struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	replies  []Reply
	requests []Recorded
	respond  func(body map[string]any) Reply // NewFunc's
}

// NewFunc starts a server answering every request with respond's reply
// to its body (for calls made in parallel, whose order is not known).
func NewFunc(t *testing.T, respond func(body map[string]any) Reply) *Server {
	f := New(t)
	f.respond = respond
	return f
}

// Add scripts more replies.
func (f *Server) Add(replies ...Reply) {
	f.mu.Lock()
	f.replies = append(f.replies, replies...)
	f.mu.Unlock()
}

// Close stops the server early (a test of an unreachable endpoint).
func (f *Server) Close() { f.srv.Close() }

// URL is the server's root.
func (f *Server) URL() string { return f.srv.URL }

// Recorded is one request the server got.
type Recorded struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

// Reply is one scripted answer: the model's text and/or function calls
// (the same script serves both APIs), or an HTTP error.
type Reply struct {
	// Text and Calls are the model's answer: its text and the function
	// calls it makes (the same script serves both APIs).
	Text  string
	Calls []Call
	// Finish is the chat finish reason: stop (default), length, ...
	Finish  string
	In, Out int // usage
	Cached  int
	// Incomplete ends a response at max_output_tokens.
	Incomplete bool
	// Status, Body and Header make the reply an HTTP error.
	Status int
	Body   string
	Header http.Header
	// Model is the model the answer names (default: a priced one).
	Model string
}

func (rep Reply) modelOr(def string) string {
	if rep.Model != "" {
		return rep.Model
	}
	return def
}

// Call is a function call of a reply: its call id, the function and
// its JSON arguments.
// Namespace, when set, is the tool namespace the function belongs to (a
// Responses function call names its namespace apart).
type Call struct{ ID, Name, Args, Namespace string }

// New starts a server answering replies in order; it is closed when
// the test ends.
func New(t *testing.T, replies ...Reply) *Server {
	t.Helper()
	f := &Server{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// Base is the API root, http://127.0.0.1:<port>/v1.
func (f *Server) Base() string { return f.srv.URL + "/v1" }

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		f.t.Errorf("request body is not JSON: %v", err)
	}
	f.mu.Lock()
	f.requests = append(f.requests, Recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	if f.respond != nil {
		f.replies = append(f.replies, f.respond(body))
	}
	if len(f.replies) == 0 {
		f.mu.Unlock()
		f.t.Errorf("unscripted request %d", len(f.requests))
		w.WriteHeader(500)
		return
	}
	rep := f.replies[0]
	f.replies = f.replies[1:]
	f.mu.Unlock()
	for k, v := range rep.Header {
		w.Header()[k] = v
	}
	stream := body["stream"] == true
	switch {
	case rep.Status != 0:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		io.WriteString(w, rep.Body)
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

func (rep Reply) finishReason() string {
	switch {
	case rep.Finish != "":
		return rep.Finish
	case len(rep.Calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func (rep Reply) chatUsage() map[string]any {
	return map[string]any{"prompt_tokens": rep.In, "completion_tokens": rep.Out, "total_tokens": rep.In + rep.Out,
		"prompt_tokens_details": map[string]any{"cached_tokens": rep.Cached}}
}

func chatCompletion(rep Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if rep.Text != "" || len(rep.Calls) == 0 {
		msg["content"] = rep.Text
	}
	if len(rep.Calls) > 0 {
		var tcs []any
		for _, c := range rep.Calls {
			tcs = append(tcs, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"] = tcs
	}
	return map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": rep.modelOr("gpt-4.1-mini-2025-04-14"),
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": rep.finishReason()}},
		"usage":   rep.chatUsage()}
}

// chatStream sends a completion as chunks: the role, the content in two
// deltas, each tool call's id and name, then its arguments in pieces, the
// finish reason, the usage chunk (stream_options.include_usage) and
// [DONE].
func chatStream(w http.ResponseWriter, rep Reply) {
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
	if rep.Text != "" {
		half := len(rep.Text) / 2
		chunk(delta(map[string]any{"content": rep.Text[:half]}), nil)
		chunk(delta(map[string]any{"content": rep.Text[half:]}), nil)
	}
	for i, c := range rep.Calls {
		chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}), nil)
		for s := 0; s < len(c.Args); s += 5 {
			chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": c.Args[s:min(s+5, len(c.Args))]}}}}), nil)
		}
	}
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": rep.finishReason()}}, nil)
	chunk([]any{}, rep.chatUsage())
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (rep Reply) outputItems() []any {
	var out []any
	out = append(out, map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{}, "encrypted_content": "gAAAA-opaque"})
	if rep.Text != "" {
		out = append(out, map[string]any{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}}})
	}
	for _, c := range rep.Calls {
		fc := map[string]any{"type": "function_call", "id": "fc_" + c.ID, "call_id": c.ID, "name": c.Name, "arguments": c.Args, "status": "completed"}
		if c.Namespace != "" {
			fc["namespace"] = c.Namespace
		}
		out = append(out, fc)
	}
	return out
}

func response(rep Reply) map[string]any {
	r := map[string]any{"id": "resp_1", "object": "response", "created_at": 1767225600, "status": "completed", "model": rep.modelOr("gpt-5-mini-2025-08-07"),
		"output": rep.outputItems(), "error": nil, "incomplete_details": nil,
		"usage": map[string]any{"input_tokens": rep.In, "input_tokens_details": map[string]any{"cached_tokens": rep.Cached},
			"output_tokens": rep.Out, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": rep.In + rep.Out}}
	if rep.Incomplete {
		r["status"] = "incomplete"
		r["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	}
	return r
}

// responsesStream sends a response as response.created, each output
// item's added/deltas/done events, and the closing response.completed
// (or response.incomplete) with the whole response.
func responsesStream(w http.ResponseWriter, rep Reply) {
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
			text := rep.Text
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
	if rep.Incomplete {
		closing = "response.incomplete"
	}
	send(closing, map[string]any{"response": full})
}

// Request is the nth request (0-based).
func (f *Server) Request(n int) Recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n >= len(f.requests) {
		f.t.Fatalf("request %d was not made (%d were)", n, len(f.requests))
	}
	return f.requests[n]
}

// Count is how many requests came.
func (f *Server) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// messages are a chat request's messages; items a responses request's
// input.
// List is a request's messages or input items.
func (r Recorded) List(key string) []map[string]any {
	var out []map[string]any
	for _, m := range r.Body[key].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

// JoinNames joins the names of a request's tools.
func JoinNames(tools []any, name func(map[string]any) string) string {
	var names []string
	for _, t := range tools {
		names = append(names, name(t.(map[string]any)))
	}
	return strings.Join(names, ",")
}
