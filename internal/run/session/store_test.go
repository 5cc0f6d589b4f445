package session

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// sampleJournal is a small journal of a durable session: turn 0's
// snapshot, then turns 1 and 2 (an increment and a set), and turn 3 cut
// in the middle of its call.
const sampleJournal = `{"kind":"session.header","schema_version":1,"written_at":"2026-01-01T00:00:00Z","app_id":"loop","session_id":"s"}
{"turn":0,"seq":0,"ts":"2026-01-01T00:00:00Z","kind":"machine.transition","payload":{"from":"","intent":"__seed__","to":"idle"}}
{"turn":0,"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"machine.state_entered","state_path":"idle","payload":{"state":"idle"}}
{"turn":0,"seq":2,"ts":"2026-01-01T00:00:00Z","kind":"kitsoki.snapshot","state_path":"idle","payload":{"state":"idle","turn":0,"world":{"n":0,"s":"","session_cost_usd":0}}}
{"turn":1,"seq":0,"ts":"2026-01-01T00:00:01Z","kind":"turn.input","state_path":"idle","payload":{"input":"tick","intent":"tick"}}
{"turn":1,"seq":1,"ts":"2026-01-01T00:00:01Z","kind":"world.update","state_path":"idle","payload":{"increment":{"n":1}}}
{"turn":1,"seq":2,"ts":"2026-01-01T00:00:01Z","kind":"turn.end","state_path":"idle","payload":{"outcome":"transitioned","to":"idle"}}
{"turn":2,"seq":0,"ts":"2026-01-01T00:00:02Z","kind":"turn.input","state_path":"idle","payload":{"input":"name s=x","intent":"name"}}
{"turn":2,"seq":1,"ts":"2026-01-01T00:00:02Z","kind":"world.update","state_path":"idle","payload":{"set":{"s":"x"}}}
{"turn":2,"seq":2,"ts":"2026-01-01T00:00:02Z","kind":"turn.end","state_path":"busy","payload":{"outcome":"transitioned","to":"busy"}}
{"turn":3,"seq":0,"ts":"2026-01-01T00:00:03Z","kind":"turn.input","state_path":"busy","payload":{"input":"work","intent":"work"}}
{"turn":3,"seq":1,"ts":"2026-01-01T00:00:03Z","kind":"harness.dispatched","state_path":"busy","payload":{"args":{"call":"a"},"background":false,"namespace":"host.x.a","rerender_fell_back":false}}
{"turn":3,"seq":2,"ts":"2026-01-01T00:00:03Z","kind":"harness.returned","state_path":"busy","payload":{"data":{"v":2},"namespace":"host.x.a"}}
{"turn":3,"seq":3,"ts":"2026-01-01T00:00:03Z","kind":"harness.dispatched","state_path":"busy","payload":{"args":{"call":"b"},"background":false,"namespace":"host.x.b","rerender_fell_back":false}}
`

func writeJournal(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Load rebuilds state and world from the last snapshot and the finished
// turns after it, and describes the unfinished turn: its input and which
// of its calls returned (with their answers).
func TestLoadFoldsFromTheLastSnapshot(t *testing.T) {
	j, err := Load(writeJournal(t, t.TempDir(), "s.jsonl", sampleJournal))
	if err != nil {
		t.Fatal(err)
	}
	if j.State != "busy" || j.Turn != 2 || !j.Started || j.Done {
		t.Errorf("state %q turn %d started %v done %v", j.State, j.Turn, j.Started, j.Done)
	}
	if diff := cmp.Diff(map[string]any{"n": int64(1), "s": "x", "session_cost_usd": int64(0)}, j.World); diff != "" {
		t.Errorf("world (-want +got):\n%s", diff)
	}
	want := &Partial{Turn: 3, Input: Input{Text: "work", Intent: "work"}, HasInput: true, Calls: []Call{
		{Namespace: "host.x.a", Call: "a", State: "busy", Returned: true, Data: map[string]any{"v": int64(2)}},
		{Namespace: "host.x.b", Call: "b", State: "busy"},
	}}
	if diff := cmp.Diff(want, j.Partial); diff != "" {
		t.Errorf("unfinished turn (-want +got):\n%s", diff)
	}
	if j.Header.AppID != "loop" || j.Header.SessionID != "s" {
		t.Errorf("header %+v", j.Header)
	}
}

// A resumed attempt at a turn (after a kitsoki.resumed marker) replaces
// the cut one; answers of the cut attempt still count.
func TestLoadTakesTheLastAttempt(t *testing.T) {
	text := sampleJournal +
		`{"turn":3,"seq":4,"ts":"2026-01-01T00:00:04Z","kind":"kitsoki.resumed","state_path":"busy","payload":{"after_turn":2,"redo":true}}
{"turn":3,"seq":5,"ts":"2026-01-01T00:00:04Z","kind":"turn.input","state_path":"busy","payload":{"input":"work","intent":"work"}}
{"turn":3,"seq":6,"ts":"2026-01-01T00:00:04Z","kind":"world.update","state_path":"busy","payload":{"increment":{"n":5}}}
{"turn":3,"seq":7,"ts":"2026-01-01T00:00:04Z","kind":"turn.end","state_path":"done","payload":{"outcome":"transitioned","to":"done"}}
`
	j, err := Load(writeJournal(t, t.TempDir(), "s.jsonl", text))
	if err != nil {
		t.Fatal(err)
	}
	if j.Partial != nil || j.Turn != 3 || j.State != "done" || j.World["n"] != int64(6) {
		t.Errorf("partial %+v turn %d state %q n %v", j.Partial, j.Turn, j.State, j.World["n"])
	}
}

// The snapshot is found however far back it is, and a journal whose
// snapshot lies beyond the first window is still read right.
func TestLoadFindsAFarSnapshot(t *testing.T) {
	text := sampleJournal[:len(sampleJournal)-len(sampleJournal[indexOfTurn(sampleJournal, 3):])]
	for i := 3; i < 3000; i++ {
		text += fmt.Sprintf(`{"turn":%d,"seq":0,"ts":"2026-01-01T00:00:03Z","kind":"turn.input","state_path":"busy","payload":{"input":"tick","intent":"tick"}}
{"turn":%d,"seq":1,"ts":"2026-01-01T00:00:03Z","kind":"world.update","state_path":"busy","payload":{"increment":{"n":1}}}
{"turn":%d,"seq":2,"ts":"2026-01-01T00:00:03Z","kind":"turn.end","state_path":"busy","payload":{"outcome":"transitioned","to":"busy"}}
`, i, i, i)
	}
	j, err := Load(writeJournal(t, t.TempDir(), "s.jsonl", text))
	if err != nil {
		t.Fatal(err)
	}
	if j.Turn != 2999 || j.World["n"] != int64(2998) || j.Inputs[2999].Text != "tick" {
		t.Errorf("turn %d n %v", j.Turn, j.World["n"])
	}
}

func indexOfTurn(s string, turn int) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && len(s) > i+10 && s[i+1:i+10] == fmt.Sprintf(`{"turn":%d`, turn) {
			return i + 1
		}
	}
	return len(s)
}

func TestCompareNamesTheFirstDifference(t *testing.T) {
	j := []Decision{{State: "review", Arm: 0, Intent: "decide", Target: "merge"}}
	s := []Decision{{State: "review", Arm: 1, Intent: "decide", Target: "rework"}}
	d := Compare(12, "review", j, s)
	if d == nil || d.Error() != "turn 12 in review: the journal took arm 0 → merge, the story now takes arm 1 → rework" {
		t.Errorf("got %v", d)
	}
	d = Compare(3, "a", []Decision{{State: "a", Namespace: "host.agent.decide", Call: "review"}}, nil)
	if d == nil || d.Error() != "turn 3 in a: the journal queued host.agent.decide (call review), the story now does nothing more" {
		t.Errorf("got %v", d)
	}
	if d := Compare(1, "a", j, j); d != nil {
		t.Errorf("equal decisions differ: %v", d)
	}
}

// BenchmarkSessionList lists a directory of 1,000 sessions (issue 17: well
// under a second) from the index. Half of them have journals that grew
// after their entry was written (a crashed run): List no longer reads
// them (Get does), so both cases cost the same.
func BenchmarkSessionList(b *testing.B) {
	b.Run("half-stale", func(b *testing.B) { benchList(b, 2) })
	b.Run("fresh", func(b *testing.B) { benchList(b, 0) })
}

func benchList(b *testing.B, staleEvery int) {
	dir := b.TempDir()
	s := Store{Dir: dir}
	for i := range 1000 {
		id := fmt.Sprintf("s-%04d", i)
		tr := writeJournal(b, dir, id+".jsonl", sampleJournal)
		size := int64(len(sampleJournal))
		if staleEvery > 0 && i%staleEvery == 1 {
			size = 10 // stale: Get refreshes it from the journal, List does not
		}
		if err := s.Put(Meta{ID: id, Story: "/x/app.yaml", Trace: tr, Updated: time.Unix(int64(i), 0), TraceBytes: size}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		all, err := s.List()
		if err != nil || len(all) != 1000 {
			b.Fatalf("%d sessions, %v", len(all), err)
		}
	}
}

// Delete refuses a session whose journal a run holds.
func TestDeleteRefusesARunningSession(t *testing.T) {
	dir := t.TempDir()
	s := Store{Dir: dir}
	tr := writeJournal(t, dir, "s.jsonl", sampleJournal)
	if err := s.Put(Meta{ID: "s", Trace: tr, TraceBytes: int64(len(sampleJournal))}); err != nil {
		t.Fatal(err)
	}
	w, err := trace.Create(tr, trace.WithTailCheck())
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Delete("s")
	if err == nil || err.Error() != "session s is running (its journal "+tr+": trace file is locked by another writer); stop it first" {
		t.Errorf("delete while running: %v", err)
	}
	w.Close()
	if _, err := s.Delete("s"); err != nil {
		t.Errorf("delete after the run: %v", err)
	}
	if _, err := s.Get("s"); err == nil {
		t.Error("the deleted session is still there")
	}
}

// An increment of a number stored as a string is replayed as the live run
// applied it: "3" plus 1 is 4 (it was 1, counting the string as 0).
func TestLoadIncrementsAStringStoredNumber(t *testing.T) {
	text := `{"kind":"session.header","schema_version":1,"written_at":"2026-01-01T00:00:00Z","app_id":"loop","session_id":"s"}
{"turn":0,"seq":0,"ts":"2026-01-01T00:00:00Z","kind":"kitsoki.snapshot","state_path":"idle","payload":{"state":"idle","turn":0,"world":{"n":"3","m":"x"}}}
{"turn":1,"seq":0,"ts":"2026-01-01T00:00:01Z","kind":"turn.input","state_path":"idle","payload":{"input":"tick","intent":"tick"}}
{"turn":1,"seq":1,"ts":"2026-01-01T00:00:01Z","kind":"world.update","state_path":"idle","payload":{"increment":{"n":1}}}
{"turn":1,"seq":2,"ts":"2026-01-01T00:00:01Z","kind":"world.update","state_path":"idle","payload":{"increment":{"m":2}}}
{"turn":1,"seq":3,"ts":"2026-01-01T00:00:01Z","kind":"turn.end","state_path":"idle","payload":{"outcome":"transitioned","to":"idle"}}
`
	j, err := Load(writeJournal(t, t.TempDir(), "s.jsonl", text))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"n": int64(4), "m": int64(2)}, j.World); diff != "" {
		t.Errorf("world (-want +got):\n%s", diff)
	}
}
