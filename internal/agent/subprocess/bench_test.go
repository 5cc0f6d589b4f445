package subprocess

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/testsupport/median"
)

// buildExample compiles an example plugin into a temporary directory, so
// `go test` needs no prior `make`.
func buildExample(tb testing.TB, pkg string) string {
	tb.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("go toolchain not in PATH")
	}
	out := filepath.Join(tb.TempDir(), filepath.Base(pkg))
	cmd := exec.Command(gobin, "build", "-o", out, "github.com/kitsoki/kitsoki/"+pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// BenchmarkSubprocessAsk is one agent.ask round trip with a 1 KB prompt
// against the Go example plugin (examples/plugins/echo-go). Besides ns/op
// (the mean) it reports the median.
func BenchmarkSubprocessAsk(b *testing.B) {
	bin := buildExample(b, "examples/plugins/echo-go")
	a, err := New(agent.Declaration{Alias: "agent.echo", Command: bin})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	req := &agent.AskRequest{SessionID: "bench", Turn: 1, StatePath: "review", Verb: "decide",
		Prompt: strings.Repeat("Is this claim within policy? ", 36)[:1024],
		With:   map[string]any{"answer": `{"decision":"approve","reason":"within policy","confidence":0.9}`},
		World:  agent.AskRequest{}.World, Deadline: "2026-01-01T00:00:00Z", CallID: "0123456789abcdef"}
	ctx := context.Background()
	if _, err := a.Ask(ctx, agent.NewCall(req)); err != nil { // spawn outside the timing
		b.Fatal(err)
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
