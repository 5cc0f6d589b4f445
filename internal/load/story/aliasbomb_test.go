package story

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
)

// aliasBomb is a story whose nested states: are anchors each holding width
// aliases of the level below, depth levels deep: a file of about a
// kilobyte that stands for width^depth states.
func aliasBomb(width, depth int) string {
	var b strings.Builder
	b.WriteString("app: {id: bomb, version: 0.1.0, title: bomb}\nroot: top\nstates:\n")
	var level func(lvl int, ind string)
	level = func(lvl int, ind string) {
		if lvl == 0 {
			return
		}
		fmt.Fprintf(&b, "%stype: compound\n%sinitial: a0\n%sstates:\n", ind, ind, ind)
		if lvl == 1 {
			fmt.Fprintf(&b, "%s  a0: &s0 {view: leaf}\n", ind)
		} else {
			fmt.Fprintf(&b, "%s  a0: &s%d\n", ind, lvl-1)
			level(lvl-1, ind+"    ")
		}
		for i := 1; i < width; i++ {
			fmt.Fprintf(&b, "%s  a%d: *s%d\n", ind, i, lvl-1)
		}
	}
	b.WriteString("  top:\n")
	level(depth, "    ")
	return b.String()
}

// A story whose aliases stand for more than yamlnode.MaxAliasNodes nodes
// is refused at parse, before any of it is expanded: the error names the
// file, the line of the alias, the limit and what to do, and the load
// stays small in memory (issue 28: 982 bytes stood for 1,234,567 states,
// 40 s and 4.3 GB).
func TestAliasBombRefused(t *testing.T) {
	tests := []struct {
		name         string
		width, depth int
	}{
		{"a hundred thousand states", 10, 5},
		{"a million states", 10, 6},
		{"a billion states", 10, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := aliasBomb(tc.width, tc.depth)
			dir := t.TempDir()
			p := filepath.Join(dir, "app.yaml")
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			st, err := Load(p)
			runtime.ReadMemStats(&after)
			if err == nil {
				st.Close()
				t.Fatalf("a %d-byte alias bomb loaded", len(src))
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 100<<20 {
				t.Errorf("refusing the bomb allocated %d MiB, want under 100 MiB", grew>>20)
			}
			var le *LoadError
			if !errors.As(err, &le) || len(le.Diagnostics) != 1 {
				t.Fatalf("want one diagnostic, got %v", err)
			}
			d := le.Diagnostics[0]
			msg := d.String()
			for _, want := range []string{"app.yaml:", "YAML aliases make this document too large",
				fmt.Sprintf("more than %d nodes", yamlnode.MaxAliasNodes), "write the repeated part out once"} {
				if !strings.Contains(msg, want) {
					t.Errorf("diagnostic %q lacks %q", msg, want)
				}
			}
			if d.Pos.Line == 0 || !strings.Contains(src[lineOffset(src, d.Pos.Line):], "*s") {
				t.Errorf("diagnostic at line %d, not at an alias", d.Pos.Line)
			}
		})
	}
}

func lineOffset(s string, line int) int {
	off := 0
	for i := 1; i < line; i++ {
		off += strings.IndexByte(s[off:], '\n') + 1
	}
	return off
}
