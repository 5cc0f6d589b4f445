package traceview

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAgentUsageShapes: a call's tokens and cost are read in every shape
// transports report them (internal/observe/usage): a local model's
// prompt/completion_tokens and a meta with only total_cost_usd count as
// the claude shape does.
func TestAgentUsageShapes(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "hello-run.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	n := 0
	for _, line := range bytes.SplitAfter(src, []byte("\n")) {
		var ev map[string]any
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &ev) != nil || ev["kind"] != "agent.call.complete" {
			out.Write(line)
			continue
		}
		meta := ev["payload"].(map[string]any)["meta"].(map[string]any)
		delete(meta, "usage")
		delete(meta, "cost_usd")
		if n == 0 { // a local model's shape
			meta["prompt_tokens"], meta["completion_tokens"] = 100, 7
		} else { // the claude envelope's cost only
			meta["usage"] = map[string]any{"input_tokens": 20, "output_tokens": 3}
			meta["total_cost_usd"] = 0.5
		}
		n++
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
	}
	if n != 2 {
		t.Fatalf("hello-run.jsonl: %d agent.call.complete events, want 2", n)
	}
	path := filepath.Join(t.TempDir(), "run.jsonl")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	type usage struct {
		In, Out           int64
		HasUsage, HasCost bool
		Cost              float64
	}
	var got []usage
	var walk func(cs []*Call)
	walk = func(cs []*Call) {
		for _, c := range cs {
			if c.Type == "agent" {
				got = append(got, usage{c.InputTokens, c.OutputTokens, c.HasUsage, c.HasCost, c.CostUSD})
			}
			walk(c.Children)
		}
	}
	for _, turn := range r.Turns {
		for _, it := range turn.Items {
			if it.Call != nil {
				walk([]*Call{it.Call})
			}
		}
	}
	want := []usage{{In: 100, Out: 7, HasUsage: true}, {In: 20, Out: 3, HasUsage: true, HasCost: true, Cost: 0.5}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("agent calls' usage (-want +got):\n%s", d)
	}
	if r.Totals.InputTokens != 120 || r.Totals.OutputTokens != 10 || r.Totals.CostUSD != 0.5 {
		t.Errorf("totals = %d in, %d out, cost %v; want 120, 10, 0.5", r.Totals.InputTokens, r.Totals.OutputTokens, r.Totals.CostUSD)
	}
}
