package orchestrator

import (
	"fmt"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// Kinds of the events a durable session writes for resuming
// (docs/tracing/trace-format.md, "Session journal"); their payloads are
// trace.Snapshot and trace.Decisions.
const (
	// KindSnapshot is the state, turn and world after a turn.
	KindSnapshot = trace.KindSnapshot
	// KindDecisions lists a turn's decisions in order, at its end: each
	// arm taken (the state it was chosen in, the intent, the arm's index
	// in its on: list, the target) and each call queued (the state, the
	// invoke's name and id:).
	KindDecisions = trace.KindDecisions
)

// DefaultSnapshotEvery is how many turns apart a journaling session writes
// snapshots (and after turn 0).
const DefaultSnapshotEvery = 64

// WithJournal makes the session write what a resume needs into its trace:
// a kitsoki.decisions event at the end of every turn, and a kitsoki.snapshot of
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
	if !s.knownState(state) {
		return fmt.Errorf("the journal's state %q is not in the story (states: %s)", state, joinSorted(s.story.States))
	}
	s.started = true
	s.state, s.turn = state, n
	s.world, s.worldLent = world, false
	s.restoreSessionID()
	return nil
}

// knownState reports whether state is a state of the story or a
// parallel configuration of it (one leaf per region).
func (s *Session) knownState(state string) bool {
	if _, ok := s.story.States[state]; ok {
		return true
	}
	return checkConfig(s.story, state) == nil
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
	if s.journal > 0 && len(t.decisions) > 0 {
		if err := s.emit(t, trace.Decisions{Decisions: t.decisions}); err != nil {
			return err
		}
	}
	done, exit := s.Done()
	if s.journal > 0 && (t.n%int64(s.journal) == 0 || done) {
		p := trace.Snapshot{State: s.state, Turn: t.n, World: s.lendWorld(), StoryHash: s.story.ContentHash, Done: done, Jobs: s.openJobs}
		if done {
			p.Exit = exit
		}
		if err := s.emit(t, p); err != nil {
			return err
		}
	}
	return s.sink.EndTurn()
}

// decide records an arm taken (journaling sessions only); it is written
// with the turn's other decisions at its end, so the seqs (and the call
// ids derived from them) of the turn's events are those of a session
// without a journal.
func (s *Session) decide(t *turnCtx, index int, intent, target string) {
	if s.journal > 0 {
		t.decisions = append(t.decisions, trace.ArmTaken(s.state, intent, index, target))
	}
}

// decideCall records a call queued (journaling sessions only).
func (s *Session) decideCall(t *turnCtx, inv *story.Invoke, name string) {
	if s.journal > 0 {
		t.decisions = append(t.decisions, trace.CallQueued(s.state, name, inv.ID))
	}
}
