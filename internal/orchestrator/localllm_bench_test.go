package orchestrator

import (
	"bytes"
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
	srv, clk := newChatServer(b)
	s, t, q := localLLMSession(b, srv.URL)
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
	clk.report(b, time.Since(start))
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
	body := clk.lastBody()
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
	clk.reset()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		post()
	}
	clk.report(b, time.Since(start))
}

// newChatServer starts an in-test OpenAI-compatible server answering every
// chat request with the benchmark's submission, timed by a serverClock.
func newChatServer(b *testing.B) (*httptest.Server, *serverClock) {
	reply := `{"model":"m","choices":[{"finish_reason":"stop","message":{"content":` + jsonString(benchSubmission) + `}}],"usage":{"prompt_tokens":300,"completion_tokens":60}}`
	clk := &serverClock{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		clk.keepBody(body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
	}))
	srv.Listener = clk.wrap(srv.Listener)
	srv.Start()
	b.Cleanup(srv.Close)
	return srv, clk
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
	return s, s.newTurn(1, "go", nil), &queued{inv: st.States["s"].OnEnter[0].Invoke}
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
	body   []byte // the last request body the handler read
}

func (c *serverClock) keepBody(b []byte) {
	c.mu.Lock()
	c.body = b
	c.mu.Unlock()
}

func (c *serverClock) lastBody() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.body
}

// report subtracts the server's time from elapsed, the wall time of b.N
// operations.
func (c *serverClock) report(b *testing.B, elapsed time.Duration) {
	server := c.total()
	b.ReportMetric(float64(elapsed-server)/float64(b.N), "kitsoki-ns/op")
	b.ReportMetric(float64(server)/float64(b.N), "server-ns/op")
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
