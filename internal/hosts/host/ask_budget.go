package host

import (
	"context"
	"errors"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/observe/usage"
	"github.com/kitsoki/kitsoki/plugin"
)

// stepBudget keeps the call's spending caps (the run's --max-cost, the
// answering profile's quota): before the call, a cap already reached
// stops the run; after it, the answer's cost (usage.FromMeta, or what a
// failed call says it cost) is charged; a cap reached inside the call (a
// tool loop that checked between requests) stops the run too. Stopping
// is a *agent.CostCapError returned as the chain's error, after a
// kitsoki.cost_cap line: no on_error handles it.
func (h *Host) stepBudget(ctx context.Context, c *askCall, next askFunc) (answer, error) {
	if err := c.ac.CheckCost(0); err != nil {
		return answer{}, h.stop(c, err)
	}
	a, err := next(ctx, c)
	if err != nil {
		return a, err
	}
	cost := 0.0
	switch {
	case a.resp != nil:
		cost = usage.FromMeta(a.resp.Meta).CostUSD
	case a.err != nil:
		cost = a.err.CostUSD
	}
	for _, b := range c.ac.Budgets {
		b.Charge(cost)
	}
	var cap *agent.CostCapError
	if a.err != nil && errors.As(a.err, &cap) {
		return a, h.stop(c, cap)
	}
	return a, nil
}

// stop records a reached cap in the trace and returns it.
func (h *Host) stop(c *askCall, err error) error {
	var cap *agent.CostCapError
	if !errors.As(err, &cap) {
		return err
	}
	p := trace.CostCapReached{Scope: cap.Scope, CapUSD: cap.Cap, MaxCalls: int64(cap.MaxCalls), SpentUSD: cap.Spent, Calls: int64(cap.Calls)}
	ev := plugin.Event{Turn: c.call.Turn, StatePath: c.call.State}
	if terr := c.call.SinkOr(h.sink).AppendPayload(&ev, p); terr != nil {
		return &TraceError{terr}
	}
	return cap
}
