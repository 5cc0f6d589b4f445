// Package yamlnode holds the helpers kitsoki's hand-written YAML parsers
// (cassettes, flow fixtures) share: mapping fields with unknown-key errors,
// typed field reads with line numbers, and node-to-value conversion.
package yamlnode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Fields returns the key → value nodes of a mapping node, refusing keys not
// in allowed (a key ending in "*" allows any key with that prefix). where
// names the mapping in errors.
func Fields(n *yaml.Node, where string, allowed ...string) (map[string]*yaml.Node, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil, At(n, where, "must be a mapping, got %s", KindName(n))
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !keyAllowed(k.Value, allowed) {
			hint := ""
			if best := nearmiss.Closest(k.Value, allowed, 2); best != "" && len(k.Value) >= 4 {
				hint = fmt.Sprintf(" (did you mean %q?)", best)
			}
			return nil, At(k, Join(where, k.Value), "unknown key %q%s (valid: %s)", k.Value, hint, strings.Join(allowed, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, At(k, Join(where, k.Value), "key %q appears twice", k.Value)
		}
		out[k.Value] = v
	}
	return out, nil
}

func keyAllowed(k string, allowed []string) bool {
	for _, a := range allowed {
		if a == k || (strings.HasSuffix(a, "*") && strings.HasPrefix(k, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

// KindName says what kind of node n is, for error messages ("a list").
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return "a scalar"
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "an unexpected node"
}

// Str decodes a scalar string field ("" when absent or null).
func Str(m map[string]*yaml.Node, key, where string) (string, error) {
	v, ok := m[key]
	if !ok || v.Tag == "!!null" {
		return "", nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", At(v, Join(where, key), "must be a string, got %s", KindName(v))
	}
	return v.Value, nil
}

// Value decodes any node into plain Go values with string map keys.
func Value(v *yaml.Node) (any, error) {
	var out any
	if err := v.Decode(&out); err != nil {
		return nil, At(v, "", "%w", err)
	}
	return StringKeys(out), nil
}

// StringKeys turns map[any]any (YAML maps with non-string keys) into
// map[string]any, recursively.
func StringKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = StringKeys(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = StringKeys(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = StringKeys(e)
		}
		return t
	}
	return v
}

// Mapping decodes a mapping field into map[string]any (nil when absent).
func Mapping(m map[string]*yaml.Node, key, where string) (map[string]any, bool, error) {
	v, ok := m[key]
	if !ok {
		return nil, false, nil
	}
	if v.Tag == "!!null" {
		return nil, true, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, true, At(v, Join(where, key), "must be a mapping, got %s", KindName(v))
	}
	out, err := Value(v)
	if err != nil {
		return nil, true, err
	}
	mm, _ := out.(map[string]any)
	if mm == nil {
		mm = map[string]any{}
	}
	return mm, true, nil
}

// Written returns keys (all of m's when none are given) in the order m's
// mapping writes them, those m lacks last. Parsers walk fields in this
// order so that, of several bad entries, the error names the first one
// written, the same on every run (map order is random).
func Written(m map[string]*yaml.Node, keys ...string) []string {
	if len(keys) == 0 {
		keys = SortedKeys(m)
	} else {
		keys = slices.Clone(keys)
	}
	pos := func(k string) (int, int, bool) {
		v, ok := m[k]
		if !ok || v == nil {
			return 0, 0, false
		}
		return v.Line, v.Column, true
	}
	sort.SliceStable(keys, func(i, j int) bool {
		li, ci, oki := pos(keys[i])
		lj, cj, okj := pos(keys[j])
		switch {
		case oki != okj:
			return oki
		case li != lj:
			return li < lj
		}
		return ci < cj
	})
	return keys
}

// SortedKeys returns the keys of m in sorted order.
func SortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// JSON renders a YAML node as compact JSON, keeping mapping keys in the
// order they are written (an included .json file keeps its own order).
func JSON(n *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		switch n.Kind {
		case yaml.AliasNode:
			return walk(n.Alias)
		case yaml.MappingNode:
			buf.WriteByte('{')
			for i := 0; i+1 < len(n.Content); i += 2 {
				if i > 0 {
					buf.WriteByte(',')
				}
				k, err := json.Marshal(n.Content[i].Value)
				if err != nil {
					return err
				}
				buf.Write(k)
				buf.WriteByte(':')
				if err := walk(n.Content[i+1]); err != nil {
					return err
				}
			}
			buf.WriteByte('}')
		case yaml.SequenceNode:
			buf.WriteByte('[')
			for i, c := range n.Content {
				if i > 0 {
					buf.WriteByte(',')
				}
				if err := walk(c); err != nil {
					return err
				}
			}
			buf.WriteByte(']')
		default:
			v, err := Value(n)
			if err != nil {
				return err
			}
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			buf.Write(b)
		}
		return nil
	}
	if err := walk(n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TrimBOM drops a leading UTF-8 byte order mark.
func TrimBOM(b []byte) []byte { return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) }
