package orchestrator

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// A story that builds names from world.session_id and branches on
// world.ide.connected, as Kitsoki's bugfix and prd stories do.
const runtimeWorldStory = `
app: {id: rw}
world:
  branch: {type: string, default: ""}
  surface: {type: string, default: ""}
intents:
  go: {}
root: idle
states:
  idle:
    on_enter:
      - set: {branch: "fix/T-1-{{ world.session_id }}"}
    on:
      go:
        - when: "world.ide.connected"
          target: idle
          effects: [{set: {surface: editor}}]
        - target: idle
          effects: [{set: {surface: terminal}}]
`

func newRuntimeWorldSession(t *testing.T, opts ...Option) (*Session, *trace.MemSink) {
	t.Helper()
	st, err := story.Load(writeStory(t, files{"app.yaml": runtimeWorldStory}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sink := trace.NewMemSink(trace.WithClock(clock.System{}))
	s, err := New(st, nil, sink, append([]Option{WithSessionID("sess-7")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s, sink
}

// worldUpdates lists the world.update payloads the trace holds for key.
func worldUpdates(t *testing.T, sink *trace.MemSink, key string) []any {
	t.Helper()
	var out []any
	for _, ev := range sink.Events() {
		if ev.Kind != trace.KindWorldUpdate {
			continue
		}
		var p trace.WorldUpdate
		if err := trace.Decode(&ev, &p); err != nil {
			t.Fatal(err)
		}
		if v, ok := p.Set[key]; ok {
			out = append(out, v)
		}
	}
	return out
}

// world.session_id is the session's id from turn 0 on (traced as a
// world.update of turn 0), unless the world's seed gives one; a session
// restored from a journal written without it gets it back.
func TestSessionIDInTheWorld(t *testing.T) {
	ctx := context.Background()
	t.Run("projected", func(t *testing.T) {
		s, sink := newRuntimeWorldSession(t)
		if _, err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if got := s.World()["branch"]; got != "fix/T-1-sess-7" {
			t.Errorf("branch = %v, want fix/T-1-sess-7", got)
		}
		if diff := cmp.Diff([]any{"sess-7"}, worldUpdates(t, sink, "session_id")); diff != "" {
			t.Errorf("traced session_id (-want +got):\n%s", diff)
		}
		var turn0 bool
		for _, ev := range sink.Events() {
			if ev.Kind == trace.KindWorldUpdate && ev.Turn == 0 {
				turn0 = true
			}
		}
		if !turn0 {
			t.Error("session_id is not traced in turn 0")
		}
	})
	t.Run("seed wins", func(t *testing.T) {
		s, _ := newRuntimeWorldSession(t, WithWorld(map[string]any{"session_id": "flowsess"}))
		if _, err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if got := s.World()["branch"]; got != "fix/T-1-flowsess" {
			t.Errorf("branch = %v, want fix/T-1-flowsess", got)
		}
	})
	t.Run("flow seed", func(t *testing.T) {
		s, sink := newRuntimeWorldSession(t)
		if err := s.SeedContext(ctx); err != nil {
			t.Fatal(err)
		}
		if got := s.World()["session_id"]; got != "sess-7" {
			t.Errorf("session_id after Seed = %v", got)
		}
		if diff := cmp.Diff([]any{"sess-7"}, worldUpdates(t, sink, "session_id")); diff != "" {
			t.Errorf("traced session_id (-want +got):\n%s", diff)
		}
	})
	t.Run("restored", func(t *testing.T) {
		s, _ := newRuntimeWorldSession(t)
		if err := s.Restore("idle", map[string]any{"branch": "x"}, 3); err != nil {
			t.Fatal(err)
		}
		if got := s.World()["session_id"]; got != "sess-7" {
			t.Errorf("session_id after Restore = %v", got)
		}
	})
	t.Run("declared string", func(t *testing.T) {
		s, _ := newRuntimeWorldSession(t)
		var w *story.WorldVar
		for _, v := range s.Story().World {
			if v.Name == "session_id" {
				w = v
			}
		}
		if w == nil || w.Type != "string" {
			t.Fatalf("session_id is not declared a string: %+v", w)
		}
	})
}

// world.ide.connected follows the IDE probe at the start of every turn,
// traced when it changes; without a probe it stays false; a seed pins it.
func TestIDEConnectedInTheWorld(t *testing.T) {
	ctx := context.Background()
	connected := false
	probe := WithIDEProbe(func(context.Context) bool { return connected })
	s, sink := newRuntimeWorldSession(t, probe)
	if _, err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var surfaces []any
	for _, c := range []bool{false, true, true, false} {
		connected = c
		if _, err := s.Turn(ctx, "go", nil, ""); err != nil {
			t.Fatal(err)
		}
		surfaces = append(surfaces, s.World()["surface"])
	}
	if diff := cmp.Diff([]any{"terminal", "editor", "editor", "terminal"}, surfaces); diff != "" {
		t.Errorf("surfaces (-want +got):\n%s", diff)
	}
	on, off := map[string]any{"connected": true}, map[string]any{"connected": false}
	// Turn 0 and turn 1 keep the default (connected: false): untraced.
	if diff := cmp.Diff([]any{on, off}, worldUpdates(t, sink, "ide")); diff != "" {
		t.Errorf("traced world.ide (-want +got):\n%s", diff)
	}

	t.Run("no probe", func(t *testing.T) {
		s, _ := newRuntimeWorldSession(t)
		if _, err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Turn(ctx, "go", nil, ""); err != nil {
			t.Fatal(err)
		}
		if got := s.World()["surface"]; got != "terminal" {
			t.Errorf("surface = %v, want terminal", got)
		}
	})
	t.Run("seed pins it", func(t *testing.T) {
		connected = false
		s, _ := newRuntimeWorldSession(t, probe, WithWorld(map[string]any{"ide": map[string]any{"connected": true}}))
		if _, err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Turn(ctx, "go", nil, ""); err != nil {
			t.Fatal(err)
		}
		if got := s.World()["surface"]; got != "editor" {
			t.Errorf("surface = %v, want editor (the seed's ide.connected)", got)
		}
	})
}
