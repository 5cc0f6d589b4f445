package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/httpllm"
)

// The Responses API as OpenAI documents it (POST {base}/responses).

// ResponsesRequest is a Responses API request. Input holds the thread as
// items: user and developer messages, the model's own output items sent
// back, and function_call_output items.
type ResponsesRequest struct {
	Model           string            `json:"model"`
	Instructions    string            `json:"instructions,omitempty"`
	Input           []json.RawMessage `json:"input"`
	Tools           []ResponsesTool   `json:"tools,omitempty"`
	Text            *TextConfig       `json:"text,omitempty"`
	Reasoning       *Reasoning        `json:"reasoning,omitempty"`
	MaxOutputTokens int               `json:"max_output_tokens,omitempty"`
	Stream          bool              `json:"stream,omitempty"`
	// Store is false: kitsoki keeps the thread itself and sends it whole,
	// with the encrypted reasoning (Include) a reasoning model needs.
	Store   bool     `json:"store"`
	Include []string `json:"include,omitempty"`
}

// ResponsesTool is a function tool of the Responses API.
type ResponsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// TextConfig is text: {format: {type: json_schema, name, strict,
// schema}}.
type TextConfig struct {
	Format *TextFormat `json:"format,omitempty"`
}

// TextFormat constrains the output text to a schema.
type TextFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name,omitempty"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Reasoning is reasoning: {effort}.
type Reasoning struct {
	Effort string `json:"effort,omitempty"`
}

// Response is a Responses API response.
type Response struct {
	ID                string            `json:"id"`
	Status            string            `json:"status"`
	Model             string            `json:"model"`
	Output            []json.RawMessage `json:"output"`
	Usage             ResponsesUsage    `json:"usage"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// ResponsesUsage counts a response's tokens; input tokens include the
// cached ones.
type ResponsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

// Tokens are the usage as billed: cached input tokens apart.
func (u ResponsesUsage) Tokens() httpllm.Tokens {
	cached := u.InputTokensDetails.CachedTokens
	return httpllm.Tokens{Input: u.InputTokens - cached, Output: u.OutputTokens, CacheRead: cached}
}

// outputItem is the part of an output item kitsoki reads.
type outputItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

// Responses sends a request and returns the response: whole, or, with
// Stream set, the one its stream's closing event (response.completed,
// response.incomplete or response.failed) carries.
func (e *Endpoint) Responses(ctx context.Context, req *ResponsesRequest, st *httpllm.Stats) (*Response, error) {
	r := *req
	r.Stream = e.Stream
	var out *Response
	err := e.post(ctx, "responses", &r, e.Stream, func(resp *http.Response) error {
		var err error
		if isEventStream(resp) {
			out, err = readResponsesStream(resp)
		} else {
			out, err = readResponse(resp)
		}
		return err
	}, st)
	return out, err
}

func readResponse(resp *http.Response) (*Response, error) {
	b, err := httpllm.ReadAll(resp)
	if err != nil {
		return nil, err
	}
	var r Response
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, &ReplyError{Msg: fmt.Sprintf("the answer is not a response: %v", err), Raw: b}
	}
	return &r, nil
}

// readResponsesStream reads the semantic events of a streamed response:
// response.created, response.output_item.added/done, text and argument
// deltas (which it needs not: the closing event carries the whole
// response) up to response.completed, response.incomplete or
// response.failed; an error event fails it.
func readResponsesStream(resp *http.Response) (*Response, error) {
	var out *Response
	err := httpllm.Events(resp.Body, func(ev httpllm.Event) error {
		var e struct {
			Type     string    `json:"type"`
			Response *Response `json:"response"`
			Code     string    `json:"code"`
			Message  string    `json:"message"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			return &ReplyError{Msg: fmt.Sprintf("a stream event is not JSON: %v", err), Raw: []byte(ev.Data)}
		}
		switch e.Type {
		case "response.completed", "response.incomplete", "response.failed":
			if e.Response == nil {
				return &ReplyError{Msg: e.Type + " without a response", Raw: []byte(ev.Data)}
			}
			out = e.Response
			return io.EOF
		case "error":
			se := fmt.Errorf("the stream reported an error %s: %s", e.Code, e.Message)
			if e.Code == "server_error" || strings.Contains(e.Code, "overloaded") || e.Code == "rate_limit_exceeded" {
				return httpllm.Retry(se)
			}
			return se
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, httpllm.Retry(fmt.Errorf("the stream ended before the response completed"))
	}
	return out, nil
}

// items reads a response's output: its text, the function calls it asks
// for, and its refusal.
func (r *Response) items() (text string, calls []outputItem, refusal string) {
	var parts []string
	for _, raw := range r.Output {
		var it outputItem
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					parts = append(parts, c.Text)
				case "refusal":
					refusal += c.Refusal
				}
			}
		case "function_call":
			calls = append(calls, it)
		}
	}
	return strings.Join(parts, ""), calls, refusal
}

// echo is an output item as it goes back into the next request's input:
// message and function_call items without their ids (store is false, so
// the server keeps none to refer to), reasoning items whole (their
// encrypted content is the reasoning).
func echo(raw json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	switch m["type"] {
	case "message", "function_call":
		delete(m, "id")
		delete(m, "status")
		b, err := json.Marshal(m)
		if err != nil {
			return raw
		}
		return b
	}
	return raw
}
