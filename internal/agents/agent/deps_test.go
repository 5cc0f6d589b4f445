package agent_test

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// storyPkg is the package no agent package may depend on: the YAML loader.
const storyPkg = "internal/load/story"

// TestAgentPackagesDoNotDependOnStory fails when any package under
// internal/agents comes to depend, directly or through other packages of
// the module, on internal/load/story. It reads the imports of the packages'
// non-test files (what `go list -deps` follows), honouring build
// constraints, without running the go command.
func TestAgentPackagesDoNotDependOnStory(t *testing.T) {
	root, mod := moduleRoot(t)
	chains, err := dependents(root, mod, "internal/agents", storyPkg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chains {
		t.Errorf("%s depends on %s: %s; a transport must not need the YAML loader: move what it uses into internal/agents/agent or internal/agents/toolserver",
			c[0], storyPkg, strings.Join(c, " → "))
	}
}

// TestDependentsFindsIndirectPaths runs the check on a fixture module in
// which one agent package reaches story through another package, one
// imports it directly, one only from a test file and one not at all.
func TestDependentsFindsIndirectPaths(t *testing.T) {
	chains, err := dependents("testdata/storydeps", "example.com/m", "internal/agent", "internal/story")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"internal/agent/direct", "internal/story"},
		{"internal/agent/indirect", "internal/mid", "internal/story"},
	}
	if diff := cmp.Diff(want, chains); diff != "" {
		t.Errorf("chains (-want +got):\n%s", diff)
	}
}

// moduleRoot finds the directory of the module's go.mod and its module
// path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			t.Fatalf("%s/go.mod has no module line", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// dependents returns, for every package under the module directory under
// that depends on forbidden (module-relative paths), the first import
// chain found from it to forbidden, sorted by package.
func dependents(root, module, under, forbidden string) ([][]string, error) {
	imports := map[string][]string{} // module-relative package → its module-internal imports
	//lint:ignore S1021 the closure calls itself, so it is declared before it is assigned.
	var load func(rel string) ([]string, error)
	load = func(rel string) ([]string, error) {
		if imps, ok := imports[rel]; ok {
			return imps, nil
		}
		pkg, err := build.Default.ImportDir(filepath.Join(root, filepath.FromSlash(rel)), 0)
		var noGo *build.NoGoError
		switch {
		case errors.As(err, &noGo):
			imports[rel] = nil
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("read package %s: %w", rel, err)
		}
		var out []string
		for _, imp := range pkg.Imports {
			if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				out = append(out, r)
			}
		}
		imports[rel] = out
		return out, nil
	}
	var pkgs []string
	err := filepath.WalkDir(filepath.Join(root, filepath.FromSlash(under)), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		pkgs = append(pkgs, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, err
	}
	var chains [][]string
	for _, start := range pkgs {
		// Breadth first, so the chain reported is a shortest one.
		from := map[string]string{start: ""}
		queue := []string{start}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			if cur == forbidden {
				var chain []string
				for p := cur; p != ""; p = from[p] {
					chain = append(chain, p)
				}
				slices.Reverse(chain)
				chains = append(chains, chain)
				break
			}
			imps, err := load(cur)
			if err != nil {
				return nil, err
			}
			for _, imp := range imps {
				if _, seen := from[imp]; !seen {
					from[imp] = cur
					queue = append(queue, imp)
				}
			}
		}
	}
	slices.SortFunc(chains, func(a, b []string) int { return strings.Compare(path.Join(a...), path.Join(b...)) })
	return chains, nil
}
