package testrunner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// The expense-triage example of cassettes-and-flows.md §7, run as written:
// the flow passes, and turn 1's trace carries the agent events the spec
// gives (call_id 498da50176b0b991, episode_id audit_ok, match_idx 0 so
// omitted, meta with usage and cost).
func TestSpecExampleExpenseFlow(t *testing.T) {
	fxs, err := LoadFixtures("testdata/expense/app.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(WithEvents(), WithFlowGetenv(testkit.NoEnv))
	defer r.Close()
	rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed != 1 || rep.Failed != 0 {
		for _, res := range rep.Results {
			for _, tr := range res.Turns {
				t.Errorf("turn %d: %v", tr.TurnIndex, tr.Failures)
			}
		}
		t.Fatalf("passed %d failed %d", rep.Passed, rep.Failed)
	}
	var start, complete *trace.Event
	for i, ev := range rep.Results[0].Turns[0].Events {
		switch ev.Kind {
		case trace.KindAgentCallStart:
			start = &rep.Results[0].Turns[0].Events[i]
		case trace.KindAgentCallComplete:
			complete = &rep.Results[0].Turns[0].Events[i]
		}
	}
	if start == nil || complete == nil {
		t.Fatal("turn 1 has no agent.call.start/complete")
	}
	if start.CallID != "498da50176b0b991" || complete.CallID != "498da50176b0b991" {
		t.Errorf("call_id = %q / %q, want 498da50176b0b991", start.CallID, complete.CallID)
	}
	if start.EpisodeID != "audit_ok" || start.MatchIdx != 0 {
		t.Errorf("episode_id %q match_idx %d", start.EpisodeID, start.MatchIdx)
	}
	line, err := json.Marshal(start)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(line), "match_idx") {
		t.Errorf("match_idx 0 must be omitted: %s", line)
	}
	meta, _ := json.Marshal(complete.Payload["meta"])
	if string(meta) != `{"cost_usd":0.0031,"usage":{"input_tokens":640,"output_tokens":58}}` {
		t.Errorf("meta = %s", meta)
	}
	wantStart := map[string]any{"verb": "decide", "agent": "auditor", "model": "claude-sonnet-4-6"}
	got := map[string]any{"verb": start.Payload["verb"], "agent": start.Payload["agent"], "model": start.Payload["model"]}
	if d := cmp.Diff(wantStart, got); d != "" {
		t.Errorf("start payload (-want +got):\n%s", d)
	}
	resp, _ := json.Marshal(complete.Payload["response"])
	if string(resp) != `{"confidence":0.91,"decision":"approve","reason":"Within the meals policy."}` {
		t.Errorf("response = %s", resp)
	}
	if d := complete.Payload["duration_ms"]; d != json.Number("1800") {
		t.Errorf("duration_ms = %#v", d)
	}
}
