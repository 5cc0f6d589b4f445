package compose

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Bind sets, in doc (which the caller owns), the default: of each host
// interface the importer binds (host_bindings) to the importer's handler. A binding of a
// name also binds that name in the stories the imported story imports
// (ticket binds bf__ticket and bf__pr__ticket) unless they are bound by
// their own name. The handler is placed at the interface's name, in the
// imported story's file (it was checked where it is written).
func Bind(doc *yaml.Node, bindings map[string]*yaml.Node) *yaml.Node {
	if len(bindings) == 0 {
		return doc
	}
	f := &folder{}
	return f.mapping(doc, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
		m := deref(v)
		if k.Value != "host_interfaces" || m == nil || m.Kind != yaml.MappingNode {
			return k, v
		}
		return k, f.mapping(m, func(name, body *yaml.Node) (*yaml.Node, *yaml.Node) {
			b, ok := BindingFor(bindings, name.Value)
			if !ok {
				return name, body
			}
			c := Copy(b)
			PlaceAt(c, name.Line, name.Column)
			return name, withDefault(deref(body), c)
		})
	})
}

// withDefault sets an interface body's default: to handler.
func withDefault(body, handler *yaml.Node) *yaml.Node {
	if body == nil || body.Kind != yaml.MappingNode {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{Scalar("default"), handler}}
	}
	for i := 0; i+1 < len(body.Content); i += 2 {
		if body.Content[i].Value == "default" {
			body.Content[i+1] = handler
			return body
		}
	}
	body.Content = append(body.Content, Scalar("default"), handler)
	return body
}

// BindingFor is the importer's binding of interface name: its own, else
// (for an interface of a story the imported one imports, alias__name) the
// binding of the nearest shorter name.
func BindingFor(bindings map[string]*yaml.Node, name string) (*yaml.Node, bool) {
	for {
		if b, ok := bindings[name]; ok {
			return b, true
		}
		_, rest, ok := strings.Cut(name, "__")
		if !ok {
			return nil, false
		}
		name = rest
	}
}

// Without takes the entries of section whose key is in names (overridden
// states and intents) out of doc, which the caller owns; state names are
// normalised before they are compared.
func Without(doc *yaml.Node, section string, names map[string]bool) *yaml.Node {
	f := &folder{}
	return f.mapping(doc, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
		m := deref(v)
		if k.Value != section || m == nil || m.Kind != yaml.MappingNode {
			return k, v
		}
		out := m.Content[:0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			name := m.Content[i].Value
			if section == "states" {
				name = NormState(name)
			}
			if !names[name] {
				out = append(out, m.Content[i], m.Content[i+1])
			}
		}
		m.Content = out
		return k, v
	})
}

// Copy copies n (what the importer writes and the fold places in the
// imported story: an exit's set:, a binding, an override). A node reached
// several times (through YAML aliases) is copied once and stays shared, so
// the copy is as large as the text.
func Copy(n *yaml.Node) *yaml.Node {
	return copyNode(n, map[*yaml.Node]*yaml.Node{})
}

func copyNode(n *yaml.Node, memo map[*yaml.Node]*yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if c, ok := memo[n]; ok {
		return c
	}
	c := *n
	memo[n] = &c
	if n.Alias != nil {
		c.Alias = copyNode(n.Alias, memo)
	}
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			c.Content[i] = copyNode(x, memo)
		}
	}
	return &c
}

// PlaceAt moves n and everything under it to line:col.
func PlaceAt(n *yaml.Node, line, col int) {
	placeAt(n, line, col, map[*yaml.Node]bool{})
}

func placeAt(n *yaml.Node, line, col int, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	n.Line, n.Column = line, col
	placeAt(n.Alias, line, col, seen)
	for _, c := range n.Content {
		placeAt(c, line, col, seen)
	}
}

// Scalar is a string scalar node.
func Scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// deref follows aliases and document nodes to the node they stand for.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil {
		switch n.Kind {
		case yaml.AliasNode:
			n = n.Alias
		case yaml.DocumentNode:
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		default:
			return n
		}
	}
	return nil
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}
