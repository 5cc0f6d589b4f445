package cluster

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// copyHello copies the hello story (root file, prompt, schema, cassettes)
// into a fresh directory and returns its root file.
func copyHello(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../../stories/hello")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "app.yaml")
}

// A packed story is run from its bundle: a worker with no copy of the
// files loads it, with the hash it was packed with, however the files
// change afterwards; the same files pack to the same blob.
func TestPackStoryTravelsWithTheSession(t *testing.T) {
	app := copyHello(t)
	st, err := story.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	blobs := &Blobs{Dir: t.TempDir()}
	ref, err := PackStory(app, st, blobs, "")
	if err != nil {
		t.Fatal(err)
	}
	if ref.Path != "app.yaml" || ref.Hash != st.ContentHash || !strings.HasPrefix(ref.Bundle, "sha256:") {
		t.Fatalf("ref %+v", ref)
	}
	again, err := PackStory(app, st, blobs, "")
	if err != nil || again != ref {
		t.Fatalf("packing again: %+v, %v; want the same blob %+v", again, err, ref)
	}
	b, err := blobs.Get(ref.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		names = append(names, h.Name)
	}
	if got := strings.Join(names, ","); got != "app.yaml,prompts/greet.md,schemas/greeting.json" {
		t.Errorf("bundle holds %s, want the files the load reads", got)
	}

	// The story changes, and its files go away: the session's bundle is
	// what a worker runs.
	if err := os.RemoveAll(filepath.Dir(app)); err != nil {
		t.Fatal(err)
	}
	w := &Stories{Dir: t.TempDir(), Blobs: blobs, BundleDir: filepath.Join(t.TempDir(), "bundles")}
	got, err := w.Load(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.ContentHash != ref.Hash || got.States["lobby"] == nil {
		t.Errorf("loaded %s with states %v", got.ContentHash, len(got.States))
	}
	if _, err := w.Load(StoryRef{Path: "app.yaml", Hash: ref.Hash, Bundle: "sha256:" + strings.Repeat("0", 64)}); err == nil ||
		!strings.Contains(err.Error(), "blob missing") {
		t.Errorf("a bundle the store lacks: %v", err)
	}
	if _, err := (&Stories{Dir: t.TempDir()}).Load(ref); err == nil || !strings.Contains(err.Error(), "no blob store") {
		t.Errorf("a worker without a blob store: %v", err)
	}
}

// A bundle that is not one of PackStory's is refused before anything of
// it is written outside its directory.
func TestUnpackRefusesHostileBundles(t *testing.T) {
	for name, entry := range map[string]*tar.Header{
		"parent path":   {Typeflag: tar.TypeReg, Name: "../escape.yaml", Mode: 0o644},
		"absolute path": {Typeflag: tar.TypeReg, Name: "/etc/escape.yaml", Mode: 0o644},
		"symlink":       {Typeflag: tar.TypeSymlink, Name: "link", Linkname: "/etc/passwd"},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			if err := tw.WriteHeader(entry); err != nil {
				t.Fatal(err)
			}
			tw.Close()
			blobs := &Blobs{Dir: t.TempDir()}
			digest, err := blobs.Put(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			parent := t.TempDir()
			if _, err := unpack(blobs, filepath.Join(parent, "bundles"), digest); err == nil {
				t.Fatal("a hostile bundle was unpacked")
			}
			if _, err := os.Stat(filepath.Join(parent, "escape.yaml")); err == nil {
				t.Error("a file was written outside the bundle's directory")
			}
		})
	}
}
