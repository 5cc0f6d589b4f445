package cluster

import (
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// awaitFiringTimeouts waits for cond like workflow.Await, and while it
// waits fires the session's state timeouts on workflow timers: when the
// earliest armed timeout (orchestrator.Session.NextTimeout, on the
// workflow clock) falls due, take runs the session's Tick as a turn of
// its own, once no other turn runs — the timeout turn a local run takes.
// A timeout that falls due while an update's turn runs is taken by that
// turn (Turn ticks first), as locally.
func awaitFiringTimeouts(ctx workflow.Context, sess *orchestrator.Session, cond func() bool, take func() error) error {
	for {
		due, armed := sess.NextTimeout()
		if !armed {
			return workflow.Await(ctx, cond)
		}
		if cond() {
			return nil
		}
		if wait := due.Sub(workflow.Now(ctx)); wait > 0 {
			met, err := workflow.AwaitWithTimeout(ctx, wait, cond)
			if err != nil || met {
				return err
			}
			continue // the timer fired: the loop finds the timeout due
		}
		if err := take(); err != nil {
			return err
		}
	}
}

// restore puts a continued session where its previous run left it:
// armed timeouts, room history and overlays included.
func restore(sess *orchestrator.Session, c *Snapshot) error {
	if err := sess.Restore(c.State, c.World.Map(), c.Turn); err != nil {
		return err
	}
	if err := sess.RestoreTimeouts(c.Timeouts); err != nil {
		return err
	}
	return sess.RestoreHandover(c.Handover)
}
