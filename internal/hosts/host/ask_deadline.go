package host

import (
	"context"
	"errors"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// stepDeadline runs the rest of the call under its hard deadline, measured
// on the host's clock, and judges the agent's own outcome (answer.raw)
// against it:
//   - an answer that arrives once the deadline has passed is late:
//     deadline_exceeded, and the answer is discarded;
//   - an AskError is the agent's verdict and stands as it is;
//   - any other error is deadline_exceeded when the deadline (or the
//     caller's cancellation) had ended the call, else plugin_crash;
//   - no response and no error is plugin_crash.
//
// A failed call keeps no response.
//
// An inline call (agent.Inline) gets a clock.Lazy: the same deadline, read
// the same way, with no timer started unless the agent waits on Done.
func (h *Host) stepDeadline(ctx context.Context, c *askCall, next askFunc) (answer, error) {
	var cctx context.Context
	if inline(c) {
		l := clock.LazyTimeout(ctx, h.clock, c.timeout)
		defer l.Stop()
		cctx = l
	} else {
		tctx, cancel := clock.WithTimeout(ctx, h.clock, c.timeout)
		defer cancel()
		cctx = tctx
	}
	a, err := next(cctx, c)
	if err != nil {
		return a, err
	}
	raw := a.raw
	a.raw = nil
	switch {
	case raw == nil && cctx.Err() != nil:
		a.err = deadlineError(ctx, c.timeout)
	case raw == nil && a.resp == nil:
		a.err = agent.Errorf(agent.KindPluginCrash, "agent returned no response and no error")
	case raw == nil:
		return a, nil
	default:
		if ae, ok := agent.AsAskError(raw); ok {
			a.err = ae
		} else if cctx.Err() != nil {
			a.err = deadlineError(ctx, c.timeout)
		} else {
			a.err = &agent.AskError{Kind: agent.KindPluginCrash, Detail: raw.Error(), Err: raw}
		}
	}
	a.resp = nil
	return a, nil
}

// deadlineError is the failure of a call ended by its hard deadline, or by
// the cancellation of parent (the run's context).
func deadlineError(parent context.Context, timeout time.Duration) *agent.AskError {
	if err := parent.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return agent.Errorf(agent.KindDeadlineExceeded, "call cancelled: %w", err)
	}
	return agent.Errorf(agent.KindDeadlineExceeded, "no answer within the hard deadline of %s; a late answer is discarded", timeout)
}
