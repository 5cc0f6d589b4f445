package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The header names the session when given, and reads back; an old header
// without those keys reads as before.
func TestHeaderInfoRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	info := HeaderInfo{AppID: "loop", StoryPath: "/w/app.yaml", StoryHash: "sha256:ab", KitsokiVersion: "v1", SessionID: "s-1",
		ForkedFrom: "s-0", ForkedAtTurn: 3}
	w, err := Create(path, WithClock(fakeClock()), WithHeader(info))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, _ := os.ReadFile(path)
	want := `{"kind":"session.header","schema_version":1,"written_at":"` + t0.Format("2006-01-02T15:04:05.999999999Z07:00") +
		`","app_id":"loop","story_path":"/w/app.yaml","story_hash":"sha256:ab","kitsoki_version":"v1","session_id":"s-1","forked_from":"s-0","forked_at_turn":3}` + "\n"
	if string(b) != want {
		t.Errorf("header line:\n%s\nwant:\n%s", b, want)
	}
	f, _ := os.Open(path)
	h, _, err := ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(info, h.HeaderInfo); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	old, err := DecodeHeader([]byte(`{"kind":"session.header","schema_version":1,"written_at":"2025-06-01T10:00:00.5Z"}`))
	if err != nil || old.HeaderInfo != (HeaderInfo{}) {
		t.Errorf("an old header: %+v %v", old, err)
	}
}

// WithTailCheck appends after checking the header and the last line only;
// it still refuses a torn last line, which RepairTail cuts off.
func TestTailCheckAndRepairTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Create(path, WithClock(fakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	for turn := int64(0); turn < 3; turn++ {
		if err := w.Append(&Event{Turn: turn, Kind: "machine.say", Payload: map[string]any{"text": "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	w, err = Create(path, WithClock(fakeClock()), WithTailCheck())
	if err != nil {
		t.Fatal(err)
	}
	if turn, ok := w.LastTurn(); !ok || turn != 2 {
		t.Errorf("LastTurn = %d %v, want 2", turn, ok)
	}
	ev := &Event{Turn: 2, Kind: "machine.say", Payload: map[string]any{"text": "y"}}
	if err := w.Append(ev); err != nil || ev.Seq != 1 {
		t.Fatalf("append after a tail check: seq %d, %v", ev.Seq, err)
	}
	w.Close()
	if _, err := ReadFile(path); err != nil {
		t.Fatalf("the file does not read back: %v", err)
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"turn":3,"seq":0,"ts":"2025`)
	f.Close()
	if _, err := Create(path, WithTailCheck()); err == nil || !strings.Contains(err.Error(), "missing trailing newline at EOF") {
		t.Fatalf("a torn tail: %v", err)
	}
	cut, err := RepairTail(path)
	if err != nil || cut != int64(len(`{"turn":3,"seq":0,"ts":"2025`)) {
		t.Fatalf("RepairTail cut %d, %v", cut, err)
	}
	if evs, err := ReadFile(path); err != nil || len(evs) != 4 {
		t.Errorf("after the repair: %d events, %v", len(evs), err)
	}
	if cut, err := RepairTail(path); err != nil || cut != 0 {
		t.Errorf("a second repair cut %d, %v", cut, err)
	}
	held, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := RepairTail(path); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("repairing a file another writer holds: %v", err)
	}
}

// WithNoSync never fsyncs after the header; the hook counts the fsyncs
// of the default (one per turn with lines, at EndTurn).
func TestNoSyncAndSyncHook(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []Option
		want int
	}{
		{"turn", nil, 1 + 2},
		{"no sync", []Option{WithNoSync()}, 1},
		{"no sync beats per event", []Option{WithNoSync(), WithSyncPerEvent()}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			w, err := Create(filepath.Join(t.TempDir(), "t.jsonl"), append(tt.opts, WithSyncHook(func() { n++ }))...)
			if err != nil {
				t.Fatal(err)
			}
			for turn := int64(0); turn < 2; turn++ {
				w.Append(&Event{Turn: turn, Kind: "machine.say", Payload: map[string]any{}})
				w.Append(&Event{Turn: turn, Kind: "machine.say", Payload: map[string]any{}})
				if err := w.EndTurn(); err != nil {
					t.Fatal(err)
				}
			}
			w.EndTurn() // nothing new: no fsync
			w.Close()
			if n != tt.want {
				t.Errorf("%d fsyncs, want %d", n, tt.want)
			}
		})
	}
}

// A coalescing writer hands lines to the kernel at a call's dispatch and
// return and at turn ends; between those points they wait in the process.
func TestCoalesceWritesAtCallPoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	w, err := Create(path, WithClock(fakeClock()), WithCoalesce())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	lines := func() int {
		b, _ := os.ReadFile(path)
		return strings.Count(string(b), "\n")
	}
	w.AppendPayload(&Event{Turn: 1}, TurnInput{Input: "x", Intent: "x"})
	w.AppendPayload(&Event{Turn: 1}, MachineSay{Text: "a"})
	if got := lines(); got != 1 {
		t.Errorf("%d lines on disk before a call point, want the header only", got)
	}
	w.AppendPayload(&Event{Turn: 1}, HarnessDispatched{Namespace: "host.x"})
	if got := lines(); got != 4 {
		t.Errorf("%d lines after harness.dispatched, want 4", got)
	}
	w.AppendPayload(&Event{Turn: 1}, WorldUpdate{Set: map[string]any{"k": 1}})
	w.AppendPayload(&Event{Turn: 1}, HarnessReturned{Namespace: "host.x"})
	w.AppendPayload(&Event{Turn: 1}, TurnEnd{Outcome: "transitioned", To: "a"})
	if got := lines(); got != 6 {
		t.Errorf("%d lines after harness.returned, want 6", got)
	}
	if w.Size() <= 0 {
		t.Error("Size counts nothing")
	}
	if err := w.EndTurn(); err != nil {
		t.Fatal(err)
	}
	if got := lines(); got != 7 {
		t.Errorf("%d lines after EndTurn, want 7", got)
	}
	if _, err := ReadFile(path); err != nil {
		t.Error(err)
	}
}
