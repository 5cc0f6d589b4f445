package orchestrator

import (
	"context"
	"maps"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// World keys the runtime writes into every story's world (Kitsoki's
// engine-seeded keys), besides the cost keys (cost.go).
const (
	// WorldSessionID is the session's id, set when the session starts
	// unless the world's seed (a flow's initial_world, kitsoki run
	// --world) gives one. Stories build per-session names from it
	// (Kitsoki's bugfix story: fix/<ticket>-<session_id>).
	WorldSessionID = "session_id"
	// WorldIDE is the editor link: {connected: bool}, projected at the
	// start of every turn from the run's IDE probe (WithIDEProbe).
	WorldIDE = "ide"
)

// IDEProbe reports whether the run has an editor a story can hand a
// native diff to and get a verdict back from (host.ide.open_diff in an
// editor, not on the terminal). It is asked once per turn.
type IDEProbe func(ctx context.Context) bool

// WithIDEProbe projects world.ide.connected from p at the start of every
// turn. Without a probe (flows, replays) the key keeps its seeded or
// default value: {connected: false}.
func WithIDEProbe(p IDEProbe) Option { return func(s *Session) { s.ideProbe = p } }

// seedRuntimeWorld writes the keys turn 0 projects: session_id when the
// seed gives none, and world.ide when the session has a probe. Each is a
// traced world.update, so a journal resumes with the same values and a
// trace shows where they came from.
func (s *Session) seedRuntimeWorld(ctx context.Context, t *turnCtx) error {
	if _, pinned := s.overrides[WorldSessionID]; !pinned && s.id != "" {
		if v, _ := s.world[WorldSessionID].(string); v == "" {
			s.setWorld(WorldSessionID, s.id)
			if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{WorldSessionID: s.id}}); err != nil {
				return err
			}
		}
	}
	return s.projectIDE(ctx, t)
}

// restoreSessionID fills session_id into a world restored from a journal
// that was written without it, as turn 0 would have. It is not traced: a
// later resume fills in the same id again.
func (s *Session) restoreSessionID() {
	if s.world == nil {
		return // a session restored without a world (a remote run's view)
	}
	if v, _ := s.world[WorldSessionID].(string); v == "" && s.id != "" {
		s.setWorld(WorldSessionID, s.id)
	}
}

// beginTurnWorld runs at the start of a user turn, after its turn.start:
// the editor link is projected, then a pending world override applies (so
// a fixture's world_override wins for its turn).
func (s *Session) beginTurnWorld(ctx context.Context, t *turnCtx) error {
	if err := s.projectIDE(ctx, t); err != nil {
		return err
	}
	return s.applyOverride(t)
}

// projectIDE sets world.ide.connected from the probe when the story reads
// world.ide (the loader declares it then) and the world's seed does not
// pin it; it is traced only when the value changes.
func (s *Session) projectIDE(ctx context.Context, t *turnCtx) error {
	if s.ideProbe == nil || !s.declares(WorldIDE) {
		return nil
	}
	if _, pinned := s.overrides[WorldIDE]; pinned {
		return nil
	}
	connected := s.ideProbe(ctx)
	cur, _ := s.world[WorldIDE].(map[string]any)
	if was, ok := cur["connected"].(bool); ok && was == connected {
		return nil
	}
	next := maps.Clone(cur)
	if next == nil {
		next = map[string]any{}
	}
	next["connected"] = connected
	s.setWorld(WorldIDE, next)
	return s.emit(t, trace.WorldUpdate{Set: map[string]any{WorldIDE: DeepCopy(next)}})
}

// declares reports whether the story's world: declares key.
func (s *Session) declares(key string) bool {
	for _, w := range s.story.World {
		if w.Name == key {
			return true
		}
	}
	return false
}
