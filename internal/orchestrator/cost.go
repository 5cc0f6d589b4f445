package orchestrator

import (
	"encoding/json"
	"strings"

	"github.com/kitsoki/kitsoki/internal/trace"
)

// agentCost is what one call's answer says it cost: meta.cost_usd of a
// host.agent.* result (else meta.total_cost_usd), 0 for other handlers.
func agentCost(handler string, data map[string]any) float64 {
	if !strings.HasPrefix(handler, "host.agent.") {
		return 0
	}
	meta, _ := data["meta"].(map[string]any)
	for _, k := range []string{"cost_usd", "total_cost_usd"} {
		if f, ok := costNumber(meta[k]); ok {
			return f
		}
	}
	return 0
}

func costNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, n > 0
	case int:
		return float64(n), n > 0
	case int64:
		return float64(n), n > 0
	case json.Number:
		f, err := n.Float64()
		return f, err == nil && f > 0
	}
	return 0, false
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
	s.world["turn_cost_usd"] = cost
	if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{"turn_cost_usd": cost}}); err != nil {
		return err
	}
	if cost == 0 {
		return nil
	}
	s.world["session_cost_usd"] = total + cost
	return s.emit(t, trace.WorldUpdate{Set: map[string]any{"session_cost_usd": total + cost}})
}
