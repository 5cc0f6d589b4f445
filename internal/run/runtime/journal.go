package runtime

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// CheckJournal is the nondeterminism check of a resume whose story
// changed: it replays the finished turns of a session's journal (evs, as
// read) against st, in memory, with every call answered from the journal,
// and compares each turn's decisions (arms taken, calls queued) with the
// journal's. It returns the first difference, nil when every turn
// matches; matched is the last turn that matched (-1: not even turn 0).
func CheckJournal(ctx context.Context, st *story.Story, id string, evs []trace.Event) (div *session.Divergence, matched int64, err error) {
	rt, div, matched, err := replayJournal(ctx, st, Replay{ID: id, Events: evs, UpTo: math.MaxInt64})
	if rt != nil {
		rt.Close()
	}
	return div, matched, err
}

// Replay is what ReplayAt replays: a session's trace (a local journal's
// events, or a cluster session's trace, which has the same events) up to
// and including turn UpTo.
type Replay struct {
	ID      string
	Events  []trace.Event
	UpTo    int64
	Routing orchestrator.RoutingConfig
	// From, when set, is where a trace that does not start at turn 0
	// stands before its first turn it replays (a cluster fork's trace
	// starts at the fork); nil replays from turn 0.
	From *Seed
}

// Seed is where a replay starts when its trace does not hold turn 0:
// Restore brings the freshly opened session to the end of turn Turn (its
// state, world, timeouts, room history), and the trace's turns after Turn
// are replayed on it.
type Seed struct {
	Turn    int64
	Restore func(*orchestrator.Session) error
}

// ReplayAt replays the finished turns 0 to r.UpTo of a trace against st,
// in memory, every call answered from the trace (as CheckJournal does),
// and returns the runtime whose session stands where turn r.UpTo left it:
// its state, world, turn, armed timeouts (due as the trace's clock armed
// them) and room history. A turn whose decisions differ from the trace's,
// or a trace with no finished turn r.UpTo, is an error. The caller closes
// the runtime.
func ReplayAt(ctx context.Context, st *story.Story, r Replay) (*Runtime, error) {
	rt, div, matched, err := replayJournal(ctx, st, r)
	switch {
	case err != nil:
	case div != nil:
		err = fmt.Errorf("replaying the trace: %w", div)
	case matched < r.UpTo:
		err = fmt.Errorf("turn %d is not a finished turn of the trace (the last is %d)", r.UpTo, matched)
	}
	if err != nil {
		if rt != nil {
			rt.Close()
		}
		return nil, err
	}
	return rt, nil
}

// traceClock is the replay's time: the time the trace says the turn being
// replayed began, so timeouts arm as they armed then.
type traceClock struct{ now *time.Time }

func (c traceClock) Now() time.Time { return *c.now }

// replayJournal replays r's finished turns up to r.UpTo, comparing each
// turn's decisions with the trace's, and returns the runtime it replayed
// in (nil when it could not open one), the first difference and the last
// turn that matched.
func replayJournal(ctx context.Context, st *story.Story, r Replay) (rt *Runtime, div *session.Divergence, matched int64, err error) {
	turns := session.Turns(r.Events)
	matched = -1
	root, world, div, err := replayStart(st, turns, r.From)
	if err != nil {
		return nil, div, matched, err
	}
	var now time.Time
	if len(turns) > 0 {
		now = turnStart(turns[0])
	}
	rt, err = Open(st, Config{IgnorePins: true, Clock: traceClock{now: &now}, Session: &Session{ID: r.ID, World: world, Root: root, Journal: true,
		Routing:  r.Routing,
		dispatch: func(orchestrator.Dispatcher) orchestrator.Dispatcher { return session.Replaying(turns) }}})
	if err != nil {
		return nil, nil, matched, err
	}
	if r.From != nil {
		if err := r.From.Restore(rt.Session()); err != nil {
			return rt, nil, matched, fmt.Errorf("restoring the session at turn %d: %w", r.From.Turn, err)
		}
		matched = r.From.Turn
	}
	sess, mem := rt.Session(), rt.Memory()
	seen := 0
	for _, t := range turns {
		if r.From != nil && t.Turn <= r.From.Turn {
			continue // the seed stands after it
		}
		if t.Turn > r.UpTo || !t.Finished() {
			break
		}
		state := sess.State()
		now = turnStart(t)
		if t.Turn == 0 {
			_, err = sess.Start(ctx)
		} else {
			in, ok := t.Input()
			if !ok {
				break
			}
			_, err = session.Take(ctx, sess, t.Turn, in)
		}
		if err != nil {
			return rt, nil, matched, fmt.Errorf("replaying turn %d: %w", t.Turn, err)
		}
		all := mem.Events()
		got := session.Decisions(all[seen:])
		seen = len(all)
		if d := session.Compare(t.Turn, state, session.Decisions(t.Events), got); d != nil {
			return rt, d, matched, nil
		}
		matched = t.Turn
	}
	return rt, nil, matched, nil
}

// replayStart is the state and world a replay opens its session with:
// turn 0's, or (a seeded replay) the story's own, which the seed then
// restores over.
func replayStart(st *story.Story, turns []session.TurnEvents, from *Seed) (root string, world map[string]any, div *session.Divergence, err error) {
	if from != nil {
		return "", nil, nil, nil
	}
	if len(turns) == 0 || turns[0].Turn != 0 {
		return "", nil, nil, fmt.Errorf("the journal has no turn 0")
	}
	root, world = session.Seed(turns[0])
	if st.States[root] == nil {
		return "", nil, &session.Divergence{Turn: 0, State: root, Journal: &session.Decision{State: root, Target: root}},
			fmt.Errorf("turn 0: the journal started in state %q, which the story no longer has", root)
	}
	return root, world, nil, nil
}

// turnStart is the time of a turn's first event that has one (the zero
// time when none has).
func turnStart(t session.TurnEvents) time.Time {
	for i := range t.Events {
		if ts, err := time.Parse(time.RFC3339Nano, t.Events[i].TS); err == nil {
			return ts.UTC()
		}
	}
	return time.Time{}
}
