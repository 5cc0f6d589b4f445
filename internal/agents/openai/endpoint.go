package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/httpllm"
)

// Endpoint is one OpenAI-compatible server: the API root its paths
// (chat/completions, responses) hang off, the client that sends to it and
// the header every request carries. builtin.openai talks to its
// endpoint through it, and builtin.local_llm to its llama-server (its own
// or one someone else runs): one HTTP implementation for both.
type Endpoint struct {
	Client *httpllm.Client
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or
	// http://127.0.0.1:8080/v1.
	BaseURL string
	Header  http.Header
	// Stream asks for the answer as an event stream.
	Stream bool
}

// AuthHeader is the header of a bearer key ("" sends none).
func AuthHeader(key string) http.Header {
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return h
}

// ErrorDetail reads an OpenAI error body: {"error":{"message","type",
// "code"}}; the code when there is one, else the type. llama-server's
// {"error":{"code":400,"message"}} reads the same way.
func ErrorDetail(body []byte) (string, string) {
	var e struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", ""
	}
	code := strings.Trim(string(e.Error.Code), `"`)
	if code == "" || code == "null" {
		code = e.Error.Type
	}
	return code, e.Error.Message
}

// url joins the root and a path.
func (e *Endpoint) url(path string) string { return strings.TrimRight(e.BaseURL, "/") + "/" + path }

// post sends body to path and reads the answer with read.
func (e *Endpoint) post(ctx context.Context, path string, body any, stream bool, read func(*http.Response) error, st *httpllm.Stats) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode the request: %w", err)
	}
	h := http.Header{}
	for k, v := range e.Header {
		h[k] = v
	}
	if stream {
		h.Set("Accept", "text/event-stream")
	}
	return e.Client.Call(ctx, httpllm.Request{URL: e.url(path), Header: h, Body: b}, read, st)
}

// isEventStream reports whether a response is an event stream (a server
// may answer a stream request whole).
func isEventStream(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}

func clip(b []byte) string {
	const n = 256
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
