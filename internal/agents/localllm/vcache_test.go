package localllm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// With a cache directory, a vector is embedded once per model and text:
// a second embedder on the same directory (a later run) asks the server
// only for texts it has not seen; the files live under the directory,
// content-addressed; a torn file is embedded again and rewritten.
func TestEmbeddingCacheOnDisk(t *testing.T) {
	srv := embedServer(t)
	dir := filepath.Join(t.TempDir(), "cache")
	ctx := context.Background()
	open := func(model string) *LocalEmbedder {
		e, err := NewEmbedder(EmbedderConfig{Model: model, Endpoint: srv.URL, CacheDir: dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	inputs := func() [][]any {
		var out [][]any
		for _, r := range srv.requests() {
			out = append(out, r.Body["input"].([]any))
		}
		return out
	}
	docs := []string{"apple pie", "banana bread"}
	first, err := open("nomic-embed-text-v1.5").Rank(ctx, "apple", docs)
	if err != nil {
		t.Fatal(err)
	}
	second := open("nomic-embed-text-v1.5")
	again, err := second.Rank(ctx, "banana", docs)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{"search_query: apple", "search_document: apple pie", "search_document: banana bread"},
		{"search_query: banana"}, // the documents come from the first run's files
	}
	if d := cmp.Diff(want, inputs()); d != "" {
		t.Errorf("texts sent to the server (-want +got):\n%s", d)
	}
	if second.cache.disks != 2 {
		t.Errorf("vectors read from disk = %d, want 2", second.cache.disks)
	}
	if first[0].Doc != "apple pie" || again[0].Doc != "banana bread" {
		t.Errorf("rankings %v / %v", first, again)
	}
	// Another model is another address.
	if _, err := open("bge-small-en-v1.5").Embed(ctx, []string{"apple pie"}, RoleDocument); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("requests = %d, want 3 (a new model embeds again)", n)
	}
	var files []string
	if err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Fatalf("cache files %v, want 5", files)
	}
	for _, f := range files {
		parts := strings.Split(f, "/")
		if len(parts) != 3 || !strings.HasSuffix(parts[2], ".vec") || !strings.HasPrefix(parts[2], parts[1]) {
			t.Errorf("cache file %s is not <model>/<hh>/<hash>.vec", f)
		}
	}
	// A torn file is not trusted.
	c := newVectorCache("nomic-embed-text-v1.5", 256, dir)
	torn := filepath.Join(dir, filepath.FromSlash(c.file(c.key("search_document: apple pie"))))
	if err := os.WriteFile(torn, []byte("KEV1\x05"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := open("nomic-embed-text-v1.5").Embed(ctx, []string{"apple pie"}, RoleDocument); err != nil {
		t.Fatal(err)
	}
	if got := inputs()[len(inputs())-1]; !cmp.Equal(got, []any{"search_document: apple pie"}) {
		t.Errorf("after a torn file the server got %v", got)
	}
	if b, _ := os.ReadFile(torn); len(b) != 8+4*256 {
		t.Errorf("the torn file was not rewritten: %d bytes", len(b))
	}
}

// The cache file form round-trips and refuses what it did not write.
func TestVectorFileForm(t *testing.T) {
	v := []float32{0.5, -1.25, 3}
	got, ok := decodeVec(encodeVec(v))
	if !ok || !cmp.Equal(got, v) {
		t.Errorf("round trip = %v %v", got, ok)
	}
	for _, b := range [][]byte{nil, []byte("KEV1"), []byte("XXXX\x01\x00\x00\x00\x00\x00\x00\x00"), encodeVec(v)[:10]} {
		if _, ok := decodeVec(b); ok {
			t.Errorf("decodeVec(%q) accepted", b)
		}
	}
}
