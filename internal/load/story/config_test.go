package story

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConfigRoundTrip: a printed configuration parses back to the same
// value and prints the same; one level deep it is the form traces have
// always had.
func TestConfigRoundTrip(t *testing.T) {
	tests := []struct {
		text   string
		leaves []string
		states []string
	}{
		{"bar.dark", []string{"bar.dark"}, []string{"bar.dark"}},
		{"clock#clock.calendar.day1|clock.weather.dry",
			[]string{"clock.calendar.day1", "clock.weather.dry"},
			[]string{"clock", "clock.calendar.day1", "clock.weather.dry"}},
		{"p#(p.a.q#p.a.q.x|p.a.q.y)|p.b.c",
			[]string{"p.a.q.x", "p.a.q.y", "p.b.c"},
			[]string{"p", "p.a.q", "p.a.q.x", "p.a.q.y", "p.b.c"}},
		{"p#p.a.c|(p.b.q#(p.b.q.x.r#p.b.q.x.r.m|p.b.q.x.r.n)|p.b.q.y)",
			[]string{"p.a.c", "p.b.q.x.r.m", "p.b.q.x.r.n", "p.b.q.y"},
			[]string{"p", "p.a.c", "p.b.q", "p.b.q.x.r", "p.b.q.x.r.m", "p.b.q.x.r.n", "p.b.q.y"}},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			c, err := ParseConfig(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.String(); got != tc.text {
				t.Errorf("String() = %q, want %q", got, tc.text)
			}
			if d := cmp.Diff(tc.leaves, c.Leaves()); d != "" {
				t.Errorf("Leaves (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.states, c.States()); d != "" {
				t.Errorf("States (-want +got):\n%s", d)
			}
		})
	}
}

// TestConfigSorted: Parallel sorts the regions by state path, so a
// configuration prints the same whatever order it was built in.
func TestConfigSorted(t *testing.T) {
	inner := Parallel("p.a.q", []*Config{Leaf("p.a.q.y"), Leaf("p.a.q.x")})
	c := Parallel("p", []*Config{Leaf("p.b.c"), inner})
	if got, want := c.String(), "p#(p.a.q#p.a.q.x|p.a.q.y)|p.b.c"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if i := c.RegionOf("p.b.other"); i != 1 {
		t.Errorf("RegionOf(p.b.other) = %d, want 1", i)
	}
	if i := c.RegionOf("p"); i != -1 {
		t.Errorf("RegionOf(p) = %d, want -1 (not strictly inside)", i)
	}
	if f := c.Find("p.a.q"); f != inner {
		t.Errorf("Find(p.a.q) = %v", f)
	}
	moved := c.With(1, Leaf("p.b.d"))
	if moved.String() != "p#(p.a.q#p.a.q.x|p.a.q.y)|p.b.d" || c.String() != "p#(p.a.q#p.a.q.x|p.a.q.y)|p.b.c" {
		t.Errorf("With: %s, original now %s (want it unchanged)", moved, c)
	}
}

func TestParseConfigErrors(t *testing.T) {
	const hint = " (write <parallel>#<leaf>|<leaf>, with a nested parallel configuration in parentheses)"
	tests := []struct{ text, err string }{
		{"p#", `state path "p#": a region's state is missing at offset 2` + hint},
		{"#a", `state path "#a": a state name is missing at offset 0` + hint},
		{"p#(p.a#p.a.x|p.b", `state path "p#(p.a#p.a.x|p.b": a ")" is missing at offset 16` + hint},
		{"p#(p.a)|p.b", `state path "p#(p.a)|p.b": parentheses hold a nested parallel configuration (<parallel>#...), not "p.a"` + hint},
		{"p#(p.a.q#p.a.q.x.one|p.b.idle", `state path "p#(p.a.q#p.a.q.x.one|p.b.idle": a ")" is missing at offset 29` + hint},
		{"p#p.a)", `state path "p#p.a)": unexpected ')' at offset 5` + hint},
	}
	for _, tc := range tests {
		_, err := ParseConfig(tc.text)
		if err == nil || err.Error() != tc.err {
			t.Errorf("ParseConfig(%q) = %v\nwant %s", tc.text, err, tc.err)
		}
	}
}

// TestNestedParallelLoads: a parallel state inside a region loads, and a
// done.state.<path> arm is checked: it must name a parallel state at or
// inside the state it is written on.
func TestNestedParallelLoads(t *testing.T) {
	s := load(t, filepath.Join("testdata", "states", "nested_parallel.yaml"), nil)
	if !s.States["p.a.q"].IsParallel() || s.States["p.a.q"].Parent != "p.a" {
		t.Fatalf("p.a.q: %+v", s.States["p.a.q"])
	}
	want := []string{
		`nested_parallel.yaml:10:7: states.p.on.done.state.p.a: "done.state.p.a" names no parallel state at or inside p, so no done event reaches this arm (parallel states: p, p.a.q, p.b.r) (did you mean "p.a.q"?)`,
		`nested_parallel.yaml:17:11: states.p.states.a.on.done.state.p.b.r: "done.state.p.b.r" names no parallel state at or inside p.a, so no done event reaches this arm (parallel states: p, p.a.q, p.b.r) (did you mean "p.a.q"?)`,
	}
	if d := cmp.Diff(want, lines(s.Warnings)); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}
