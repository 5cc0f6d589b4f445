package plugintools

import (
	"context"
	"testing"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/testsupport/median"
)

// BenchmarkPluginToolCall is one plugin tool call end to end on loopback:
// an mcp-go client calls kitsoki_agent_echo_echo on kitsoki's MCP server
// (Streamable HTTP), which validates the arguments, sends
// agent_tool.invoke to the example plugin's process, checks the result
// against the output schema and answers. Besides ns/op (the mean) it
// reports the median.
func BenchmarkPluginToolCall(b *testing.B) {
	e := newEnv(b, map[string]agent.Declaration{"agent.echo": echoPlugin(true)}, Options{})
	tc := connect(b, e.session(b, toolserver.KanbanTask, "call-bench"), false)
	req := callReq(echoName)
	req.Params.Arguments = map[string]any{"message": "tag this run as urgent", "shout": true}
	ctx := context.Background()
	if res, err := tc.CallTool(ctx, req); err != nil || res.IsError { // spawn outside the timing
		b.Fatalf("warm-up call: %v %v", err, res)
	}
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res, err := tc.CallTool(ctx, req)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	median.Report(b, times)
}
