package kitsokiformat

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pendingAllowed lists the key paths docs/kitsoki.md may mark pending:
// keys not built yet, each row saying what is missing. An entry's prefix
// matches the path itself and every path under it. None is left: every
// row is implemented or refused, and a pending row fails the test.
var pendingAllowed = []struct{ section, prefix string }{}

// TestKitsokiConformanceTable checks docs/kitsoki.md against Kitsoki's key
// list (format-keys.md in the Kitsoki reference, found in shared/kitsoki
// next to the repository or above it; the test is skipped without it):
// every key path has a row, every row a status, an implemented row tests
// that exist, a refused row its reason, and a pending row a place in
// pendingAllowed.
func TestKitsokiConformanceTable(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ref := referenceKeys(root)
	if ref == "" {
		t.Skip("no Kitsoki reference (shared/kitsoki/format-keys.md) next to or above", root)
	}
	want := keySections(t, ref, "## ", "")
	got := tableRows(t, filepath.Join(root, "docs", "kitsoki.md"))
	tests := testFuncs(t, root)

	for _, sec := range want {
		rows, ok := got[sec.title]
		if !ok {
			t.Errorf("docs/kitsoki.md has no section %q", sec.title)
			continue
		}
		seen := map[string]bool{}
		for _, p := range sec.paths {
			seen[p] = true
			r, ok := rows[p]
			if !ok {
				t.Errorf("%s: %s has no row", short(sec.title), p)
				continue
			}
			checkRow(t, sec.title, p, r, tests)
		}
		for p := range rows {
			if !seen[p] {
				t.Errorf("%s: %s has a row but is not a key path of format-keys.md", short(sec.title), p)
			}
		}
	}
}

type row struct{ status, cell string }

type section struct {
	title string
	paths []string
}

var (
	testName = regexp.MustCompile("`((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]*)(/[^`]+)?`")
	keyCell  = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")
)

func checkRow(t *testing.T, title, path string, r row, tests map[string][]string) {
	t.Helper()
	where := short(title) + ": " + path
	switch r.status {
	case "implemented":
		names := testName.FindAllStringSubmatch(r.cell, -1)
		if len(names) == 0 {
			t.Errorf("%s is implemented but names no test", where)
		}
		for _, m := range names {
			files, ok := tests[m[1]]
			if !ok {
				t.Errorf("%s names %s, which is not a test function", where, m[1])
				continue
			}
			if m[2] != "" && !slices.ContainsFunc(files, func(f string) bool { return hasSubtest(f, strings.TrimPrefix(m[2], "/")) }) {
				t.Errorf("%s names %s%s, and no %s has such a subtest", where, m[1], m[2], m[1])
			}
		}
	case "refused":
		if strings.TrimSpace(r.cell) == "" {
			t.Errorf("%s is refused without a reason", where)
		}
	case "pending":
		if !pendingOK(title, path) {
			t.Errorf("%s is pending, and pendingAllowed does not list it", where)
		}
	default:
		t.Errorf("%s: status %q is none of implemented, refused, pending", where, r.status)
	}
}

func pendingOK(title, path string) bool {
	for _, a := range pendingAllowed {
		if !strings.HasPrefix(title, a.section) {
			continue
		}
		if a.prefix == "" || path == a.prefix || strings.HasPrefix(path, a.prefix+".") || strings.HasPrefix(path, a.prefix+"[") {
			return true
		}
	}
	return false
}

// short is a section title up to its dash or parenthesis.
func short(title string) string {
	if i := strings.IndexAny(title, "(—"); i > 0 {
		return strings.TrimSpace(title[:i])
	}
	return title
}

// referenceKeys finds shared/kitsoki/format-keys.md next to the repository
// root or above it.
func referenceKeys(root string) string {
	dir := filepath.Dir(root)
	for range 3 {
		p := filepath.Join(dir, "shared", "kitsoki", "format-keys.md")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

// keySections reads the key paths of a markdown file: each heading with
// the given prefix starts a section, and each table row whose first cell
// is a `code` span is a path. after, when set, is a heading the sections
// start after.
func keySections(t *testing.T, path, heading, after string) []section {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []section
	started := after == ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !started {
			started = strings.TrimSpace(line) == after
			continue
		}
		if strings.HasPrefix(line, heading) {
			out = append(out, section{title: strings.TrimSpace(strings.TrimPrefix(line, heading))})
			continue
		}
		if m := keyCell.FindStringSubmatch(line); m != nil && len(out) > 0 {
			out[len(out)-1].paths = append(out[len(out)-1].paths, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tableRows reads docs/kitsoki.md's tables: section title → path → row.
func tableRows(t *testing.T, path string) map[string]map[string]row {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]row{}
	var cur map[string]row
	var title string
	started := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "## The format, key by key" {
			started = true
			continue
		}
		if !started {
			continue
		}
		if strings.HasPrefix(line, "### ") {
			title = strings.TrimSpace(strings.TrimPrefix(line, "### "))
			cur = map[string]row{}
			out[title] = cur
			continue
		}
		m := keyCell.FindStringSubmatch(line)
		if m == nil || cur == nil {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) < 3 {
			t.Errorf("%s: %s: a row needs three cells: path, status, test or reason", short(title), m[1])
			continue
		}
		if _, dup := cur[m[1]]; dup {
			t.Errorf("%s: %s has two rows", short(title), m[1])
		}
		cur[m[1]] = row{status: strings.TrimSpace(cells[1]), cell: strings.TrimSpace(strings.Join(cells[2:], "|"))}
	}
	if !started {
		t.Fatal("docs/kitsoki.md has no \"## The format, key by key\" section")
	}
	return out
}

var testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]*)\(`)

// testFuncs maps every test function of the repository to the files
// declaring one of that name (packages may share a name).
func testFuncs(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(data, -1) {
			out[string(m[1])] = append(out[string(m[1])], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hasSubtest reports whether the test file names the subtest: as a
// testdata/<sub> directory next to it (a table of stories) or as a quoted
// name in it (t.Run's underscores standing for spaces).
func hasSubtest(file, sub string) bool {
	if st, err := os.Stat(filepath.Join(filepath.Dir(file), "testdata", sub)); err == nil && st.IsDir() {
		return true
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	s := string(data)
	return strings.Contains(s, `"`+sub+`"`) || strings.Contains(s, `"`+strings.ReplaceAll(sub, "_", " ")+`"`)
}
