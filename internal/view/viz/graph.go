// Package viz draws a story's state machine: a small graph model built
// from the compiled story (FromStory), coloured by the path a run took
// (Highlight), written as Mermaid or DOT and rendered to SVG or PNG with
// a pure-Go Graphviz (no system Graphviz).
package viz

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// Kind says how a node with children is drawn.
type Kind string

const (
	// KindState is a plain state; with children (dotted names under a
	// declared state) it is drawn as a cluster holding its own node and
	// its children.
	KindState Kind = ""
	// KindCompound is a type: compound state: a cluster whose initial
	// child is reached from a start point inside it.
	KindCompound Kind = "compound"
	// KindParallel is a state whose children (regions) run side by side:
	// a cluster with one sub-cluster per region.
	KindParallel Kind = "parallel"
	// KindImport is an imported sub-story's wrapper state, drawn as a
	// cluster labelled with the alias and the source, its entry state
	// marked like an initial child.
	KindImport Kind = "import"
)

// Node is one state. ID is its full path (unique in the graph).
type Node struct {
	ID          string
	Label       string // the last path segment, or the exit's name
	Description string
	OnEnter     []string // the handlers its on_enter invokes
	Terminal    bool
	Exit        string // for an exit state: the exit's name
	Initial     bool   // the story's root state
	Kind        Kind
	Children    []*Node
	// Region marks a region of a parallel state: drawn as a sub-cluster
	// even without children of its own.
	Region bool
	// InitialChild is the ID of the child a compound state enters first,
	// or an import's entry state; InitialTemplate is a templated
	// initial: (shown in the cluster's title, no start point).
	InitialChild    string
	InitialTemplate string
	// Alias, Source and Version are an import's alias, source: and
	// version:.
	Alias, Source, Version string
	// Dynamic marks the pseudo-node a templated target points to; Label is
	// the template.
	Dynamic bool
	Visited bool // Highlight: the run entered this state
	// Current (SetCurrent): the run is in this state now (for a parallel
	// configuration, the parallel state and each leaf).
	Current bool
	// InitialTaken (Highlight): the run entered InitialChild from here.
	InitialTaken bool
}

// Edge is one transition arm (or an on_error redirect).
type Edge struct {
	From, To string
	Intent   string // "*" for the wildcard; "" for an on_error edge
	Guard    string // the when: source
	Default  bool   // a default: arm
	Stay     bool   // target "."
	OnError  string // the handler whose failure takes this edge
	Taken    bool   // Highlight: the run took it
}

// Graph is a story's state machine.
type Graph struct {
	Title  string
	Nodes  []*Node // top-level nodes, children inside them
	Edges  []*Edge
	index  map[string]*Node
	parent map[string]*Node // child ID -> the node it is drawn inside
}

// Node returns the node with this ID, or nil.
func (g *Graph) Node(id string) *Node { return g.index[id] }

// Walk calls fn for every node, parents before children, in drawing order.
func (g *Graph) Walk(fn func(n *Node, depth int)) {
	var walk func(ns []*Node, d int)
	walk = func(ns []*Node, d int) {
		for _, n := range ns {
			fn(n, d)
			walk(n.Children, d+1)
		}
	}
	walk(g.Nodes, 0)
}

// NewGraph indexes nodes given as a tree (the builder other structures
// use: compound, parallel and imported states set Kind and Children).
func NewGraph(title string, nodes []*Node, edges []*Edge) *Graph {
	g := &Graph{Title: title, Nodes: nodes, Edges: edges, index: map[string]*Node{}, parent: map[string]*Node{}}
	g.Walk(func(n *Node, _ int) {
		g.index[n.ID] = n
		for _, c := range n.Children {
			g.parent[c.ID] = n
		}
	})
	return g
}

// maxDescription is how many characters of a description a node shows.
const maxDescription = 80

// FromStory builds the graph of a compiled story: every state, the root
// first (dotted states inside their nearest declared ancestor, as
// clusters), the arms of each on: intent in order, on_error redirects of
// on_enter invokes, and a pseudo-node per templated target.
func FromStory(st *story.Story) *Graph {
	names := stateOrder(st)
	nodes := make(map[string]*Node, len(names))
	for _, name := range names {
		nodes[name] = stateNode(st, name)
	}
	top := nestStates(st, names, nodes)
	edges, top := storyEdges(st, names, top)
	title := st.App.ID
	if st.App.Title != "" {
		title = st.App.Title
	}
	return NewGraph(title, top, edges)
}

// stateOrder lists the story's state names in drawing order: the root
// first (Mermaid lays nodes out in declaration order), then the others by
// path.
func stateOrder(st *story.Story) []string {
	names := make([]string, 0, len(st.States))
	for n := range st.States {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == st.Root) != (names[j] == st.Root) {
			return names[i] == st.Root
		}
		return names[i] < names[j]
	})
	return names
}

// stateNode is the node of one state on its own, before nesting: its
// label, description, on_enter invokes, and its kind (import, parallel or
// compound, with the initial child the start circle points at).
func stateNode(st *story.Story, name string) *Node {
	s := st.States[name]
	n := &Node{ID: name, Label: lastSegment(name), Description: clip(s.Description, maxDescription),
		Terminal: s.Terminal, Exit: s.Exit, Initial: name == st.Root}
	if s.Exit != "" {
		n.Label = "exit: " + s.Exit
	}
	for _, e := range s.OnEnter {
		if e.Invoke != nil {
			n.OnEnter = append(n.OnEnter, e.Invoke.Name)
		}
	}
	switch {
	case s.Import != nil:
		n.Kind, n.Alias, n.Source, n.Version, n.InitialChild = KindImport, s.Import.Alias, s.Import.Source, s.Import.Version, s.Import.Entry
	case s.IsParallel():
		n.Kind = KindParallel
	case s.IsCompound():
		n.Kind, n.InitialChild = KindCompound, s.Initial
		switch {
		case s.InitialValue != nil:
			n.InitialTemplate = s.InitialValue.Source()
		case s.InitialText != nil:
			n.InitialTemplate = s.InitialText.Source()
		}
	}
	return n
}

// nestStates puts each node inside its parent's and returns the top-level
// ones. A parallel state's children are marked as regions, and nested
// states keep their declaration order (dotted names declared apart stay
// sorted, after them).
func nestStates(st *story.Story, names []string, nodes map[string]*Node) []*Node {
	for _, name := range names {
		if s := st.States[name]; s.IsParallel() {
			for _, c := range s.Children {
				if n := nodes[c]; n != nil {
					n.Region = true
				}
			}
		}
	}
	var top []*Node
	for _, name := range names {
		n, s := nodes[name], st.States[name]
		if s.Parent != "" && nodes[s.Parent] != nil {
			nodes[s.Parent].Children = append(nodes[s.Parent].Children, n)
		} else {
			top = append(top, n)
		}
	}
	for name, n := range nodes {
		order := map[string]int{}
		for i, c := range st.States[name].Children {
			order[c] = i + 1
		}
		if len(order) == 0 {
			continue
		}
		sort.SliceStable(n.Children, func(i, j int) bool {
			oi, oj := order[n.Children[i].ID], order[n.Children[j].ID]
			if oi == 0 || oj == 0 {
				return oi != 0 && oj == 0
			}
			return oi < oj
		})
	}
	return top
}

// storyEdges lists every state's edges: the arms of its on: intents (by
// intent name, arms in order) and the on_error redirects of its on_enter
// invokes. A templated target gets one dynamic pseudo-node per template,
// appended to top, which is returned.
func storyEdges(st *story.Story, names []string, top []*Node) ([]*Edge, []*Node) {
	var edges []*Edge
	dynamic := map[string]*Node{}
	for _, name := range names {
		s := st.States[name]
		intents := make([]string, 0, len(s.On))
		for in := range s.On {
			intents = append(intents, in)
		}
		sort.Strings(intents)
		for _, in := range intents {
			for _, a := range s.On[in] {
				e := &Edge{From: name, To: a.Target, Intent: in, Default: a.Default, Stay: a.Stay}
				if a.When != nil {
					e.Guard = a.When.Source()
				}
				if a.Stay {
					e.To = name
				}
				if a.TargetTemplate != nil {
					src := a.TargetTemplate.Source()
					id := "template:" + src
					if dynamic[id] == nil {
						dn := &Node{ID: id, Label: src, Dynamic: true}
						dynamic[id] = dn
						top = append(top, dn)
					}
					e.To = id
				}
				edges = append(edges, e)
			}
		}
		for _, ef := range s.OnEnter {
			if ef.Invoke != nil && ef.Invoke.OnError != "" && !ef.Invoke.OnErrorDeferred { // a deferred target names no state of the graph
				edges = append(edges, &Edge{From: name, To: ef.Invoke.OnError, OnError: ef.Invoke.Name})
			}
		}
	}
	return edges, top
}

// Highlight marks the states a run entered and the transitions it took,
// from a trace's machine.transition and machine.state_entered events. A
// state path may be a parallel configuration ("P#leaf|leaf"): the
// parallel state and every leaf count, and a leaf's enclosing states are
// marked with it. A transition marks the arms whose intent matches
// (or "*"), whose source holds one of the from configuration's states and
// whose target holds one of the to configuration's; of those, the ones
// declared innermost (the arm the session takes first), then with the
// most specific target. A cluster's start arrow is taken when the run
// entered the cluster and then its initial child. It returns the
// trace's states the graph does not have (sorted), so a caller can say
// the trace is of another version of the story.
func (g *Graph) Highlight(evs []trace.Event) []string {
	missing := map[string]bool{}
	visit := func(path string) {
		if path == "" {
			return
		}
		for _, id := range configStates(path) {
			n := g.index[id]
			if n == nil {
				missing[id] = true
				continue
			}
			for ; n != nil; n = g.parent[n.ID] {
				n.Visited = true
			}
		}
	}
	// A cluster's start arrow was taken when its initial child was
	// entered right after it (the session enters a compound state, then
	// its initial child).
	last := ""
	for i := range evs {
		ev := &evs[i]
		switch ev.Kind {
		case trace.KindMachineTransition:
			var p trace.MachineTransition
			if trace.Decode(ev, &p) != nil {
				continue
			}
			visit(p.From)
			visit(p.To)
			g.markTaken(p)
			last = ""
		case trace.KindMachineStateEntered:
			var p trace.MachineStateEntered
			if trace.Decode(ev, &p) != nil {
				continue
			}
			visit(p.State)
			if pn := g.parent[p.State]; pn != nil && pn.ID == last && pn.InitialChild == p.State {
				pn.InitialTaken = true
			}
			last = p.State
		}
	}
	out := make([]string, 0, len(missing))
	for id := range missing {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// SetCurrent marks the states a run is in now, as a printed state path
// names them (a parallel configuration P#leaf|leaf marks P and each
// leaf), and clears the mark from every other node. It returns the
// states the graph does not have.
func (g *Graph) SetCurrent(path string) []string {
	g.Walk(func(n *Node, _ int) { n.Current = false })
	if path == "" {
		return nil
	}
	var missing []string
	for _, id := range configStates(path) {
		if n := g.index[id]; n != nil {
			n.Current = true
		} else {
			missing = append(missing, id)
		}
	}
	return missing
}

// markTaken marks the arms one machine.transition took.
func (g *Graph) markTaken(p trace.MachineTransition) {
	from, to := configStates(p.From), configStates(p.To)
	holds := holdsAny
	var cands []*Edge
	depth := -1
	for _, e := range g.Edges {
		if e.OnError != "" || (e.Intent != p.Intent && e.Intent != "*") || !holds(e.From, from) {
			continue
		}
		if !(holds(e.To, to) || e.Stay && p.From == p.To) {
			continue
		}
		// Innermost source first, then the most specific target.
		d := strings.Count(e.From, ".")*1000 + strings.Count(e.To, ".")
		if d > depth {
			cands, depth = cands[:0], d
		}
		if d == depth {
			cands = append(cands, e)
		}
	}
	for _, e := range cands {
		e.Taken = true
	}
}

func holdsAny(anc string, paths []string) bool {
	for _, path := range paths {
		if path == anc || strings.HasPrefix(path, anc+".") {
			return true
		}
	}
	return false
}

// configStates is the states a printed state path names: the path, or
// for a parallel configuration each parallel state and each leaf.
func configStates(path string) []string {
	c, err := story.ParseConfig(path)
	if err != nil {
		return []string{path}
	}
	return c.States()
}

// IsCluster reports whether the node is drawn as a cluster: it has
// children, or it is a parallel state's region.
func (n *Node) IsCluster() bool { return len(n.Children) > 0 || n.Region }

// ClusterTitle is a cluster's label: the state's path, with its kind
// ("compound: ", "parallel: ", "region: "), an import as
// "import: alias (source)" with its version (and "at <path>" on a second
// line when imported inside an import), and a templated initial: on a
// further line.
func (n *Node) ClusterTitle() string {
	t := n.ID
	switch {
	case n.Kind == KindImport:
		t = "import: " + n.Alias + " (" + n.Source + ")"
		if n.Version != "" {
			t += " version " + n.Version
		}
		if n.ID != n.Alias {
			t += "\nat " + n.ID
		}
	case n.Region:
		t = "region: " + n.ID
	case n.Kind != KindState:
		t = string(n.Kind) + ": " + n.ID
	}
	if n.InitialTemplate != "" {
		t += "\ninitial: " + n.InitialTemplate
	}
	return t
}

// EdgeLabel is the text on an edge: the intent (or "on_error: handler"),
// then "[when: guard]", "[default]" or "(stay)".
func (e *Edge) EdgeLabel() string {
	if e.OnError != "" {
		return "on_error: " + e.OnError
	}
	parts := []string{e.Intent}
	switch {
	case e.Guard != "":
		parts = append(parts, "[when: "+e.Guard+"]")
	case e.Default:
		parts = append(parts, "[default]")
	}
	if e.Stay {
		parts = append(parts, "(stay)")
	}
	return strings.Join(parts, " ")
}

// Lines is a node's text, one entry per line: its name (marked when
// terminal), its description, then "on_enter: handler" per invoke.
func (n *Node) Lines() []string {
	name := n.Label
	switch {
	case n.Dynamic:
		name = "target: " + n.Label
	case n.Terminal && n.Exit == "":
		name += " (terminal)"
	}
	out := []string{name}
	if n.Description != "" {
		out = append(out, n.Description)
	}
	for _, h := range n.OnEnter {
		out = append(out, "on_enter: "+h)
	}
	return out
}

func lastSegment(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// errorf prefixes viz errors.
func errorf(format string, args ...any) error { return fmt.Errorf("viz: "+format, args...) }
