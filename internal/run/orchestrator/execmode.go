package orchestrator

import (
	"fmt"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// Execution modes: how far a turn's emit_intent chain runs on its own.
const (
	// ModeOneShot (the default) runs every emit_intent chain to rest,
	// except in rooms with decider: human.
	ModeOneShot = "one_shot"
	// ModeStaged stops the chain at every decision gate (a room whose
	// shape offers the operator a forward choice, story.State.DecisionGate)
	// unless the room says decider: llm.
	ModeStaged = "staged"
)

// CheckExecMode reports whether mode names an execution mode ("" is the
// default, one_shot).
func CheckExecMode(mode string) error {
	switch mode {
	case "", ModeOneShot, ModeStaged:
		return nil
	}
	return fmt.Errorf("unknown execution mode %q: use %s or %s", mode, ModeOneShot, ModeStaged)
}

// WithExecMode sets the execution mode (CheckExecMode names the valid ones).
func WithExecMode(mode string) Option { return func(s *Session) { s.execMode = mode } }

// holds reports whether state st waits for the operator: the emit_intent
// chain stops there instead of firing what it captured.
func (s *Session) holds(st *story.State) bool {
	if st == nil {
		return false
	}
	switch st.Decider {
	case story.DeciderHuman:
		return true
	case story.DeciderLLM:
		return false
	}
	return s.execMode == ModeStaged && st.DecisionGate
}
