package host

import (
	"context"

	"github.com/kitsoki/kitsoki/internal/agent"
)

// askAgent is the end of the chain: it asks the agent on a worker
// goroutine and waits for its answer or for ctx to end, whichever comes
// first. An agent still busy when ctx ends is abandoned: its late answer is
// dropped when it arrives, so an agent that ignores its context cannot
// stall the run. The outcome goes up unjudged (answer.raw is the agent's
// error, or ctx's when the agent was abandoned); stepDeadline judges it.
//
// The reply channel of an answered call is kept for the next call (its
// one send has been received, so nothing writes to it any more); an
// abandoned call's is left to its worker's late send.
func (h *Host) askAgent(ctx context.Context, c *askCall) (answer, error) {
	ch, _ := h.outcomes.Get().(chan askOutcome)
	if ch == nil {
		ch = make(chan askOutcome, 1)
	}
	a, ac := c.agent, c.ac
	h.calls.do(func() {
		r, err := a.Ask(ctx, ac)
		ch <- askOutcome{r, err}
	})
	select {
	case o := <-ch:
		h.outcomes.Put(ch)
		return answer{resp: o.resp, raw: o.err, answered: ac}, nil
	case <-ctx.Done():
		return answer{raw: ctx.Err(), answered: ac}, nil
	}
}

// askOutcome is what an agent call's worker sends back.
type askOutcome struct {
	resp *agent.AskResponse
	err  error
}
