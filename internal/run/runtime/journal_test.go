package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/demo"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// where is a session's state and world after a turn.
type where struct {
	State string
	World map[string]any
}

// TestReplayAt replays a journal up to each of its turns and finds the
// session where the live run left it after that turn; a turn the journal
// did not finish is refused with the last one it did.
func TestReplayAt(t *testing.T) {
	st := loadHello(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rt, err := runtime.Open(st, runtime.Config{Clock: clk, Agents: runtime.Agents{Override: map[string]agent.Agent{demo.Alias: demo.Greeter{}}},
		Trace:   runtime.Trace{Path: path, Header: trace.HeaderInfo{AppID: st.App.ID, SessionID: "s", StoryHash: st.ContentHash}},
		Session: &runtime.Session{ID: "s", Journal: true}})
	if err != nil {
		t.Fatal(err)
	}
	sess := rt.Session()
	snap := func() where {
		return where{State: sess.State(), World: orchestrator.DeepCopy(sess.World()).(map[string]any)}
	}
	if _, err := sess.Start(ctx); err != nil {
		t.Fatal(err)
	}
	live := []where{snap()}
	for _, line := range []string{"greet name=Ada style=formal", "again", "greet name=Grace"} {
		clk.Advance(time.Minute)
		intent, slots, err := sess.ParseInput(line)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sess.Turn(ctx, intent, slots, line); err != nil {
			t.Fatal(err)
		}
		live = append(live, snap())
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	for n, want := range live {
		rt, err := runtime.ReplayAt(ctx, st, runtime.Replay{ID: "s", Events: evs, UpTo: int64(n)})
		if err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
		s := rt.Session()
		got := where{State: s.State(), World: orchestrator.DeepCopy(s.World()).(map[string]any)}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("turn %d (-live +replayed):\n%s", n, d)
		}
		if s.TurnNumber() != int64(n) {
			t.Errorf("turn %d: the replayed session is at turn %d", n, s.TurnNumber())
		}
		rt.Close()
	}

	_, err = runtime.ReplayAt(ctx, st, runtime.Replay{ID: "s", Events: evs, UpTo: 9})
	if want := "turn 9 is not a finished turn of the trace (the last is 3)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("turn 9: %v, want %q", err, want)
	}
	_, err = runtime.ReplayAt(ctx, st, runtime.Replay{ID: "s", Events: evs[5:], UpTo: 1})
	if want := "the journal has no turn 0"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("no turn 0: %v, want %q", err, want)
	}
}

// TestReplayAtArmsTimeoutsOnTheTracesClock replays a journal whose states
// arm timeouts: each replayed turn arms them due when the live turn armed
// them, not on the clock of the replay.
func TestReplayAtArmsTimeoutsOnTheTracesClock(t *testing.T) {
	dir := t.TempDir()
	src := `app: {id: timeouts, version: 0.1.0}
world: {pokes: {type: int, default: 0}}
intents: {poke: {}, go: {}}
root: waiting
states:
  waiting:
    timeout: {after: 10m, target: gone}
    on:
      poke: [{target: ., effects: [{increment: {pokes: 1}}]}]
      go: [{target: room}]
  room:
    timeout: {after: 1h, target: gone}
  gone: {terminal: true}
`
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	path := filepath.Join(dir, "s.jsonl")
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rt, err := runtime.Open(st, runtime.Config{Clock: clk,
		Trace:   runtime.Trace{Path: path, Header: trace.HeaderInfo{AppID: st.App.ID, SessionID: "s", StoryHash: st.ContentHash}},
		Session: &runtime.Session{ID: "s", Journal: true}})
	if err != nil {
		t.Fatal(err)
	}
	sess := rt.Session()
	if _, err := sess.Start(ctx); err != nil {
		t.Fatal(err)
	}
	live := [][]orchestrator.ArmedTimeout{sess.Timeouts()}
	for _, line := range []string{"poke", "go"} {
		clk.Advance(3 * time.Minute)
		if _, err := sess.Turn(ctx, line, nil, line); err != nil {
			t.Fatal(err)
		}
		live = append(live, sess.Timeouts())
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range live {
		if len(want) == 0 {
			t.Fatalf("turn %d armed no timeout", n)
		}
		rt, err := runtime.ReplayAt(ctx, st, runtime.Replay{ID: "s", Events: evs, UpTo: int64(n)})
		if err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
		if d := cmp.Diff(want, rt.Session().Timeouts()); d != "" {
			t.Errorf("turn %d: timeouts (-live +replayed):\n%s", n, d)
		}
		rt.Close()
	}
}
