package orchestrator

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/agent/localllm"
	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/story"
	"github.com/kitsoki/kitsoki/internal/trace"
)

// BenchmarkDecideLocalLLM drives the same full host.agent.decide as
// BenchmarkDecideInProcess (re-render with:, render the prompt file, 10-field
// schema, bind, trace to a file), but through the real builtin.local_llm
// transport (grammar: true, a persona) against an in-test OpenAI-compatible
// server on loopback. The handler's own time is subtracted: "kitsoki-ns/op"
// is everything kitsoki does per decide, the loopback HTTP exchange included.
func BenchmarkDecideLocalLLM(b *testing.B) {
	reply := `{"model":"m","choices":[{"finish_reason":"stop","message":{"content":` + jsonString(benchSubmission) + `}}],"usage":{"prompt_tokens":300,"completion_tokens":60}}`
	var serverNs atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
		serverNs.Add(int64(time.Since(start)))
	}))
	defer srv.Close()
	app := writeStory(b, files{
		"app.yaml": strings.Replace(benchStory, "agent.fast: {plugin: builtin.inprocess}",
			`agent.fast: {plugin: builtin.local_llm, endpoint: "`+srv.URL+`", model: m, grammar: true}`, 1),
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
	defer w.Close()
	reg := agent.NewRegistry(nil)
	reg.RegisterTransport(agent.PluginLocalLLM, localllm.Builder)
	reg.Configure(st.Plugins)
	defer reg.Close()
	s, err := New(st, host.New(st, reg, w), w, WithSessionID("bench"))
	if err != nil {
		b.Fatal(err)
	}
	s.started, s.state, s.turn = true, "s", 1
	t := s.newTurn(1, "go", nil)
	q := &queued{inv: st.States["s"].OnEnter[0].Invoke}
	ctx := context.Background()
	dispatch := func() {
		if failed, err := s.dispatchOne(ctx, t, q); err != nil || failed {
			b.Fatalf("dispatch: failed=%v err=%v errs=%v", failed, err, t.errs)
		}
	}
	dispatch() // build the agent, open the connection
	serverNs.Store(0)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		dispatch()
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds()-serverNs.Load())/float64(b.N), "kitsoki-ns/op")
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
