// Package scriptagent answers agent calls by their JSON Schema, for live
// runs of stories in tests: a submission is built from the schema (every
// required property, with the first enum value or a typed placeholder),
// then a per-call function may change it and act as the agent would (edit
// files in its working directory).
package scriptagent

import (
	"encoding/json"
	"fmt"
)

// Fill returns an instance of the JSON Schema raw: an object with its
// required properties, each the first of its enum, else by type: "<name>"
// for a string (repeated up to its minLength), true, 0.9, 1, a list of
// minItems items, an object. Nested objects are filled the same way.
func Fill(raw []byte) (map[string]any, error) {
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	v, _ := s.instance("value").(map[string]any)
	if v == nil {
		v = map[string]any{}
	}
	return v, nil
}

type schema struct {
	Type       any                `json:"type"`
	Enum       []any              `json:"enum"`
	Properties map[string]*schema `json:"properties"`
	Required   []string           `json:"required"`
	Items      *schema            `json:"items"`
	MinItems   int                `json:"minItems"`
	MinLength  int                `json:"minLength"`
}

// types reads type: a name or a list of names.
func (s *schema) types() []string {
	switch t := s.Type.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if n, ok := x.(string); ok && n != "null" {
				out = append(out, n)
			}
		}
		return out
	}
	if s.Properties != nil {
		return []string{"object"}
	}
	return nil
}

func (s *schema) instance(name string) any {
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	t := ""
	if ts := s.types(); len(ts) > 0 {
		t = ts[0]
	}
	switch t {
	case "object":
		obj := map[string]any{}
		for _, r := range s.Required {
			if p := s.Properties[r]; p != nil {
				obj[r] = p.instance(r)
			} else {
				obj[r] = r
			}
		}
		return obj
	case "array":
		list := []any{}
		for i := 0; i < s.MinItems && s.Items != nil; i++ {
			list = append(list, s.Items.instance(name))
		}
		return list
	case "boolean":
		return true
	case "number":
		return 0.9
	case "integer":
		return 1
	}
	text := name
	for len(text) < s.MinLength {
		text += " " + name
	}
	return text
}
