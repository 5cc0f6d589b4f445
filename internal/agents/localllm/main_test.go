package localllm

import (
	"encoding/json"
	"flag"
	"fmt"
	"github.com/kitsoki/kitsoki/internal/agents/openai"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake llama-server: a test writes a small
// shell script that re-executes it with fakeServerEnv set, and points
// server_bin (or a stand-in release archive) at the script.
const fakeServerEnv = "KITSOKI_TEST_FAKE_LLAMA_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeServerEnv) != "" {
		os.Exit(fakeServerMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeState is what the fake server records about itself, one JSON file per
// process in $FAKE_STATE_DIR, for tests to inspect.
type fakeState struct {
	PID          int      `json:"pid"`
	Args         []string `json:"args"`
	LDLibPath    string   `json:"ld_library_path"`
	EarlyChats   int      `json:"early_chats"` // chat requests before /health said ok
	Term         bool     `json:"term"`        // received SIGTERM
	EmbedInputs  []string `json:"embed_inputs,omitempty"`
	ChatRequests int      `json:"chat_requests"`
}

// fakeServerMain is a llama-server stand-in. Environment knobs:
// FAKE_STATE_DIR (required), FAKE_HEALTH_DELAY (503 on /health until then),
// FAKE_IGNORE_TERM=1 (survive SIGTERM), FAKE_FAIL_START=1 (exit at once).
// A chat whose prompt is "die" makes the server exit mid-request.
func fakeServerMain(args []string) int {
	fs := flag.NewFlagSet("llama-server", flag.ContinueOnError)
	model := fs.String("m", "", "model")
	host := fs.String("host", "", "host")
	port := fs.Int("port", 0, "port")
	fs.Int("parallel", 1, "slots")
	embeddings := fs.Bool("embeddings", false, "embeddings only")
	fs.String("pooling", "", "pooling")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if os.Getenv("FAKE_FAIL_START") == "1" {
		fmt.Fprintln(os.Stderr, "error: failed to load model '"+*model+"'")
		return 1
	}
	st := &fakeState{PID: os.Getpid(), Args: args, LDLibPath: os.Getenv("LD_LIBRARY_PATH")}
	stateFile := filepath.Join(os.Getenv("FAKE_STATE_DIR"), fmt.Sprintf("%d.json", os.Getpid()))
	save := func() {
		b, _ := json.Marshal(st)
		_ = os.WriteFile(stateFile+".tmp", b, 0o644)
		_ = os.Rename(stateFile+".tmp", stateFile)
	}
	var mu sync.Mutex // guards st
	save()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	ignoreTerm := os.Getenv("FAKE_IGNORE_TERM") == "1"
	delay, _ := time.ParseDuration(os.Getenv("FAKE_HEALTH_DELAY"))
	start := time.Now()
	ready := func() bool { return time.Since(start) >= delay }

	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		if !ready() {
			http.Error(w, `{"error":{"code":503,"message":"Loading model"}}`, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req openai.ChatRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		st.ChatRequests++
		if !ready() {
			st.EarlyChats++
		}
		save()
		mu.Unlock()
		if last := req.Messages[len(req.Messages)-1].Content; last == "die" {
			fmt.Fprintln(os.Stderr, "fatal: segfault in the fake model")
			os.Exit(3)
		}
		content, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "args": args})
		resp := map[string]any{
			"model":   *model,
			"choices": []any{map[string]any{"finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(content)}}},
			"usage":   map[string]any{"prompt_tokens": 3, "completion_tokens": 4},
		}
		_ = json.NewEncoder(w).Encode(resp)
	})
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		if !*embeddings {
			http.Error(w, "embeddings disabled", http.StatusNotImplemented)
			return
		}
		var req embedRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		st.EmbedInputs = append(st.EmbedInputs, req.Input...)
		save()
		mu.Unlock()
		data := []any{}
		for i, in := range req.Input {
			data = append(data, map[string]any{"index": i, "embedding": letterVector(in, 300)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	})
	l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", *host, *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "error: bind:", err)
		return 1
	}
	go func() { _ = http.Serve(l, mux) }()
	for range sigs {
		mu.Lock()
		st.Term = true
		save()
		mu.Unlock()
		if !ignoreTerm {
			return 0
		}
	}
	return 0
}

// letterVector is a deterministic stand-in embedding: letter counts of the
// text after its task prefix, in the first 26 dimensions, and in dimensions
// 256 and up a large constant that would swamp the similarity if the
// Matryoshka truncation to 256 were missing.
func letterVector(s string, dims int) []float32 {
	for _, p := range []string{"search_document: ", "search_query: "} {
		s = strings.TrimPrefix(s, p)
	}
	v := make([]float32, dims)
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' {
			v[r-'a']++
		}
	}
	for i := 256; i < dims; i++ {
		v[i] = 1000
	}
	return v
}

// fakeServerScript writes an executable script that runs the fake server
// with the given extra environment and returns its path.
func fakeServerScript(t *testing.T, dir string, env ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nexec env " + fakeServerEnv + "=1 " + strings.Join(env, " ") + " '" + exe + "' \"$@\"\n"
	p := filepath.Join(dir, "llama-server")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// readStates returns the fake servers' recorded states in dir.
func readStates(t *testing.T, dir string) []fakeState {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []fakeState
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var st fakeState
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		out = append(out, st)
	}
	return out
}
