package trace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAppendLineEncoding(t *testing.T) {
	for _, ts := range bothSinks(t, WithClock(fakeClock())) {
		t.Run(ts.name, func(t *testing.T) {
			mustAppend(t, ts.sink, &Event{Turn: 0, Kind: KindMachineTransition,
				Payload: map[string]any{"from": "", "to": "start", "intent": SeedIntent, "slots": map[string]any{}}})
			mustAppend(t, ts.sink, &Event{Turn: 3, Seq: 99, Kind: KindAgentCallStart, StatePath: "reviewing",
				ParentTurn: 2, CallID: "335599da002646d7", EpisodeID: "audit_ok", MatchIdx: 4,
				Payload: map[string]any{"verb": "decide", "prompt": "a<b && c>d", "n": 1.5, "z": nil}})
			mustAppend(t, ts.sink, &Event{Turn: 3, Kind: KindTurnEnd, StatePath: "a<b"})
			got := lines(ts.bytes())
			want := []string{
				`{"kind":"session.header","schema_version":1,"written_at":"` + t0TS + `"}`,
				`{"turn":0,"seq":0,"ts":"` + t0TS + `","kind":"machine.transition","payload":{"from":"","intent":"__seed__","slots":{},"to":"start"}}`,
				`{"turn":3,"seq":0,"ts":"` + t0TS + `","kind":"agent.call.start","state_path":"reviewing","parent_turn":2,"call_id":"335599da002646d7","episode_id":"audit_ok","match_idx":4,"payload":{"n":1.5,"prompt":"a\u003cb \u0026\u0026 c\u003ed","verb":"decide","z":null}}`,
				`{"turn":3,"seq":1,"ts":"` + t0TS + `","kind":"turn.end","state_path":"a\u003cb","payload":{}}`,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("trace lines (-want +got):\n%s", diff)
			}
		})
	}
}

// Every line must match what encoding/json produces for the Event struct,
// so files round-trip byte for byte through Kitsoki's own decoder.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	evs := []Event{
		{Turn: 1, Kind: "k", Payload: map[string]any{"s": "\u2028 \x01 \t \"q\" \\ é \xff", "a": []any{1, "x"}}},
		{Turn: 1, Kind: "kind with \"quotes\" and é", StatePath: "p\u2029", CallID: "c\x7f", EpisodeID: "e&"},
		{Turn: 2, Kind: "k", MatchIdx: 1},
	}
	s := NewMemSink(WithClock(fakeClock()))
	for i := range evs {
		mustAppend(t, s, &evs[i])
	}
	got := lines(s.Bytes())[1:]
	for i, ev := range evs {
		if ev.Payload == nil {
			ev.Payload = map[string]any{}
		}
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if got[i] != string(want) {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], want)
		}
	}
}

func TestAppendAssignsSeqAndTS(t *testing.T) {
	for _, ts := range bothSinks(t, WithClock(fakeClock())) {
		t.Run(ts.name, func(t *testing.T) {
			type step struct {
				in      Event
				wantSeq int
				wantTS  string
			}
			steps := []step{
				{Event{Turn: 0, Seq: 7, Kind: "a"}, 0, t0TS},
				{Event{Turn: 0, Seq: 7, Kind: "b"}, 1, t0TS},
				{Event{Turn: 1, Seq: 5, Kind: "c", TS: "2025-03-04T10:00:00.500+02:00"}, 0, "2025-03-04T08:00:00.5Z"},
				{Event{Turn: 1, Kind: "d", TS: "2025-03-04T08:00:00Z"}, 1, "2025-03-04T08:00:00Z"},
				{Event{Turn: 1, Kind: "e", TS: "2025-03-04T08:00:00.000000001-00:30"}, 2, "2025-03-04T08:30:00.000000001Z"},
				{Event{Turn: 4, Kind: "f"}, 0, t0TS},
			}
			for i := range steps {
				ev := steps[i].in
				mustAppend(t, ts.sink, &ev)
				if ev.Seq != steps[i].wantSeq || ev.TS != steps[i].wantTS {
					t.Errorf("step %d: caller sees seq=%d ts=%q, want seq=%d ts=%q", i, ev.Seq, ev.TS, steps[i].wantSeq, steps[i].wantTS)
				}
			}
			got := ts.events(t)
			for i, ev := range got {
				if ev.Seq != steps[i].wantSeq || ev.TS != steps[i].wantTS {
					t.Errorf("line %d: seq=%d ts=%q, want seq=%d ts=%q", i+2, ev.Seq, ev.TS, steps[i].wantSeq, steps[i].wantTS)
				}
			}
		})
	}
}

func TestAppendUsesClockWhenTSEmpty(t *testing.T) {
	clk := fakeClock()
	s := NewMemSink(WithClock(clk))
	clk.Advance(1500 * time.Millisecond)
	ev := &Event{Turn: 1, Kind: "k"}
	mustAppend(t, s, ev)
	if want := "2025-01-02T09:00:01.6234Z"; ev.TS != want {
		t.Errorf("ts = %q, want %q", ev.TS, want)
	}
	if !s.Now().Equal(t0.Add(1500 * time.Millisecond)) {
		t.Errorf("Now() = %v", s.Now())
	}
}

func TestAppendRejectsEnvelope(t *testing.T) {
	tests := []struct {
		name string
		ev   *Event
		want string
	}{
		{"nil event", nil, "trace: nil event"},
		{"no kind", &Event{Turn: 1}, "event has no kind"},
		{"header kind", &Event{Turn: 1, Kind: KindSessionHeader}, `kind "session.header" is reserved`},
		{"negative turn", &Event{Turn: -1, Kind: "k"}, "turn -1 is negative"},
		{"negative parent_turn", &Event{Turn: 1, ParentTurn: -2, Kind: "k"}, "parent_turn -2 is negative"},
		{"negative match_idx", &Event{Turn: 1, MatchIdx: -1, Kind: "k"}, "match_idx -1 is negative"},
		{"bad ts", &Event{Turn: 1, Kind: "k", TS: "yesterday"}, `ts "yesterday" is not an RFC3339 timestamp`},
		{"NUL in state_path", &Event{Turn: 1, Kind: "k", StatePath: "a\x00"}, "event field state_path: payload contains NUL byte"},
		{"NFD in kind", &Event{Turn: 1, Kind: "caf" + "e\u0301"}, "event field kind: payload string contains NFD-normalised unicode (must be NFC)"},
	}
	for _, ts := range bothSinks(t, WithClock(fakeClock())) {
		for _, tt := range tests {
			t.Run(ts.name+"/"+tt.name, func(t *testing.T) {
				before := ts.bytes()
				err := ts.sink.Append(tt.ev)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Append error = %v, want it to contain %q", err, tt.want)
				}
				if diff := cmp.Diff(string(before), string(ts.bytes())); diff != "" {
					t.Errorf("rejected append changed the trace:\n%s", diff)
				}
			})
		}
	}
}

func TestTurnsNeverDecrease(t *testing.T) {
	for _, ts := range bothSinks(t) {
		t.Run(ts.name, func(t *testing.T) {
			mustAppend(t, ts.sink, &Event{Turn: 2, Kind: "a"})
			before := ts.bytes()
			err := ts.sink.Append(&Event{Turn: 1, Kind: "b"})
			if err == nil || !strings.Contains(err.Error(), "event for turn 1 after turn 2: turns never decrease") {
				t.Fatalf("Append(turn 1 after 2) error = %v", err)
			}
			if string(before) != string(ts.bytes()) {
				t.Error("rejected append changed the trace")
			}
			// The rejected event did not move the sequence.
			ev := &Event{Turn: 2, Kind: "c"}
			mustAppend(t, ts.sink, ev)
			if ev.Seq != 1 {
				t.Errorf("seq after rejection = %d, want 1", ev.Seq)
			}
		})
	}
}

func TestAppendDoesNotModifyCallerPayload(t *testing.T) {
	payload := map[string]any{
		"headers": map[string]any{"Authorization": "Bearer sk-live-1234"},
		"list":    []any{"has sk-live-1234 inside"},
		"strs":    []string{"sk-live-1234"},
	}
	want := map[string]any{
		"headers": map[string]any{"Authorization": "Bearer sk-live-1234"},
		"list":    []any{"has sk-live-1234 inside"},
		"strs":    []string{"sk-live-1234"},
	}
	s := NewMemSink(WithSecrets([]string{"sk-live-1234"}))
	mustAppend(t, s, &Event{Turn: 1, Kind: "k", Payload: payload})
	if diff := cmp.Diff(want, payload); diff != "" {
		t.Errorf("caller payload changed (-want +got):\n%s", diff)
	}
}

func TestClosedSink(t *testing.T) {
	for _, ts := range bothSinks(t) {
		t.Run(ts.name, func(t *testing.T) {
			if err := ts.sink.Close(); err != nil {
				t.Fatal(err)
			}
			if err := ts.sink.Append(&Event{Turn: 1, Kind: "k"}); err == nil || !strings.Contains(err.Error(), ErrClosed.Error()) {
				t.Errorf("Append after Close = %v", err)
			}
			if err := ts.sink.EndTurn(); err == nil {
				t.Error("EndTurn after Close succeeded")
			}
			if err := ts.sink.Close(); err != nil {
				t.Errorf("second Close = %v", err)
			}
		})
	}
}

// MemSink must give exactly what a file written with the same appends
// reads back as.
func TestMemSinkMatchesFile(t *testing.T) {
	type point struct {
		X float64 `json:"x"`
		Y []int   `json:"y"`
	}
	sinks := bothSinks(t, WithClock(fakeClock()), WithSecrets([]string{"hunter2"}))
	for _, ts := range sinks {
		for turn := int64(0); turn < 3; turn++ {
			mustAppend(t, ts.sink, &Event{Turn: turn, Kind: KindWorldUpdate, Payload: map[string]any{
				"set": map[string]any{"n": 12345678901234567, "f": 0.1, "p": point{X: 1, Y: []int{2, 3}}, "pw": "hunter2"},
			}})
			mustAppend(t, ts.sink, &Event{Turn: turn, Kind: KindTurnEnd})
			if err := ts.sink.EndTurn(); err != nil {
				t.Fatal(err)
			}
		}
	}
	file, mem := sinks[0].events(t), sinks[1].sink.(*MemSink).Events()
	if diff := cmp.Diff(file, mem); diff != "" {
		t.Errorf("file vs memory (-file +mem):\n%s", diff)
	}
	if got := mem[0].Payload["set"].(map[string]any)["n"]; got != json.Number("12345678901234567") {
		t.Errorf("large integer read back as %#v", got)
	}
}

// Forget drops the lines recorded so far; seq goes on, the header stays.
func TestMemSinkForget(t *testing.T) {
	m := NewMemSink(WithClock(fakeClock()))
	for turn := int64(0); turn < 3; turn++ {
		mustAppend(t, m, &Event{Turn: turn, Kind: KindTurnEnd})
	}
	m.Forget()
	if evs := m.Events(); len(evs) != 0 {
		t.Fatalf("after Forget: %d events", len(evs))
	}
	mustAppend(t, m, &Event{Turn: 3, Kind: KindTurnEnd})
	evs := m.Events()
	if len(evs) != 1 || evs[0].Turn != 3 {
		t.Fatalf("after Forget and one append: %+v", evs)
	}
	b := m.Bytes()
	if !bytes.HasPrefix(b, []byte(`{"kind":"session.header"`)) {
		t.Errorf("the header is gone: %.60s", b)
	}
}
