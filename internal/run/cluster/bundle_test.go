package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// copyStory copies the directory src into a fresh directory and returns
// the file rel inside the copy.
func copyStory(t *testing.T, src, rel string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, rel)
}

// copyHello copies the hello story (root file, prompt, schema, cassettes)
// into a fresh directory and returns its root file.
func copyHello(t *testing.T) string {
	t.Helper()
	return copyStory(t, filepath.Join(storiesDir, "hello"), "app.yaml")
}

func mustLoad(t *testing.T, path string, opts ...story.Option) *story.Story {
	t.Helper()
	st, err := story.Load(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func mustPack(t *testing.T, path string, st *story.Story, blobs *Blobs, opts ...story.Option) StoryRef {
	t.Helper()
	ref, err := PackStory(path, st, blobs, "", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// bundleNames lists the entries of the bundle digest in blobs.
func bundleNames(t *testing.T, blobs *Blobs, digest string) []string {
	t.Helper()
	b, err := blobs.Get(digest)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		names = append(names, h.Name)
		if h.ModTime.Unix() > 0 || h.Mode != 0o644 || h.Uid != 0 || h.Uname != "" {
			t.Errorf("entry %s has metadata: %+v", h.Name, h)
		}
	}
	return names
}

// worker is what a worker with no copy of the story has: the blob store
// and a directory of its own to unpack bundles into.
func workerStories(t *testing.T, blobs *Blobs, opts ...story.Option) *Stories {
	t.Helper()
	return &Stories{Dir: t.TempDir(), Blobs: blobs, BundleDir: filepath.Join(t.TempDir(), "bundles"), Options: opts}
}

// A packed story is run from its bundle: a worker with no copy of the
// files loads it, with the hash it was packed with, however the files
// change afterwards; the same files pack to the same blob.
func TestPackStoryTravelsWithTheSession(t *testing.T) {
	app := copyHello(t)
	st := mustLoad(t, app)
	blobs := &Blobs{Dir: t.TempDir()}
	ref := mustPack(t, app, st, blobs)
	if ref.Path != "app.yaml" || ref.Hash != st.ContentHash || !strings.HasPrefix(ref.Bundle, "sha256:") {
		t.Fatalf("ref %+v", ref)
	}
	if again := mustPack(t, app, st, blobs); again != ref {
		t.Fatalf("packing again: %+v; want the same blob %+v", again, ref)
	}
	want := []string{BundleManifest, "app.yaml", "prompts/greet.md", "schemas/greeting.json"}
	if d := cmp.Diff(want, bundleNames(t, blobs, ref.Bundle)); d != "" {
		t.Errorf("bundle entries (-want +got):\n%s", d)
	}

	// The story's files go away: the session's bundle is what a worker
	// runs.
	if err := os.RemoveAll(filepath.Dir(app)); err != nil {
		t.Fatal(err)
	}
	w := workerStories(t, blobs)
	got, err := w.Load(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.ContentHash != ref.Hash || got.States["lobby"] == nil {
		t.Errorf("loaded %s with %d states", got.ContentHash, len(got.States))
	}
	// Unpacked read-only, once: a second worker process reuses it.
	fi, err := os.Stat(filepath.Join(w.BundleDir, strings.TrimPrefix(ref.Bundle, "sha256:"), "app.yaml"))
	if err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("unpacked app.yaml: %v, %v; want mode 0444", fi, err)
	}
	again := &Stories{Blobs: blobs, BundleDir: w.BundleDir}
	if _, err := again.Load(ref); err != nil {
		t.Errorf("loading the unpacked bundle again: %v", err)
	}
}

// Every kind of file the story reads or checks travels, and the story
// runs from its bundle: the Starlark script (only checked at load, read
// when called), its sidecar, the include, the prompt, the schema and the
// one it $refs, the import and the .kitsoki-root marker it is found by.
// A file the story does not name stays behind.
func TestBundleHoldsWhatTheStoryReads(t *testing.T) {
	app := copyStory(t, "testdata/bundle", "app/app.yaml")
	st := mustLoad(t, app)
	blobs := &Blobs{Dir: t.TempDir()}
	ref := mustPack(t, app, st, blobs)
	if ref.Path != "app/app.yaml" {
		t.Errorf("path %q, want it relative to the workspace (the .kitsoki-root marker's directory)", ref.Path)
	}
	want := []string{BundleManifest, ".kitsoki-root", "app/app.yaml", "app/prompts/ask.md", "app/rooms/more.yaml",
		"app/schemas/answer.json", "app/schemas/common.json", "app/scripts/add.star", "app/scripts/add.star.yaml", "stories/lib/app.yaml"}
	if d := cmp.Diff(want, bundleNames(t, blobs, ref.Bundle)); d != "" {
		t.Errorf("bundle entries (-want +got):\n%s", d)
	}
	if err := os.RemoveAll(filepath.Dir(filepath.Dir(app))); err != nil {
		t.Fatal(err)
	}
	got, err := workerStories(t, blobs).Load(ref)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(got, runtime.Config{IgnorePins: true, Session: &runtime.Session{ID: "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	if _, err := rt.Session().Start(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := rt.Session().Turn(ctx, "add", map[string]any{"n": 2}, "")
	if err != nil || out.Err != nil {
		t.Fatalf("add: %+v, %v", out, err)
	}
	if sum := rt.Session().World()["sum"]; fmt.Sprint(sum) != "2" {
		t.Errorf("sum = %v: the bundled script did not run (world %v)", sum, rt.Session().World())
	}
}

// The bundle's bytes depend on the files' content only: another copy with
// other times and permissions packs to the same digest.
func TestPackStoryIsDeterministic(t *testing.T) {
	blobs := &Blobs{Dir: t.TempDir()}
	a, b := copyHello(t), copyHello(t)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(filepath.Dir(b), "prompts/greet.md"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(filepath.Dir(b), "app.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	ra, rb := mustPack(t, a, mustLoad(t, a), blobs), mustPack(t, b, mustLoad(t, b), blobs)
	if ra != rb {
		t.Errorf("two copies of one story: %s and %s", ra.Bundle, rb.Bundle)
	}
	// A changed prompt (not in the content hash) is another bundle.
	prompt := filepath.Join(filepath.Dir(b), "prompts/greet.md")
	if err := os.WriteFile(prompt, []byte("Greet {{ args.name }}, briefly.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rc := mustPack(t, b, mustLoad(t, b), blobs)
	if rc.Hash != rb.Hash || rc.Bundle == rb.Bundle {
		t.Errorf("a changed prompt: hash %s bundle %s; want the same hash, another bundle", rc.Hash, rc.Bundle)
	}
}

// An import found through the client's search path (--stories-path, a
// project's story_dirs) travels, and the worker looks it up where the
// client did, not through its own search path.
func TestBundleKeepsTheSearchPath(t *testing.T) {
	ws := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".kitsoki-root", "")
	write("main/app.yaml", "app: {id: main}\nimports:\n  lib: {source: \"@kitsoki/lib\", entry: idle}\nroot: s\nstates:\n  s: {}\n")
	write("libs/lib/app.yaml", "app: {id: lib}\nroot: idle\nstates:\n  idle: {}\n")
	app := filepath.Join(ws, "main/app.yaml")
	opts := []story.Option{story.WithStoriesPath(filepath.Join(ws, "libs"))}
	st := mustLoad(t, app, opts...)
	blobs := &Blobs{Dir: t.TempDir()}
	ref := mustPack(t, app, st, blobs, opts...)
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	// The worker's own search path has another lib: the bundle's wins.
	other := t.TempDir()
	if err := os.MkdirAll(filepath.Join(other, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "lib/app.yaml"), []byte("app: {id: other}\nroot: x\nstates:\n  x: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KITSOKI_STORIES_PATH", other)
	got, err := workerStories(t, blobs, story.WithStoriesPath(other)).Load(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.ContentHash != st.ContentHash {
		t.Errorf("the worker loaded %s, want %s", got.ContentHash, st.ContentHash)
	}
}

// A story that reads a file outside its workspace (here an import from
// the story library) cannot travel: the error says why and what to do.
func TestPackStoryRefusesWhatCannotTravel(t *testing.T) {
	lib := t.TempDir()
	if err := os.MkdirAll(filepath.Join(lib, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "lib/app.yaml"), []byte("app: {id: lib}\nroot: idle\nstates:\n  idle: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	app := filepath.Join(ws, "app.yaml")
	if err := os.WriteFile(app, []byte("app: {id: main}\nimports:\n  lib: {source: \"@kitsoki/lib\", entry: idle}\nroot: s\nstates:\n  s: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := []story.Option{story.WithLibrary(lib)}
	st := mustLoad(t, app, opts...)
	_, err := PackStory(app, st, &Blobs{Dir: t.TempDir()}, "", opts...)
	if !errors.Is(err, ErrNotBundled) {
		t.Fatalf("err = %v, want ErrNotBundled", err)
	}
	for _, want := range []string{"cannot bundle story " + app + " for the workers", "cannot resolve @kitsoki/lib",
		"copy what it reads into its workspace, or read it from the workers' stories directory instead (kitsoki run --stories DIR, kitsoki worker --stories DIR)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nwant it to contain %q", err, want)
		}
	}
}

// A bundle that is missing or damaged is an error naming its digest and
// what to do; packing the story again repairs a damaged blob.
func TestBundleErrorsNameTheDigest(t *testing.T) {
	app := copyHello(t)
	st := mustLoad(t, app)
	blobs := &Blobs{Dir: t.TempDir()}
	ref := mustPack(t, app, st, blobs)

	elsewhere := &Blobs{Dir: t.TempDir()}
	_, err := workerStories(t, elsewhere).Load(ref)
	want := "story app.yaml: the session's story bundle " + ref.Bundle + ": blob " + ref.Bundle + " is not in the blob store " + elsewhere.Dir +
		": blob missing; every worker and client of the cluster must share one blob directory (--blobs, $KITSOKI_BLOBS_DIR)"
	if err == nil || err.Error() != want {
		t.Errorf("missing bundle: %v\nwant %s", err, want)
	}
	if _, err := (&Stories{Dir: t.TempDir()}).Load(ref); err == nil || !strings.Contains(err.Error(), ref.Bundle+": this worker has no blob store; give it the cluster's (kitsoki worker --blobs DIR, $KITSOKI_BLOBS_DIR)") {
		t.Errorf("a worker without a blob store: %v", err)
	}

	p, _ := blobs.path(ref.Bundle)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = workerStories(t, blobs).Load(ref)
	if err == nil || !strings.Contains(err.Error(), "the session's story bundle "+ref.Bundle+": blob "+ref.Bundle+" in the blob store "+blobs.Dir+": blob corrupt: its content hashes to sha256:") ||
		!strings.Contains(err.Error(), "; restore the file "+p+" from another copy of the store") {
		t.Errorf("corrupt bundle: %v", err)
	}
	if again := mustPack(t, app, st, blobs); again != ref {
		t.Fatalf("packing again: %+v", again)
	}
	if _, err := workerStories(t, blobs).Load(ref); err != nil {
		t.Errorf("after packing again: %v", err)
	}
}

// A new session whose bundle a worker cannot read fails at its start with
// the error; the client shows it (ClosedError).
func TestNewSessionWithAMissingBundleFails(t *testing.T) {
	app := copyHello(t)
	st := mustLoad(t, app)
	ref := mustPack(t, app, st, &Blobs{Dir: t.TempDir()})
	env := loadedEnv()
	w := &Workflow{Stories: &Stories{Blobs: &Blobs{Dir: t.TempDir()}, BundleDir: t.TempDir()}}
	env.RegisterWorkflowWithOptions(w.Session, workflow.RegisterOptions{Name: SessionWorkflowName})
	env.ExecuteWorkflow(SessionWorkflowName, SessionInput{Story: ref, SessionID: "s1"})
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "the session's story bundle "+ref.Bundle+": blob "+ref.Bundle+" is not in the blob store") {
		t.Errorf("error = %v", err)
	}
}

// A bundle that is not one of PackStory's is refused before anything of
// it is written outside its directory.
func TestUnpackRefusesHostileBundles(t *testing.T) {
	man := &tar.Header{Typeflag: tar.TypeReg, Name: BundleManifest, Mode: 0o644}
	manData := []byte(`{"version":1}`)
	type entry struct {
		h    *tar.Header
		data []byte
	}
	many := []entry{{man, manData}}
	for i := range MaxBundleFiles + 1 {
		many = append(many, entry{&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("f%d", i), Mode: 0o644}, nil})
	}
	for _, tc := range []struct {
		name    string
		entries []entry
		want    string
	}{
		{"parent path", []entry{{man, manData}, {&tar.Header{Typeflag: tar.TypeReg, Name: "../escape.yaml", Mode: 0o644}, nil}}, `entry "../escape.yaml" is not a path inside the bundle`},
		{"absolute path", []entry{{man, manData}, {&tar.Header{Typeflag: tar.TypeReg, Name: "/etc/escape.yaml", Mode: 0o644}, nil}}, `entry "/etc/escape.yaml" is not a path inside the bundle`},
		{"symlink", []entry{{man, manData}, {&tar.Header{Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/etc/passwd"}, nil}}, `entry "link" is not a regular file`},
		{"twice", []entry{{man, manData}, {&tar.Header{Typeflag: tar.TypeReg, Name: "a", Mode: 0o644}, nil}, {&tar.Header{Typeflag: tar.TypeReg, Name: "a", Mode: 0o644}, nil}}, "file exists"},
		{"no manifest", []entry{{&tar.Header{Typeflag: tar.TypeReg, Name: "app.yaml", Mode: 0o644}, nil}}, `entry "app.yaml": a bundle holds .kitsoki-bundle.json first, and once`},
		{"another version", []entry{{man, []byte(`{"version":9}`)}}, ".kitsoki-bundle.json: version 9; this worker runs bundles of version 1 (upgrade the worker)"},
		{"stories path outside", []entry{{man, []byte(`{"version":1,"stories_path":["../x"]}`)}}, `stories path "../x" is not a directory inside the bundle`},
		{"too many files", many, "more than 10000 files or 268435456 bytes"},
		{"empty", nil, "empty: no .kitsoki-bundle.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, e := range tc.entries {
				h := *e.h
				h.Size = int64(len(e.data))
				if err := tw.WriteHeader(&h); err != nil {
					t.Fatal(err)
				}
				if _, err := tw.Write(e.data); err != nil {
					t.Fatal(err)
				}
			}
			tw.Close()
			blobs := &Blobs{Dir: t.TempDir()}
			digest, err := blobs.Put(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			parent := t.TempDir()
			_, _, err = unpack(blobs, filepath.Join(parent, "bundles"), digest)
			if err == nil || !strings.Contains(err.Error(), "the session's story bundle "+digest+": not a story bundle this worker can run: ") ||
				!strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(parent, "escape.yaml")); err == nil {
				t.Error("a file was written outside the bundle's directory")
			}
			if left, _ := os.ReadDir(filepath.Join(parent, "bundles")); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
