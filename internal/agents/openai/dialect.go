package openai

import (
	"context"
	"encoding/json"

	"github.com/kitsoki/kitsoki/internal/agents/httpllm"
	"github.com/kitsoki/kitsoki/internal/agents/toolloop"
)

type itemJSON = json.RawMessage

// dialect is the call's thread in one wire API's terms: Chat
// Completions' messages or the Responses API's items.
type dialect interface {
	// begin starts the thread: the system prompt, the conversation so far
	// (converse), the prompt.
	begin(system, prompt string, prior *thread)
	tools(defs []toolloop.Def)
	format(st *Structured, effort string, maxTokens int)
	// unconstrain drops the schema constraint (a server refused it).
	unconstrain()
	// send makes one request and adds the model's answer to the thread.
	send(ctx context.Context, st *httpllm.Stats) (*turn, error)
	// results adds the results of the turn's function calls.
	results(rs []toolResult)
	// user adds a user message.
	user(text string)
	// save keeps the thread for the next converse call.
	save(t *thread)
}

// turn is one answer of the model, whichever API gave it.
type turn struct {
	id, model string
	text      string
	calls     []funcCall
	refusal   string
	truncated bool
	finish    string
	tokens    httpllm.Tokens
}

type funcCall struct {
	id, name, args string
}

type toolResult struct {
	callID, text string
}

// chatDialect is Chat Completions.
type chatDialect struct {
	e        *Endpoint
	req      ChatRequest
	official bool
}

func (d *chatDialect) begin(system, prompt string, prior *thread) {
	if system != "" {
		d.req.Messages = append(d.req.Messages, ChatMessage{Role: "system", Content: system})
	}
	if prior != nil {
		d.req.Messages = append(d.req.Messages, prior.chat...)
	}
	d.req.Messages = append(d.req.Messages, ChatMessage{Role: "user", Content: prompt})
}

func (d *chatDialect) tools(defs []toolloop.Def) {
	for _, t := range defs {
		d.req.Tools = append(d.req.Tools, ChatTool{Type: "function", Function: FunctionDecl{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
}

func (d *chatDialect) format(st *Structured, effort string, maxTokens int) {
	if st != nil {
		d.req.ResponseFormat = &ResponseFormat{Type: "json_schema", JSONSchema: &SchemaSpec{Name: "submission", Strict: st.Strict, Schema: st.Schema}}
	}
	d.req.ReasoningEffort = effort
	if maxTokens > 0 {
		if d.official {
			d.req.MaxCompletionTokens = maxTokens
		} else {
			d.req.MaxTokens = maxTokens
		}
	}
}

func (d *chatDialect) unconstrain() { d.req.ResponseFormat = nil }

func (d *chatDialect) send(ctx context.Context, st *httpllm.Stats) (*turn, error) {
	resp, err := d.e.Chat(ctx, &d.req, st)
	if err != nil {
		return nil, err
	}
	if len(resp.Choices) == 0 {
		return nil, &ReplyError{Msg: "the completion has no choices", Raw: mustJSON(resp)}
	}
	ch := resp.Choices[0]
	t := &turn{id: resp.ID, model: resp.Model, finish: ch.FinishReason, truncated: ch.FinishReason == "length", tokens: resp.Usage.Tokens()}
	if ch.Message.Content != nil {
		t.text = *ch.Message.Content
	}
	if ch.Message.Refusal != nil {
		t.refusal = *ch.Message.Refusal
	}
	for _, c := range ch.Message.ToolCalls {
		t.calls = append(t.calls, funcCall{id: c.ID, name: c.Function.Name, args: c.Function.Arguments})
	}
	d.req.Messages = append(d.req.Messages, ChatMessage{Role: "assistant", Content: t.text, ToolCalls: ch.Message.ToolCalls})
	return t, nil
}

func (d *chatDialect) results(rs []toolResult) {
	for _, r := range rs {
		d.req.Messages = append(d.req.Messages, ChatMessage{Role: "tool", ToolCallID: r.callID, Content: r.text})
	}
}

func (d *chatDialect) user(text string) {
	d.req.Messages = append(d.req.Messages, ChatMessage{Role: "user", Content: text})
}

func (d *chatDialect) save(t *thread) {
	msgs := d.req.Messages
	if len(msgs) > 0 && msgs[0].Role == "system" {
		msgs = msgs[1:]
	}
	t.chat = append([]ChatMessage(nil), msgs...)
}

// responsesDialect is the Responses API.
type responsesDialect struct {
	e   *Endpoint
	req ResponsesRequest
}

func (d *responsesDialect) begin(system, prompt string, prior *thread) {
	d.req.Instructions = system
	d.req.Include = []string{"reasoning.encrypted_content"}
	if prior != nil {
		d.req.Input = append(d.req.Input, prior.items...)
	}
	d.user(prompt)
}

func (d *responsesDialect) tools(defs []toolloop.Def) {
	for _, t := range defs {
		d.req.Tools = append(d.req.Tools, ResponsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
}

func (d *responsesDialect) format(st *Structured, effort string, maxTokens int) {
	if st != nil {
		d.req.Text = &TextConfig{Format: &TextFormat{Type: "json_schema", Name: "submission", Strict: st.Strict, Schema: st.Schema}}
	}
	if effort != "" {
		d.req.Reasoning = &Reasoning{Effort: effort}
	}
	d.req.MaxOutputTokens = maxTokens
}

func (d *responsesDialect) unconstrain() { d.req.Text = nil }

func (d *responsesDialect) send(ctx context.Context, st *httpllm.Stats) (*turn, error) {
	resp, err := d.e.Responses(ctx, &d.req, st)
	if err != nil {
		return nil, err
	}
	if resp.Status == "failed" {
		msg := "the response failed"
		if resp.Error != nil {
			msg += ": " + resp.Error.Code + ": " + resp.Error.Message
		}
		return nil, &ReplyError{Msg: msg, Raw: mustJSON(resp)}
	}
	t := &turn{id: resp.ID, model: resp.Model, finish: resp.Status, tokens: resp.Usage.Tokens()}
	t.truncated = resp.Status == "incomplete" && resp.IncompleteDetails != nil && resp.IncompleteDetails.Reason == "max_output_tokens"
	var calls []outputItem
	t.text, calls, t.refusal = resp.items()
	for _, c := range calls {
		t.calls = append(t.calls, funcCall{id: c.CallID, name: c.Name, args: c.Arguments})
	}
	for _, raw := range resp.Output {
		d.req.Input = append(d.req.Input, echo(raw))
	}
	return t, nil
}

func (d *responsesDialect) results(rs []toolResult) {
	for _, r := range rs {
		d.req.Input = append(d.req.Input, mustJSON(map[string]any{"type": "function_call_output", "call_id": r.callID, "output": r.text}))
	}
}

func (d *responsesDialect) user(text string) {
	d.req.Input = append(d.req.Input, mustJSON(map[string]any{"role": "user", "content": text}))
}

func (d *responsesDialect) save(t *thread) { t.items = append([]itemJSON(nil), d.req.Input...) }

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
