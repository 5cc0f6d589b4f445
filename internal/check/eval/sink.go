package eval

import (
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// callSink is the trace sink of an eval run's hosts. Each eval call runs as
// its own turn, so the events of one call are the events of one turn; the
// runner takes them when the call is done to learn what the host saw
// (duration, substitution). Nothing is written to disk.
type callSink struct {
	clock clock.Clock

	mu     sync.Mutex
	events map[int64][]callEvent
}

// callEvent is one event as the host appended it: a typed payload for
// the kinds kitsoki writes, the map of a plugin's sub-event otherwise.
type callEvent struct {
	ev      plugin.Event
	payload trace.Payload // nil for a sub-event
}

func newCallSink(c clock.Clock) *callSink {
	return &callSink{clock: c, events: map[int64][]callEvent{}}
}

// Append keeps a copy of a sub-event under its turn.
func (s *callSink) Append(ev *plugin.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events[ev.Turn] = append(s.events[ev.Turn], callEvent{ev: *ev})
	return nil
}

// AppendPayload keeps a copy of the event and its typed payload.
func (s *callSink) AppendPayload(ev *plugin.Event, p trace.Payload) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := *ev
	e.Kind = p.Kind()
	s.events[ev.Turn] = append(s.events[ev.Turn], callEvent{ev: e, payload: p})
	return nil
}

// NextSeq is the number of events the turn has so far.
func (s *callSink) NextSeq(turn int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events[turn])
}

// Now reads the run's clock.
func (s *callSink) Now() time.Time { return s.clock.Now() }

// EndTurn is a turn boundary; an eval call's events stay in memory until
// the runner takes them.
func (s *callSink) EndTurn() error { return nil }

// take removes and returns the events of a turn.
func (s *callSink) take(turn int64) []callEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.events[turn]
	delete(s.events, turn)
	return evs
}
