package mcphttp

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/examples/plugins/echo"
	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// BenchmarkMCPHTTPAsk is one tools/call round trip with a 1 KB prompt on
// loopback against the Go example server's handler (examples/plugins/
// echo-mcp serves exactly plugin.MCPHandler(echo.Agent{})), at the
// stateless protocol mcp-go negotiates. Besides ns/op (the mean) it
// reports the median.
func BenchmarkMCPHTTPAsk(b *testing.B) {
	srv := httptest.NewServer(plugin.MCPHandler(echo.Agent{}))
	defer srv.Close()
	a, err := New(agent.Declaration{Alias: "agent.echo", Endpoint: srv.URL + "/mcp"}, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	req := &agent.AskRequest{SessionID: "bench", Turn: 1, StatePath: "review", Verb: "decide",
		Prompt:   strings.Repeat("Is this claim within policy? ", 36)[:1024],
		With:     map[string]any{"answer": `{"decision":"approve","reason":"within policy","confidence":0.9}`},
		Deadline: "2026-01-01T00:00:00Z", CallID: "0123456789abcdef"}
	ctx := context.Background()
	if _, err := a.Ask(ctx, req); err != nil { // connect outside the timing
		b.Fatal(err)
	}
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := a.Ask(ctx, req); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	if len(times) > 0 {
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "median-ns/op")
	}
}
