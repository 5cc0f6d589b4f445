package anthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/httpllm"
)

// The Messages API as Anthropic documents it: a request, the message it
// answers with, and the server-sent events a streamed answer comes in.

// Version is the anthropic-version header sent with every request.
const Version = "2023-06-01"

type request struct {
	Model      string      `json:"model"`
	MaxTokens  int         `json:"max_tokens"`
	System     []block     `json:"system,omitempty"`
	Messages   []message   `json:"messages"`
	Tools      []tool      `json:"tools,omitempty"`
	ToolChoice *toolChoice `json:"tool_choice,omitempty"`
	Thinking   *thinking   `json:"thinking,omitempty"`
	Stream     bool        `json:"stream,omitempty"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is a content block of any type; MarshalJSON writes the fields
// its type has.
type block struct {
	Type         string
	Text         string
	ID           string
	Name         string
	Input        json.RawMessage
	ToolUseID    string
	Content      string
	IsError      bool
	Thinking     string
	Signature    string
	Data         string
	CacheControl *cacheControl
}

type cacheControl struct {
	Type string `json:"type"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

func (b block) MarshalJSON() ([]byte, error) {
	m := map[string]any{"type": b.Type}
	switch b.Type {
	case "text":
		m["text"] = b.Text
	case "tool_use":
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		m["id"], m["name"], m["input"] = b.ID, b.Name, input
	case "tool_result":
		m["tool_use_id"], m["content"] = b.ToolUseID, b.Content
		if b.IsError {
			m["is_error"] = true
		}
	case "thinking":
		m["thinking"], m["signature"] = b.Thinking, b.Signature
	case "redacted_thinking":
		m["data"] = b.Data
	}
	if b.CacheControl != nil {
		m["cache_control"] = b.CacheControl
	}
	return json.Marshal(m)
}

func (b *block) UnmarshalJSON(data []byte) error {
	var w struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*b = block{Type: w.Type, Text: w.Text, ID: w.ID, Name: w.Name, Input: w.Input, Thinking: w.Thinking, Signature: w.Signature, Data: w.Data}
	return nil
}

type tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// response is a message the API answered with (whole, or put together
// from a stream).
type response struct {
	ID         string  `json:"id"`
	Type       string  `json:"type"`
	Role       string  `json:"role"`
	Model      string  `json:"model"`
	Content    []block `json:"content"`
	StopReason string  `json:"stop_reason"`
	Usage      usage   `json:"usage"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

func (u usage) tokens() httpllm.Tokens {
	return httpllm.Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
}

// text is the message's text blocks, joined.
func (r *response) text() string {
	var parts []string
	for _, b := range r.Content {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// toolUses are the message's tool_use blocks.
func (r *response) toolUses() []block {
	var out []block
	for _, b := range r.Content {
		if b.Type == "tool_use" {
			out = append(out, b)
		}
	}
	return out
}

// errorDetail reads an error body: {"type":"error","error":{"type","message"}}.
func errorDetail(body []byte) (string, string) {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", ""
	}
	return e.Error.Type, e.Error.Message
}

// readMessage reads a whole (not streamed) answer.
func readMessage(resp *http.Response) (*response, error) {
	b, err := httpllm.ReadAll(resp)
	if err != nil {
		return nil, err
	}
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("the answer is not a message: %w (%s)", err, clip(b))
	}
	return &r, nil
}

// streamError is an error event of a stream. An overload or an API
// error is worth asking again.
type streamError struct {
	Type    string
	Message string
}

func (e *streamError) Error() string {
	return "the stream reported " + e.Type + ": " + e.Message
}

// readStream puts a message together from its events: message_start
// gives the envelope and the input usage, content_block_start/delta/stop
// the blocks (text_delta, input_json_delta, thinking_delta,
// signature_delta), message_delta the stop reason and the output usage,
// message_stop ends it; ping is ignored and error fails it.
func readStream(resp *http.Response) (*response, error) {
	sb := &streamBuilder{partial: map[int]*strings.Builder{}}
	err := httpllm.Events(resp.Body, func(ev httpllm.Event) error {
		var e streamEvent
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			return fmt.Errorf("stream event %q is not JSON: %w (%s)", ev.Name, err, clip([]byte(ev.Data)))
		}
		return sb.add(&e)
	})
	if err != nil {
		return nil, err
	}
	if sb.msg == nil || !sb.done {
		return nil, httpllm.Retry(fmt.Errorf("the stream ended before message_stop"))
	}
	return sb.msg, nil
}

// streamBuilder holds a streamed message while its events arrive.
type streamBuilder struct {
	msg     *response
	partial map[int]*strings.Builder // tool_use input JSON by block index
	done    bool
}

// add applies one event; io.EOF after message_stop ends the stream.
func (sb *streamBuilder) add(e *streamEvent) error {
	switch e.Type {
	case "message_start":
		if e.Message == nil {
			return fmt.Errorf("message_start without a message")
		}
		sb.msg = e.Message
		sb.msg.Content = sb.msg.Content[:0]
	case "content_block_start":
		return sb.start(e)
	case "content_block_delta":
		if sb.msg == nil || e.Index < 0 || e.Index >= len(sb.msg.Content) || e.Delta == nil {
			return fmt.Errorf("content_block_delta %d for no block", e.Index)
		}
		applyDelta(&sb.msg.Content[e.Index], sb.partial[e.Index], e.Delta)
	case "content_block_stop":
		sb.stop(e.Index)
	case "message_delta":
		if sb.msg != nil && e.Delta != nil {
			sb.msg.StopReason = e.Delta.StopReason
		}
		if sb.msg != nil && e.Usage != nil {
			mergeUsage(&sb.msg.Usage, e.Usage)
		}
	case "message_stop":
		sb.done = true
		return io.EOF
	case "error":
		return streamFailure(e)
	}
	return nil
}

// start opens a content block; a tool_use block's input arrives as
// input_json_delta fragments.
func (sb *streamBuilder) start(e *streamEvent) error {
	if sb.msg == nil || e.ContentBlock == nil || e.Index != len(sb.msg.Content) {
		return fmt.Errorf("content_block_start %d out of order", e.Index)
	}
	b := *e.ContentBlock
	if b.Type == "tool_use" {
		b.Input = nil
		sb.partial[e.Index] = &strings.Builder{}
	}
	sb.msg.Content = append(sb.msg.Content, b)
	return nil
}

// stop closes a block: a tool_use block gets its input put together.
func (sb *streamBuilder) stop(i int) {
	if sb.msg == nil || i < 0 || i >= len(sb.msg.Content) {
		return
	}
	p, ok := sb.partial[i]
	if !ok {
		return
	}
	in := strings.TrimSpace(p.String())
	if in == "" {
		in = "{}"
	}
	sb.msg.Content[i].Input = json.RawMessage(in)
}

// streamFailure is the error of an error event: overloaded and API
// errors are retried, others are not.
func streamFailure(e *streamEvent) error {
	se := &streamError{Type: "error"}
	if e.Error != nil {
		se.Type, se.Message = e.Error.Type, e.Error.Message
	}
	if se.Type == "overloaded_error" || se.Type == "api_error" {
		return httpllm.Retry(se)
	}
	return se
}

// applyDelta adds a delta to its block.
func applyDelta(b *block, partialJSON *strings.Builder, d *delta) {
	switch d.Type {
	case "text_delta":
		b.Text += d.Text
	case "input_json_delta":
		if partialJSON != nil {
			partialJSON.WriteString(d.PartialJSON)
		}
	case "thinking_delta":
		b.Thinking += d.Thinking
	case "signature_delta":
		b.Signature += d.Signature
	}
}

// mergeUsage takes the counts a message_delta reports (cumulative).
func mergeUsage(u *usage, d *usage) {
	if d.OutputTokens > 0 {
		u.OutputTokens = d.OutputTokens
	}
	if d.InputTokens > 0 {
		u.InputTokens = d.InputTokens
	}
	if d.CacheCreationInputTokens > 0 {
		u.CacheCreationInputTokens = d.CacheCreationInputTokens
	}
	if d.CacheReadInputTokens > 0 {
		u.CacheReadInputTokens = d.CacheReadInputTokens
	}
}

type streamEvent struct {
	Type         string    `json:"type"`
	Message      *response `json:"message"`
	Index        int       `json:"index"`
	ContentBlock *block    `json:"content_block"`
	Delta        *delta    `json:"delta"`
	Usage        *usage    `json:"usage"`
	Error        *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type delta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	StopReason  string `json:"stop_reason"`
}

func clip(b []byte) string {
	const n = 256
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
