// Package codesize measures the length of the module's functions, so that a
// test can hold every non-test function to a line budget.
//
// The length of a function is the number of lines strictly between the
// opening and the closing brace of its body; the signature, the doc comment
// and the braces do not count. A function literal counts toward the
// function that holds it.
//
// A data table is exempt: a function whose body is a single return
// statement, every result of which is a composite literal (T{...} or
// &T{...}). Such a function is a table written as code, and splitting it
// would only scatter the table.
package codesize

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Func is one function's measure.
type Func struct {
	File  string // slash-separated, relative to the root walked
	Line  int    // line of the func keyword
	Name  string // "Name", "(T).Name" or "(*T).Name", as gocyclo prints it
	Lines int    // lines of the body between its braces
	Table bool   // the body only returns composite literals
}

func (f Func) String() string {
	return fmt.Sprintf("%s:%d: %s is %d lines", f.File, f.Line, f.Name, f.Lines)
}

// skipDir reports whether a folder under the root is left out of the walk:
// test support packages, testdata fixtures, and hidden and underscore
// folders. Nested modules (examples, integration tests) are walked: their
// code is ours too.
func skipDir(root, path, name string) bool {
	if path == root {
		return false
	}
	return name == "testdata" || name == "testsupport" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// Measure walks root and returns every function declared in a non-test Go
// file (one not named *_test.go), sorted by file and line.
func Measure(root string) ([]Func, error) {
	var out []Func
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(root, path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		funcs, err := measureFile(fset, path, filepath.ToSlash(rel))
		out = append(out, funcs...)
		return err
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, err
}

// measureFile parses one file and measures each function declaration with a
// body.
func measureFile(fset *token.FileSet, path, rel string) ([]Func, error) {
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []Func
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		open := fset.Position(fn.Body.Lbrace).Line
		closing := fset.Position(fn.Body.Rbrace).Line
		lines := closing - open - 1
		if lines < 0 {
			lines = 0
		}
		out = append(out, Func{
			File:  rel,
			Line:  fset.Position(fn.Pos()).Line,
			Name:  funcName(fn),
			Lines: lines,
			Table: isTable(fn.Body),
		})
	}
	return out, nil
}

// funcName names a declaration the way gocyclo does, so that one list of
// known offenders serves both checks.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	return "(" + recvType(fn.Recv.List[0].Type) + ")." + fn.Name.Name
}

// recvType prints a receiver type without its type parameters.
func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// isTable reports whether a body is a single return of composite literals.
func isTable(body *ast.BlockStmt) bool {
	if len(body.List) != 1 {
		return false
	}
	ret, ok := body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) == 0 {
		return false
	}
	for _, r := range ret.Results {
		if u, ok := r.(*ast.UnaryExpr); ok && u.Op == token.AND {
			r = u.X
		}
		if _, ok := r.(*ast.CompositeLit); !ok {
			return false
		}
	}
	return true
}
