package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// corpusApp searches the workspace's Markdown the way Kitsoki's prd and
// dev-story stories do (corpus globs, chunk, min_score, top_k), binds the
// hits and the whole data, and falls back through on_error.
const corpusApp = `
app: {id: corpus}
routing:
  embedding: {endpoint: "ENDPOINT", model: nomic-embed-text-v1.5, cache_dir: .kitsoki/cache/embeddings}
world:
  hits: {type: list, default: []}
  found: {type: object}
intents:
  find: {slots: {q: {type: string, required: true}}}
  done: {}
root: s
states:
  s:
    view: |
      {% for h in world.hits %}{{ h.chunk_id }} {{ h.heading }} @{{ h.line }}
      {% endfor %}count={{ world.found.hits|length }}
    on:
      find:
        - target: "."
          effects:
            - invoke: host.agent.search
              with:
                query: "{{ slots.q }}"
                corpus: ["docs/**/*.md"]
                top_k: 2
                min_score: 0.5
                chunk: {max: 200, mode: heading}
              bind: {hits: hits, found: data}
              on_error: s
      done: [{target: end}]
  end: {terminal: true}
`

var corpusFiles = map[string]string{
	"docs/fruit.md":     "# Apples\napple apple pie\n\n# Bananas\nbanana bread banana\n",
	"docs/deep/keys.md": "intro line\n\n## Keys\nkey keyring keys\n```\n# not a heading\n```\n",
	"notes/apple.txt":   "apple apple apple (not in the corpus globs)\n",
	"docs/empty.md":     "\n\n",
}

func corpusServer(t *testing.T) (*httptest.Server, func() [][]string) {
	var mu sync.Mutex
	var inputs [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		inputs = append(inputs, req.Input)
		mu.Unlock()
		data := []any{}
		for i, in := range req.Input {
			data = append(data, map[string]any{"index": i, "embedding": letterCounts(in)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	t.Cleanup(srv.Close)
	return srv, func() [][]string { mu.Lock(); defer mu.Unlock(); return inputs }
}

// TestCorpusSearch runs host.agent.search's corpus form through kitsoki
// run: only the files the globs match are cut (at headings, not inside a
// code fence) and ranked by the story's routing.embedding model; the hits
// pass min_score and top_k; the vectors land in cache_dir, so a second
// run embeds only its query; a recorded run replays from its cassette with
// the embedding server gone.
func TestCorpusSearch(t *testing.T) {
	srv, inputs := corpusServer(t)
	dir := t.TempDir()
	for name, body := range corpusFiles {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	app := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(app, []byte(strings.Replace(corpusApp, "ENDPOINT", srv.URL, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cas := filepath.Join(dir, "search.cassette.yaml")
	code, out, errs := runCLI(t, "", "run", app, "--record", cas, "--intents", "find q=apple,done")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	want := "docs/fruit.md#0 Apples @1\ncount=1"
	if !strings.Contains(out, want) {
		t.Errorf("stdout lacks %q:\n%s", want, out)
	}
	first := inputs()
	if len(first) != 1 {
		t.Fatalf("embedding requests %q, want one", first)
	}
	got := strings.Join(first[0], "|")
	for _, chunk := range []string{"search_query: apple", "search_document: # Apples\napple apple pie", "search_document: # Bananas\nbanana bread banana",
		"search_document: intro line", "search_document: ## Keys\nkey keyring keys\n```\n# not a heading\n```"} {
		if !strings.Contains(got, chunk) {
			t.Errorf("the request lacks %q: %q", chunk, first[0])
		}
	}
	if strings.Contains(got, "not in the corpus") || len(first[0]) != 5 {
		t.Errorf("the request holds %d texts, want the query and 4 chunks: %q", len(first[0]), first[0])
	}
	if ms, _ := filepath.Glob(filepath.Join(dir, ".kitsoki", "cache", "embeddings", "nomic-embed-text-v1.5", "*", "*.vec")); len(ms) != 5 {
		t.Errorf("cache files %v, want 5", ms)
	}

	// A second run embeds its query only.
	code, out, errs = runCLI(t, "", "run", app, "--intents", "find q=banana,done")
	if code != exitOK || !strings.Contains(out, "docs/fruit.md#1 Bananas @4\ncount=1") {
		t.Fatalf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if all := inputs(); len(all) != 2 || strings.Join(all[1], "|") != "search_query: banana" {
		t.Errorf("second run's requests %q, want the query alone", all[1:])
	}

	// The recording replays with the server gone.
	srv.Close()
	code, out, errs = runCLI(t, "", "run", app, "--cassette", cas, "--intents", "find q=apple,done")
	if code != exitOK || !strings.Contains(out, want) {
		t.Fatalf("replay: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// Without routing.embedding the corpus form fails with the setting named,
// and on_error handles it.
func TestCorpusSearchWithoutAnEmbedder(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	body := strings.Replace(corpusApp, "routing:\n  embedding: {endpoint: \"ENDPOINT\", model: nomic-embed-text-v1.5, cache_dir: .kitsoki/cache/embeddings}\n", "", 1)
	if err := os.WriteFile(app, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "", "run", app, "--intents", "find q=apple,done")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "host.agent.search: no embedding model is configured for this story: set routing.embedding.endpoint") || !strings.Contains(errs, "on_error → s") {
		t.Errorf("the failure is not named:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
}
