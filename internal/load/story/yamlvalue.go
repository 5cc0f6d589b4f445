package story

import (
	"strconv"

	"go.yaml.in/yaml/v3"
)

// decodeValue decodes n into plain Go values, exactly as n.Decode(&v) does.
// Most story values (a with: block, set and slot values) are strings,
// decimal integers, booleans and nulls in string-keyed mappings and lists;
// those are converted directly, without the reflection and the decoder
// Decode sets up for every call, which showed in the cost of loading a large
// story. Anything else (floats, timestamps, other tags, aliases, merge
// keys, duplicate keys) goes through Decode, errors included.
func decodeValue(n *yaml.Node) (any, error) {
	if v, ok := plainValue(n); ok {
		return v, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// plainValue converts n when it only holds the common shapes decodeValue
// describes; ok is false otherwise.
func plainValue(n *yaml.Node) (_ any, ok bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		return plainScalar(n)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				return nil, false
			}
			if _, dup := m[k.Value]; dup {
				return nil, false // Decode reports it
			}
			v, ok := plainValue(n.Content[i+1])
			if !ok {
				return nil, false
			}
			m[k.Value] = v
		}
		return m, true
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, ok := plainValue(c)
			if !ok {
				return nil, false
			}
			l[i] = v
		}
		return l, true
	}
	return nil, false
}

func plainScalar(n *yaml.Node) (_ any, ok bool) {
	switch n.Tag {
	case "!!str":
		return n.Value, true
	case "!!null":
		switch n.Value {
		case "", "~", "null", "Null", "NULL":
			return nil, true
		}
	case "!!bool":
		switch n.Value {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	case "!!int":
		if isDecimal(n.Value) {
			if i, err := strconv.Atoi(n.Value); err == nil {
				return i, true
			}
		}
	}
	return nil, false
}

// isDecimal reports whether s is a plain decimal integer: an optional minus
// and up to 18 digits without a leading zero (no sign +, no base prefix,
// no underscore, which YAML reads differently).
func isDecimal(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" || len(s) > 18 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
