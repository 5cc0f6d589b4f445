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

// letterCounts is a stand-in embedding: letter counts of the text after its
// nomic task prefix in the first 26 dimensions, and a large constant from
// dimension 256 on that would swamp the similarity if the Matryoshka
// truncation were skipped.
func letterCounts(s string) []float32 {
	for _, p := range []string{"search_document: ", "search_query: "} {
		s = strings.TrimPrefix(s, p)
	}
	v := make([]float32, 300)
	for _, r := range s {
		if r >= 'a' && r <= 'z' {
			v[r-'a']++
		}
	}
	for i := 256; i < len(v); i++ {
		v[i] = 1000
	}
	return v
}

const searchApp = `
app: {id: searchcli}
agent_plugins:
  agent.embed: {plugin: builtin.local_llm, endpoint: "ENDPOINT", model: nomic-embed-text-v1.5}
world:
  best: {type: string, default: ""}
intents:
  find: {slots: {q: {type: string, required: true}}}
  done: {}
root: s
states:
  s:
    view: "best={{ world.best }}"
    on:
      find:
        - target: "."
          effects:
            - invoke: host.agent.search
              agent: agent.embed
              with: {query: "{{ slots.q }}", documents: ["zzz yyy", "banana bread", "apple pie"], top_k: 2}
              bind: {best: top}
      done: [{target: end}]
  end: {terminal: true}
`

// TestRunSearchThroughEmbeddingEndpoint runs host.agent.search through
// kitsoki run's own wiring: the builtin.local_llm declaration becomes a
// LocalEmbedder that sends the query and documents with their nomic task
// prefixes to /v1/embeddings in one request and ranks by cosine similarity.
func TestRunSearchThroughEmbeddingEndpoint(t *testing.T) {
	var mu sync.Mutex
	var inputs [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
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
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(app, []byte(strings.Replace(searchApp, "ENDPOINT", srv.URL, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "", "run", app, "--trace", filepath.Join(dir, "t.jsonl"), "--intents", "find q=apple,find q=banana,done")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"best=apple pie", "best=banana bread"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	want := []string{"search_query: apple", "search_document: zzz yyy", "search_document: banana bread", "search_document: apple pie"}
	if len(inputs) != 2 || strings.Join(inputs[0], "|") != strings.Join(want, "|") {
		t.Errorf("embedding requests = %q, want two, the first %q", inputs, want)
	}
}
