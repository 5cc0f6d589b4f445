package kitsokitest_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// exampleModule is the outside module that proves the public API.
const exampleModule = "../examples/gotest"

// examples/gotest uses the public API only: no Go file of it imports a
// package under an internal/ directory (the go tool would refuse it from
// an outside module anyway; this names the file and the import), and its
// go.mod replaces the kitsoki module with this repository.
func TestExampleModuleUsesNoInternalPackage(t *testing.T) {
	var files int
	err := filepath.WalkDir(exampleModule, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if isInternal(p) {
				t.Errorf("%s imports %q: examples/gotest must use the public packages (kitsoki, kitsokitest, plugin) only", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("found %d Go files under %s, want the example module's tests", files, exampleModule)
	}
	mod, err := os.ReadFile(filepath.Join(exampleModule, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "replace github.com/kitsoki/kitsoki => ../..") {
		t.Errorf("%s/go.mod does not replace github.com/kitsoki/kitsoki with ../..:\n%s", exampleModule, mod)
	}
}

func isInternal(path string) bool {
	for _, seg := range strings.Split(path, "/") {
		if seg == "internal" {
			return true
		}
	}
	return false
}

func TestIsInternal(t *testing.T) {
	for path, want := range map[string]bool{
		"github.com/kitsoki/kitsoki/internal/agents/agent": true,
		"internal/x":                             true,
		"github.com/kitsoki/kitsoki":             false,
		"example.com/internalized":               false,
		"github.com/kitsoki/kitsoki/kitsokitest": false,
		"github.com/kitsoki/kitsoki/internal":    true,
	} {
		if got := isInternal(path); got != want {
			t.Errorf("isInternal(%q) = %v, want %v", path, got, want)
		}
	}
}
