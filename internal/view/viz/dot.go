package viz

import (
	"fmt"
	"strings"
)

// DOT writes the graph in Graphviz's DOT language: states as rounded
// boxes (name, description, on_enter invokes), terminal states with a
// double border, a start point before the initial state, a cluster per
// state with children (dashed for parallel, with a sub-cluster per
// region; dotted for an imported story) holding a start point before its
// initial child (an import's entry), on_error edges dashed,
// Highlight's marks filled and drawn thick in orange, and the states
// SetCurrent marked filled in blue.
func DOT(g *Graph) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(g.Title))
	b.WriteString("  rankdir=LR;\n  compound=true;\n")
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", fontsize=11];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=9];\n")
	var initial *Node
	g.Walk(func(n *Node, _ int) {
		if n.Initial {
			initial = n
		}
	})
	if initial != nil {
		b.WriteString("  \"__start__\" [shape=point, width=0.15, label=\"\", style=filled, fillcolor=\"#333333\"];\n")
	}
	cluster := 0
	var inits []*Node
	var writeNodes func(ns []*Node, indent string)
	writeNodes = func(ns []*Node, indent string) {
		for _, n := range ns {
			if !n.IsCluster() {
				fmt.Fprintf(&b, "%s%s;\n", indent, dotNode(n))
				continue
			}
			style := "rounded"
			switch {
			case n.Kind == KindParallel:
				style = "dashed"
			case n.Kind == KindImport:
				style = "dotted"
			case n.Region:
				style = "rounded,dashed"
			}
			fmt.Fprintf(&b, "%ssubgraph \"cluster_%d\" {\n", indent, cluster)
			cluster++
			fmt.Fprintf(&b, "%s  label=%s;\n%s  style=%s;\n%s  color=\"#888888\";\n", indent, dotQuote(n.ClusterTitle()), indent, dotQuote(style), indent)
			if n.InitialChild != "" && g.index[n.InitialChild] != nil {
				fmt.Fprintf(&b, "%s  %s [shape=point, width=0.1, label=\"\", style=filled, fillcolor=\"#333333\"];\n", indent, dotQuote(initialID(n)))
				inits = append(inits, n)
			}
			fmt.Fprintf(&b, "%s  %s;\n", indent, dotNode(n))
			writeNodes(n.Children, indent+"  ")
			fmt.Fprintf(&b, "%s}\n", indent)
		}
	}
	writeNodes(g.Nodes, "  ")
	if initial != nil {
		attrs := ""
		if initial.Visited {
			attrs = " [color=\"#d9480f\", penwidth=3]"
		}
		fmt.Fprintf(&b, "  \"__start__\" -> %s%s;\n", dotQuote(initial.ID), attrs)
	}
	for _, n := range inits {
		attrs := ""
		if n.InitialTaken {
			attrs = " [color=\"#d9480f\", penwidth=3]"
		}
		fmt.Fprintf(&b, "  %s -> %s%s;\n", dotQuote(initialID(n)), dotQuote(n.InitialChild), attrs)
	}
	for _, e := range g.Edges {
		if g.index[e.From] == nil || g.index[e.To] == nil {
			continue
		}
		attrs := []string{"label=" + dotQuote(e.EdgeLabel())}
		if e.OnError != "" {
			attrs = append(attrs, "style=dashed", "color=\"#c92a2a\"", "fontcolor=\"#c92a2a\"")
		}
		if e.Taken {
			attrs = append(attrs, "color=\"#d9480f\"", "penwidth=3")
		}
		fmt.Fprintf(&b, "  %s -> %s [%s];\n", dotQuote(e.From), dotQuote(e.To), strings.Join(attrs, ", "))
	}
	b.WriteString("}\n")
	return b.String()
}

// initialID is the ID of the start point inside a cluster (Mermaid and
// DOT): state paths never start with "__initial__".
func initialID(n *Node) string { return "__initial__" + n.ID }

func dotNode(n *Node) string {
	attrs := []string{"label=" + dotQuote(strings.Join(n.Lines(), "\n"))}
	if n.Terminal {
		// Graphviz draws one border on a rounded box: a terminal state is
		// a square double box.
		attrs = append(attrs, "style=\"filled\"", "peripheries=2")
	}
	if n.Dynamic {
		attrs = append(attrs, "style=\"dashed\"")
	}
	switch {
	case n.Current:
		attrs = append(attrs, "fillcolor=\"#d0ebff\"", "color=\"#1c7ed6\"", "penwidth=3")
	case n.Visited:
		attrs = append(attrs, "fillcolor=\"#ffe8cc\"", "color=\"#d9480f\"", "penwidth=2")
	}
	return dotQuote(n.ID) + " [" + strings.Join(attrs, ", ") + "]"
}

// dotQuote is a DOT double-quoted string: backslash and quote escaped,
// newlines as DOT's centred line break \n.
func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r', '\t':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
