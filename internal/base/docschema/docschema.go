// Package docschema builds the JSON Schemas (draft 2020-12) of kitsoki's
// YAML file formats — story files, flow fixtures, cassettes, eval
// datasets — from each parser's own key lists, so the schema an editor
// uses and the keys the parser accepts cannot drift. A Shape says which
// mappings take which keys, which values are lists or maps of named
// entries, and which shorthand scalars are accepted; values themselves
// (expressions, templates, types) are the parsers' to check.
package docschema

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Shape is one node of a document.
type Shape struct {
	Ref      string            // a $defs entry, instead of the rest
	Keys     []string          // a mapping with these keys; "x_*" is a prefix pattern
	Props    map[string]*Shape // the shapes of some keys' values
	Values   *Shape            // a mapping of named entries of this shape
	Items    *Shape            // a list of this shape
	Scalar   bool              // a scalar is accepted too (shorthand forms)
	Any      []*Shape          // one of these
	When     string            // with Keys: checked only when the mapping has this key
	WhenIs   string            // with When: ... and that key has this value
	Required string            // with Keys: the mapping must have this key
}

// Obj is a mapping of keys, some with their value's shape.
func Obj(keys []string, props map[string]*Shape) *Shape { return &Shape{Keys: keys, Props: props} }

// Map is a mapping of named entries.
func Map(s *Shape) *Shape { return &Shape{Values: s} }

// List is a list.
func List(s *Shape) *Shape { return &Shape{Items: s} }

// Ref refers to a definition.
func Ref(name string) *Shape { return &Shape{Ref: name} }

// ScalarOr is s, or a scalar.
func ScalarOr(s *Shape) *Shape { c := *s; c.Scalar = true; return &c }

// ListOr is s, or a list of s.
func ListOr(s *Shape) *Shape { return &Shape{Any: []*Shape{s, List(s)}} }

// Walk calls f for every shape reachable from s (each once).
func Walk(s *Shape, f func(*Shape)) {
	seen := map[*Shape]bool{}
	var walk func(*Shape)
	walk = func(s *Shape) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		f(s)
		for _, c := range s.Props {
			walk(c)
		}
		walk(s.Values)
		walk(s.Items)
		for _, a := range s.Any {
			walk(a)
		}
	}
	walk(s)
}

// Document is the schema of a document whose root is root.
func Document(id, title string, root *Shape, defs map[string]*Shape) map[string]any {
	doc := root.JSON()
	doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	doc["$id"] = id
	doc["title"] = title
	if len(defs) > 0 {
		d := map[string]any{}
		for name, s := range defs {
			d[name] = s.JSON()
		}
		doc["$defs"] = d
	}
	return doc
}

var scalarTypes = []any{"string", "number", "integer", "boolean", "null"}

// JSON renders s as a JSON Schema object.
func (s *Shape) JSON() map[string]any {
	if s.Ref != "" {
		return map[string]any{"$ref": "#/$defs/" + s.Ref}
	}
	var alts []any
	switch {
	case s.Keys != nil:
		props, patterns := map[string]any{}, map[string]any{}
		for _, k := range s.Keys {
			body := map[string]any{}
			if c := s.Props[k]; c != nil {
				body = c.JSON()
			}
			if p, ok := strings.CutSuffix(k, "*"); ok {
				patterns["^"+regexp.QuoteMeta(p)] = body
				continue
			}
			props[k] = body
		}
		o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(patterns) > 0 {
			o["patternProperties"] = patterns
		}
		if s.Required != "" {
			o["required"] = []any{s.Required}
		}
		if s.When != "" {
			cond := map[string]any{"type": "object", "required": []any{s.When}}
			if s.WhenIs != "" {
				cond["properties"] = map[string]any{s.When: map[string]any{"const": s.WhenIs}}
			}
			return map[string]any{"if": cond, "then": o}
		}
		alts = append(alts, o)
	case s.Values != nil:
		alts = append(alts, map[string]any{"type": "object", "additionalProperties": s.Values.JSON()})
	case s.Items != nil:
		alts = append(alts, map[string]any{"type": "array", "items": s.Items.JSON()})
	}
	for _, a := range s.Any {
		alts = append(alts, a.JSON())
	}
	if s.Scalar {
		alts = append(alts, map[string]any{"type": scalarTypes})
	}
	switch len(alts) {
	case 0:
		return map[string]any{}
	case 1:
		return alts[0].(map[string]any)
	}
	return map[string]any{"anyOf": alts}
}

// Marshal renders a schema as indented JSON with a final newline, the form
// of the files under schemas/.
func Marshal(doc map[string]any) ([]byte, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
