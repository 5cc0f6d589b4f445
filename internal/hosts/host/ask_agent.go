package host

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// askAgent is the end of the chain: it asks the agent and waits for its
// answer or for ctx to end, whichever comes first. The outcome goes up
// unjudged (answer.raw is the agent's error, or ctx's when the agent was
// abandoned); stepDeadline judges it.
//
// A call the agent says it answers without blocking (agent.Inline) runs on
// the caller's goroutine: nothing can stall it, so there is nothing to
// abandon. Every other call runs on a worker goroutine, and an agent
// still busy when ctx ends is abandoned: its late answer is dropped when
// it arrives, so an agent that ignores its context cannot stall the run.
//
// The reply channel of an answered worker call is kept for the next call
// (its one send has been received, so nothing writes to it any more); an
// abandoned call's is left to its worker's late send.
func (h *Host) askAgent(ctx context.Context, c *askCall) (answer, error) {
	a, ac := c.agent, c.ac
	if inline(c) {
		return h.askInline(ctx, c), nil
	}
	ch, _ := h.outcomes.Get().(chan askOutcome)
	if ch == nil {
		ch = make(chan askOutcome, 1)
	}
	h.calls.do(func() {
		r, err := h.callAgent(ctx, a, ac)
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

// inline reports whether c's agent answers it without blocking.
func inline(c *askCall) bool {
	in, ok := c.agent.(agent.Inline)
	return ok && in.AnswersInline(c.ac)
}

// askInline asks an inline call on the caller's goroutine. A context that
// ended while the agent answered is judged as the worker path judges it:
// the wait would have stopped then, so the answer (or error) is dropped
// and ctx's error goes up in its place.
func (h *Host) askInline(ctx context.Context, c *askCall) answer {
	r, err := h.callAgent(ctx, c.agent, c.ac)
	if cerr := ctx.Err(); cerr != nil {
		return answer{raw: cerr, answered: c.ac}
	}
	return answer{resp: r, raw: err, answered: c.ac}
}

// callAgent is a.Ask with a panic turned into the call's failure
// (plugin_crash, the panic's value as detail; the stack is logged): an
// agent that panics fails its call, on a worker or inline, and the run
// goes on.
func (h *Host) callAgent(ctx context.Context, a agent.Agent, ac *agent.Call) (resp *agent.AskResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			detail := h.mask.Text(fmt.Sprint(p))
			h.logger.Error("agent panicked", "agent", ac.Alias, "panic", detail, "stack", string(debug.Stack()))
			resp, err = nil, &agent.AskError{Kind: agent.KindPluginCrash, Detail: "agent panicked: " + detail}
		}
	}()
	return a.Ask(ctx, ac)
}

// askOutcome is what an agent call's worker sends back.
type askOutcome struct {
	resp *agent.AskResponse
	err  error
}
