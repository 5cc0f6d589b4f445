package traceview

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// The world the view follows applies an increment as the run did: a
// number the trace set as a string ("3") counts as that number, other
// text as 0; a key the trace never set stays unknown.
func TestWorldFollowsIncrementsAsTheRun(t *testing.T) {
	upd := func(seq int, p map[string]any) trace.Event {
		return trace.Event{Turn: 1, Seq: seq, Kind: trace.KindWorldUpdate, Payload: p}
	}
	r := Build([]trace.Event{
		upd(0, map[string]any{"set": map[string]any{"n": "3", "s": "x"}}),
		upd(1, map[string]any{"increment": map[string]any{"n": 1, "s": 2, "u": 1}}),
		upd(2, map[string]any{"set": map[string]any{"n": "", "s": "", "u": ""}}),
	})
	type change struct {
		Key, Op string
		Before  any
		Known   bool
	}
	var got []change
	for _, it := range r.Turns[0].Items {
		if it.World != nil && it.World.Op == "set" && it.World.Value == "" {
			got = append(got, change{it.World.Key, it.World.Op, it.World.Before, it.World.Known})
		}
	}
	want := []change{
		{"n", "set", int64(4), true},
		{"s", "set", int64(2), true},
		{"u", "set", nil, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values before the last set (-want +got):\n%s", diff)
	}
}
