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
func (h *Host) askAgent(ctx context.Context, c *askCall) (answer, error) {
	type outcome struct {
		resp *agent.AskResponse
		err  error
	}
	ch := make(chan outcome, 1)
	a, ac := c.agent, c.ac
	h.calls.do(func() {
		r, err := a.Ask(ctx, ac)
		ch <- outcome{r, err}
	})
	select {
	case o := <-ch:
		return answer{resp: o.resp, raw: o.err, answered: ac}, nil
	case <-ctx.Done():
		return answer{raw: ctx.Err(), answered: ac}, nil
	}
}
