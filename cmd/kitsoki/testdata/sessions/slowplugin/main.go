// Command slowplugin is the host plugin of the durable-session tests: its
// work op sleeps, then answers; it logs every call it starts and every
// answer it gives to the file $SLOW_LOG (one line each, O_APPEND), so a
// test can tell which calls were issued again after a crash.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/kitsoki/kitsoki/plugin"
)

func logLine(format string, args ...any) {
	f, err := os.OpenFile(os.Getenv("SLOW_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, format+"\n", args...)
	f.Close()
}

func work(ctx context.Context, req *plugin.HostInvokeRequest) (map[string]any, error) {
	n, _ := req.Args["n"].(float64)
	ms, _ := req.Args["delay_ms"].(float64)
	logLine("start %s turn=%d n=%d", req.Op, req.Context.Turn, int(n))
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	logLine("answer %s turn=%d n=%d", req.Op, req.Context.Turn, int(n))
	return map[string]any{"v": int(n) * 2, "turn": req.Context.Turn}, nil
}

func main() {
	args := json.RawMessage(`{"type":"object"}`)
	ops := map[string]plugin.HostOp{
		"work":   {Description: "Sleep delay_ms, then answer v = 2n.", Run: work, ArgsSchema: args},
		"charge": {Description: "Like work; the story marks it external_side_effect.", Run: work, ArgsSchema: args},
	}
	if err := plugin.ServeHost(ops); err != nil {
		fmt.Fprintln(os.Stderr, "slowplugin:", err)
		os.Exit(1)
	}
}
