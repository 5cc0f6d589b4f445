package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// TimeoutIntent is the intent a timeout transition is recorded under.
const TimeoutIntent = "__timeout__"

// timer is an armed timeout: the state that declared it and when it is
// due on the session's clock.
type timer struct {
	state string
	due   time.Time
}

// armTimer starts the timeout of a state just entered (again).
func (s *Session) armTimer(st *story.State) {
	if st.Timeout == nil {
		return
	}
	s.dropTimer(st.Name)
	s.timers = append(s.timers, timer{state: st.Name, due: s.clock.Now().Add(st.Timeout.After)})
}

func (s *Session) dropTimer(state string) {
	for i, tm := range s.timers {
		if tm.state == state {
			s.timers = append(s.timers[:i], s.timers[i+1:]...)
			return
		}
	}
}

// Tick fires the timeouts that are due on the session's clock, each as its
// own turn: the transition to the timeout's target, with the target's
// on_enter, calls and view. It returns the last such turn's outcome, or nil
// when no timeout was due. Turn calls it before taking the user's turn; a
// caller that moves the clock between turns (a flow's advance_clock) calls
// it after moving it.
func (s *Session) Tick(ctx context.Context) (*Outcome, error) {
	if !s.started {
		return nil, fmt.Errorf("session not started: call Start first")
	}
	var last *Outcome
	for n := 0; len(s.timers) > 0; n++ {
		tm, ok := s.dueTimer()
		if !ok {
			break
		}
		if n >= MaxEmitDepth {
			// Timeouts that keep expiring at once (each target's own
			// timeout already due) stop here; the next Tick goes on.
			break
		}
		s.dropTimer(tm.state)
		out, err := s.fire(ctx, tm)
		if err != nil {
			return nil, err
		}
		last = out
	}
	return last, nil
}

// NextTimeout is when the earliest armed timeout falls due on the
// session's clock (false when none is armed). A driver that waits between
// turns (the Temporal workflow) sleeps until then and calls Tick.
func (s *Session) NextTimeout() (time.Time, bool) {
	var best time.Time
	for i, tm := range s.timers {
		if i == 0 || tm.due.Before(best) {
			best = tm.due
		}
	}
	return best, len(s.timers) > 0
}

// ArmedTimeout is an armed state timeout: the state that declared it and
// when it falls due on the session's clock.
type ArmedTimeout struct {
	State string    `json:"state"`
	Due   time.Time `json:"due"`
}

// Timeouts returns the armed timeouts in arming order, for a driver that
// hands the session over (the Temporal workflow's continue-as-new).
func (s *Session) Timeouts() []ArmedTimeout {
	out := make([]ArmedTimeout, len(s.timers))
	for i, tm := range s.timers {
		out[i] = ArmedTimeout{State: tm.state, Due: tm.due}
	}
	return out
}

// RestoreTimeouts arms the timeouts a session handed over, after Restore;
// each must name a state of the story that declares a timeout.
func (s *Session) RestoreTimeouts(ts []ArmedTimeout) error {
	for _, t := range ts {
		st, ok := s.story.States[t.State]
		if !ok || st.Timeout == nil {
			return fmt.Errorf("the carried timeout of state %q: no such state with a timeout: in the story", t.State)
		}
	}
	s.timers = s.timers[:0]
	for _, t := range ts {
		s.timers = append(s.timers, timer{state: t.State, due: t.Due})
	}
	return nil
}

// dueTimer is the earliest due timer (declaration order breaks ties).
func (s *Session) dueTimer() (timer, bool) {
	now := s.clock.Now()
	best, found := timer{}, false
	for _, tm := range s.timers {
		if !tm.due.After(now) && (!found || tm.due.Before(best.due)) {
			best, found = tm, true
		}
	}
	return best, found
}

// fire takes the timeout turn of one state.
func (s *Session) fire(ctx context.Context, tm timer) (*Outcome, error) {
	st := s.story.States[tm.state]
	s.turn++
	t := s.newTurn(s.turn, TimeoutIntent, nil)
	input := "[timeout] " + tm.state + " after " + st.Timeout.After.String()
	if err := s.emit(t, trace.TurnInput{Input: input, Intent: TimeoutIntent}); err != nil {
		return nil, err
	}
	if err := s.emit(t, trace.TurnStart{Turn: t.n, Input: input, Direct: true}); err != nil {
		return nil, err
	}
	if err := s.projectIDE(ctx, t); err != nil {
		return nil, err
	}
	out, err := s.runTurn(ctx, t, func() error {
		to := st.Timeout.Target
		if err := s.emit(t, trace.MachineTimeout{State: tm.state, After: st.Timeout.After.String(), Target: to}); err != nil {
			return err
		}
		if err := s.emit(t, trace.MachineTransition{From: s.state, To: to, Intent: TimeoutIntent}); err != nil {
			return err
		}
		return s.transition(t, to)
	})
	if err != nil {
		return nil, err
	}
	return out, s.sink.EndTurn()
}

// pruneTimers drops the timers of states no longer active.
func (s *Session) pruneTimers() {
	if len(s.timers) == 0 {
		return
	}
	leaves := s.leaves()
	kept := s.timers[:0]
	for _, tm := range s.timers {
		for _, leaf := range leaves {
			if story.IsWithin(leaf, tm.state) {
				kept = append(kept, tm)
				break
			}
		}
	}
	s.timers = kept
}
