package orchestrator

import (
	"context"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// Seed starts the session the way a flow fixture does
// (cassettes-and-flows.md §5), instead of Start: turn 0 records the seed
// transition into the root state (WithRoot) and one world.update per
// WithWorld value, and the root state becomes current WITHOUT running its
// on_enter, so a fixture can begin in the middle of a story.
func (s *Session) Seed() error { return s.SeedContext(context.Background()) }

// SeedContext is Seed with the context the runtime-provided world keys are
// read with (WithIDEProbe).
func (s *Session) SeedContext(ctx context.Context) error {
	if s.started {
		return fmt.Errorf("session already started")
	}
	s.started = true
	t := s.newTurn(0, trace.SeedIntent, nil)
	if err := s.emit(t, trace.MachineTransition{From: "", To: s.root, Intent: trace.SeedIntent}); err != nil {
		return err
	}
	for _, k := range sortedKeys(s.overrides) {
		if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{k: s.overrides[k]}}); err != nil {
			return err
		}
	}
	if err := s.seedRuntimeWorld(ctx, t); err != nil {
		return err
	}
	s.state = s.root
	for _, st := range s.scopes() {
		s.armTimer(st)
	}
	if !s.inParallel() {
		// A compound or parallel state seeds at its initial leaves, with no
		// on_enter run, like the state itself.
		leaf, err := s.descend(t, s.root, false)
		if err != nil {
			return err
		}
		s.setConfig(leaf)
	}
	return s.sink.EndTurn()
}
