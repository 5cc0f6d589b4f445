package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kitsoki/kitsoki/internal/base/schema"
)

var update = flag.Bool("update", false, "rewrite testdata/payloads.golden.jsonl")

// payloadSample is one typed payload and the map literal the writer built
// for the same event before payloads were typed (copied from the old
// orchestrator, host and cassette handler code). Encoding both must give
// the same bytes.
type payloadSample struct {
	name  string
	typed Payload
	old   map[string]any
}

func pinned(b bool) *bool { return &b }

func payloadSamples() []payloadSample {
	slots := map[string]any{"name": "Ada", "n": 2}
	args := map[string]any{"prompt": "Say hi to <b>{{ name }}</b> & co.", "schema": "s.json", "call": "greet", "n": 1.5}
	sub := json.RawMessage(`{"greeting":"hi","n":[1,2]}`)
	meta := map[string]any{"usage": map[string]any{"input_tokens": 12, "output_tokens": 3}, "cost_usd": 0.25}
	return []payloadSample{
		{"turn.input", TurnInput{Input: "hello", Intent: "greet"}, map[string]any{"input": "hello", "intent": "greet"}},
		{"turn.input free text", TurnInput{Input: "hello"}, map[string]any{"input": "hello", "intent": ""}},
		{"turn.start", TurnStart{Turn: 3, Input: "[intent] greet", Direct: true}, map[string]any{"turn": int64(3), "input": "[intent] greet", "direct": true}},
		{"turn.end transitioned", TurnEnd{Outcome: "transitioned", To: "done", View: "Hello, Ada"}, map[string]any{"outcome": "transitioned", "to": "done", "view": "Hello, Ada"}},
		{"turn.end transitioned no view", TurnEnd{Outcome: "transitioned", To: "done"}, map[string]any{"outcome": "transitioned", "to": "done"}},
		{"turn.end rejected", TurnEnd{Outcome: "rejected", Code: "unknown_intent"}, map[string]any{"outcome": "rejected", "code": "unknown_intent"}},
		{"turn.end error", TurnEnd{Outcome: "error", Error: "on_enter of a: set x: boom"}, map[string]any{"outcome": "error", "error": "on_enter of a: set x: boom"}},
		{"machine.intent_accepted", MachineIntentAccepted{Intent: "greet", Slots: slots}, map[string]any{"intent": "greet", "slots": slots}},
		{"machine.intent_accepted no slots", MachineIntentAccepted{Intent: "go", Slots: map[string]any{}}, map[string]any{"intent": "go", "slots": map[string]any{}}},
		{"machine.validation_failed", MachineValidationFailed{Code: "guard_failed", Message: "no", Intent: "go", State: "a", GuardHint: "n > 1"},
			map[string]any{"code": "guard_failed", "message": "no", "intent": "go", "state": "a", "guard_hint": "n > 1"}},
		{"machine.validation_failed no hint", MachineValidationFailed{Code: "unknown_intent", Message: "intent \"x\" is not declared", Intent: "x", State: "a"},
			map[string]any{"code": "unknown_intent", "message": "intent \"x\" is not declared", "intent": "x", "state": "a"}},
		{"machine.transition", MachineTransition{From: "a", To: "b", Intent: "go", Slots: slots}, map[string]any{"from": "a", "to": "b", "intent": "go", "slots": slots}},
		{"machine.transition empty slots", MachineTransition{From: "a", To: "a", Intent: "stay", Slots: map[string]any{}}, map[string]any{"from": "a", "to": "a", "intent": "stay", "slots": map[string]any{}}},
		{"machine.transition seed", MachineTransition{From: "", To: "intake", Intent: SeedIntent}, map[string]any{"from": "", "to": "intake", "intent": SeedIntent}},
		{"machine.say", MachineSay{Text: "Hello <Ada> & \u2028"}, map[string]any{"text": "Hello <Ada> & \u2028"}},
		{"machine.state_exited", MachineStateExited{State: "a.b"}, map[string]any{"state": "a.b"}},
		{"machine.state_entered", MachineStateEntered{State: "c"}, map[string]any{"state": "c"}},
		{"machine.error", MachineError{Intent: "go", Slots: slots, State: "a", Error: "boom"}, map[string]any{"intent": "go", "slots": slots, "state": "a", "error": "boom"}},
		{"world.update set", WorldUpdate{Set: map[string]any{"greeting": map[string]any{"text": "hi", "at": []any{1, "x"}}}},
			map[string]any{"set": map[string]any{"greeting": map[string]any{"text": "hi", "at": []any{1, "x"}}}}},
		{"world.update set nil", WorldUpdate{Set: map[string]any{"x": nil}}, map[string]any{"set": map[string]any{"x": nil}}},
		{"world.update increment", WorldUpdate{Increment: map[string]int64{"count": -2}}, map[string]any{"increment": map[string]any{"count": int64(-2)}}},
		{"world.update skipped", WorldUpdate{Namespace: "host.agent.decide", Skipped: "cached"}, map[string]any{"namespace": "host.agent.decide", "skipped": "cached"}},
		{"harness.called", HarnessCalled{Namespace: "host.agent.decide", Args: args}, map[string]any{"namespace": "host.agent.decide", "args": args, "background": false}},
		{"harness.dispatched", HarnessDispatched{Namespace: "host.agent.decide", Args: args, RerenderFellBack: true},
			map[string]any{"namespace": "host.agent.decide", "args": args, "rerender_fell_back": true, "background": false}},
		{"harness.returned", HarnessReturned{Namespace: "host.x"}, map[string]any{"namespace": "host.x"}},
		{"harness.returned data", HarnessReturned{Namespace: "host.x", Data: map[string]any{"ok": true}}, map[string]any{"namespace": "host.x", "data": map[string]any{"ok": true}}},
		{"harness.returned empty data", HarnessReturned{Namespace: "host.x", Data: map[string]any{}}, map[string]any{"namespace": "host.x", "data": map[string]any{}}},
		{"harness.returned error", HarnessReturned{Namespace: "host.x", Data: map[string]any{"ok": false}, Error: "agent: plugin_crash: x"},
			map[string]any{"namespace": "host.x", "data": map[string]any{"ok": false}, "error": "agent: plugin_crash: x"}},
		{"harness.error pass cap", HarnessError{Phase: "post_bind_emit", Depth: 4, MaxDepth: 4, Error: "post-bind emit_intent passes exceeded 4"},
			map[string]any{"phase": "post_bind_emit", "depth": 4, "max_depth": 4, "error": "post-bind emit_intent passes exceeded 4"}},
		{"harness.error guard", HarnessError{Phase: "post_bind_emit", Error: "guard error"}, map[string]any{"phase": "post_bind_emit", "error": "guard error"}},
		{"harness.error on_error cap", HarnessError{Reason: "on_error.depth_cap_exceeded", Prior: "a", Target: "b", Depth: 5, Cap: 4, Message: "chained"},
			map[string]any{"reason": "on_error.depth_cap_exceeded", "prior": "a", "target": "b", "depth": 5, "cap": 4, "message": "chained"}},
		{"agent.call.start plugin", AgentCallStart{Verb: "decide", Prompt: "Decide.", Agent: "auditor", Model: "m1", Input: map[string]any{"schema_present": true}},
			map[string]any{"verb": "decide", "prompt": "Decide.", "agent": "auditor", "model": "m1", "input": map[string]any{"schema_present": true}}},
		{"agent.call.start builtin", AgentCallStart{Verb: "ask", Prompt: "Ask.", Input: map[string]any{"schema_path": "s.json"}},
			map[string]any{"verb": "ask", "prompt": "Ask.", "input": map[string]any{"schema_path": "s.json"}}},
		{"agent.call.start pinned", AgentCallStart{Verb: "decide", Prompt: "P", Model: "qwen", Profile: "local", Effort: "low", Pinned: pinned(true), PinEvidence: "evals/reports/r.json"},
			map[string]any{"verb": "decide", "prompt": "P", "model": "qwen", "profile": "local", "effort": "low", "pinned": true, "pin_evidence": "evals/reports/r.json"}},
		{"agent.call.start pin refused", AgentCallStart{Verb: "decide", Prompt: "P", Pinned: pinned(false), PinEvidence: "r.json", PinReason: "stale"},
			map[string]any{"verb": "decide", "prompt": "P", "pinned": false, "pin_evidence": "r.json", "pin_reason": "stale"}},
		{"agent.call.start cassette", AgentCallStart{Verb: "decide"}, map[string]any{"verb": "decide"}},
		{"agent.call.start route", AgentCallStart{Verb: "decide", Prompt: "Route.", Agent: "", Purpose: "route", Input: map[string]any{"schema_present": true}},
			map[string]any{"verb": "decide", "prompt": "Route.", "purpose": "route", "input": map[string]any{"schema_present": true}}},
		{"turn.routed", TurnRouted{Tier: "router", Input: "forecast for Tokyo", Intent: "forecast", Slots: map[string]any{"city": "Tokyo"}, Confidence: 0.9},
			map[string]any{"tier": "router", "input": "forecast for Tokyo", "intent": "forecast", "slots": map[string]any{"city": "Tokyo"}, "confidence": 0.9}},
		{"turn.routed unresolved", TurnRouted{Tier: "router", Input: "hmm", Confidence: 0.2},
			map[string]any{"tier": "router", "input": "hmm", "confidence": 0.2}},
		{"agent.call.complete host", AgentCallComplete{Verb: "decide", DurationMS: 12, Agent: "auditor", Model: "m1", Meta: meta, Response: AgentResponse{Submission: sub, Meta: meta}},
			map[string]any{"verb": "decide", "duration_ms": int64(12), "agent": "auditor", "model": "m1", "meta": meta, "response": map[string]any{"submission": sub, "meta": meta}}},
		{"agent.call.complete no meta", AgentCallComplete{Verb: "ask", DurationMS: 0, Response: AgentResponse{Submission: "plain text"}},
			map[string]any{"verb": "ask", "duration_ms": int64(0), "response": map[string]any{"submission": "plain text", "meta": nil}}},
		{"agent.call.complete fallback", AgentCallComplete{Verb: "decide", DurationMS: 7, Response: AgentResponse{Submission: map[string]any{"a": 1}, Meta: map[string]any{"fallback_of": "agent.local"}},
			Meta: map[string]any{"fallback_of": "agent.local"}, Substitution: &Substitution{Reason: "schema_invalid", OriginalPlugin: "agent.local", FallbackPlugin: "agent.claude"}},
			map[string]any{"verb": "decide", "duration_ms": int64(7), "response": map[string]any{"submission": map[string]any{"a": 1}, "meta": map[string]any{"fallback_of": "agent.local"}},
				"meta": map[string]any{"fallback_of": "agent.local"}, "substitution": map[string]any{"reason": "schema_invalid", "original_plugin": "agent.local", "fallback_plugin": "agent.claude"}}},
		{"agent.call.complete cassette", AgentCallComplete{Verb: "decide", DurationMS: 40, Agent: "greeter", Model: "m", Response: json.RawMessage(`{"g":"hi"}`), Meta: map[string]any{"usage": map[string]any{"input_tokens": int64(3)}}},
			map[string]any{"verb": "decide", "duration_ms": int64(40), "agent": "greeter", "model": "m", "response": json.RawMessage(`{"g":"hi"}`), "meta": map[string]any{"usage": map[string]any{"input_tokens": int64(3)}}}},
		{"agent.call.complete cassette text", AgentCallComplete{Verb: "ask", DurationMS: 1, Response: "Hi there."},
			map[string]any{"verb": "ask", "duration_ms": int64(1), "response": "Hi there."}},
		{"agent.call.error", AgentCallError{Verb: "decide", DurationMS: 3, Error: "agent: deadline_exceeded: no answer", ErrorKind: "deadline_exceeded", Agent: "auditor", Model: "m1"},
			map[string]any{"verb": "decide", "duration_ms": int64(3), "error": "agent: deadline_exceeded: no answer", "error_kind": "deadline_exceeded", "agent": "auditor", "model": "m1"}},
		{"agent.call.error fallback", AgentCallError{Verb: "decide", DurationMS: 3, Error: "agent: schema_invalid: x", ErrorKind: "schema_invalid",
			Substitution: &Substitution{Reason: "schema_invalid", OriginalPlugin: "agent.local", FallbackPlugin: "agent.claude"}},
			map[string]any{"verb": "decide", "duration_ms": int64(3), "error": "agent: schema_invalid: x", "error_kind": "schema_invalid",
				"substitution": map[string]any{"reason": "schema_invalid", "original_plugin": "agent.local", "fallback_plugin": "agent.claude"}}}, {"job.started", JobStarted{Handler: "host.run", JobID: "job-1", State: "running"}, map[string]any{"handler": "host.run", "job_id": "job-1", "state": "running"}},
		{"job.started call", JobStarted{Call: "build", Handler: "host.run", JobID: "job-2", State: "running"},
			map[string]any{"call": "build", "handler": "host.run", "job_id": "job-2", "state": "running"}},
		{"job.awaiting_input", JobAwaitingInput{Handler: "host.deploy", JobID: "job-1", Prompt: "Which environment?", State: "deploying"},
			map[string]any{"handler": "host.deploy", "job_id": "job-1", "prompt": "Which environment?", "state": "deploying"}},
		{"job.awaiting_input fields", JobAwaitingInput{Fields: map[string]any{"approved": "bool"}, Handler: "host.deploy", JobID: "job-1", Prompt: "Approve?", State: "deploying"},
			map[string]any{"fields": map[string]any{"approved": "bool"}, "handler": "host.deploy", "job_id": "job-1", "prompt": "Approve?", "state": "deploying"}},
		{"job.completed", JobCompleted{Handler: "host.run", JobID: "job-1", State: "running", Status: "done"},
			map[string]any{"handler": "host.run", "job_id": "job-1", "state": "running", "status": "done"}},
		{"job.completed failed", JobCompleted{Error: "exit 1", Handler: "host.run", JobID: "job-1", State: "running", Status: "failed"},
			map[string]any{"error": "exit 1", "handler": "host.run", "job_id": "job-1", "state": "running", "status": "failed"}},
		{"machine.timeout", MachineTimeout{State: "waiting", After: "240h0m0s", Target: "traveled"}, map[string]any{"state": "waiting", "after": "240h0m0s", "target": "traveled"}},
		// The journal's kinds, with the maps the orchestrator, the session
		// package and the cluster built for them before they were typed.
		{"kitsoki.snapshot", Snapshot{State: "review", Turn: 3, World: map[string]any{"n": 1, "name": "Ada"}, StoryHash: "sha256:" + strings.Repeat("ab", 32)},
			map[string]any{"state": "review", "turn": int64(3), "world": map[string]any{"n": 1, "name": "Ada"}, "story_hash": "sha256:" + strings.Repeat("ab", 32)}},
		{"kitsoki.snapshot done", Snapshot{State: "done", Turn: 4, World: map[string]any{}, Done: true, Exit: "approved"},
			map[string]any{"state": "done", "turn": int64(4), "world": map[string]any{}, "done": true, "exit": "approved"}},
		{"kitsoki.decisions", Decisions{Decisions: []Decision{ArmTaken("a", "go", 0, "b"), CallQueued("b", "host.agent.decide", "audit"), CallQueued("b", "host.run", "")}},
			map[string]any{"decisions": []any{
				map[string]any{"state": "a", "intent": "go", "arm": 0, "target": "b"},
				map[string]any{"state": "b", "namespace": "host.agent.decide", "call": "audit"},
				map[string]any{"state": "b", "namespace": "host.run"},
			}}},
		{"kitsoki.resumed redo", Resumed{AfterTurn: 2, Redo: true, Reissued: []string{"host.agent.decide"}},
			map[string]any{"after_turn": int64(2), "redo": true, "reissued": []any{"host.agent.decide"}}},
		{"kitsoki.resumed redo nothing in flight", Resumed{AfterTurn: 2, Redo: true, Reissued: []string{}},
			map[string]any{"after_turn": int64(2), "redo": true, "reissued": []any{}}},
		{"kitsoki.resumed next", Resumed{AfterTurn: -1}, map[string]any{"after_turn": -1, "redo": false}},
		{"kitsoki.call.replayed", CallReplayed{Namespace: "host.agent.decide", Position: 1}, map[string]any{"namespace": "host.agent.decide", "position": 1}},
		{"kitsoki.call.skipped", CallSkipped{Namespace: "host.run", Position: 0}, map[string]any{"namespace": "host.run", "position": 0}},
		{"kitsoki.call.retry", CallRetry{Namespace: "host.agent.ask", Attempt: 2, Attempts: 3, FailureKind: "transport_error", Error: "agent: transport_error: down", WaitMS: 250, Call: "ask"},
			map[string]any{"namespace": "host.agent.ask", "attempt": 2, "attempts": 3, "kind": "transport_error", "error": "agent: transport_error: down", "wait_ms": int64(250), "call": "ask"}},
		{"kitsoki.call.reissued", CallReissued{Namespace: "host.agent.decide", Attempt: 2}, map[string]any{"namespace": "host.agent.decide", "attempt": 2}},
		{"kitsoki.agent.switched", AgentSwitched{Command: ":model gpt-5-mini", Switch: "model", Profile: "gpt", Model: "gpt-5-mini", PreviousProfile: "gpt", PreviousModel: "gpt-4.1-mini"},
			map[string]any{"command": ":model gpt-5-mini", "switch": "model", "profile": "gpt", "model": "gpt-5-mini", "previous_profile": "gpt", "previous_model": "gpt-4.1-mini"}},
		{"kitsoki.agent.switched to the story's", AgentSwitched{Command: ":provider none", Switch: "provider", PreviousProfile: "fast", PreviousEffort: "low"},
			map[string]any{"command": ":provider none", "switch": "provider", "previous_profile": "fast", "previous_effort": "low"}},
		{"kitsoki.cost_cap", CostCapReached{Scope: "--max-cost", CapUSD: 0.5, SpentUSD: 0.5125, Calls: 7},
			map[string]any{"scope": "--max-cost", "cap_usd": 0.5, "spent_usd": 0.5125, "calls": int64(7)}},
		{"kitsoki.cost_cap calls", CostCapReached{Scope: "profile fast's quota", MaxCalls: 3, Calls: 3, SpentUSD: 0},
			map[string]any{"scope": "profile fast's quota", "max_calls": int64(3), "spent_usd": float64(0), "calls": int64(3)}},
	}
}

// sampleLines appends each sample to a fresh MemSink, typed or as its old
// map, and returns the event lines.
func sampleLines(t *testing.T, typed bool, opts ...Option) []string {
	t.Helper()
	s := NewMemSink(append([]Option{WithClock(fakeClock())}, opts...)...)
	for i, sm := range payloadSamples() {
		ev := &Event{Turn: int64(i), StatePath: "s", CallID: "c"}
		var err error
		if typed {
			err = s.AppendPayload(ev, sm.typed)
		} else {
			ev.Kind, ev.Payload = sm.typed.Kind(), sm.old
			err = s.Append(ev)
		}
		if err != nil {
			t.Fatalf("%s: %v", sm.name, err)
		}
	}
	return lines(s.Bytes())[1:]
}

// Every kind kitsoki writes encodes to the bytes the map-built payloads
// produced, and to the golden file.
func TestTypedPayloadsEncodeLikeTheOldMaps(t *testing.T) {
	typed, old := sampleLines(t, true), sampleLines(t, false)
	samples := payloadSamples()
	for i := range samples {
		if typed[i] != old[i] {
			t.Errorf("%s:\ntyped %s\n  map %s", samples[i].name, typed[i], old[i])
		}
	}
	golden := filepath.Join("testdata", "payloads.golden.jsonl")
	got := strings.Join(typed, "\n") + "\n"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("encoding differs from %s (-want +got):\n%s", golden, diff)
	}
	// Every kind a payload type exists for has a sample.
	seen := map[string]bool{}
	for _, s := range samples {
		seen[s.typed.Kind()] = true
	}
	for _, k := range allKinds {
		if _, ok := NewPayload(k); ok && !seen[k] {
			t.Errorf("kind %s has a payload type but no sample", k)
		}
	}
}

// Masking applies to the values of typed payloads exactly as to maps;
// kitsoki's own key names are never masked.
func TestTypedPayloadsMaskValuesNotKeys(t *testing.T) {
	secrets := WithSecrets([]string{"Ada", "auditor", "schema_invalid", "decide", "agent.local"})
	typed, old := sampleLines(t, true, secrets), sampleLines(t, false, secrets)
	for i, s := range payloadSamples() {
		if typed[i] != old[i] {
			t.Errorf("%s:\ntyped %s\n  map %s", s.name, typed[i], old[i])
		}
	}
	all := strings.Join(typed, "\n")
	for _, frag := range []string{`"name":"REDACTED"`, `"agent":"REDACTED"`, `"original_plugin":"REDACTED"`, `"error_kind":"schema_invalid"`, `"verb":"decide"`} {
		if !strings.Contains(all, frag) {
			t.Errorf("masked trace lacks %s:\n%s", frag, all)
		}
	}
	if strings.Contains(all, `"Ada"`) || strings.Contains(all, "agent.local") {
		t.Errorf("a secret value was written:\n%s", all)
	}
	// A long secret inside a key name of kitsoki's masks it in a map
	// payload, never in a typed one: the names are the format.
	keys := sampleLines(t, true, WithSecrets([]string{"rerender_fell"}))
	if l := strings.Join(keys, "\n"); !strings.Contains(l, `"rerender_fell_back":true`) || strings.Contains(l, "REDACTED") {
		t.Errorf("a key name was masked:\n%s", l)
	}
}

// Struct fields are declared in the order of their keys, so a reader of
// the type sees the order of the line.
func TestPayloadFieldsAreSorted(t *testing.T) {
	for _, k := range allKinds {
		p, ok := NewPayload(k)
		if !ok {
			continue
		}
		names := jsonFields(reflect.TypeOf(p).Elem())
		keys := make([]string, len(names))
		for i, f := range names {
			keys[i] = f.name
		}
		if !sort.StringsAreSorted(keys) {
			t.Errorf("%s: fields %v are not in key order", k, keys)
		}
	}
}

// Reading a line back and decoding it gives a payload that encodes to the
// same line.
func TestDecodeRoundTrip(t *testing.T) {
	s := NewMemSink(WithClock(fakeClock()))
	samples := payloadSamples()
	for i, sm := range samples {
		if err := s.AppendPayload(&Event{Turn: int64(i)}, sm.typed); err != nil {
			t.Fatal(err)
		}
	}
	evs := s.Events()
	again := NewMemSink(WithClock(fakeClock()))
	for i := range evs {
		p, ok := NewPayload(evs[i].Kind)
		if !ok {
			t.Fatalf("no payload type for %s", evs[i].Kind)
		}
		if err := Decode(&evs[i], p); err != nil {
			t.Fatalf("%s: %v", samples[i].name, err)
		}
		if err := again.AppendPayload(&Event{Turn: int64(i)}, p); err != nil {
			t.Fatalf("%s: %v", samples[i].name, err)
		}
	}
	if diff := cmp.Diff(lines(s.Bytes()), lines(again.Bytes())); diff != "" {
		t.Errorf("decoded payloads encode differently (-first +again):\n%s", diff)
	}
	var ws WorldUpdate
	if err := Decode(&evs[slices.IndexFunc(samples, func(s payloadSample) bool { return s.name == "world.update increment" })], &ws); err != nil || ws.Increment["count"] != -2 {
		t.Errorf("increment decoded as %v (%v)", ws.Increment, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		dst  any
		want string
	}{
		{"other kind", Event{Turn: 2, Seq: 1, Kind: KindTurnEnd, Payload: map[string]any{}}, &TurnStart{},
			"trace: Decode: turn 2, seq 1: a turn.end event cannot be read as turn.start"},
		{"not a payload type", Event{Kind: KindTurnEnd}, &map[string]any{}, "trace: Decode: *map[string]interface {} is not a trace payload type"},
		{"wrong field type", Event{Turn: 1, Seq: 4, Kind: KindAgentCallComplete, Payload: map[string]any{"duration_ms": "slow", "verb": "ask"}}, &AgentCallComplete{},
			`trace: agent.call.complete event (turn 1, seq 4): payload: json: cannot unmarshal string into Go struct field AgentCallComplete.duration_ms of type int64`},
		{"session.story", Event{Kind: KindSessionStory, Payload: map[string]any{"app_id": 7}}, &SessionStory{},
			"trace: session.story event (turn 0, seq 0): payload: json: cannot unmarshal number into Go struct field SessionStory.app_id of type string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Decode(&tt.ev, tt.dst)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Decode error = %v\nwant %s", err, tt.want)
			}
		})
	}
	var st SessionStory
	if err := Decode(&Event{Kind: KindSessionStory, Payload: map[string]any{"app_id": "x", "hash": "h", "extra": 1}}, &st); err != nil || st.AppID != "x" {
		t.Errorf("session.story decoded as %+v (%v)", st, err)
	}
}

func TestAppendPayloadRejections(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		p    Payload
		is   error
		want string
	}{
		{"nil payload", Event{Turn: 1}, nil, nil, "trace: AppendPayload given a nil payload"},
		{"map too", Event{Turn: 1, Payload: map[string]any{}}, TurnEnd{Outcome: "x"}, nil,
			"trace: turn.end event: both a typed payload and a map payload given; set one"},
		{"other kind", Event{Turn: 1, Kind: KindTurnStart}, TurnEnd{Outcome: "x"}, nil,
			`trace: event of kind "turn.start" given a turn.end payload (trace.TurnEnd); leave Kind empty, the payload sets it`},
		{"NUL in a field", Event{Turn: 1}, TurnInput{Input: "a\x00"}, ErrNULByte, "trace: turn.input event: payload contains NUL byte at payload.input"},
		{"NFD in a nested field", Event{Turn: 1}, AgentCallComplete{Verb: "ask", Substitution: &Substitution{Reason: "e\u0301"}}, ErrNotNFC,
			"trace: agent.call.complete event: payload string contains NFD-normalised unicode (must be NFC) at payload.substitution.reason"},
		{"NUL in open data", Event{Turn: 1}, WorldUpdate{Set: map[string]any{"k": []any{"ok", "\x00"}}}, ErrNULByte,
			"trace: world.update event: payload contains NUL byte at payload.set.k[1]"},
		{"NUL in a world key", Event{Turn: 1}, WorldUpdate{Increment: map[string]int64{"\x00": 1}}, ErrNULByte,
			"trace: world.update event: payload contains NUL byte at payload.increment{key}"},
	}
	for _, ts := range bothSinks(t) {
		for _, tt := range tests {
			t.Run(ts.name+"/"+tt.name, func(t *testing.T) {
				before := ts.bytes()
				ev := tt.ev
				err := ts.sink.AppendPayload(&ev, tt.p)
				if err == nil || err.Error() != tt.want {
					t.Fatalf("error = %v\nwant %s", err, tt.want)
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Errorf("error %v is not %v", err, tt.is)
				}
				if ev.TS != "" || !bytes.Equal(before, ts.bytes()) {
					t.Error("a rejected append changed the trace")
				}
			})
		}
	}
}

// Every payload type agrees with its kind's definition in
// schemas/trace-event.schema.json: the same keys, the same required keys
// (the fields never left out), and every encoded sample line validates.
func TestPayloadTypesMatchTheSchema(t *testing.T) {
	raw, err := os.ReadFile("../../../schemas/trace-event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
			Additional *bool                      `json:"additionalProperties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	check := func(name string, typ reflect.Type) {
		def, ok := doc.Defs[name]
		if !ok {
			t.Errorf("the schema has no $defs entry %q", name)
			return
		}
		var keys, required []string
		for _, f := range jsonFields(typ) {
			keys = append(keys, f.name)
			if !f.omitted {
				required = append(required, f.name)
			}
		}
		var props []string
		for k := range def.Properties {
			props = append(props, k)
		}
		sort.Strings(props)
		sort.Strings(def.Required)
		if diff := cmp.Diff(keys, props); diff != "" {
			t.Errorf("%s: %s fields vs schema properties (-type +schema):\n%s", name, typ, diff)
		}
		if diff := cmp.Diff(required, def.Required, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: fields always written vs schema required (-type +schema):\n%s", name, diff)
		}
		if def.Additional == nil || *def.Additional {
			t.Errorf("%s: the schema allows keys kitsoki does not write (additionalProperties is not false)", name)
		}
	}
	kinds := 0
	for _, k := range allKinds {
		if p, ok := NewPayload(k); ok {
			check(k, reflect.TypeOf(p).Elem())
			kinds++
		}
	}
	check("substitution", reflect.TypeOf(Substitution{}))
	check("transcript_ref", reflect.TypeOf(TranscriptRef{}))
	for name := range doc.Defs {
		if _, ok := NewPayload(name); !ok && name != "substitution" && name != "transcript_ref" && name != "ts" {
			t.Errorf("the schema defines %q, which is no kind kitsoki writes", name)
		}
	}
	if kinds != 32 {
		t.Errorf("%d kinds with payload types, want 32", kinds)
	}

	c, err := schema.NewCompiler("../../../schemas")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sch, err := c.Compile("trace-event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	s := NewMemSink(WithClock(fakeClock()))
	for i, sm := range payloadSamples() {
		ev := &Event{Turn: int64(i), StatePath: "s"}
		if strings.HasPrefix(sm.typed.Kind(), "agent.call.") {
			ev.CallID = "335599da002646d7"
		}
		if err := s.AppendPayload(ev, sm.typed); err != nil {
			t.Fatal(err)
		}
	}
	samples := payloadSamples()
	for i, l := range lines(s.Bytes()) {
		if _, err := sch.ValidateJSON([]byte(l)); err != nil {
			name := "header"
			if i > 0 {
				name = samples[i-1].name
			}
			t.Errorf("%s: %v\n%s", name, err, l)
		}
	}
	// The schema is strict where it should be.
	for _, bad := range []string{
		`{"turn":1,"seq":0,"ts":"2025-01-02T09:00:00Z","kind":"turn.input","payload":{"input":"a","intent":"b","extra":1}}`,
		`{"turn":1,"seq":0,"ts":"2025-01-02T09:00:00Z","kind":"agent.call.error","call_id":"c","payload":{"verb":"ask","duration_ms":1,"error":"agent: plugin_crash: x"}}`,
		`{"turn":1,"seq":0,"ts":"2025-01-02T09:00:00Z","kind":"world.update","payload":{"set":{"a":1},"increment":{"b":1}}}`,
	} {
		if _, err := sch.ValidateJSON([]byte(bad)); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}

type jsonField struct {
	name    string
	omitted bool // omitempty or omitzero: left out when empty
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		out = append(out, jsonField{name: name, omitted: strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")})
	}
	return out
}

// allKinds is every kind constant in event.go.
var allKinds = []string{
	KindTurnInput, KindTurnStart, KindTurnEnd, KindTurnRouted, KindMachineIntentAccepted, KindMachineValidationFailed,
	KindMachineTransition, KindMachineSay, KindMachineStateExited, KindMachineStateEntered, KindMachineError,
	KindMachineTimeout, KindWorldUpdate, KindHarnessCalled, KindHarnessDispatched, KindHarnessReturned, KindHarnessError,
	KindAgentCallStart, KindAgentCallComplete, KindAgentCallError, KindSessionStory,
	KindJobStarted, KindJobAwaitingInput, KindJobCompleted, KindAgentSwitched, KindCostCapReached,
	KindSnapshot, KindDecisions, KindResumed, KindCallReplayed, KindCallSkipped, KindCallRetry, KindCallReissued,
}
