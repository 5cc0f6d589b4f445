package localllm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// artifactServer serves stand-in release archives and models on loopback,
// with Range support, and records what was asked.
type artifactServer struct {
	*httptest.Server
	mu      sync.Mutex
	files   map[string][]byte
	hits    map[string]int
	ranges  map[string][]string
	cutOnce map[string]int // path → abort the next response after this many bytes
	noRange map[string]bool
}

func newArtifactServer(t *testing.T) *artifactServer {
	t.Helper()
	s := &artifactServer{files: map[string][]byte{}, hits: map[string]int{}, ranges: map[string][]string{}, cutOnce: map[string]int{}, noRange: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *artifactServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.files[r.URL.Path]
	s.hits[r.URL.Path]++
	s.ranges[r.URL.Path] = append(s.ranges[r.URL.Path], r.Header.Get("Range"))
	cut, doCut := s.cutOnce[r.URL.Path]
	delete(s.cutOnce, r.URL.Path)
	noRange := s.noRange[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if doCut {
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		_, _ = w.Write(data[:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	if noRange {
		_, _ = w.Write(data)
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// add serves data at p and returns its pinned Artifact.
func (s *artifactServer) add(name, p string, data []byte) Artifact {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[p] = data
	return Artifact{Name: name, URL: s.URL + p, SHA256: sha(data)}
}

func (s *artifactServer) hitCount(p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[p]
}

func (s *artifactServer) rangesOf(p string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges[p]...)
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

const testPlatform = "testos/testarch"

// tarEntry is one member of a stand-in release archive.
type tarEntry struct {
	name, body, link string
	dir              bool
	mode             int64
}

func makeTarGz(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		switch {
		case e.dir:
			h.Typeflag, h.Size = tar.TypeDir, 0
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			_, _ = tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// releaseEntries lays out a release like llama.cpp's: a nested build/bin
// with the server, a library and its SONAME symlink chain.
func releaseEntries(server string) []tarEntry {
	return []tarEntry{
		{name: "build/", dir: true},
		{name: "build/bin/", dir: true},
		{name: "build/bin/llama-server", body: server, mode: 0o755},
		{name: "build/bin/libllama.so.0.0.1", body: "ELF-ish library"},
		{name: "build/bin/libllama.so.0", link: "libllama.so.0.0.1"},
		{name: "build/bin/libllama.so", link: "libllama.so.0"},
		{name: "LICENSE", body: "MIT"},
	}
}

// testEnv is a cache, an artifact server and pins pointing at it.
type testEnv struct {
	srv      *artifactServer
	pins     Pins
	cache    string
	progress *bytes.Buffer
}

func (e *testEnv) opts() Options {
	return Options{CacheDir: e.cache, Pins: &e.pins, Platform: testPlatform, Progress: e.progress,
		NeedShim: func(context.Context, string) (bool, error) { return false, nil }}
}

func newTestEnv(t *testing.T, serverScript string) *testEnv {
	t.Helper()
	srv := newArtifactServer(t)
	e := &testEnv{srv: srv, cache: filepath.Join(t.TempDir(), "cache"), progress: &bytes.Buffer{}}
	e.pins = Pins{
		Releases: map[string]Release{testPlatform: {Tag: "t1", Archive: srv.add("llama-server t1 (test)", "/rel/llama-t1.tar.gz", makeTarGz(t, releaseEntries(serverScript)))}},
		Models: map[string]Model{
			"test-chat":  {ID: "test-chat", File: srv.add("model test-chat", "/models/test-chat.gguf", bytes.Repeat([]byte("GGUF chat "), 5000))},
			"test-embed": {ID: "test-embed", Embedding: true, File: srv.add("embedding model test-embed", "/models/test-embed.gguf", []byte("GGUF embed"))},
			"unpinned":   {ID: "unpinned", File: Artifact{Name: "model unpinned", URL: srv.URL + "/models/unpinned.gguf"}},
		},
		DefaultChatModel:      "test-chat",
		DefaultEmbeddingModel: "test-embed",
	}
	return e
}

func TestFetchModelVerifiesAndReuses(t *testing.T) {
	e := newTestEnv(t, "")
	p, err := FetchModel(context.Background(), "", e.opts()) // "" → the default chat model
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(e.cache, "models", "test-chat.gguf"); p != want {
		t.Errorf("path = %s, want %s", p, want)
	}
	got, _ := os.ReadFile(p)
	if !bytes.Equal(got, e.srv.files["/models/test-chat.gguf"]) {
		t.Error("cached bytes differ from the served ones")
	}
	out := e.progress.String()
	if !strings.HasPrefix(out, "downloading model test-chat …\n") || !strings.Contains(out, "verified model test-chat (sha256 ") {
		t.Errorf("announcements:\n%s", out)
	}
	e.progress.Reset()
	if _, err := FetchModel(context.Background(), "test-chat", e.opts()); err != nil {
		t.Fatal(err)
	}
	if n := e.srv.hitCount("/models/test-chat.gguf"); n != 1 {
		t.Errorf("downloads = %d, want 1 (the cache is reused)", n)
	}
	if e.progress.Len() != 0 {
		t.Errorf("a cache hit announced: %q", e.progress.String())
	}
}

func TestFetchChecksumMismatch(t *testing.T) {
	e := newTestEnv(t, "")
	m := e.pins.Models["test-chat"]
	good := m.File.SHA256
	m.File.SHA256 = strings.Repeat("0", 64)
	e.pins.Models["test-chat"] = m
	_, err := FetchModel(context.Background(), "test-chat", e.opts())
	want := "model test-chat: sha256 mismatch: want " + strings.Repeat("0", 64) + ", got " + good + " (the downloaded file was deleted)"
	if err == nil || err.Error() != want || !errors.Is(err, ErrChecksum) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	for _, f := range []string{"test-chat.gguf", "test-chat.gguf.part"} {
		if _, err := os.Stat(filepath.Join(e.cache, "models", f)); !os.IsNotExist(err) {
			t.Errorf("%s still exists after a mismatch", f)
		}
	}
}

func TestFetchCorruptCacheIsDeleted(t *testing.T) {
	e := newTestEnv(t, "")
	dest := filepath.Join(e.cache, "models", "test-chat.gguf")
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest, []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := FetchModel(context.Background(), "test-chat", e.opts())
	want := fmt.Sprintf("cached model test-chat (%s): sha256 mismatch: want %s, got %s (the file was deleted; the next use downloads it again)", dest, e.pins.Models["test-chat"].File.SHA256, sha([]byte("tampered")))
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Error("the tampered file was kept")
	}
	if _, err := FetchModel(context.Background(), "test-chat", e.opts()); err != nil {
		t.Fatalf("next use: %v", err)
	}
}

func TestFetchResumesAfterPartialFile(t *testing.T) {
	const p = "/models/test-chat.gguf"
	t.Run("interrupted download", func(t *testing.T) {
		e := newTestEnv(t, "")
		e.srv.cutOnce[p] = 20000
		_, err := FetchModel(context.Background(), "test-chat", e.opts())
		if err == nil || !strings.Contains(err.Error(), "download interrupted after 19.5 KiB (the partial file is kept and resumed next time)") {
			t.Fatalf("first fetch: %v", err)
		}
		part := filepath.Join(e.cache, "models", "test-chat.gguf.part")
		if st, err := os.Stat(part); err != nil || st.Size() != 20000 {
			t.Fatalf("partial file: %v %v", st, err)
		}
		e.progress.Reset()
		if _, err := FetchModel(context.Background(), "test-chat", e.opts()); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"", "bytes=20000-"}, e.srv.rangesOf(p)); d != "" {
			t.Errorf("Range headers (-want +got):\n%s", d)
		}
		if !strings.HasPrefix(e.progress.String(), "downloading model test-chat … (resuming at 19.5 KiB)\n") {
			t.Errorf("announcement: %q", e.progress.String())
		}
	})
	t.Run("server ignores the range", func(t *testing.T) {
		e := newTestEnv(t, "")
		e.srv.noRange[p] = true
		part := filepath.Join(e.cache, "models", "test-chat.gguf.part")
		_ = os.MkdirAll(filepath.Dir(part), 0o755)
		_ = os.WriteFile(part, e.srv.files[p][:100], 0o644)
		dest, err := FetchModel(context.Background(), "test-chat", e.opts())
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(dest); !bytes.Equal(got, e.srv.files[p]) {
			t.Error("restarted download has the wrong bytes")
		}
	})
}

func TestFetchRefusals(t *testing.T) {
	e := newTestEnv(t, "")
	_, err := FetchModel(context.Background(), "nope", e.opts())
	if want := `unknown model "nope" (pinned models: test-chat, test-embed); to use another model run llama-server yourself and use endpoint: mode`; err == nil || err.Error() != want {
		t.Errorf("unknown: %v", err)
	}
	_, err = FetchModel(context.Background(), "unpinned", e.opts())
	if want := `model "unpinned" has no sha256 pin, so managed mode refuses to fetch it; run llama-server with it yourself and use endpoint: mode`; err == nil || err.Error() != want {
		t.Errorf("unpinned: %v", err)
	}
	opts := e.opts()
	opts.Platform = "plan9/386"
	_, err = FetchServer(context.Background(), opts)
	if want := "no pinned llama-server build for plan9/386 (pinned: testos/testarch): set server_bin: to a llama-server you built, or use endpoint: mode against a server you run"; err == nil || err.Error() != want {
		t.Errorf("platform: %v", err)
	}
	if d := cmp.Diff([]string{"test-chat", "test-embed"}, ModelIDs(e.opts())); d != "" {
		t.Errorf("ModelIDs (-want +got):\n%s", d)
	}
	if n := len(e.srv.hits); n != 0 {
		t.Errorf("refusals made %d requests", n)
	}
	// The production pins refuse bge-small the same way.
	if _, err := DefaultPins().model("bge-small-en-v1.5"); err == nil || !strings.Contains(err.Error(), "has no sha256 pin") {
		t.Errorf("bge-small: %v", err)
	}
}

func TestFetchServerExtractsFlat(t *testing.T) {
	e := newTestEnv(t, "#!/bin/sh\necho fake\n")
	bin, err := FetchServer(context.Background(), e.opts())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.cache, "bin", "llama-t1")
	if bin != filepath.Join(dir, "llama-server") {
		t.Errorf("bin = %s", bin)
	}
	if st, err := os.Stat(bin); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("llama-server not executable: %v %v", st, err)
	}
	for link, target := range map[string]string{"libllama.so": "libllama.so.0", "libllama.so.0": "libllama.so.0.0.1"} {
		if got, err := os.Readlink(filepath.Join(dir, link)); err != nil || got != target {
			t.Errorf("%s -> %q (%v), want %s", link, got, err, target)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "libllama.so")); err != nil || string(b) != "ELF-ish library" {
		t.Errorf("symlink chain does not resolve: %q %v", b, err)
	}
	if serverLibDir(bin) != dir {
		t.Errorf("serverLibDir = %q, want %q", serverLibDir(bin), dir)
	}
	if _, err := FetchServer(context.Background(), e.opts()); err != nil {
		t.Fatal(err)
	}
	if n := e.srv.hitCount("/rel/llama-t1.tar.gz"); n != 1 {
		t.Errorf("archive downloads = %d, want 1", n)
	}
	// An interrupted extraction (no marker) is redone from the cached archive.
	if err := os.Remove(filepath.Join(dir, releaseMarker)); err != nil {
		t.Fatal(err)
	}
	if _, err := FetchServer(context.Background(), e.opts()); err != nil {
		t.Fatal(err)
	}
	if !releaseComplete(dir, e.pins.Releases[testPlatform].Archive.SHA256) || e.srv.hitCount("/rel/llama-t1.tar.gz") != 1 {
		t.Error("re-extraction should reuse the verified archive")
	}
}

func TestFetchServerShim(t *testing.T) {
	shimTar, err := os.ReadFile("testdata/libstdcxx-stand-in.tar.bz2")
	if err != nil {
		t.Fatal(err)
	}
	for _, need := range []bool{false, true} {
		t.Run(fmt.Sprint("needed=", need), func(t *testing.T) {
			e := newTestEnv(t, "#!/bin/sh\n")
			e.pins.Shims = map[string]Shim{testPlatform: {
				Archive: e.srv.add("libstdc++ shim (test)", "/shim/libstdcxx.tar.bz2", shimTar),
				Member:  "lib/libstdc++.so.6.0.30", InstallAs: "libstdc++.so.6", Needs: "GLIBCXX_3.4.30",
			}}
			opts := e.opts()
			var asked string
			opts.NeedShim = func(_ context.Context, v string) (bool, error) { asked = v; return need, nil }
			bin, err := FetchServer(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if asked != "GLIBCXX_3.4.30" {
				t.Errorf("probe asked for %q", asked)
			}
			b, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "libstdc++.so.6"))
			if need {
				if err != nil || string(b) != "stand-in libstdc++ GLIBCXX_3.4.30\n" {
					t.Errorf("shim: %q %v", b, err)
				}
				if !strings.Contains(e.progress.String(), "the system libstdc++ lacks GLIBCXX_3.4.30: adding libstdc++ shim (test) beside llama-server\n") {
					t.Errorf("announcement: %s", e.progress.String())
				}
			} else if err == nil || e.srv.hitCount("/shim/libstdcxx.tar.bz2") != 0 {
				t.Error("shim fetched although the system libstdc++ is new enough")
			}
		})
	}
}

func TestProvidesVersion(t *testing.T) {
	lib := []byte("\x7fELF...\x00GLIBCXX_3.4.29\x00GLIBCXX_3.4.30\x00CXXABI_1.3\x00")
	if !providesVersion(lib, "GLIBCXX_3.4.30") || providesVersion(lib, "GLIBCXX_3.4.3") || providesVersion(lib, "GLIBCXX_3.4.31") {
		t.Error("version search must match whole NUL-terminated names")
	}
}

func TestProgressLines(t *testing.T) {
	var out bytes.Buffer
	clk := clock.NewFake(time.Unix(0, 0))
	p := newProgress(&out, clk, "model m", 0, 1000)
	for i := 0; i < 10; i++ {
		_, _ = p.Write(make([]byte, 100))
	}
	p.finish()
	want := ""
	for pct := 10; pct < 100; pct += 10 {
		want += fmt.Sprintf("  model m: %d%% (%d B of 1000 B)\n", pct, pct*10)
	}
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("non-terminal progress (-want +got):\n%s", d)
	}

	out.Reset()
	bar := newProgress(&out, clk, "m", 0, 2048)
	bar.tty = true
	_, _ = bar.Write(make([]byte, 1024)) // too soon after the start: no redraw
	clk.Advance(time.Second)
	_, _ = bar.Write(make([]byte, 0))
	bar.finish()
	if want := "\r  [###############...............]  50% 1.0 KiB / 2.0 KiB\r  [###############...............]  50% 1.0 KiB / 2.0 KiB\n"; out.String() != want {
		t.Errorf("bar: %q", out.String())
	}
}

// Without a Content-Length and off a terminal, progress is a line at most
// every lineEvery, never one per write.
func TestProgressLinesUnknownSize(t *testing.T) {
	var out bytes.Buffer
	clk := clock.NewFake(time.Unix(0, 0))
	p := newProgress(&out, clk, "model m", 0, -1)
	_, _ = p.Write(make([]byte, 2048))
	clk.Advance(lineEvery - time.Second)
	_, _ = p.Write(make([]byte, 2048))
	clk.Advance(time.Second)
	_, _ = p.Write(make([]byte, 1024))
	_, _ = p.Write(make([]byte, 1024))
	p.finish()
	if want := "  model m: 5.0 KiB\n"; out.String() != want {
		t.Errorf("progress = %q, want %q", out.String(), want)
	}
}
