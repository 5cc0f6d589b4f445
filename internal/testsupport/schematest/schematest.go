// Package schematest holds the checks every generated file-format schema
// gets: the file under schemas/ is current, documents validate, and every
// key list of the parser is in the schema.
package schematest

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/docschema"
	"github.com/kitsoki/kitsoki/internal/base/schema"
)

// Current fails unless the file at path (relative to the test's package,
// e.g. ../../schemas/x.schema.json) holds doc; with KITSOKI_WRITE_SCHEMAS=1
// (make schemas) it writes it instead.
func Current(t *testing.T, path string, doc map[string]any) {
	t.Helper()
	want, err := docschema.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("KITSOKI_WRITE_SCHEMAS") == "1" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s is not what the parser's key lists generate: run make schemas", path)
	}
}

// Compile compiles a generated schema.
func Compile(t *testing.T, name string, doc map[string]any) *schema.Schema {
	t.Helper()
	raw, err := docschema.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.CompileDocument(name, raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ValidateYAML validates every YAML document in b.
func ValidateYAML(s *schema.Schema, b []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() == "EOF" {
				return nil
			}
			return err
		}
		if v == nil {
			continue
		}
		j, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := s.ValidateJSON(j); err != nil {
			return err
		}
	}
}

// ValidateFile validates a YAML file.
func ValidateFile(s *schema.Schema, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return ValidateYAML(s, b)
}

// KeyLists returns the names of the package-level variables of the
// package in the current directory (tests excluded) whose name ends in
// suffix and whose value is a composite literal of the type named typ
// ("[]string", or "keySpec" for &keySpec{...}).
func KeyLists(t *testing.T, suffix, typ string) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkg, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, name := range pkg.GoFiles { // the package's non-test files, build tags applied
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if i >= len(vs.Names) || !strings.HasSuffix(vs.Names[i].Name, suffix) {
						continue
					}
					if u, ok := v.(*ast.UnaryExpr); ok {
						v = u.X
					}
					cl, ok := v.(*ast.CompositeLit)
					if !ok {
						continue
					}
					if typeText(cl.Type) == typ {
						found = append(found, vs.Names[i].Name)
					}
				}
			}
		}
	}
	slices.Sort(found)
	return found
}

func typeText(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.ArrayType:
		if x.Len == nil {
			return "[]" + typeText(x.Elt)
		}
	}
	return ""
}

// SameNames fails when the key lists found in the source differ from the
// ones the schema names (the keys of listed).
func SameNames[V any](t *testing.T, found []string, listed map[string]V) {
	t.Helper()
	var names []string
	for n := range listed {
		names = append(names, n)
	}
	slices.Sort(names)
	if diff := cmp.Diff(found, names); diff != "" {
		t.Errorf("key lists of the package (-) vs the schema's (+): add the list to the schema:\n%s", diff)
	}
}

// Glob is filepath.Glob that fails the test on a bad pattern.
func Glob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
