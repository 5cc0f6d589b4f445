package codesize

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// maxLines is the budget of a non-test function's body.
const maxLines = 100

// TestMeasure pins the counting rule on a fixture: lines between the
// braces, gocyclo's names, test files and test support left out, nested
// modules walked, literal-only returns marked as tables.
func TestMeasure(t *testing.T) {
	got, err := Measure(filepath.Join("testdata", "src"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Func{
		{File: "a.go", Line: 6, Name: "Short", Lines: 3},
		{File: "a.go", Line: 12, Name: "(*T).Method", Lines: 1},
		{File: "a.go", Line: 16, Name: "(T).Value", Lines: 0},
		{File: "a.go", Line: 19, Name: "Table", Lines: 4, Table: true},
		{File: "a.go", Line: 27, Name: "PtrTable", Lines: 3, Table: true},
		{File: "a.go", Line: 34, Name: "NotTable", Lines: 2},
		{File: "a.go", Line: 41, Name: "(*G).Generic", Lines: 0},
		{File: "nested/n.go", Line: 3, Name: "Nested", Lines: 0},
		{File: "sub/b.go", Line: 3, Name: "Closure", Lines: 4, Table: false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Measure (-want +got):\n%s", diff)
	}
}

// knownOffenders reads the funclen lines of scripts/lint-known.txt: the
// functions over the budget that are known (in parts of the tree being
// rewritten) and do not fail the test.
func knownOffenders(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	known := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 3 && fields[0] == "funclen" {
			known[fields[1]+" "+fields[2]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return known
}

// TestFunctionsAreShort fails on a non-test function of the module whose
// body is over maxLines lines, unless it is a data table (see the package
// doc) or listed as known. A known entry that is no longer over the budget
// fails too, so the list only shrinks.
func TestFunctionsAreShort(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	known := knownOffenders(t, filepath.Join(root, "scripts", "lint-known.txt"))
	funcs, err := Measure(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) < 1000 {
		t.Fatalf("found only %d functions; the walk is broken", len(funcs))
	}
	seen := map[string]bool{}
	for _, f := range funcs {
		if f.Lines <= maxLines || f.Table {
			continue
		}
		key := f.File + " " + f.Name
		if known[key] {
			seen[key] = true
			continue
		}
		t.Errorf("%s, over %d: split it into named steps (docs/development.md)", f, maxLines)
	}
	for key := range known {
		if !seen[key] {
			t.Errorf("scripts/lint-known.txt: funclen %s is no longer over %d lines; delete the line", key, maxLines)
		}
	}
}
