package trace

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// decideCall is the trace of one agent decide call, as the host writes it.
func decideCall() []Event {
	const callID = "335599da002646d7"
	return []Event{
		{Kind: KindHarnessDispatched, StatePath: "reviewing", Payload: map[string]any{
			"namespace": "host.agent.decide", "args": map[string]any{"amount": 250.5, "vendor": "ACME"},
			"rerender_fell_back": false, "background": false,
		}},
		{Kind: KindAgentCallStart, StatePath: "reviewing", CallID: callID, Payload: map[string]any{
			"verb": "decide", "agent": "auditor", "model": "claude-sonnet",
			"prompt": "Review the expense of 250.50 from ACME and decide whether to approve it.",
			"input":  map[string]any{"schema_present": true},
		}},
		{Kind: KindAgentCallComplete, StatePath: "reviewing", CallID: callID, Payload: map[string]any{
			"verb": "decide", "agent": "auditor", "model": "claude-sonnet", "duration_ms": 1234,
			"response": map[string]any{
				"submission": json.RawMessage(`{"approve":true,"reason":"within limit"}`),
				"meta":       map[string]any{"usage": map[string]any{"input_tokens": 1200, "output_tokens": 45}},
			},
		}},
		{Kind: KindWorldUpdate, StatePath: "reviewing", Payload: map[string]any{"set": map[string]any{"approved": true}}},
		{Kind: KindHarnessReturned, StatePath: "reviewing", Payload: map[string]any{"namespace": "host.agent.decide"}},
		{Kind: KindTurnEnd, StatePath: "approved", Payload: map[string]any{"outcome": "transitioned", "to": "approved"}},
	}
}

// decideCallTyped is decideCall as the host and the orchestrator write it
// now: typed payloads.
func decideCallTyped() []Payload {
	return []Payload{
		HarnessDispatched{Namespace: "host.agent.decide", Args: map[string]any{"amount": 250.5, "vendor": "ACME"}},
		AgentCallStart{Verb: "decide", Agent: "auditor", Model: "claude-sonnet",
			Prompt: "Review the expense of 250.50 from ACME and decide whether to approve it.",
			Input:  map[string]any{"schema_present": true}},
		AgentCallComplete{Verb: "decide", Agent: "auditor", Model: "claude-sonnet", DurationMS: 1234, Response: AgentResponse{
			Submission: json.RawMessage(`{"approve":true,"reason":"within limit"}`),
			Meta:       map[string]any{"usage": map[string]any{"input_tokens": 1200, "output_tokens": 45}},
		}},
		WorldUpdate{Set: map[string]any{"approved": true}},
		HarnessReturned{Namespace: "host.agent.decide"},
		TurnEnd{Outcome: "transitioned", To: "approved"},
	}
}

// appendTyped is appendLines with typed payloads (AppendPayload).
func appendTyped(b *testing.B, s Sink) {
	ps := decideCallTyped()
	envs := decideCall()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(ps)
		ev := &envs[k]
		ev.Turn, ev.TS, ev.Kind, ev.Payload = int64(i/len(ps)), "", "", nil
		if err := s.AppendPayload(ev, ps[k]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendPayload is BenchmarkAppend with the typed payloads
// kitsoki's writers use.
func BenchmarkAppendPayload(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "t.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	appendTyped(b, w)
}

// BenchmarkMemSinkAppendPayload is BenchmarkMemSinkAppend with typed
// payloads.
func BenchmarkMemSinkAppendPayload(b *testing.B) {
	appendTyped(b, NewMemSink())
}

// appendLines appends b.N lines of decide-call traces, one line per
// iteration, a new turn every call.
func appendLines(b *testing.B, s Sink) {
	evs := decideCall()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev := &evs[i%len(evs)]
		ev.Turn = int64(i / len(evs))
		ev.TS = ""
		if err := s.Append(ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppend is the cost of one trace line on the file writer (default
// group commit: no fsync inside a turn; one identity stat per turn).
func BenchmarkAppend(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "t.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	appendLines(b, w)
}

// BenchmarkAppendWithSecrets is BenchmarkAppend with a few secrets to
// redact (none of which occur), to show the cost of scanning for them.
func BenchmarkAppendWithSecrets(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "t.jsonl"),
		WithSecrets([]string{"sk-ant-api03-notreallyasecret", "ghp_notatoken000", "hunter2"}))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	appendLines(b, w)
}

// BenchmarkMemSinkAppend is the cost of one line on the in-memory sink.
func BenchmarkMemSinkAppend(b *testing.B) {
	appendLines(b, NewMemSink())
}

// BenchmarkReadFile is the cost per line of reading a trace back.
func BenchmarkReadFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "t.jsonl")
	w, err := Create(path)
	if err != nil {
		b.Fatal(err)
	}
	evs := decideCall()
	const turns = 1000
	for i := range turns * len(evs) {
		ev := &evs[i%len(evs)]
		ev.Turn, ev.TS = int64(i/len(evs)), ""
		if err := w.Append(ev); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns*len(evs)), "ns/line")
}
