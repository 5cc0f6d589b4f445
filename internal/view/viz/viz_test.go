package viz

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-graphviz"
	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/view/viz/gvrender"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func load(t *testing.T, path string, opts ...story.Option) *story.Story {
	t.Helper()
	st, err := story.Load(path, append(opts, story.WithLookupEnv(fakeEnv))...)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fakeEnv sets every ${VAR} a story names, so loading does not depend on
// the machine's environment.
func fakeEnv(name string) (string, bool) { return "test-value-of-" + name, true }

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, d)
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct{ story, trace, name string }{
		{"../../../stories/hello/app.yaml", "", "hello"},
		{"../../../stories/hello/app.yaml", "testdata/hello-run.jsonl", "hello-highlight"},
		{"testdata/shapes/app.yaml", "", "shapes"},
		{"testdata/nested/app.yaml", "", "nested"},
		{"testdata/nested/app.yaml", "testdata/nested-run.jsonl", "nested-highlight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := FromStory(load(t, tc.story))
			if tc.trace != "" {
				evs, err := trace.ReadFile(tc.trace)
				if err != nil {
					t.Fatal(err)
				}
				if missing := g.Highlight(evs); len(missing) != 0 {
					t.Errorf("Highlight: missing states %v", missing)
				}
			}
			golden(t, tc.name+".mmd", Mermaid(g))
			golden(t, tc.name+".dot", DOT(g))
		})
	}
}

// TestShapes checks what the graph says about the fixture, through the
// parsed Mermaid (labels unescaped by the parser's reading of entities).
func TestShapes(t *testing.T) {
	g := FromStory(load(t, "testdata/shapes/app.yaml"))
	c, err := parseMermaid(Mermaid(g))
	if err != nil {
		t.Fatal(err)
	}
	ids := nodeIDs(g)
	label := func(id string) string { return c.Nodes[ids[id]] }
	if got := label("start"); !strings.HasPrefix(got, "start<br/>Where it begins: a #lt;b#gt;#124;#35;1#quot;quoted#quot;") {
		t.Errorf("start label = %q", got)
	}
	if got := c.Shapes[ids["__exit__done"]]; got != "stadium" {
		t.Errorf("exit state shape = %q, want stadium (terminal)", got)
	}
	if got := c.Classes["terminal"]; !cmp.Equal(got, []string{ids["__exit__done"]}) {
		t.Errorf("terminal class = %v", got)
	}
	if got := c.Subgraphs[ids["work"]+"_c"]; !cmp.Equal(got, []string{ids["work"], ids["work.a"], ids["work.step"]}) {
		t.Errorf("work cluster holds %v", got)
	}
	var labels []string
	for _, e := range c.Edges {
		if e.From == ids["start"] {
			labels = append(labels, e.Label)
		}
	}
	want := []string{
		"go [when: world.n #gt; 1 && world.mode == #quot;b#124;c#quot;]", "go [default]", "jump", "leave", "poke (stay)",
	}
	if d := cmp.Diff(want, labels); d != "" {
		t.Errorf("start's edges (-want +got):\n%s", d)
	}
	var onError []mmEdge
	for _, e := range c.Edges {
		if e.Arrow == "-.->" {
			onError = append(onError, e)
		}
	}
	if d := cmp.Diff([]mmEdge{{From: ids["work"], To: ids["start"], Label: "on_error: host.agent.decide", Arrow: "-.->"}}, onError); d != "" {
		t.Errorf("on_error edges (-want +got):\n%s", d)
	}
	if n := g.Node("template:work.{{ world.mode }}"); n == nil || !n.Dynamic {
		t.Errorf("templated target: no dynamic node")
	}
}

// TestClusters checks the nested fixture's clusters through both parsers:
// a compound state's cluster holds its node, a start point and its
// children (its initial child reached from the start point), a parallel
// state's holds one sub-cluster per region, an import's is labelled with
// the alias, the source and the version and marks the entry state.
func TestClusters(t *testing.T) {
	g := FromStory(load(t, "testdata/nested/app.yaml"))
	ids := nodeIDs(g)
	c, err := parseMermaid(Mermaid(g))
	if err != nil {
		t.Fatal(err)
	}
	type cluster struct {
		Title, Parent string
		Holds         []string
	}
	got := map[string]cluster{}
	for id, holds := range c.Subgraphs {
		got[id] = cluster{c.Titles[id], c.SubParent[id], holds}
	}
	sg := func(state string) string { return ids[state] + "_c" }
	want := map[string]cluster{
		sg("box"):           {"compound: box", "", []string{ids["box"] + "_i", ids["box"], ids["box.lid"]}},
		sg("box.inside"):    {"compound: box.inside<br/>initial: {{ 'deep' }}", sg("box"), []string{ids["box.inside"], ids["box.inside.deep"]}},
		sg("clock"):         {"parallel: clock", "", []string{ids["clock"]}},
		sg("clock.time"):    {"region: clock.time", sg("clock"), []string{ids["clock.time"] + "_i", ids["clock.time"], ids["clock.time.am"], ids["clock.time.pm"]}},
		sg("clock.weather"): {"region: clock.weather", sg("clock"), []string{ids["clock.weather"] + "_i", ids["clock.weather"], ids["clock.weather.dry"], ids["clock.weather.wet"]}},
		sg("shop"):          {"import: shop (errand/app.yaml) version 1.0", "", []string{ids["shop"] + "_i", ids["shop"], ids["shop.paid"], ids["shop.start"]}},
		sg("shop.bag"):      {"import: bag (bag/app.yaml)<br/>at shop.bag", sg("shop"), []string{ids["shop.bag"] + "_i", ids["shop.bag"], ids["shop.bag.pick"]}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Mermaid subgraphs (-want +got):\n%s", d)
	}
	starts := map[string]string{}
	for _, e := range c.Edges {
		if strings.HasSuffix(e.From, "_i") {
			starts[e.From] = e.To
		}
	}
	wantStarts := map[string]string{
		ids["box"] + "_i": ids["box.lid"], ids["clock.time"] + "_i": ids["clock.time.am"],
		ids["clock.weather"] + "_i": ids["clock.weather.dry"], ids["shop"] + "_i": ids["shop.start"],
		ids["shop.bag"] + "_i": ids["shop.bag.pick"],
	}
	if d := cmp.Diff(wantStarts, starts); d != "" {
		t.Errorf("Mermaid start arrows (-want +got):\n%s", d)
	}

	pg, err := graphviz.ParseBytes([]byte(DOT(g)))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	// label -> the labels of the clusters directly inside and its node count
	// (nested clusters' nodes included, as Graphviz counts them).
	type dotCluster struct {
		Inside []string
		Nodes  int
	}
	dc := map[string]dotCluster{}
	var walk func(gr *graphviz.Graph) []string
	walk = func(gr *graphviz.Graph) []string {
		var labels []string
		sub, err := gr.FirstSubGraph()
		for ; err == nil && sub != nil; sub, err = sub.NextSubGraph() {
			l := sub.GetStr("label")
			n, nerr := sub.NodeNum()
			if nerr != nil {
				t.Fatal(nerr)
			}
			dc[l] = dotCluster{walk(sub), n}
			labels = append(labels, l)
		}
		if err != nil {
			t.Fatal(err)
		}
		return labels
	}
	top := walk(pg)
	wantDot := map[string]dotCluster{
		"compound: box": {[]string{"compound: box.inside\\ninitial: {{ 'deep' }}"}, 5},
		"compound: box.inside\\ninitial: {{ 'deep' }}": {nil, 2},
		"parallel: clock":                            {[]string{"region: clock.time", "region: clock.weather"}, 9},
		"region: clock.time":                         {nil, 4},
		"region: clock.weather":                      {nil, 4},
		"import: shop (errand/app.yaml) version 1.0": {[]string{"import: bag (bag/app.yaml)\\nat shop.bag"}, 7},
		"import: bag (bag/app.yaml)\\nat shop.bag":   {nil, 3},
	}
	if d := cmp.Diff(wantDot, dc); d != "" {
		t.Errorf("DOT clusters (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"compound: box", "parallel: clock", "import: shop (errand/app.yaml) version 1.0"}, top); d != "" {
		t.Errorf("top-level DOT clusters (-want +got):\n%s", d)
	}
}

// TestHighlightNested colours a recorded run of the nested fixture: the
// parallel configurations (clock#clock.time.am|clock.weather.dry) count
// their leaves and the parallel state, arms declared on an enclosing
// state are taken from a leaf inside it, and a cluster's start arrow is
// taken when the run entered it and then its initial child.
func TestHighlightNested(t *testing.T) {
	g := FromStory(load(t, "testdata/nested/app.yaml"))
	evs, err := trace.ReadFile("testdata/nested-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if missing := g.Highlight(evs); len(missing) != 0 {
		t.Errorf("missing = %v", missing)
	}
	var unvisited []string
	g.Walk(func(n *Node, _ int) {
		if !n.Visited {
			unvisited = append(unvisited, n.ID)
		}
	})
	if d := cmp.Diff([]string{"__exit__bye"}, unvisited); d != "" {
		t.Errorf("unvisited (-want +got):\n%s", d)
	}
	var taken []string
	for _, e := range g.Edges {
		if e.Taken {
			taken = append(taken, e.From+">"+e.To+":"+e.Intent)
		}
	}
	want := []string{
		"hall>shop.start:errand", "hall>box:open", "hall>clock:tick", "box>hall:close", "box.lid>box.inside:next",
		"clock>hall:close", "clock.time.am>clock.time.pm:tick", "clock.weather.dry>clock.weather.wet:rain", "shop.bag.pick>shop.paid:shop__bag__pack",
		"shop.start>shop.bag.pick:shop__buy",
	}
	if d := cmp.Diff(want, taken); d != "" {
		t.Errorf("taken (-want +got):\n%s", d)
	}
	var starts []string
	g.Walk(func(n *Node, _ int) {
		if n.InitialTaken {
			starts = append(starts, n.ID)
		}
	})
	if d := cmp.Diff([]string{"box", "clock.time", "clock.weather", "shop", "shop.bag"}, starts); d != "" {
		t.Errorf("start arrows taken (-want +got):\n%s", d)
	}
	// A parallel configuration the story does not have is reported by
	// its states.
	g = FromStory(load(t, "testdata/nested/app.yaml"))
	got := g.Highlight([]trace.Event{{Kind: trace.KindMachineTransition, Payload: map[string]any{"from": "clock#clock.time.am|clock.sky.blue", "to": "hall", "intent": "close"}}})
	if d := cmp.Diff([]string{"clock.sky.blue"}, got); d != "" {
		t.Errorf("missing (-want +got):\n%s", d)
	}
}

func TestHighlight(t *testing.T) {
	g := FromStory(load(t, "../../../stories/hello/app.yaml"))
	evs, err := trace.ReadFile("testdata/hello-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	evs = append(evs, trace.Event{Turn: 9, Kind: trace.KindMachineTransition, Payload: map[string]any{"from": "farewell", "to": "gone", "intent": "x"}})
	if got := g.Highlight(evs); !cmp.Equal(got, []string{"gone"}) {
		t.Errorf("missing = %v, want [gone]", got)
	}
	var visited []string
	g.Walk(func(n *Node, _ int) {
		if n.Visited {
			visited = append(visited, n.ID)
		}
	})
	if d := cmp.Diff([]string{"lobby", "farewell", "greeted", "greeting"}, visited); d != "" {
		t.Errorf("visited (-want +got):\n%s", d)
	}
	taken := map[string]bool{}
	for _, e := range g.Edges {
		if e.Taken {
			taken[e.From+">"+e.To+":"+e.Intent] = true
		}
	}
	want := map[string]bool{"lobby>greeting:greet": true, "greeting>greeted:greeted": true, "greeted>lobby:again": true, "greeted>farewell:bye": true}
	if d := cmp.Diff(want, taken); d != "" {
		t.Errorf("taken (-want +got):\n%s", d)
	}
	c, err := parseMermaid(Mermaid(g))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.LinkStyle) != 5 { // the start arrow and the four taken edges
		t.Errorf("linkStyle covers %v, want 5 edges", c.LinkStyle)
	}
}

// checkStory is the acceptance check on one story: the Mermaid parses,
// with a node per state and an edge per drawn transition; the DOT parses
// with Graphviz's own parser, with the same counts; the SVG renders.
func checkStory(t *testing.T, r *gvrender.Renderer, st *story.Story) {
	t.Helper()
	g := FromStory(st)
	nodes, edges := 0, 0
	g.Walk(func(*Node, int) { nodes++ })
	for _, e := range g.Edges {
		if g.Node(e.From) != nil && g.Node(e.To) != nil {
			edges++
		}
	}
	start := 0 // start points: the story's, and one per cluster with an initial child
	if g.Node(st.Root) != nil {
		start = 1
	}
	g.Walk(func(n *Node, _ int) {
		if n.IsCluster() && g.Node(n.InitialChild) != nil {
			start++
		}
	})
	c, err := parseMermaid(Mermaid(g))
	if err != nil {
		t.Fatalf("mermaid: %v", err)
	}
	if len(c.Nodes) != nodes+start || len(c.Edges) != edges+start {
		t.Errorf("mermaid: %d nodes, %d edges; want %d, %d", len(c.Nodes), len(c.Edges), nodes+start, edges+start)
	}
	dot := DOT(g)
	pg, err := graphviz.ParseBytes([]byte(dot))
	if err != nil {
		t.Fatalf("DOT does not parse: %v\n%s", err, dot)
	}
	gn, ge := countGraph(t, pg)
	pg.Close()
	if gn != nodes+start || ge != edges+start {
		t.Errorf("DOT: %d nodes, %d edges; want %d, %d", gn, ge, nodes+start, edges+start)
	}
	svg, err := r.Render(context.Background(), dot, "svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("</svg>")) {
		t.Errorf("not an SVG: %.200s", svg)
	}
}

func TestEveryStory(t *testing.T) {
	r, err := gvrender.NewRenderer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	paths, _ := filepath.Glob("../../../stories/*/app.yaml")
	paths = append(paths, "testdata/shapes/app.yaml")
	if len(paths) < 2 {
		t.Fatal("no stories found")
	}
	for _, p := range paths {
		t.Run(filepath.Base(filepath.Dir(p)), func(t *testing.T) {
			checkStory(t, r, load(t, p, story.WithWorkspace("../../..")))
		})
	}
}

// TestCorpusStories runs the same check on every story of a corpus that
// loads, when KITSOKI_VIZ_CORPUS names its stories directory (make
// test-viz-corpus sets it to Kitsoki's); stories that do not load are
// the corpus check's business and are only counted.
func TestCorpusStories(t *testing.T) {
	dir := os.Getenv("KITSOKI_VIZ_CORPUS")
	if dir == "" {
		t.Skip("KITSOKI_VIZ_CORPUS is not set (make test-viz-corpus sets it)")
	}
	r, err := gvrender.NewRenderer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "app.yaml"))
	if len(paths) == 0 {
		t.Fatalf("no */app.yaml under %s", dir)
	}
	loaded := 0
	for _, p := range paths {
		st, err := story.Load(p, story.WithWorkspace(filepath.Dir(dir)), story.WithLookupEnv(fakeEnv), story.WithStubbedHosts())
		if err != nil {
			t.Logf("%s: does not load: %.120v", p, err)
			continue
		}
		loaded++
		t.Run(filepath.Base(filepath.Dir(p)), func(t *testing.T) { checkStory(t, r, st) })
		st.Close()
	}
	t.Logf("viz corpus: %d of %d stories load and were drawn", loaded, len(paths))
}

func TestPNG(t *testing.T) {
	r, err := gvrender.NewRenderer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g := FromStory(load(t, "testdata/shapes/app.yaml"))
	render := func(ctx context.Context, dot string, f Format) ([]byte, error) { return r.Render(ctx, dot, string(f)) }
	b, err := Output(context.Background(), g, FormatPNG, render)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("not a PNG: % x", b[:8])
	}
}

// TestHelperRender runs a stand-in renderer as the child process: DOT
// goes in on stdin, the format is its argument, its stdout is the image,
// and a failure carries its stderr.
func TestHelperRender(t *testing.T) {
	g := FromStory(load(t, "testdata/shapes/app.yaml"))
	b, err := Output(context.Background(), g, FormatSVG, HelperRender("testdata/fake-graphviz.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "svg " + fmt.Sprint(len(DOT(g))) + "\n"; string(b) != want {
		t.Errorf("helper output = %q, want %q", b, want)
	}
	_, err = Output(context.Background(), g, FormatPNG, HelperRender("testdata/fake-graphviz.sh"))
	if err == nil || err.Error() != "viz: kitsoki-graphviz: fake: png refused" {
		t.Errorf("failing helper: %v", err)
	}
	t.Setenv("KITSOKI_GRAPHVIZ", "testdata/none")
	if _, err := FindHelper(); err == nil || err.Error() != "viz: KITSOKI_GRAPHVIZ=testdata/none: stat testdata/none: no such file or directory" {
		t.Errorf("FindHelper = %v", err)
	}
}

// countGraph walks a parsed DOT graph: its nodes and out-edges.
func countGraph(t *testing.T, g *graphviz.Graph) (nodes, edges int) {
	t.Helper()
	n, err := g.FirstNode()
	for ; err == nil && n != nil; n, err = g.NextNode(n) {
		nodes++
		e, eerr := g.FirstOut(n)
		for ; eerr == nil && e != nil; e, eerr = g.NextOut(e) {
			edges++
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return nodes, edges
}

// TestSetCurrent: the state a run is in is drawn apart from the states it
// went through (DOT fill and Mermaid class current), a parallel
// configuration marks the parallel state and its leaves, a later call
// moves the mark, and a state the story lacks is reported.
func TestSetCurrent(t *testing.T) {
	g := FromStory(load(t, "../../../stories/hello/app.yaml"))
	evs, err := trace.ReadFile("testdata/hello-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	g.Highlight(evs)
	if missing := g.SetCurrent("greeted"); len(missing) != 0 {
		t.Fatalf("missing = %v", missing)
	}
	dot := DOT(g)
	if !strings.Contains(dot, `"greeted" [label="greeted\nGreeting delivered.", fillcolor="#d0ebff", color="#1c7ed6", penwidth=3]`) {
		t.Errorf("DOT does not draw greeted as current:\n%s", dot)
	}
	if !strings.Contains(dot, `"lobby" [label="lobby\nNobody is being greeted.", fillcolor="#ffe8cc"`) {
		t.Errorf("DOT does not draw lobby as visited:\n%s", dot)
	}
	c, err := parseMermaid(Mermaid(g))
	if err != nil {
		t.Fatal(err)
	}
	ids := nodeIDs(g)
	if d := cmp.Diff([]string{ids["greeted"]}, c.Classes["current"]); d != "" {
		t.Errorf("class current (-want +got):\n%s", d)
	}
	if slices.Contains(c.Classes["visited"], ids["greeted"]) {
		t.Errorf("greeted is both current and visited: %v", c.Classes)
	}
	g.SetCurrent("lobby")
	var cur []string
	g.Walk(func(n *Node, _ int) {
		if n.Current {
			cur = append(cur, n.ID)
		}
	})
	if d := cmp.Diff([]string{"lobby"}, cur); d != "" {
		t.Errorf("current after the move (-want +got):\n%s", d)
	}
	if got := g.SetCurrent("nowhere"); !cmp.Equal(got, []string{"nowhere"}) {
		t.Errorf("missing = %v, want [nowhere]", got)
	}

	n := FromStory(load(t, "testdata/nested/app.yaml"))
	if missing := n.SetCurrent("clock#clock.time.am|clock.weather.dry"); len(missing) != 0 {
		t.Fatalf("missing = %v", missing)
	}
	cur = nil
	n.Walk(func(nd *Node, _ int) {
		if nd.Current {
			cur = append(cur, nd.ID)
		}
	})
	if d := cmp.Diff([]string{"clock", "clock.time.am", "clock.weather.dry"}, cur); d != "" {
		t.Errorf("current of a parallel configuration (-want +got):\n%s", d)
	}
}
