package story

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// FuzzLoad loads whole story directories built from the fuzz input. The
// input is split into files at lines "-- name --" (txtar style; the text
// before the first such line is app.yaml), the files are put in an
// in-memory file system mounted with WithFS, and the story is loaded twice.
// Load must not panic; it returns a story or a *LoadError with at least one
// diagnostic, each placed in a file of the story at a line that file has;
// and the two loads report the same diagnostics and warnings, in the same
// order, whatever the scheduling of the loader's workers.
//
// Nothing touches the disk: writing each input to a temporary directory
// cost more than the load itself (see docs/testing.md, Fuzzing).
func FuzzLoad(f *testing.F) {
	mount := filepath.Join(f.TempDir(), "story") // never created: the story lives in memory
	noEnv := WithLookupEnv(func(string) (string, bool) { return "", false })
	f.Fuzz(func(t *testing.T, in []byte) {
		files, ok := splitStory(in)
		if !ok {
			t.Skip("a file name is not a plain relative path")
		}
		fsys := fstest.MapFS{}
		lines := map[string]int{}
		for _, sf := range files {
			fsys[sf.name] = &fstest.MapFile{Data: sf.data, Mode: 0o644}
			lines[sf.name] = yamlLines(sf.data)
		}
		load := func() ([]Diagnostic, []Diagnostic) {
			st, err := Load(filepath.Join(mount, "app.yaml"), WithFS(fsys, mount), noEnv)
			if err == nil {
				if _, ok := st.States[st.Root]; !ok {
					t.Fatalf("loaded story's root %q is not among its states", st.Root)
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				return nil, st.Warnings
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load returned %T, want *LoadError: %v", err, err)
			}
			if len(le.Diagnostics) == 0 {
				t.Fatal("LoadError without diagnostics")
			}
			return le.Diagnostics, le.Warnings
		}
		diags, warns := load()
		for _, d := range append(append([]Diagnostic(nil), diags...), warns...) {
			n, ok := lines[d.Pos.File]
			if !ok {
				if _, err := fs.Stat(fsys, d.Pos.File); err != nil || d.Pos.File == "" {
					t.Fatalf("diagnostic names %q, not a file of the story: %s", d.Pos.File, d)
				}
				continue // a directory, say, named by an include
			}
			if d.Pos.Line < 0 || d.Pos.Line > n || d.Pos.Col < 0 {
				t.Fatalf("diagnostic at %d:%d, outside %s (%d lines): %s", d.Pos.Line, d.Pos.Col, d.Pos.File, n, d)
			}
		}
		diags2, warns2 := load()
		if diff := cmp.Diff(diags, diags2); diff != "" {
			t.Fatalf("a second load reports other diagnostics (-first +second):\n%s", diff)
		}
		if diff := cmp.Diff(warns, warns2); diff != "" {
			t.Fatalf("a second load reports other warnings (-first +second):\n%s", diff)
		}
	})
}

// yamlLines counts the lines of data as YAML does: CR LF, CR, LF, NEL,
// LS and PS each end a line.
func yamlLines(data []byte) int {
	n := 1
	for i := 0; i < len(data); i++ {
		switch {
		case data[i] == '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			n++
		case data[i] == '\n':
			n++
		case bytes.HasPrefix(data[i:], []byte("\u0085")), bytes.HasPrefix(data[i:], []byte("\u2028")), bytes.HasPrefix(data[i:], []byte("\u2029")):
			n++
		}
	}
	return n
}

type storyFile struct {
	name string
	data []byte
}

// maxStoryFiles bounds how many files an input may split into.
const maxStoryFiles = 16

// splitStory splits a fuzz input into story files at "-- name --" lines.
// The text before the first such line is app.yaml; a later section with an
// already used name replaces it. ok is false when a name is not a valid
// fs.FS path, or there are too many files.
func splitStory(in []byte) (_ []storyFile, ok bool) {
	files := []storyFile{{name: "app.yaml"}}
	index := map[string]int{"app.yaml": 0}
	cur := 0
	var buf bytes.Buffer
	flush := func() { files[cur].data = bytes.Clone(buf.Bytes()); buf.Reset() }
	for line := range bytes.Lines(in) {
		t := bytes.TrimRight(line, "\r\n")
		if name, ok := bytes.CutPrefix(t, []byte("-- ")); ok {
			if name, ok := bytes.CutSuffix(name, []byte(" --")); ok {
				flush()
				n := strings.TrimSpace(string(name))
				if !fs.ValidPath(n) || n == "." {
					return nil, false
				}
				i, seen := index[n]
				if !seen {
					if len(files) == maxStoryFiles {
						return nil, false
					}
					i = len(files)
					index[n] = i
					files = append(files, storyFile{name: n})
				}
				cur = i
				continue
			}
		}
		buf.Write(line)
	}
	flush()
	// A file may not also be a directory of another ("a" and "a/b").
	for _, f := range files {
		for dir := filepath.ToSlash(filepath.Dir(f.name)); dir != "."; dir = filepath.ToSlash(filepath.Dir(dir)) {
			if _, clash := index[dir]; clash {
				return nil, false
			}
		}
	}
	return files, true
}

// loadTxtar loads a story written in FuzzLoad's input format from memory.
// In the diagnostics returned, {MOUNT} stands for the mount directory.
func loadTxtar(t *testing.T, in string) (*Story, []string) {
	t.Helper()
	files, ok := splitStory([]byte(in))
	if !ok {
		t.Fatalf("bad test input %q", in)
	}
	fsys := fstest.MapFS{}
	for _, sf := range files {
		fsys[sf.name] = &fstest.MapFile{Data: sf.data}
	}
	mount := filepath.Join(t.TempDir(), "story")
	st, err := Load(filepath.Join(mount, "app.yaml"), WithFS(fsys, mount), WithLookupEnv(mapEnv(nil)))
	if err != nil {
		var le *LoadError
		if !errors.As(err, &le) {
			t.Fatalf("Load error is %T, want *LoadError: %v", err, err)
		}
		got := lines(le.Diagnostics)
		for i := range got {
			got[i] = strings.ReplaceAll(got[i], mount, "{MOUNT}")
		}
		return nil, got
	}
	t.Cleanup(func() { st.Close() })
	return st, nil
}

// TestLoadWithFS loads a story with an include glob, a prompt file and a
// schema that $refs another, all from memory.
func TestLoadWithFS(t *testing.T) {
	st, diags := loadTxtar(t, `app: {id: mem}
hosts: [host.agent.decide]
include: ["rooms/*.yaml"]
root: ask
-- rooms/ask.yaml --
states:
  ask:
    on_enter:
      - invoke: host.agent.decide
        with: {prompt: prompts/ask.md, schema: schemas/verdict.json}
    terminal: true
-- prompts/ask.md --
Decide about {{ args.item }}.
-- schemas/verdict.json --
{"type": "object", "properties": {"reason": {"$ref": "common.json#/$defs/reason"}}}
-- schemas/common.json --
{"$defs": {"reason": {"type": "string"}}}
`)
	if diags != nil {
		t.Fatalf("Load failed:\n%s", strings.Join(diags, "\n"))
	}
	if _, ok := st.States["ask"]; !ok {
		t.Errorf("included state ask not loaded; states: %v", st.States)
	}
	if _, ok := st.Prompts["prompts/ask.md"]; !ok {
		t.Errorf("prompt file not compiled; prompts: %v", st.Prompts)
	}
	sch, ok := st.Schemas["schemas/verdict.json"]
	if !ok {
		t.Fatalf("schema not compiled; schemas: %v", st.Schemas)
	}
	if err := sch.Validate(map[string]any{"reason": 3}); err == nil {
		t.Errorf("schema accepted a number for the $ref'd string")
	}
}

// TestLoadFuzzFindings pins the messages of inputs FuzzLoad found wrong
// (each is also a seed under testdata/fuzz/FuzzLoad).
func TestLoadFuzzFindings(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		// YAML places the null of a lone "---" on line 2 of a one-line
		// file; it used to be reported as "app.yaml:2:1: app: is required".
		{"empty document", "---", []string{"app.yaml: story file is empty"}},
		{"bare null", "~\n", []string{"app.yaml: story file is empty"}},
		// The mount directory is the workspace: a path outside it is
		// refused as on the operating system.
		{"outside the mount", "app: {id: x}\nroot: a\ninclude: [../x.yaml]\nstates: {a: {terminal: true}}\n",
			[]string{`app.yaml:3:11: include[0]: "../x.yaml" is outside the workspace {MOUNT} (widen the workspace with --workspace DIR)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, got := loadTxtar(t, tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}
