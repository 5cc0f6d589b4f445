package orchestrator

import (
	"context"
	"errors"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// MaxHistory is how many rooms the history stack keeps; older ones drop off.
const MaxHistory = 64

// BackIntent is the intent name on the machine.transition a Back turn
// writes.
const BackIntent = "__back__"

// ErrNoHistory is Back's error when there is no room to go back to.
var ErrNoHistory = errors.New("there is no room to go back to: the history is empty (a transition with push_history: false leaves no room to return to)")

// History lists the rooms Back returns to, oldest first. Every transition
// to another state pushes the state it left, unless its arm says
// push_history: false; Back pops.
func (s *Session) History() []string { return append([]string(nil), s.history...) }

// push records the room a transition leaves.
func (s *Session) push(from string) {
	s.history = append(s.history, from)
	if len(s.history) > MaxHistory {
		s.history = s.history[len(s.history)-MaxHistory:]
	}
}

// Back takes a turn that returns to the last room in the history: a
// machine.transition with intent __back__ and the exits and entries of a
// transition, but no on_enter: the room is shown as it stands, not entered
// anew (an auto-advancing room would otherwise move straight on again).
// An empty history is ErrNoHistory, and nothing is traced.
func (s *Session) Back(ctx context.Context) (*Outcome, error) {
	if !s.started {
		return nil, errors.New("session not started: call Start first")
	}
	if len(s.history) == 0 {
		return nil, ErrNoHistory
	}
	to := s.history[len(s.history)-1]
	s.history = s.history[:len(s.history)-1]
	s.turn++
	t := s.newTurn(s.turn, BackIntent, nil)
	if err := s.emit(t, trace.TurnInput{Input: ":back", Intent: BackIntent}); err != nil {
		return nil, err
	}
	if err := s.emit(t, trace.TurnStart{Turn: t.n, Input: ":back", Direct: true}); err != nil {
		return nil, err
	}
	out, err := s.runTurn(ctx, t, func() error {
		if err := s.emit(t, trace.MachineTransition{From: s.state, To: to, Intent: BackIntent, Slots: t.slots}); err != nil {
			return err
		}
		return s.movePath(t, s.state, to)
	})
	if err != nil {
		return nil, err
	}
	return out, s.sink.EndTurn()
}

// movePath is enterPath without on_enter: the exits and entries are traced
// and the state set.
func (s *Session) movePath(t *turnCtx, from, to string) error {
	fromChain, toChain := pathChain(s, from), pathChain(s, to)
	common := 0
	for common < len(fromChain) && common < len(toChain) && fromChain[common] == toChain[common] {
		common++
	}
	for i := len(fromChain) - 1; i >= common; i-- {
		if err := s.emit(t, trace.MachineStateExited{State: fromChain[i]}); err != nil {
			return err
		}
	}
	for _, st := range toChain[common:] {
		if err := s.emit(t, trace.MachineStateEntered{State: st}); err != nil {
			return err
		}
	}
	s.state = to
	return nil
}
