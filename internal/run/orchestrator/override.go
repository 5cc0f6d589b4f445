package orchestrator

import (
	"fmt"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// OverrideWorld sets world keys at the start of the next turn, after its
// turn.start and before its guards run (a flow fixture's world_override:).
// Each key is traced as its own world.update, so replay sees the same
// world. Values are checked against the declared types as initial values
// are (unless the session takes its world as given, WithWorldAsGiven);
// undeclared keys are left to the caller.
func (s *Session) OverrideWorld(kv map[string]any) error {
	if s.asGiven {
		s.nextOverride = kv
		return nil
	}
	if err := CheckWorld(s.story, kv); err != nil {
		return fmt.Errorf("world override: %w", err)
	}
	s.nextOverride = kv
	return nil
}

// applyOverride writes and traces the pending world override, if any.
func (s *Session) applyOverride(t *turnCtx) error {
	kv := s.nextOverride
	s.nextOverride = nil
	for _, k := range sortedKeys(kv) {
		v := DeepCopy(kv[k])
		s.setWorld(k, v)
		if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{k: v}}); err != nil {
			return err
		}
	}
	return nil
}
