// Package schema compiles JSON Schemas rooted in a story directory and
// validates agent submissions against them.
//
// A schema may $ref other files, but only inside the story's directory tree:
// a reference that leaves it (../x.json, an absolute path, any URL) fails the
// compile, naming the schema and the reference. Schemas are thus confined
// more tightly than the other files of a story (its workspace, see
// internal/base/workspace), with the same containment check. A schema file over
// workspace.MaxFileSize is refused. A compiler reads a directory of the
// operating system (NewCompiler) or an fs.FS holding one (NewCompilerFS),
// through the same reader. Compiled schemas are cached, so a story compiles
// each file once.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// Compiler compiles schema files found under one directory. It is safe for
// concurrent use and caches every compiled schema by its cleaned path.
//
// One jsonschema compiler serves every schema of the directory, so a file
// that several schemas $ref (a common.json) is read, checked against the
// metaschema and compiled once. That compiler is not safe for concurrent use:
// jcMu guards it, and only it, so reading and parsing schema files, and the
// cache, stay concurrent.
type Compiler struct {
	dir  string         // absolute
	ws   workspace.Root // NewCompiler's dir, symlinks resolved; zero for NewCompilerFS
	root *os.Root       // nil for NewCompilerFS
	fsys fs.FS          // where schema files are read: root's, or NewCompilerFS's

	mu    sync.Mutex // guards cache
	cache map[string]*Schema

	jcMu sync.Mutex // guards jc
	jc   *jsonschema.Compiler
}

// NewCompiler returns a compiler rooted at dir.
func NewCompiler(dir string) (*Compiler, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("schema root %q: %w", dir, err)
	}
	ws, err := workspace.New(abs)
	if err != nil {
		return nil, fmt.Errorf("schema root %q: %w", dir, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("schema root %q: %w", dir, err)
	}
	return openCompiler(abs, ws, root, root.FS()), nil
}

// NewCompilerFS returns a compiler that reads schema files from fsys, which
// holds the contents of the directory dir: dir names the schemas in
// messages and is what file $refs resolve against. Paths are checked
// against dir lexically (an fs.FS has no symlinks to resolve), and the size
// limit applies as for NewCompiler. Nothing is opened; Close does nothing.
func NewCompilerFS(fsys fs.FS, dir string) *Compiler {
	return openCompiler(filepath.Clean(dir), workspace.Root{}, nil, fsys)
}

func openCompiler(dir string, ws workspace.Root, root *os.Root, fsys fs.FS) *Compiler {
	c := &Compiler{dir: dir, ws: ws, root: root, fsys: fsys, cache: map[string]*Schema{}, jc: jsonschema.NewCompiler()}
	c.jc.DefaultDraft(jsonschema.Draft2020)
	c.jc.UseLoader(&rootedLoader{c: c})
	return c
}

// Dir returns the absolute directory schemas are rooted in.
func (c *Compiler) Dir() string { return c.dir }

// Close releases the directory handle.
func (c *Compiler) Close() error {
	if c.root == nil {
		return nil
	}
	return c.root.Close()
}

// Schema is a compiled schema.
type Schema struct {
	Path string          // as given to Compile
	Raw  json.RawMessage // the document bytes, sent as AskRequest.schema
	Doc  any             // the parsed document
	sch  *jsonschema.Schema
	// check is ValidateJSON without the value (Check), built once.
	check func(b []byte) error
}

// withCheck gives s its Check function.
func withCheck(s *Schema) *Schema {
	s.check = func(b []byte) error { _, err := s.ValidateJSON(b); return err }
	return s
}

// Check returns ValidateJSON without the value, the form agent.Call's
// Validate takes: the same function every time, built with the schema,
// so handing it to each call costs nothing.
func (s *Schema) Check() func(b []byte) error {
	if s.check == nil {
		return func(b []byte) error { _, err := s.ValidateJSON(b); return err }
	}
	return s.check
}

// Compile compiles the schema file at path, relative to the compiler's root
// (an absolute path inside the root is accepted too).
func (c *Compiler) Compile(path string) (*Schema, error) {
	rel, err := c.relPath(path)
	if err != nil {
		return nil, fmt.Errorf("schema %q: %w", path, err)
	}
	c.mu.Lock()
	s, ok := c.cache[rel]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	raw, err := workspace.ReadFS(c.fsys, rel, path)
	if err != nil {
		return nil, fmt.Errorf("schema %q: %w", path, unwrapPathError(err))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema %q: not valid JSON: %w", path, err)
	}
	if err := checkRefs(doc, rel); err != nil {
		return nil, fmt.Errorf("schema %q: %w", path, err)
	}
	sch, err := c.compile(filepath.Join(c.dir, rel), doc)
	if err != nil {
		var re *refError
		if errors.As(err, &re) {
			return nil, fmt.Errorf("schema %q: %w", path, re)
		}
		return nil, fmt.Errorf("schema %q: %w", path, err)
	}
	s = withCheck(&Schema{Path: path, Raw: json.RawMessage(raw), Doc: doc, sch: sch})
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.cache[rel]; ok {
		return prev, nil // compiled concurrently by another caller: keep one
	}
	c.cache[rel] = s
	return s, nil
}

// compile compiles doc, read from the file abs, with the shared jsonschema
// compiler. The file may already be known to it, loaded as the target of
// another schema's $ref (or added by an earlier attempt that failed): that
// copy, read from the same file and checked the same way, is the one used.
func (c *Compiler) compile(abs string, doc any) (*jsonschema.Schema, error) {
	c.jcMu.Lock()
	defer c.jcMu.Unlock()
	if err := c.jc.AddResource(abs, doc); err != nil {
		var exists *jsonschema.ResourceExistsError
		if !errors.As(err, &exists) {
			return nil, err
		}
	}
	return c.jc.Compile(abs)
}

// relPath turns path into a slash-separated path inside the root.
func (c *Compiler) relPath(path string) (string, error) {
	p := filepath.FromSlash(path)
	if filepath.IsAbs(p) {
		if !c.inside(p) {
			return "", fmt.Errorf("path is outside the story directory %s", c.dir)
		}
		r, _ := filepath.Rel(c.dir, p)
		p = r
	}
	p = filepath.Clean(p)
	if escapes(p) {
		return "", fmt.Errorf("path leaves the story directory")
	}
	return filepath.ToSlash(p), nil
}

// inside reports whether the absolute path p lies in the compiler's
// directory, as written or with the directory's symlinks resolved.
func (c *Compiler) inside(p string) bool {
	p = filepath.Clean(p)
	if r, err := filepath.Rel(c.dir, p); err == nil && (r == "." || filepath.IsLocal(r)) {
		return true
	}
	return c.ws.Contains(p)
}

// escapes reports whether rel, a path relative to the root, leaves it.
func escapes(rel string) bool {
	return filepath.IsAbs(rel) || !(rel == "." || filepath.IsLocal(rel))
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// refError is a $ref that leaves the story directory.
type refError struct {
	ref  string
	file string
	why  string
}

func (e *refError) Error() string {
	return fmt.Sprintf("$ref %q in %s %s: references must stay inside the story directory", e.ref, e.file, e.why)
}

// checkRefs rejects, before anything is loaded, every $ref in doc (found in
// file, relative to the root) that is a URL, an absolute path, or a relative
// path climbing out of the root.
func checkRefs(doc any, file string) error {
	var first error
	walk(doc, func(m map[string]any) {
		ref, ok := m["$ref"].(string)
		if !ok || first != nil {
			return
		}
		if err := checkRef(ref, file); err != nil {
			first = err
		}
	})
	return first
}

func checkRef(ref, file string) error {
	target, _, _ := strings.Cut(ref, "#")
	if target == "" {
		return nil
	}
	if i := strings.Index(target, ":"); i > 0 && !strings.ContainsAny(target[:i], "/\\.") {
		return &refError{ref, file, "is a URL"}
	}
	if strings.HasPrefix(target, "/") || filepath.IsAbs(target) {
		return &refError{ref, file, "is an absolute path"}
	}
	joined := filepath.Join(filepath.Dir(filepath.FromSlash(file)), filepath.FromSlash(target))
	if escapes(joined) {
		return &refError{ref, file, "leaves the story directory"}
	}
	return nil
}

// walk calls fn on every object in v, depth first.
func walk(v any, fn func(map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		fn(t)
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walk(t[k], fn)
		}
	case []any:
		for _, e := range t {
			walk(e, fn)
		}
	}
}

// rootedLoader loads referenced schema files through the compiler's file
// system (its os.Root's, which also refuses symlinks that point outside the
// directory).
type rootedLoader struct{ c *Compiler }

func (l *rootedLoader) Load(u string) (any, error) {
	const prefix = "file://"
	if !strings.HasPrefix(u, prefix) {
		return nil, &refError{u, "a schema", "is a URL"}
	}
	p := filepath.FromSlash(strings.TrimPrefix(u, prefix))
	if !l.c.inside(p) {
		return nil, &refError{u, "a schema", "leaves the story directory"}
	}
	rel, _ := filepath.Rel(l.c.dir, p)
	raw, err := workspace.ReadFS(l.c.fsys, filepath.ToSlash(rel), filepath.ToSlash(rel))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.ToSlash(rel), unwrapPathError(err))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %w", filepath.ToSlash(rel), err)
	}
	if err := checkRefs(doc, filepath.ToSlash(rel)); err != nil {
		return nil, err
	}
	return doc, nil
}
