package runtime

import (
	"context"
	"fmt"

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
	turns := session.Turns(evs)
	matched = -1
	if len(turns) == 0 || turns[0].Turn != 0 {
		return nil, matched, fmt.Errorf("the journal has no turn 0")
	}
	root, world := session.Seed(turns[0])
	if st.States[root] == nil {
		return &session.Divergence{Turn: 0, State: root, Journal: &session.Decision{State: root, Target: root}}, matched,
			fmt.Errorf("turn 0: the journal started in state %q, which the story no longer has", root)
	}
	rt, err := Open(st, Config{IgnorePins: true, Session: &Session{ID: id, World: world, Root: root, Journal: true,
		dispatch: func(orchestrator.Dispatcher) orchestrator.Dispatcher { return session.Replaying(turns) }}})
	if err != nil {
		return nil, matched, err
	}
	defer rt.Close()
	sess, mem := rt.Session(), rt.Memory()
	seen := 0
	for _, t := range turns {
		if !t.Finished() {
			break
		}
		state := sess.State()
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
			return nil, matched, fmt.Errorf("replaying turn %d: %w", t.Turn, err)
		}
		all := mem.Events()
		got := session.Decisions(all[seen:])
		seen = len(all)
		if d := session.Compare(t.Turn, state, session.Decisions(t.Events), got); d != nil {
			return d, matched, nil
		}
		matched = t.Turn
	}
	return nil, matched, nil
}
