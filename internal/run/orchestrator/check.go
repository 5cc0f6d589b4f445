package orchestrator

import "fmt"

// Check reports the rejection a Turn with intent and slots would write,
// without taking the turn: the open overlay, an unknown or not allowed
// intent, bad or missing slots, and no arm whose guard holds. It changes
// nothing (no trace event, no world write, no turn number), so a caller can
// refuse an intent before anything is recorded (the Temporal update
// validator, internal/run/cluster). A guard that fails to evaluate is not a
// rejection: the turn itself records it as a fault, so Check returns nil.
// Timeouts due and background results are not looked at: Turn handles them
// before the intent. Call it after Start (or Restore).
func (s *Session) Check(intent string, slots map[string]any) *Rejection {
	t := s.newTurn(s.turn+1, intent, copySlots(slots))
	if s.over != nil {
		return &Rejection{Code: CodeOverlayOpen,
			Message: fmt.Sprintf("the story is paused while %s is open; type %s to return to it", s.over.def.Name, s.over.def.Exit)}
	}
	if rej := s.validate(t); rej != nil {
		return rej
	}
	_, rej, err := s.pickArm(t, intent, s.env(t))
	if err != nil {
		return nil
	}
	return rej
}
