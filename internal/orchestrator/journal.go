package orchestrator

import (
	"fmt"
	"maps"

	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// Kinds of the events a durable session writes for resuming
// (docs/tracing/trace-format.md, "Session journal").
const (
	// KindSnapshot is the state, turn and world after a turn.
	KindSnapshot = "kitsoki.snapshot"
	// KindDecision is an arm taken: the state it was chosen in, the
	// intent, the arm's index in its on: list and the target.
	KindDecision = "kitsoki.decision"
)

// DefaultSnapshotEvery is how many turns apart a journaling session writes
// snapshots (and after turn 0).
const DefaultSnapshotEvery = 64

// WithJournal makes the session write what a resume needs into its trace:
// a kitsoki.decision event for every arm taken, and a kitsoki.snapshot of
// state and world at the end of turn 0, of every every-th turn (0 is
// DefaultSnapshotEvery) and of a turn that reaches a terminal state.
func WithJournal(every int) Option {
	return func(s *Session) {
		if every <= 0 {
			every = DefaultSnapshotEvery
		}
		s.journal = every
	}
}

// Restore puts a new session where a journal left it: after turn n, in
// state, with world (which the session takes over). The session counts as
// started: the next Turn or Say is turn n+1. The story's on_enter does not
// run again.
func (s *Session) Restore(state string, world map[string]any, n int64) error {
	if s.started {
		return fmt.Errorf("session already started")
	}
	if _, ok := s.story.States[state]; !ok {
		return fmt.Errorf("the journal's state %q is not in the story (states: %s)", state, joinSorted(s.story.States))
	}
	s.started = true
	s.state, s.turn = state, n
	s.world = world
	return nil
}

// SetTurnNumber sets the number of the last turn taken, so the next turn
// is n+1 (a resume redoing an unfinished turn).
func (s *Session) SetTurnNumber(n int64) { s.turn = n }

func joinSorted[V any](m map[string]V) string {
	out := ""
	for i, k := range sortedKeys(m) {
		if i > 0 {
			out += ", "
		}
		out += k
	}
	return out
}

// endTurn closes a turn: its snapshot when one is due, then the sink's
// turn boundary.
func (s *Session) endTurn(t *turnCtx) error {
	done, exit := s.Done()
	if s.journal > 0 && (t.n%int64(s.journal) == 0 || done) {
		p := map[string]any{"state": s.state, "turn": t.n, "world": maps.Clone(s.world)}
		if done {
			p["done"] = true
			if exit != "" {
				p["exit"] = exit
			}
		}
		if h := s.story.ContentHash; h != "" {
			p["story_hash"] = h
		}
		if err := s.sink.Append(&plugin.Event{Turn: t.n, StatePath: s.state, Kind: KindSnapshot, Payload: p}); err != nil {
			return &host.TraceError{Err: err}
		}
	}
	return s.sink.EndTurn()
}

// decide records the arm taken (journaling sessions only).
func (s *Session) decide(t *turnCtx, index int, intent, target string) error {
	if s.journal == 0 {
		return nil
	}
	if err := s.sink.Append(&plugin.Event{Turn: t.n, StatePath: s.state, Kind: KindDecision,
		Payload: map[string]any{"state": s.state, "intent": intent, "arm": index, "target": target}}); err != nil {
		return &host.TraceError{Err: err}
	}
	return nil
}
