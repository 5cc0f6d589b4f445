package host

import (
	"context"
	"maps"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// stepFallback retries a schema-invalid answer once on agent.claude when
// the agent that gave it is fallback-eligible (builtin.local_llm) and is
// not agent.claude or the built-in path itself. The retry is a call of its
// own (its own agent.Call, so its own model) through the rest of the
// chain; the answer records the substitution, and a successful one says
// in its meta which agent it stands in for (fallback_of).
func (h *Host) stepFallback(ctx context.Context, c *askCall, next askFunc) (answer, error) {
	a, err := next(ctx, c)
	if err != nil || a.err == nil || a.err.Kind != agent.KindSchemaInvalid || c.alias == "" || c.alias == agent.DefaultAlias {
		return a, err
	}
	if fe, ok := c.agent.(agent.FallbackEligible); !ok || !fe.FallbackEligible() {
		return a, nil
	}
	subst := &trace.Substitution{Reason: string(agent.KindSchemaInvalid), OriginalPlugin: c.alias, FallbackPlugin: agent.DefaultAlias}
	fc := *c
	fc.alias = agent.DefaultAlias
	fb, gerr := h.choose(&fc) // the default agent: a profile's, if one is chosen
	if fb == nil && gerr == nil {
		fb, gerr = h.registry.Get(agent.DefaultAlias)
	}
	fc.ac = h.newCall(&fc)
	if gerr != nil {
		return answer{err: agent.Errorf(agent.KindTransportError, "fallback to %s: %v", agent.DefaultAlias, gerr),
			answered: fc.ac, subst: subst}, nil
	}
	fc.agent = fb
	a, err = next(ctx, &fc)
	if err != nil {
		return a, err
	}
	a.subst = subst
	if a.err == nil && a.resp != nil {
		// The agent's response may be shared (a cassette replays the
		// same one): annotate a copy.
		r := *a.resp
		r.Meta = maps.Clone(a.resp.Meta)
		if r.Meta == nil {
			r.Meta = map[string]any{}
		}
		r.Meta["fallback_of"] = c.alias
		a.resp = &r
	}
	return a, nil
}
