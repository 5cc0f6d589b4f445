package trace

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Timestamps are written as time.RFC3339Nano writes them in UTC, whatever
// came before: the kept second is only reused within that second.
func TestTimestampsFormatLikeRFC3339Nano(t *testing.T) {
	base := time.Date(2026, 12, 1, 18, 41, 55, 306466724, time.UTC)
	times := []time.Time{
		base,
		base.Add(1),              // same second, other nanoseconds
		base.Add(693533275),      // the next second, exactly on it
		base.Add(693533276),      // one nanosecond later
		base.Add(-306466724),     // back to the start of the first second
		base.Add(-306466725),     // the second before
		base.Add(24 * time.Hour), // the same time of day, the next day
		time.Date(2026, 12, 1, 18, 41, 55, 100000000, time.UTC), // trailing zeros
		time.Date(2026, 12, 1, 18, 41, 55, 120, time.UTC),
		time.Date(2026, 12, 1, 18, 41, 55, 999999999, time.UTC),
		time.Date(2026, 12, 1, 18, 41, 55, 0, time.FixedZone("x", 3600)), // not in UTC
		time.Date(1969, 12, 31, 23, 59, 59, 5, time.UTC),                 // before 1970
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 0, 0, 0, 10, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(), // with a monotonic reading
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		times = append(times, time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)))
		if r.IntN(4) == 0 { // a run of lines within one second
			times = append(times, times[len(times)-1].Add(time.Duration(r.IntN(1000))))
		}
	}
	var f tsFormat
	for i, tm := range times {
		got := string(f.append(nil, tm))
		if want := tm.UTC().Format(time.RFC3339Nano); got != want {
			t.Fatalf("time %d (%v): got %s, want %s", i, tm, got, want)
		}
	}
}

// The ts strings handed back stay as they were while later lines are
// encoded (they are cut from shared chunks).
func TestTimestampStringsStay(t *testing.T) {
	enc := newLineEncoder(nil)
	at := time.Date(2026, 12, 1, 18, 41, 55, 306466724, time.UTC)
	var evs []*Event
	var want []string
	for i := range 200 {
		now := at.Add(time.Duration(i) * 123456789 * time.Nanosecond)
		ev := &Event{Turn: 1, Kind: "k"}
		_, p, err := enc.encode(ev, nil, now)
		if err != nil {
			t.Fatal(err)
		}
		enc.commit(ev, p)
		evs = append(evs, ev)
		want = append(want, now.Format(time.RFC3339Nano))
	}
	for i, ev := range evs {
		if ev.TS != want[i] {
			t.Fatalf("event %d: ts %q, want %q", i, ev.TS, want[i])
		}
	}
}
