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

// Chat Completions as OpenAI documents it (POST {base}/chat/completions).

// ChatRequest is a chat completion request.
type ChatRequest struct {
	Model    string        `json:"model,omitempty"`
	Messages []ChatMessage `json:"messages"`
	// MaxTokens is the classic output bound (what local servers read);
	// MaxCompletionTokens the one the OpenAI API asks for instead.
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	Tools               []ChatTool      `json:"tools,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
}

// ChatMessage is one message of the thread.
type ChatMessage struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call the model asked for.
type ToolCall struct {
	// Index orders the calls of a streamed answer; it is not sent back.
	Index    int          `json:"-"`
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a called function's name and its JSON arguments (a
// string, as the API sends them).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatTool offers one function.
type ChatTool struct {
	Type     string       `json:"type"`
	Function FunctionDecl `json:"function"`
}

// FunctionDecl declares a function: its name, what it does and the JSON
// Schema of its arguments.
type FunctionDecl struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ResponseFormat is {type: json_schema, json_schema: {name, strict,
// schema}}: the answer constrained to a schema. llama-server reads the
// schema into a grammar; the OpenAI API honours strict.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *SchemaSpec `json:"json_schema,omitempty"`
}

// SchemaSpec names a schema and says whether it is enforced strictly.
type SchemaSpec struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}

// StreamOptions asks a stream to end with a usage chunk.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatResponse is a chat completion (whole, or put together from a
// stream).
type ChatResponse struct {
	// Raw is the body of a whole (not streamed) answer, for messages
	// that quote it.
	Raw     []byte       `json:"-"`
	ID      string       `json:"id"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   ChatUsage    `json:"usage"`
}

// ChatChoice is one choice; kitsoki asks for one.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      ChoiceMessage `json:"message"`
	FinishReason string        `json:"finish_reason"`
}

// ChoiceMessage is the model's message; Content is nil when it only
// called tools.
type ChoiceMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls"`
	Refusal   *string    `json:"refusal"`
}

// ChatUsage counts a completion's tokens; prompt tokens include the
// cached ones.
type ChatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// Tokens are the usage as billed: cached prompt tokens apart.
func (u ChatUsage) Tokens() httpllm.Tokens {
	cached := u.PromptTokensDetails.CachedTokens
	return httpllm.Tokens{Input: u.PromptTokens - cached, Output: u.CompletionTokens, CacheRead: cached}
}

// Chat sends a chat completion request and returns the completion. With
// Stream set the request asks for an event stream (and a closing usage
// chunk) and the completion is put together from its chunks.
func (e *Endpoint) Chat(ctx context.Context, req *ChatRequest, st *httpllm.Stats) (*ChatResponse, error) {
	r := *req
	r.Stream = e.Stream
	if e.Stream {
		r.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	var out *ChatResponse
	err := e.post(ctx, "chat/completions", &r, e.Stream, func(resp *http.Response) error {
		var err error
		if isEventStream(resp) {
			out, err = readChatStream(resp)
		} else {
			out, err = readChat(resp)
		}
		return err
	}, st)
	return out, err
}

func readChat(resp *http.Response) (*ChatResponse, error) {
	b, err := httpllm.ReadAll(resp)
	if err != nil {
		return nil, err
	}
	var r ChatResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, &ReplyError{Msg: fmt.Sprintf("the answer is not a chat completion: %v", err), Raw: b}
	}
	r.Raw = b
	return &r, nil
}

// ReplyError is an answer that is not what the API documents.
type ReplyError struct {
	Msg string
	Raw []byte
}

func (e *ReplyError) Error() string { return e.Msg + " (raw: " + clip(e.Raw) + ")" }

// chatChunk is one chunk of a streamed completion.
type chatChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *ChatUsage `json:"usage"`
}

// readChatStream puts a completion together from its chunks: content and
// refusal deltas are appended, tool calls gathered by index (the first
// chunk of each names it, later ones add to its arguments), the finish
// reason kept, the closing usage chunk read; data: [DONE] ends it.
func readChatStream(resp *http.Response) (*ChatResponse, error) {
	out := &ChatResponse{}
	var text, refusal strings.Builder
	var hasText, hasRefusal, done bool
	calls := map[int]*ToolCall{}
	var order []int
	finish := ""
	err := httpllm.Events(resp.Body, func(ev httpllm.Event) error {
		if strings.TrimSpace(ev.Data) == "[DONE]" {
			done = true
			return io.EOF
		}
		var c chatChunk
		if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
			return &ReplyError{Msg: fmt.Sprintf("a stream chunk is not JSON: %v", err), Raw: []byte(ev.Data)}
		}
		if c.ID != "" {
			out.ID = c.ID
		}
		if c.Model != "" {
			out.Model = c.Model
		}
		if c.Usage != nil {
			out.Usage = *c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text.WriteString(*ch.Delta.Content)
				hasText = true
			}
			if ch.Delta.Refusal != nil {
				refusal.WriteString(*ch.Delta.Refusal)
				hasRefusal = true
			}
			for _, tc := range ch.Delta.ToolCalls {
				call, ok := calls[tc.Index]
				if !ok {
					call = &ToolCall{Index: tc.Index, Type: "function"}
					calls[tc.Index] = call
					order = append(order, tc.Index)
				}
				if tc.ID != "" {
					call.ID = tc.ID
				}
				if tc.Function.Name != "" {
					call.Function.Name = tc.Function.Name
				}
				call.Function.Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !done && finish == "" {
		return nil, httpllm.Retry(fmt.Errorf("the stream ended before the completion finished"))
	}
	msg := ChoiceMessage{Role: "assistant"}
	if hasText {
		s := text.String()
		msg.Content = &s
	}
	if hasRefusal {
		s := refusal.String()
		msg.Refusal = &s
	}
	for _, i := range order {
		msg.ToolCalls = append(msg.ToolCalls, *calls[i])
	}
	out.Choices = []ChatChoice{{Message: msg, FinishReason: finish}}
	return out, nil
}
