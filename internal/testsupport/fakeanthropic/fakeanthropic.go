// Package fakeanthropic is an Anthropic Messages API on 127.0.0.1 for
// tests: POST /v1/messages answered with scripted replies, whole or as
// the event stream Anthropic documents (message_start, content blocks
// with text_delta and input_json_delta, ping, message_delta with the
// usage, message_stop), every request kept.
package fakeanthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Server is a Messages API on 127.0.0.1 that answers each request with
// the next scripted Reply, whole or as the event stream Anthropic
// documents, as the request asks, and keeps every request it got.
type Server struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	replies  []Reply
	requests []map[string]any
	headers  []http.Header
	respond  func(map[string]any) Reply
}

// Reply is one scripted answer: a message, an HTTP error, or an event
// stream that reports an error.
type Reply struct {
	// Msg is the message answered (Message builds one).
	Msg map[string]any
	// Status, Body and Header make the reply an HTTP error.
	Status int
	Body   string
	Header http.Header
	// StreamErr is the type of an error event sent after message_start.
	StreamErr string
	// ChunkInput is the input_json_delta chunk size (default 7).
	ChunkInput int
	// Cut ends the event stream after the content blocks, before
	// message_delta and message_stop (a connection dropped mid-answer).
	Cut bool
}

func New(t *testing.T, replies ...Reply) *Server {
	t.Helper()
	f := &Server{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// NewFunc starts a server answering every request with respond's reply
// to its body.
func NewFunc(t *testing.T, respond func(body map[string]any) Reply) *Server {
	f := New(t)
	f.respond = respond
	return f
}

// URL is the API root (the base_url).
func (f *Server) URL() string { return f.srv.URL }

// Header is the nth request's header.
func (f *Server) Header(n int) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[n]
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}`)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		f.t.Errorf("request body is not JSON: %v", err)
	}
	f.mu.Lock()
	f.requests = append(f.requests, body)
	f.headers = append(f.headers, r.Header.Clone())
	if f.respond != nil {
		f.replies = append(f.replies, f.respond(body))
	}
	if len(f.replies) == 0 {
		f.mu.Unlock()
		f.t.Errorf("unscripted request %d", len(f.requests))
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	rep := f.replies[0]
	f.replies = f.replies[1:]
	f.mu.Unlock()
	for k, v := range rep.Header {
		w.Header()[k] = v
	}
	switch {
	case rep.Status != 0:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		io.WriteString(w, rep.Body)
	case body["stream"] == true:
		writeStream(w, rep)
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(rep.Msg)
	}
}

// writeStream sends a message as message_start, a content_block_start,
// deltas and a content_block_stop per block (text in two text_deltas,
// tool input in input_json_delta chunks), a ping, message_delta with the
// stop reason and output usage, and message_stop.
func writeStream(w http.ResponseWriter, rep Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	msg := rep.Msg
	send := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	u, _ := msg["usage"].(map[string]any)
	startUsage := map[string]any{"input_tokens": u["input_tokens"], "output_tokens": 1}
	for _, k := range []string{"cache_creation_input_tokens", "cache_read_input_tokens"} {
		if v, ok := u[k]; ok {
			startUsage[k] = v
		}
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msg["id"], "type": "message", "role": "assistant", "model": msg["model"], "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage}})
	if rep.StreamErr != "" {
		send("error", map[string]any{"type": "error", "error": map[string]any{"type": rep.StreamErr, "message": "Overloaded"}})
		return
	}
	chunk := rep.ChunkInput
	if chunk == 0 {
		chunk = 7
	}
	content, _ := msg["content"].([]any)
	for i, c := range content {
		blk := c.(map[string]any)
		switch blk["type"] {
		case "text":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			if i == 0 {
				send("ping", map[string]any{"type": "ping"})
			}
			text := blk["text"].(string)
			half := len(text) / 2
			for _, part := range []string{text[:half], text[half:]} {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": part}})
			}
		case "tool_use":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
				"type": "tool_use", "id": blk["id"], "name": blk["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(blk["input"])
			for s := 0; s < len(in); s += chunk {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{
					"type": "input_json_delta", "partial_json": string(in[s:min(s+chunk, len(in))])}})
			}
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	if rep.Cut {
		return
	}
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u["output_tokens"]}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// request returns the nth request's body (0-based).
// Request is the nth request body (0-based).
func (f *Server) Request(n int) map[string]any {
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

// Message builds a Messages API answer.
func Message(stop string, in, out int, content ...map[string]any) map[string]any {
	c := make([]any, len(content))
	for i, x := range content {
		c[i] = x
	}
	return map[string]any{"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": c, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
}

// Text is a text block.
func Text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// ToolUse is a tool_use block.
func ToolUse(id, name string, input any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}
