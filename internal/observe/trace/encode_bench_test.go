package trace

import (
	"path/filepath"
	"testing"
	"time"
)

// decideLines is one decide's five events as internal/run/orchestrator's
// BenchmarkDecideInProcess writes them: the envelopes and the typed
// payloads, with values of the Go types a real decide hands over (the
// submission as schema.Decode builds it: int64 for integers, float64
// otherwise, []any for arrays). Each call builds new maps, as every
// decide does.
func decideLines() ([]Event, []Payload) {
	const callID = "bf122d26c1a2bf3f"
	sub := map[string]any{
		"decision": "approve", "reason": "within policy", "confidence": 0.92, "risk": "low",
		"tags": []any{"travel", "taxi"}, "owner": "ann", "priority": int64(2), "blocking": false,
		"summary": "Taxi fare under the auto-approve limit.", "score": 7.5,
	}
	envs := []Event{
		{StatePath: "s"},
		{StatePath: "s", CallID: callID},
		{StatePath: "s", CallID: callID},
		{StatePath: "s"},
		{StatePath: "s"},
	}
	ps := []Payload{
		HarnessDispatched{Namespace: "host.agent.decide", Args: map[string]any{
			"agent": "auditor", "args": map[string]any{"amount": int64(40), "claim": "taxi 40"},
			"call": "audit", "prompt": "prompts/audit.md", "schema": "schemas/verdict.json",
		}},
		AgentCallStart{Verb: "decide", Agent: "auditor", Model: "m",
			Prompt: "Audit this claim: taxi 40 for 40.\nAnswer with a verdict.",
			Input:  map[string]any{"schema_present": true}},
		AgentCallComplete{Verb: "decide", Agent: "auditor", Model: "m",
			Response: AgentResponse{Submission: sub}},
		WorldUpdate{Set: map[string]any{"verdict": sub}},
		HarnessReturned{Namespace: "host.agent.decide", Data: map[string]any{
			"submission": sub, "submitted": sub, "meta": nil, "ok": true, "exit_code": 0,
		}},
	}
	return envs, ps
}

// BenchmarkEncodeDecide is the encoding alone of one decide's five trace
// lines (decideLines) by a file Writer's line encoder, into memory: no
// write(2), no lock. Each op is one decide; the decides cycle through a
// pool of payload sets so every decide meets maps it has not seen, and
// the clock moves 40µs a decide, so the second changes now and then as in
// a real run.
func BenchmarkEncodeDecide(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "t.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	enc := w.enc
	const pool = 64
	envs := make([][]Event, pool)
	pays := make([][]Payload, pool)
	for i := range pool {
		envs[i], pays[i] = decideLines()
	}
	now := time.Date(2026, 12, 1, 18, 41, 55, 306466724, time.UTC)
	size := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		evs, ps := envs[i%pool], pays[i%pool]
		now = now.Add(40 * time.Microsecond)
		for j := range evs {
			ev := &evs[j]
			ev.Turn, ev.TS, ev.Kind = int64(i+1), "", ""
			line, p, err := enc.encode(ev, ps[j], now)
			if err != nil {
				b.Fatal(err)
			}
			size += len(line)
			enc.commit(ev, p)
		}
	}
	b.ReportMetric(float64(size)/float64(b.N), "B/decide")
}
