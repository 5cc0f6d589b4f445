package schema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Violation is one schema construct that llama.cpp's JSON-schema-to-grammar
// conversion does not support.
type Violation struct {
	// Construct names the keyword, e.g. "uniqueItems" or
	// `unanchored pattern "[a-z]+"`.
	Construct string
	// Pointer is the JSON pointer of the schema object holding it ("" is
	// the root, rendered "/").
	Pointer string
}

// String renders "<construct> at <pointer>".
func (v Violation) String() string {
	p := v.Pointer
	if p == "" {
		p = "/"
	}
	return v.Construct + " at " + p
}

// FormatViolation is the story-load error for one violation of a decide
// schema routed to a grammar: true local_llm alias:
//
//	agent_plugins.<alias> (grammar: true): schema <file>: <construct> at <pointer> is outside the llama.cpp grammar subset
func FormatViolation(alias, schemaFile string, v Violation) string {
	return fmt.Sprintf("agent_plugins.%s (grammar: true): schema %s: %s is outside the llama.cpp grammar subset", alias, schemaFile, v)
}

// GrammarSubsetViolations lists, in a stable order (a node before its
// subschemas, map keys sorted), every
// construct in the JSON Schema doc that llama.cpp cannot turn into a
// grammar: $ref, $defs, definitions, uniqueItems: true, not,
// if/then/else, dependentSchemas, contains, anyOf/oneOf beside a sibling
// properties or type, and a pattern not anchored with ^…$. Only schema
// positions are inspected, so a property named "not" is no violation. The
// error is for a document that is not JSON.
func GrammarSubsetViolations(doc []byte) ([]Violation, error) {
	var root any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	var out []Violation
	walkSchema(root, "", &out)
	return out, nil
}

// Keywords whose value is one subschema, a map of subschemas, or an array
// of subschemas (draft 2020-12 and the older names still in use).
var (
	schemaValued = []string{"additionalProperties", "unevaluatedProperties", "items", "additionalItems", "unevaluatedItems", "propertyNames", "contains", "not", "if", "then", "else", "contentSchema"}
	schemaMaps   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
	schemaArrays = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	unsupported  = []string{"$ref", "$dynamicRef", "$defs", "definitions", "not", "if", "then", "else", "dependentSchemas", "contains"}
)

func walkSchema(node any, ptr string, out *[]Violation) {
	obj, ok := node.(map[string]any)
	if !ok {
		return // true/false schemas and non-schemas constrain nothing here
	}
	for _, k := range unsupported {
		if _, ok := obj[k]; ok {
			*out = append(*out, Violation{Construct: k, Pointer: ptr + "/" + escapePointer(k)})
		}
	}
	if u, ok := obj["uniqueItems"].(bool); ok && u {
		*out = append(*out, Violation{Construct: "uniqueItems", Pointer: ptr + "/uniqueItems"})
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if _, ok := obj[k]; !ok {
			continue
		}
		for _, sib := range []string{"properties", "type"} {
			if _, ok := obj[sib]; ok {
				*out = append(*out, Violation{Construct: k + " beside " + sib, Pointer: ptr + "/" + k})
				break
			}
		}
	}
	if p, ok := obj["pattern"].(string); ok && !(strings.HasPrefix(p, "^") && strings.HasSuffix(p, "$")) {
		*out = append(*out, Violation{Construct: "unanchored pattern " + strconv.Quote(p), Pointer: ptr + "/pattern"})
	}
	for _, k := range schemaValued {
		if v, ok := obj[k].(map[string]any); ok {
			walkSchema(v, ptr+"/"+escapePointer(k), out)
		}
	}
	for _, k := range schemaMaps {
		m, ok := obj[k].(map[string]any)
		if !ok {
			continue
		}
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			walkSchema(m[n], ptr+"/"+escapePointer(k)+"/"+escapePointer(n), out)
		}
	}
	for _, k := range schemaArrays {
		arr, ok := obj[k].([]any)
		if !ok {
			continue
		}
		for i, v := range arr {
			walkSchema(v, ptr+"/"+k+"/"+strconv.Itoa(i), out)
		}
	}
}

// escapePointer escapes one JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
