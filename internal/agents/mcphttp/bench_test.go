package mcphttp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/examples/plugins/echo"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/median"
	"github.com/kitsoki/kitsoki/plugin"
)

// benchRequest is the benchmark call: a decide with a 1 KB prompt.
func benchRequest() *agent.AskRequest {
	return &agent.AskRequest{SessionID: "bench", Turn: 1, StatePath: "review", Verb: "decide",
		Prompt:   strings.Repeat("Is this claim within policy? ", 36)[:1024],
		With:     map[string]any{"answer": `{"decision":"approve","reason":"within policy","confidence":0.9}`},
		Deadline: "2026-01-01T00:00:00Z", CallID: "0123456789abcdef"}
}

// benchAsks times Ask round trips against the server at url, connecting
// outside the timing, and reports the median besides ns/op (the mean).
func benchAsks(b *testing.B, url string) {
	a, err := New(agent.Declaration{Alias: "agent.echo", Endpoint: url}, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	req := benchRequest()
	ctx := context.Background()
	for range 2 { // connect, and let a caching server see one tools/call
		if _, err := a.Ask(ctx, agent.NewCall(req)); err != nil {
			b.Fatal(err)
		}
	}
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := a.Ask(ctx, agent.NewCall(req)); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	median.Report(b, times)
}

// BenchmarkMCPHTTPAsk is one tools/call round trip with a 1 KB prompt on
// loopback against the Go example server's handler (examples/plugins/
// echo-mcp serves exactly plugin.MCPHandler(echo.Agent{})), at the
// stateless protocol mcp-go negotiates.
func BenchmarkMCPHTTPAsk(b *testing.B) {
	srv := httptest.NewServer(plugin.MCPHandler(echo.Agent{}))
	defer srv.Close()
	benchAsks(b, srv.URL+"/mcp")
}

// BenchmarkMCPHTTPClientFloor is the same round trip against a server that
// costs next to nothing: after the example server has answered one
// tools/call, its response is replayed byte for byte. What remains is the
// mcp-go client, kitsoki's transport around it, and loopback HTTP: the
// floor of BenchmarkMCPHTTPAsk whatever the server does.
func BenchmarkMCPHTTPClientFloor(b *testing.B) {
	example := plugin.MCPHandler(echo.Agent{})
	var canned *httptest.ResponseRecorder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := r.Header.Get("Mcp-Method") == "tools/call"
		if call && canned != nil {
			_, _ = io.Copy(io.Discard, r.Body)
		} else {
			rec := httptest.NewRecorder()
			example.ServeHTTP(rec, r)
			if !call {
				replay(w, rec)
				return
			}
			canned = rec
		}
		replay(w, canned)
	}))
	defer srv.Close()
	benchAsks(b, srv.URL+"/mcp")
}

func replay(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// BenchmarkHTTPRoundTrip is a bare net/http POST of the same size on
// loopback, for scale.
func BenchmarkHTTPRoundTrip(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1557) // a tools/call of benchRequest
	reply := bytes.Repeat([]byte("y"), 300)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write(reply)
	}))
	defer srv.Close()
	client := srv.Client()
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		resp, err := client.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		times = append(times, time.Since(start))
	}
	median.Report(b, times)
}
