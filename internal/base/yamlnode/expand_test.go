package yamlnode

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func parseDoc(t testing.TB, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}

// naiveExtra counts the nodes aliases add by expanding them, giving up
// (returning budget+1) past budget.
func naiveExtra(doc *yaml.Node, budget int64) int64 {
	var total, physical int64
	seen := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node, viaAlias bool) bool
	walk = func(n *yaml.Node, viaAlias bool) bool {
		if n.Kind == yaml.AliasNode {
			if !seen[n] {
				seen[n] = true
				physical++
			}
			if n.Alias == nil {
				return true
			}
			return walk(n.Alias, true)
		}
		total++
		if !viaAlias && !seen[n] {
			seen[n] = true
			physical++
		}
		if total-physical > budget {
			return false
		}
		for _, c := range n.Content {
			if !walk(c, viaAlias) {
				return false
			}
		}
		return true
	}
	if !walk(doc, false) {
		return budget + 1
	}
	return total - physical
}

func TestCheckExpansion(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		limit int64
		err   *ExpansionError
	}{
		{"no aliases", "a: [1, 2, 3]\nb: {c: d}\n", 1, nil},
		// The anchor holds 4 nodes (the list and 3 items); the alias adds 3.
		{"one alias within the limit", "a: &x [1, 2, 3]\nb: *x\n", 3, nil},
		{"one alias past the limit", "a: &x [1, 2, 3]\nb: *x\n", 2,
			&ExpansionError{Limit: 2, Physical: 9, Alias: "x", Line: 2, Column: 4, Size: 4}},
		{"nested anchors multiply", "a: &x [1, 1]\nb: &y [*x, *x, *x]\nc: [*y, *y]\n", 10,
			&ExpansionError{Limit: 10, Physical: 15, Alias: "y", Line: 3, Column: 5, Size: 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckExpansion(parseDoc(t, tc.src), tc.limit)
			if tc.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ee *ExpansionError
			if !errors.As(err, &ee) {
				t.Fatalf("want *ExpansionError, got %v", err)
			}
			if diff := cmp.Diff(tc.err, ee); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// The message says where, what, the limit and how to fix it.
func TestExpansionErrorText(t *testing.T) {
	err := CheckExpansion(parseDoc(t, "a: &x [1, 2, 3]\nb: *x\n"), 2)
	want := "line 2:4: YAML aliases make this document too large: they stand for more than 2 nodes (the limit) on top of the 9 written, " +
		"and *x here alone stands for 4; an alias nested in an anchor is copied wherever that anchor is, so the count multiplies: " +
		"write the repeated part out once, or reference nested anchors from fewer places"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// A billion-node bomb is judged by visiting its written nodes once.
func TestCheckExpansionCostsWhatTheParseDid(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
		b.WriteString(strings.TrimSuffix(strings.Repeat("*l"+string(rune('0'+i-1))+", ", 10), ", "))
		b.WriteString("]\n")
	}
	doc := parseDoc(t, b.String())
	allocs := testing.AllocsPerRun(5, func() {
		if CheckExpansion(doc, 0) == nil {
			t.Fatal("a billion-node bomb passed")
		}
	})
	if allocs > 200 {
		t.Errorf("CheckExpansion allocated %v times for a %d-byte document", allocs, b.Len())
	}
}

// FuzzCheckExpansion: for any YAML document, CheckExpansion refuses it
// exactly when expanding its aliases one by one adds more than the limit.
func FuzzCheckExpansion(f *testing.F) {
	f.Add("a: &x [1, 2, 3]\nb: *x\n")
	f.Add("a: &x [1, 1]\nb: &y [*x, *x, *x]\nc: [*y, *y]\n")
	f.Add("- &a {k: v}\n- *a\n- [*a, *a]\n")
	f.Fuzz(func(t *testing.T, src string) {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(src), &doc) != nil {
			t.Skip()
		}
		const limit = 200
		err := CheckExpansion(&doc, limit)
		extra := naiveExtra(&doc, limit)
		if (err != nil) != (extra > limit) {
			t.Fatalf("CheckExpansion said %v; expanding adds %d nodes (limit %d)", err, extra, limit)
		}
	})
}
