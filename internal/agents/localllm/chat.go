package localllm

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/openai"
)

// maxBody is the largest response body read from a server (16 MiB).
const maxBody = 16 << 20

// DefaultMaxTokens is the max_tokens sent on every request. A completion
// endpoint without it may generate until the context fills; 1024 tokens is
// ample for the small JSON answers this backend is for, and an answer cut
// off by it fails as a transport_error rather than as truncated JSON.
const DefaultMaxTokens = 1024

// newResponseFormat is the OpenAI json_schema response format.
// llama-server reads json_schema.schema from it and turns it into a
// grammar; OpenAI-native endpoints honour name and strict. One shape
// serves both.
func newResponseFormat(schema json.RawMessage) *openai.ResponseFormat {
	return &openai.ResponseFormat{Type: "json_schema", JSONSchema: &openai.SchemaSpec{Name: "submission", Strict: true, Schema: schema}}
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

// submissionFrom turns a model's answer text into a submission: trimmed,
// without a ```json / ``` fence, compacted when it is JSON. Text that is
// not JSON is sent as a JSON string when the call has no schema (a
// free-form ask), and as is otherwise, so the host's validation reports it
// (and falls back).
func submissionFrom(content string, hasSchema bool) json.RawMessage {
	b, ok := openai.AnswerJSON(content)
	if ok || hasSchema {
		return b
	}
	q, _ := json.Marshal(strings.TrimSpace(content))
	return q
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
