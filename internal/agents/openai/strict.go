package openai

import (
	"bytes"
	"encoding/json"
	"strings"
)

// WrapProperty holds the value of a schema whose root is not an object:
// the API constrains an object, so {"value": <schema>} is sent and the
// answer unwrapped.
const WrapProperty = "value"

// Structured is a call's schema as it is sent: the document, whether the
// API may enforce it strictly, and whether it was wrapped.
type Structured struct {
	Schema  json.RawMessage
	Strict  bool
	Wrapped bool
}

// Prepare readies a schema for response_format / text.format. Strict is
// set only when the schema is inside the subset strict mode takes (every
// object closed with additionalProperties: false and every property
// required): strict mode refuses any other schema, and kitsoki validates
// every answer against the schema either way.
func Prepare(schema json.RawMessage) Structured {
	var doc any
	if json.Unmarshal(schema, &doc) != nil {
		return Structured{Schema: schema}
	}
	s := Structured{Schema: compact(schema)}
	if m, ok := doc.(map[string]any); !ok || m["type"] != "object" {
		s.Wrapped = true
		s.Schema = json.RawMessage(`{"type":"object","properties":{"` + WrapProperty + `":` + string(s.Schema) +
			`},"required":["` + WrapProperty + `"],"additionalProperties":false}`)
		doc = map[string]any{"type": "object", "properties": map[string]any{WrapProperty: doc},
			"required": []any{WrapProperty}, "additionalProperties": false}
	}
	s.Strict = strictOK(doc)
	return s
}

// Unwrap takes an answer of a wrapped schema out of its object.
func (s Structured) Unwrap(answer []byte) []byte {
	if !s.Wrapped {
		return answer
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(answer, &m) != nil {
		return answer
	}
	if v, ok := m[WrapProperty]; ok {
		return v
	}
	return answer
}

// strictOK walks a schema: every object schema must close itself
// (additionalProperties: false) and require all its properties.
func strictOK(node any) bool {
	switch n := node.(type) {
	case []any:
		for _, x := range n {
			if !strictOK(x) {
				return false
			}
		}
		return true
	case map[string]any:
		if props, ok := n["properties"].(map[string]any); ok || n["type"] == "object" {
			if n["additionalProperties"] != false {
				return false
			}
			req := map[string]bool{}
			if list, ok := n["required"].([]any); ok {
				for _, r := range list {
					if s, ok := r.(string); ok {
						req[s] = true
					}
				}
			}
			for k := range props {
				if !req[k] {
					return false
				}
			}
		}
		for k, v := range n {
			if k == "enum" || k == "const" || k == "default" || k == "examples" {
				continue
			}
			if !strictOK(v) {
				return false
			}
		}
	}
	return true
}

func compact(b json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// AnswerJSON turns a model's text into the JSON it holds: trimmed, out of
// a ```json fence, compacted; ok is false when it is not JSON.
func AnswerJSON(text string) (json.RawMessage, bool) {
	s := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		rest = strings.TrimPrefix(rest, "json")
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```"))
	}
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(s)) != nil {
		return json.RawMessage(s), false
	}
	return buf.Bytes(), true
}
