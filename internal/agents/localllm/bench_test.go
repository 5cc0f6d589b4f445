package localllm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/openai"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/testsupport/servertime"
)

// BenchmarkLocalLLMAsk measures a decide through the local_llm transport
// (grammar on, a persona, a 1 KiB prompt, a schema) against an in-test
// server that answers a canned body. The server's own time, measured on its
// side of the connection (internal/testsupport/servertime), is subtracted: the
// "kitsoki-ns/op" metric is the transport's overhead, its HTTP client and
// the kernel's loopback transit included. The raw_roundtrip sub-benchmark
// is the floor: the same POST made with bare net/http, so ask minus
// raw_roundtrip is what kitsoki's request building, reply parsing and
// checks (the builtin.openai agent's, which local_llm runs through) cost
// on top of the socket.
func BenchmarkLocalLLMAsk(b *testing.B) {
	canned := []byte(`{"model":"m","choices":[{"finish_reason":"stop","message":{"content":"{\"verdict\":\"approve\"}"}}],"usage":{"prompt_tokens":300,"completion_tokens":6}}`)
	var clk servertime.Clock
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(canned)
	}))
	srv.Listener = clk.Wrap(srv.Listener)
	srv.Start()
	defer srv.Close()
	a, err := New(agent.Declaration{Endpoint: srv.URL, Model: "m", Grammar: true}, Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	req := &agent.AskRequest{Verb: "decide", Prompt: strings.Repeat("Decide whether this change is safe. ", 30), Schema: json.RawMessage(inSubsetSchema), CallID: "c"}
	call := &agent.Call{Request: req, Persona: &agent.Persona{SystemPrompt: "You judge pull requests strictly."}, Model: "m"}
	sc, err := schema.CompileDocument("bench", req.Schema) // the host compiles the schema once, as here
	if err != nil {
		b.Fatal(err)
	}
	call.Validate = sc.Check()

	run := func(b *testing.B, op func() error) {
		if err := op(); err != nil { // warm the connection
			b.Fatal(err)
		}
		clk.Reset()
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			if err := op(); err != nil {
				b.Fatal(err)
			}
		}
		clk.Report(b, time.Since(start))
	}
	b.Run("ask", func(b *testing.B) {
		run(b, func() error { _, err := a.Ask(ctx, call); return err })
	})
	b.Run("raw_roundtrip", func(b *testing.B) {
		body, _ := json.Marshal(openai.ChatRequest{Model: "m", MaxTokens: DefaultMaxTokens, Messages: []openai.ChatMessage{{Role: "user", Content: req.Prompt}}, ResponseFormat: &openai.ResponseFormat{Type: "json_schema", JSONSchema: &openai.SchemaSpec{Name: "submission", Strict: true, Schema: req.Schema}}})
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		defer client.CloseIdleConnections()
		run(b, func() error {
			resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				return err
			}
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			return err
		})
	})
}
