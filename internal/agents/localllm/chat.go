package localllm

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// maxBody is the largest response body read from a server (16 MiB).
const maxBody = 16 << 20

// DefaultMaxTokens is the max_tokens sent on every request. A completion
// endpoint without it may generate until the context fills; 1024 tokens is
// ample for the small JSON answers this backend is for, and an answer cut
// off by it fails as a transport_error rather than as truncated JSON.
const DefaultMaxTokens = 1024

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string          `json:"model,omitempty"`
	Messages       []chatMessage   `json:"messages"`
	MaxTokens      int             `json:"max_tokens"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

// responseFormat is the OpenAI json_schema response format. llama-server
// reads json_schema.schema from it and turns it into a grammar; OpenAI-native
// endpoints honour name and strict. One shape serves both.
type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *schemaSpec `json:"json_schema"`
}

type schemaSpec struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}

func newResponseFormat(schema json.RawMessage) *responseFormat {
	return &responseFormat{Type: "json_schema", JSONSchema: &schemaSpec{Name: "submission", Strict: true, Schema: schema}}
}

// encode returns the request body: the JSON json.Marshal gives for r, except
// that the schema (compact, valid JSON already) is copied in as it is,
// where json.Marshal would re-scan and re-compact it on every call and
// escape any <, > or & in it. For a typical schema that re-scan cost more
// than the rest of the request.
func (r *chatRequest) encode() []byte {
	size := 128 + len(r.Model)
	for _, m := range r.Messages {
		size += len(m.Content) + 32
	}
	if r.ResponseFormat != nil {
		size += len(r.ResponseFormat.JSONSchema.Schema) + 96
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	if r.Model != "" {
		b = append(b, `"model":`...)
		b = appendString(b, r.Model)
		b = append(b, ',')
	}
	b = append(b, `"messages":[`...)
	for i, m := range r.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":`...)
		b = appendString(b, m.Role)
		b = append(b, `,"content":`...)
		b = appendString(b, m.Content)
		b = append(b, '}')
	}
	b = append(b, `],"max_tokens":`...)
	b = strconv.AppendInt(b, int64(r.MaxTokens), 10)
	if rf := r.ResponseFormat; rf != nil {
		s := rf.JSONSchema
		b = append(b, `,"response_format":{"type":`...)
		b = appendString(b, rf.Type)
		b = append(b, `,"json_schema":{"name":`...)
		b = appendString(b, s.Name)
		b = append(b, `,"strict":`...)
		b = strconv.AppendBool(b, s.Strict)
		b = append(b, `,"schema":`...)
		if len(s.Schema) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, s.Schema...)
		}
		b = append(b, "}}"...)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string, encoded by encoding/json.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// compactSchema returns schema without layout whitespace, or as it is when
// it is not valid JSON (the server then reports it).
func compactSchema(schema json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, schema) != nil {
		return schema
	}
	return buf.Bytes()
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// submissionFrom turns a model's answer text into a submission: trimmed,
// without a ```json / ``` fence, compacted when it is JSON. Text that is not JSON is sent as a JSON
// string when the call has no schema (a free-form ask), and as is otherwise,
// so the host's validation reports it (and falls back).
func submissionFrom(content string, hasSchema bool) json.RawMessage {
	s := strings.TrimSpace(content)
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		rest = strings.TrimPrefix(rest, "json")
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```"))
	}
	b := []byte(s)
	var compact bytes.Buffer
	if json.Compact(&compact, b) == nil { // valid JSON, stored without the model's layout whitespace
		return compact.Bytes()
	}
	if !hasSchema {
		q, _ := json.Marshal(s)
		return q
	}
	return b
}

// isFailOpen reports whether an HTTP 4xx reply to a constrained request is
// the server refusing the constraint itself (llama-server: "failed to parse
// grammar", "JSON schema conversion failed"; OpenAI-compatible APIs:
// "response_format ... not supported"), rather than the request as a whole.
func isFailOpen(status int, body []byte) bool {
	if status < 400 || status >= 500 {
		return false
	}
	b := bytes.ToLower(body)
	for _, w := range [][]byte{[]byte("grammar"), []byte("json_schema"), []byte("json schema"), []byte("response_format"), []byte("schema")} {
		if bytes.Contains(b, w) {
			return true
		}
	}
	return false
}

// hasSchema reports whether a request carries a schema document.
func hasSchema(s json.RawMessage) bool {
	t := bytes.TrimSpace(s)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}
