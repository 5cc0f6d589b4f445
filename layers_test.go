package kitsoki_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kitsoki/kitsoki"

// layers lists the module's layers from the top down. A package may import
// packages of its own layer and of the layers after it, never one before
// it; docs/architecture.md draws the same list.
var layers = []string{
	"kitsokitest",
	"kitsoki",
	// The Go API's connection to a Temporal cluster (kitsoki.WithCluster):
	// a package of its own, so the root does not link the Temporal SDK.
	"cluster",
	"cmd",
	"internal/view",
	"internal/check",
	"internal/run",
	"internal/serve",
	"internal/hosts",
	"internal/load",
	"internal/agents",
	"internal/observe",
	"plugin",
	"internal/base",
	// The embedded documentation and JSON Schemas: data, importing nothing.
	"docs",
	"schemas",
}

// layerOf gives the index in layers of a module-relative package path, or
// -1 for packages outside the layering (examples, test support).
func layerOf(rel string) int {
	switch {
	case rel == "":
		return slices.Index(layers, "kitsoki")
	case strings.HasPrefix(rel, "examples/"), strings.HasPrefix(rel, "integration/"), strings.HasPrefix(rel, "internal/testsupport"):
		return -1
	}
	for i, l := range layers {
		if l != "kitsoki" && (rel == l || strings.HasPrefix(rel, l+"/")) {
			return i
		}
	}
	return -2
}

// modulePackages walks the module's directories (skipping testdata, nested
// modules and hidden folders) and returns each package's module-relative
// path with its non-test imports inside the module.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if p != "." {
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
		}
		pkg, err := build.Default.ImportDir(p, 0)
		if err != nil {
			return nil // no Go files, or only ones for other platforms
		}
		rel := filepath.ToSlash(p)
		if rel == "." {
			rel = ""
		}
		var imps []string
		for _, imp := range pkg.Imports {
			if imp == module {
				imps = append(imps, "")
			} else if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				imps = append(imps, r)
			}
		}
		pkgs[rel] = imps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestLayers fails when a package imports one of a higher layer, or when a
// package sits in no layer at all.
func TestLayers(t *testing.T) {
	pkgs := modulePackages(t)
	if len(pkgs) < 50 {
		t.Fatalf("found only %d packages; the walk is broken", len(pkgs))
	}
	for rel, imps := range pkgs {
		from := layerOf(rel)
		if from == -2 {
			t.Errorf("package %q is in no layer: move it under one of %v or add a layer to layers_test.go and docs/architecture.md", rel, layers)
			continue
		}
		if from == -1 {
			continue
		}
		for _, imp := range imps {
			to := layerOf(imp)
			if to >= 0 && to < from {
				t.Errorf("%s (layer %s) imports %s (layer %s, above it): move the shared part down a layer", orRoot(rel), layers[from], orRoot(imp), layers[to])
			}
		}
	}
}

func orRoot(rel string) string {
	if rel == "" {
		return module
	}
	return rel
}

// constructors are the calls that put a run together. Only the composition
// root (internal/run/runtime) makes them outside tests: every other caller
// goes through runtime.Open with a runtime.Config.
var constructors = []struct{ pkg, fn string }{
	{"internal/hosts/host", "New"},
	{"internal/run/orchestrator", "New"},
	{"internal/agents/agent", "NewRegistry"},
}

// TestOnlyTheCompositionRootWiresARun parses every non-test file of the
// module and fails where host.New, orchestrator.New or agent.NewRegistry is
// called outside internal/run/runtime (and outside the packages that define
// them).
func TestOnlyTheCompositionRootWiresARun(t *testing.T) {
	fset := token.NewFileSet()
	for rel := range modulePackages(t) {
		if rel == "internal/run/runtime" || strings.HasPrefix(rel, "internal/testsupport") {
			continue
		}
		dir := rel
		if dir == "" {
			dir = "."
		}
		pkg, err := build.Default.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range pkg.GoFiles {
			path := filepath.Join(dir, f)
			file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			local := map[string]string{} // import name in this file → module-relative path
			for _, imp := range file.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				r, ok := strings.CutPrefix(p, module+"/")
				if !ok {
					continue
				}
				name := filepath.Base(r)
				if imp.Name != nil {
					name = imp.Name.Name
				}
				local[name] = r
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				for _, c := range constructors {
					if local[x.Name] == c.pkg && sel.Sel.Name == c.fn && rel != c.pkg {
						t.Errorf("%s: %s.%s is called outside the composition root; build the run with runtime.Open and a runtime.Config instead", fset.Position(call.Pos()), x.Name, c.fn)
					}
				}
				return true
			})
		}
	}
}

// TestRootDoesNotLinkTemporal checks that a program using only the Go API
// (the module root, kitsokitest) does not link the Temporal SDK: the
// cluster package (kitsoki.WithCluster's connection) does, on its own.
func TestRootDoesNotLinkTemporal(t *testing.T) {
	for _, pkg := range []string{".", "./kitsokitest"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "go.temporal.io/") || dep == module+"/internal/run/cluster" {
				t.Errorf("%s links %s: keep the Temporal side in package cluster", pkg, dep)
			}
		}
	}
}
