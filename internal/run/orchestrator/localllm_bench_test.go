package orchestrator

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/servertime"
)

// BenchmarkDecideLocalLLM drives the same full host.agent.decide as
// BenchmarkDecideInProcess (re-render with:, render the prompt file, 10-field
// schema, bind, trace to a file), but through the real builtin.local_llm
// transport (grammar: true, a persona) against an in-test OpenAI-compatible
// server on loopback.
//
// The server's own time is measured on its side of each connection (see
// internal/testsupport/servertime) and subtracted: "kitsoki-ns/op" is everything kitsoki does
// per decide, its HTTP client and the kernel's loopback transit included.
// "server-ns/op" is what was subtracted.
func BenchmarkDecideLocalLLM(b *testing.B) {
	srv, clk := newChatServer(b)
	s, t, q := localLLMSession(b, srv.URL)
	ctx := context.Background()
	dispatch := func() {
		if failed, err := s.dispatchOne(ctx, t, q); err != nil || failed {
			b.Fatalf("dispatch: failed=%v err=%v errs=%v", failed, err, t.errs)
		}
	}
	dispatch() // build the agent, open the connection
	clk.Reset()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		dispatch()
	}
	clk.Report(b, time.Since(start))
}

// BenchmarkLocalLLMExchange is the HTTP floor under BenchmarkDecideLocalLLM:
// the very request body the local_llm transport sends, POSTed with a bare
// net/http client to the same server and measured the same way. Its
// "kitsoki-ns/op" is what any client pays on its side of the exchange
// (net/http and the kernel's loopback), before kitsoki does anything.
func BenchmarkLocalLLMExchange(b *testing.B) {
	srv, clk := newChatServer(b)
	s, t, q := localLLMSession(b, srv.URL)
	if failed, err := s.dispatchOne(context.Background(), t, q); err != nil || failed {
		b.Fatalf("dispatch: failed=%v err=%v errs=%v", failed, err, t.errs)
	}
	body := srv.lastBody()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	post := func() {
		resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	post() // open the connection
	clk.Reset()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		post()
	}
	clk.Report(b, time.Since(start))
}

// newChatServer starts an in-test OpenAI-compatible server answering every
// chat request with the benchmark's submission, timed by a servertime.Clock.
func newChatServer(b *testing.B) (*chatServer, *servertime.Clock) {
	reply := `{"model":"m","choices":[{"finish_reason":"stop","message":{"content":` + jsonString(benchSubmission) + `}}],"usage":{"prompt_tokens":300,"completion_tokens":60}}`
	clk := &servertime.Clock{}
	cs := &chatServer{}
	cs.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cs.mu.Lock()
		cs.body = body
		cs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
	}))
	cs.Listener = clk.Wrap(cs.Listener)
	cs.Start()
	b.Cleanup(cs.Close)
	return cs, clk
}

// chatServer is the in-test server; it keeps the last request body.
type chatServer struct {
	*httptest.Server
	mu   sync.Mutex
	body []byte
}

func (cs *chatServer) lastBody() []byte {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.body
}

// localLLMSession loads the benchmark story with agent.fast routed to a
// grammar-constrained local_llm endpoint at url, tracing to a file.
func localLLMSession(b *testing.B, url string) (*Session, *turnCtx, *queued) {
	app := writeStory(b, files{
		"app.yaml": strings.Replace(benchStory, "agent.fast: {plugin: builtin.inprocess}",
			`agent.fast: {plugin: builtin.local_llm, endpoint: "`+url+`", model: m, grammar: true}`, 1),
		"prompts/audit.md":     "Audit this claim: {{ args.claim }} for {{ args.amount }}.\nAnswer with a verdict.",
		"schemas/verdict.json": benchSchema,
	})
	st, err := story.Load(app)
	if err != nil {
		b.Fatal(err)
	}
	w, err := trace.Create(filepath.Join(b.TempDir(), "bench.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	reg := agent.NewRegistry(nil)
	reg.RegisterTransport(agent.PluginLocalLLM, localllm.Builder)
	reg.Configure(st.Plugins)
	b.Cleanup(func() { reg.Close() })
	s, err := New(st, host.New(st, reg, w), w, WithSessionID("bench"))
	if err != nil {
		b.Fatal(err)
	}
	s.started, s.state, s.turn = true, "s", 1
	return s, s.newTurn(1, "go", nil), &queued{inv: st.States["s"].OnEnter[0].Invoke, name: st.States["s"].OnEnter[0].Invoke.Name}
}

func jsonString(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	sb.WriteByte('"')
	return sb.String()
}
