package trace

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A Discard assigns the seqs and timestamps a MemSink assigns and refuses
// the events a MemSink refuses, with the same errors, for map and typed
// payloads alike; it keeps nothing.
func TestDiscardAppliesTheWritersRules(t *testing.T) {
	type outcome struct {
		Seq int
		TS  string
		Err string
	}
	run := func(s Sink) []outcome {
		var out []outcome
		add := func(err error, ev *Event) {
			o := outcome{Seq: ev.Seq, TS: ev.TS}
			if err != nil {
				o.Err = err.Error()
			}
			out = append(out, o)
		}
		for _, ev := range []*Event{
			{Turn: 1, Kind: "a.b", Payload: map[string]any{"x": 1}},
			{Turn: 1, Kind: "a.b", TS: "2025-01-02T10:00:00+01:00"},
			{Turn: 1, Kind: "a.b", Payload: map[string]any{"x": "a\x00b"}},
			{Turn: 1, Kind: "a.b", Payload: map[string]any{"n": math.NaN()}},
			{Turn: 0, Kind: "a.b"},
			{Turn: 2, Kind: KindSessionHeader},
			{Turn: 2, Kind: "k\x00"},
		} {
			add(s.Append(ev), ev)
		}
		for _, p := range []Payload{
			MachineSay{Text: "José"},
			MachineSay{Text: "Jose\u0301"},
			TurnRouted{Tier: "router", Confidence: math.Inf(1)},
			Snapshot{State: "s", Turn: 2, World: map[string]any{"k": []any{"ok", "\x00"}}},
		} {
			ev := &Event{Turn: 2}
			add(s.AppendPayload(ev, p), ev)
		}
		if s.NextSeq(2) != 1 || s.NextSeq(3) != 0 {
			t.Errorf("NextSeq = %d, %d; want 1, 0", s.NextSeq(2), s.NextSeq(3))
		}
		return out
	}
	mem := NewMemSink(WithClock(fakeClock()), WithSecrets([]string{"sk-0123456789"}))
	want := run(mem)
	d := NewDiscard(WithClock(fakeClock()), WithSecrets([]string{"sk-0123456789"}))
	if diff := cmp.Diff(want, run(d)); diff != "" {
		t.Errorf("Discard vs MemSink (-mem +discard):\n%s", diff)
	}
	if n := len(mem.Events()); n != 3 {
		t.Errorf("the MemSink kept %d events, want 3 (the rest are refused)", n)
	}
	if err := d.Close(); err != nil || d.Append(&Event{Turn: 3, Kind: "a.b"}) == nil || d.EndTurn() == nil {
		t.Error("a closed Discard accepted an event or a turn end")
	}
}
