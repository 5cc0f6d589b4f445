package orchestrator

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
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
// server on loopback.
//
// The server's own time is measured on its side of each connection (see
// serverClock) and subtracted: "kitsoki-ns/op" is everything kitsoki does
// per decide, its HTTP client and the kernel's loopback transit included.
// "server-ns/op" is what was subtracted.
func BenchmarkDecideLocalLLM(b *testing.B) {
	reply := `{"model":"m","choices":[{"finish_reason":"stop","message":{"content":` + jsonString(benchSubmission) + `}}],"usage":{"prompt_tokens":300,"completion_tokens":60}}`
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
	}))
	clk := &serverClock{}
	srv.Listener = clk.wrap(srv.Listener)
	srv.Start()
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
	clk.reset()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		dispatch()
	}
	total := time.Since(start)
	server := clk.total()
	b.ReportMetric(float64(total-server)/float64(b.N), "kitsoki-ns/op")
	b.ReportMetric(float64(server)/float64(b.N), "server-ns/op")
}

// serverClock measures a server's own time per request on its side of the
// connection: from the moment a request's first bytes are read to the
// moment the last write of its response returns. That covers the server's
// HTTP parsing, its handler and its response writes, and none of the
// client's work or the kernel's transit to and from it.
type serverClock struct {
	mu     sync.Mutex
	sum    time.Duration
	ledger map[*timedConn]bool
}

func (c *serverClock) wrap(l net.Listener) net.Listener { return &timedListener{Listener: l, clk: c} }

func (c *serverClock) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tc := range c.ledger {
		tc.settle()
	}
	c.sum = 0
}

// total is the server time accumulated since reset, the request in flight
// on each connection included once its response is written.
func (c *serverClock) total() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tc := range c.ledger {
		c.sum += tc.settle()
	}
	return c.sum
}

type timedListener struct {
	net.Listener
	clk *serverClock
}

func (l *timedListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &timedConn{Conn: conn, clk: l.clk}
	l.clk.mu.Lock()
	if l.clk.ledger == nil {
		l.clk.ledger = map[*timedConn]bool{}
	}
	l.clk.ledger[tc] = true
	l.clk.mu.Unlock()
	return tc, nil
}

// timedConn tracks one server connection: a request starts when bytes are
// read while no request is open, and ends with the last response write
// before the next request's bytes arrive.
type timedConn struct {
	net.Conn
	clk *serverClock

	mu        sync.Mutex
	open      bool
	start     time.Time
	lastWrite time.Time
}

func (c *timedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		now := time.Now()
		c.mu.Lock()
		var done time.Duration
		if c.open && !c.lastWrite.IsZero() { // the previous request was answered
			done = c.lastWrite.Sub(c.start)
			c.open = false
		}
		if !c.open {
			c.open, c.start, c.lastWrite = true, now, time.Time{}
		}
		c.mu.Unlock()
		if done > 0 {
			c.clk.mu.Lock()
			c.clk.sum += done
			c.clk.mu.Unlock()
		}
	}
	return n, err
}

func (c *timedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	c.lastWrite = time.Now()
	c.mu.Unlock()
	return n, err
}

// settle closes the answered request in flight, returning its time.
func (c *timedConn) settle() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.open || c.lastWrite.IsZero() {
		return 0
	}
	d := c.lastWrite.Sub(c.start)
	c.open, c.lastWrite = false, time.Time{}
	return d
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
