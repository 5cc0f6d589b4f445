package localllm

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// embedServer answers /v1/embeddings with letterVector and records inputs.
func embedServer(t *testing.T) *chatServer {
	t.Helper()
	return newChatServer(t, func(w http.ResponseWriter, body map[string]any) {
		var data []any
		for i, in := range body["input"].([]any) {
			data = append(data, map[string]any{"index": i, "embedding": letterVector(in.(string), 300)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	})
}

func TestEmbedderPrefixesAndTruncation(t *testing.T) {
	tests := []struct {
		model     string
		role      Role
		wantInput string
		wantDims  int
	}{
		{"nomic-embed-text-v1.5", RoleDocument, "search_document: abc", 256},
		{"nomic-embed-text-v1.5", RoleQuery, "search_query: abc", 256},
		{"bge-small-en-v1.5", RoleDocument, "abc", 300},
		{"bge-small-en-v1.5", RoleQuery, "search_query: abc", 300},
		{"some-other-model", RoleQuery, "abc", 300},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			srv := embedServer(t)
			e, err := NewEmbedder(EmbedderConfig{Model: tc.model, Endpoint: srv.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			vecs, err := e.Embed(context.Background(), []string{"abc"}, tc.role)
			if err != nil {
				t.Fatal(err)
			}
			r := srv.requests()[0]
			if r.Path != "/v1/embeddings" {
				t.Errorf("path %s", r.Path)
			}
			if d := cmp.Diff(map[string]any{"model": tc.model, "input": []any{tc.wantInput}}, r.Body); d != "" {
				t.Errorf("request (-want +got):\n%s", d)
			}
			if len(vecs) != 1 || len(vecs[0]) != tc.wantDims {
				t.Errorf("dims = %d, want %d", len(vecs[0]), tc.wantDims)
			}
		})
	}
}

func TestRank(t *testing.T) {
	srv := embedServer(t)
	e, err := NewEmbedder(EmbedderConfig{Endpoint: srv.URL}, nil) // default: nomic
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	docs := []string{"zzz yyy", "apple pie", "banana bread", "apple pie"}
	got, err := e.Rank(context.Background(), "apple", docs)
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	for _, r := range got {
		order = append(order, r.Index)
	}
	// Ties keep input order; without the 256-dim truncation the constant
	// tail would make every score ~1 and the order meaningless.
	if d := cmp.Diff([]int{1, 3, 2, 0}, order); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	if got[0].Doc != "apple pie" || got[0].Score <= got[2].Score || got[3].Score != 0 {
		t.Errorf("ranking = %+v", got)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want one for query and documents together", n)
	}
	if in := srv.requests()[0].Body["input"].([]any); in[0] != "search_query: apple" || in[1] != "search_document: zzz yyy" {
		t.Errorf("inputs = %v", in)
	}
	if r, err := e.Rank(context.Background(), "q", nil); err != nil || len(r) != 0 {
		t.Errorf("no documents: %v %v", r, err)
	}
}

func TestCosine(t *testing.T) {
	if c := Cosine([]float32{1, 0}, []float32{2, 0}); math.Abs(c-1) > 1e-9 {
		t.Errorf("parallel = %v", c)
	}
	if c := Cosine([]float32{1, 0}, []float32{0, 3}); c != 0 {
		t.Errorf("orthogonal = %v", c)
	}
	if c := Cosine([]float32{0, 0}, []float32{1, 1}); c != 0 {
		t.Errorf("zero vector = %v", c)
	}
}

func TestEmbedderErrors(t *testing.T) {
	cs := newChatServer(t, func(w http.ResponseWriter, _ map[string]any) {
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = io.WriteString(w, "embeddings disabled")
	})
	e, _ := NewEmbedder(EmbedderConfig{Endpoint: cs.URL}, nil)
	defer e.Close()
	if _, err := e.Embed(context.Background(), []string{"a"}, RoleQuery); err == nil || err.Error() != "local_llm embed: http 501: embeddings disabled" {
		t.Errorf("err = %v", err)
	}
	short := newChatServer(t, func(w http.ResponseWriter, _ map[string]any) { _, _ = io.WriteString(w, `{"data":[]}`) })
	e2, _ := NewEmbedder(EmbedderConfig{Endpoint: short.URL}, nil)
	defer e2.Close()
	if _, err := e2.Embed(context.Background(), []string{"a"}, RoleQuery); err == nil || err.Error() != `local_llm embed: asked for 1 embeddings, got 0 (raw: {"data":[]})` {
		t.Errorf("err = %v", err)
	}
	if _, err := EmbedderFromDeclaration(agent.Declaration{Model: "bge-small-en-v1.5"}, Config{}, nil); err == nil ||
		err.Error() != `local embedder: model "bge-small-en-v1.5" has no sha256 pin, so managed mode refuses to fetch it; run llama-server with it yourself and use endpoint: mode` {
		t.Errorf("managed bge: %v", err)
	}
}

func TestManagedEmbeddingSidecar(t *testing.T) {
	m := newManagedSetup(t)
	e, err := NewEmbedder(EmbedderConfig{Model: "test-embed", Config: m.cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	if n := len(m.env.srv.hits); n != 0 {
		t.Fatalf("NewEmbedder fetched %d artifacts", n)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}, RoleDocument); err != nil {
		t.Fatal(err)
	}
	states := readStates(t, m.state)
	if len(states) != 1 {
		t.Fatalf("%d servers", len(states))
	}
	args := strings.Join(states[0].Args, " ")
	if !strings.HasSuffix(args, "--parallel 4 --embeddings --pooling mean") || !strings.Contains(args, "test-embed.gguf") {
		t.Errorf("embedding sidecar args: %s", args)
	}
	// A chat agent on the same pool gets its own process, not this one.
	chat, err := newManaged(t, agent.Declaration{Model: "test-chat"}, m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer chat.Close()
	if got, _ := askFake(t, chat, "x"); got.PID == states[0].PID {
		t.Error("the chat agent was routed to the embedding sidecar")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(states[0].PID) {
		t.Error("embedding sidecar survived Close")
	}
}

// server_bin: skips the release pin for an embedder as for a chat agent, so
// managed embeddings work on a platform without a pinned build.
func TestEmbedderServerBinOnUnpinnedPlatform(t *testing.T) {
	m := newManagedSetup(t)
	bin := fakeServerScript(t, t.TempDir(), "FAKE_STATE_DIR="+m.state)
	cfg := m.cfg
	cfg.Platform = "plan9/386"
	e, err := NewEmbedder(EmbedderConfig{Model: "test-embed", ServerBin: bin, Config: cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	if _, err := e.Embed(context.Background(), []string{"x"}, RoleDocument); err != nil {
		t.Fatal(err)
	}
	if n := m.env.srv.hitCount("/rel/llama-t1.tar.gz"); n != 0 {
		t.Errorf("release fetched %d times despite server_bin", n)
	}
}
