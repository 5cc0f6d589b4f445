package viz

import (
	"fmt"
	"strings"
)

// mermaidMarks are the nodes Mermaid marks: the initial state (reached from
// a start circle) and the IDs of the terminal, visited, current and dynamic
// ones (each a class).
type mermaidMarks struct {
	initial                             *Node
	terminal, visited, current, dynamic []string
}

// mermaidMarksOf walks the graph once to collect its marks, in drawing
// order.
func mermaidMarksOf(g *Graph, ids map[string]string) mermaidMarks {
	var m mermaidMarks
	g.Walk(func(n *Node, _ int) {
		if n.Initial {
			m.initial = n
		}
		if n.Terminal {
			m.terminal = append(m.terminal, ids[n.ID])
		}
		switch {
		case n.Current:
			m.current = append(m.current, ids[n.ID])
		case n.Visited:
			m.visited = append(m.visited, ids[n.ID])
		}
		if n.Dynamic {
			m.dynamic = append(m.dynamic, ids[n.ID])
		}
	})
	return m
}

// writeMermaidClasses writes the class definitions and assignments after
// the edges, and the linkStyle of the taken edges (by their index in
// drawing order). A class is defined only when a node has it, except the
// terminal and dynamic ones, which every chart defines.
func writeMermaidClasses(b *strings.Builder, m mermaidMarks, taken []int) {
	b.WriteString("  classDef terminal fill:#eeeeee,stroke:#333,stroke-width:2px\n")
	b.WriteString("  classDef dynamic stroke-dasharray:4\n")
	if len(m.terminal) > 0 {
		fmt.Fprintf(b, "  class %s terminal\n", strings.Join(m.terminal, ","))
	}
	if len(m.dynamic) > 0 {
		fmt.Fprintf(b, "  class %s dynamic\n", strings.Join(m.dynamic, ","))
	}
	if len(m.visited) > 0 {
		b.WriteString("  classDef visited fill:#ffe8cc,stroke:#d9480f,stroke-width:3px\n")
		fmt.Fprintf(b, "  class %s visited\n", strings.Join(m.visited, ","))
	}
	if len(m.current) > 0 {
		b.WriteString("  classDef current fill:#d0ebff,stroke:#1c7ed6,stroke-width:3px\n")
		fmt.Fprintf(b, "  class %s current\n", strings.Join(m.current, ","))
	}
	if len(taken) > 0 {
		ns := make([]string, len(taken))
		for i, t := range taken {
			ns[i] = fmt.Sprint(t)
		}
		fmt.Fprintf(b, "  linkStyle %s stroke:#d9480f,stroke-width:3px\n", strings.Join(ns, ","))
	}
}

// Mermaid writes the graph as a Mermaid flowchart (left to right). Node
// IDs are s0, s1… in drawing order (state paths hold characters Mermaid
// IDs cannot); a node with children (and a parallel state's region) is a
// subgraph sN_c holding its own node, a start circle sN_i before its
// initial child (an import's entry) and its children. Terminal states are stadiums with class terminal,
// the initial state is reached from a start circle, and Highlight's marks
// become class visited and a linkStyle on the taken edges; SetCurrent's
// states are class current.
func Mermaid(g *Graph) string {
	ids := nodeIDs(g)
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	if g.Title != "" {
		fmt.Fprintf(&b, "  %%%% %s\n", strings.Join(strings.Fields(g.Title), " "))
	}
	m := mermaidMarksOf(g, ids)
	initial := m.initial
	var inits []*Node
	var writeNodes func(ns []*Node, indent string)
	writeNodes = func(ns []*Node, indent string) {
		for _, n := range ns {
			if !n.IsCluster() {
				fmt.Fprintf(&b, "%s%s\n", indent, mermaidNode(ids[n.ID], n))
				continue
			}
			fmt.Fprintf(&b, "%ssubgraph %s_c [\"%s\"]\n", indent, ids[n.ID], mermaidTitle(n.ClusterTitle()))
			if ids[n.InitialChild] != "" {
				fmt.Fprintf(&b, "%s  %s_i((\" \"))\n", indent, ids[n.ID])
				inits = append(inits, n)
			}
			fmt.Fprintf(&b, "%s  %s\n", indent, mermaidNode(ids[n.ID], n))
			writeNodes(n.Children, indent+"  ")
			fmt.Fprintf(&b, "%send\n", indent)
		}
	}
	if initial != nil {
		b.WriteString("  start_((\" \"))\n")
	}
	writeNodes(g.Nodes, "  ")
	var taken []int
	edge := 0
	if initial != nil {
		fmt.Fprintf(&b, "  start_ --> %s\n", ids[initial.ID])
		if initial.Visited {
			taken = append(taken, edge)
		}
		edge++
	}
	for _, n := range inits {
		fmt.Fprintf(&b, "  %s_i --> %s\n", ids[n.ID], ids[n.InitialChild])
		if n.InitialTaken {
			taken = append(taken, edge)
		}
		edge++
	}
	for _, e := range g.Edges {
		from, to := ids[e.From], ids[e.To]
		if from == "" || to == "" {
			continue
		}
		arrow := "-->"
		if e.OnError != "" {
			arrow = "-.->"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", from, arrow, mermaidText(e.EdgeLabel()), to)
		if e.Taken {
			taken = append(taken, edge)
		}
		edge++
	}
	writeMermaidClasses(&b, m, taken)
	return b.String()
}

// mermaidTitle is a cluster title: its line breaks as <br/>.
func mermaidTitle(t string) string {
	lines := strings.Split(t, "\n")
	for i, l := range lines {
		lines[i] = mermaidText(l)
	}
	return strings.Join(lines, "<br/>")
}

func mermaidNode(id string, n *Node) string {
	lines := n.Lines()
	for i, l := range lines {
		lines[i] = mermaidText(l)
	}
	text := strings.Join(lines, "<br/>")
	if n.Terminal {
		return fmt.Sprintf("%s([\"%s\"])", id, text)
	}
	return fmt.Sprintf("%s[\"%s\"]", id, text)
}

// mermaidText escapes text for a quoted Mermaid label: the characters
// that end a label or start markup become entity codes.
func mermaidText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString("#quot;")
		case '#':
			b.WriteString("#35;")
		case '<':
			b.WriteString("#lt;")
		case '>':
			b.WriteString("#gt;")
		case '|':
			b.WriteString("#124;")
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// nodeIDs numbers the nodes in drawing order.
func nodeIDs(g *Graph) map[string]string {
	ids := map[string]string{}
	i := 0
	g.Walk(func(n *Node, _ int) {
		ids[n.ID] = fmt.Sprintf("s%d", i)
		i++
	})
	return ids
}
