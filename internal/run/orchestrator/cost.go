package orchestrator

import (
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/number"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/observe/usage"
)

// agentCost is what one call's answer says it cost: the cost
// usage.FromMeta reads from the meta of a host.agent.* result when it is
// positive, 0 otherwise and for other handlers.
func agentCost(handler string, data map[string]any) float64 {
	if !strings.HasPrefix(handler, "host.agent.") {
		return 0
	}
	meta, _ := data["meta"].(map[string]any)
	if u := usage.FromMeta(meta); u.CostUSD > 0 {
		return u.CostUSD
	}
	return 0
}

// costNumber is a positive world cost; any other value is 0.
func costNumber(v any) (float64, bool) {
	f, ok := number.Float(v)
	return f, ok && f > 0
}

// foldCost writes a dispatch batch's agent spend into the engine-kept
// world keys (Kitsoki's): turn_cost_usd is the batch's cost (back to 0
// after a batch without agent spend), session_cost_usd the running total.
// Nothing is written when both would stay as they are.
func (s *Session) foldCost(t *turnCtx) error {
	cost := t.batchCost
	t.batchCost = 0
	prev, _ := costNumber(s.world["turn_cost_usd"])
	if cost == 0 && prev == 0 {
		return nil
	}
	total, _ := costNumber(s.world["session_cost_usd"])
	s.setWorld("turn_cost_usd", cost)
	if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{"turn_cost_usd": cost}}); err != nil {
		return err
	}
	if cost == 0 {
		return nil
	}
	s.setWorld("session_cost_usd", total+cost)
	return s.emit(t, trace.WorldUpdate{Set: map[string]any{"session_cost_usd": total + cost}})
}
