package host

import (
	"fmt"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// Choice is where the calls of the default agent go (invokes with no
// agent:, and those naming agent.claude, the router's included): a
// .kitsoki.yaml profile's agent, model and effort. The zero Choice is the
// story's own default agent.
type Choice struct {
	// Profile is the profile's name, recorded in agent.call.start; ""
	// when only a model or an effort was switched.
	Profile string
	// Alias is the registry alias of the profile's agent; "" keeps the
	// story's default agent (the claude CLI), as a claude profile does.
	Alias string
	// Model and Effort, when set, win over the declaration's and the
	// persona's.
	Model, Effort string
	// Provider is a claude profile's environment, handed to the claude
	// CLI as a providers: entry is.
	Provider *agent.Provider
	// Quota is the profile's spending cap (quota:), counted over the
	// calls the profile answers; Where names the profile in its message.
	Quota *agent.Quota
	Where string
}

// IsZero reports whether c changes nothing.
func (c Choice) IsZero() bool {
	return c.Profile == "" && c.Alias == "" && c.Model == "" && c.Effort == "" && c.Provider == nil && c.Quota == nil
}

// Selection is a session's choice of its default agent: the current one
// (--profile or --agent, the story's or the project's default profile, a
// live switch) and the profiles .kitsoki.yaml names per persona. An
// explicit choice (a flag or a switch) applies to every call of the
// default agent; otherwise a persona's own profile wins over the current
// one. It is safe for concurrent use: a switch takes effect from the next
// call on.
type Selection struct {
	mu       sync.RWMutex
	current  Choice
	explicit bool
	persona  map[string]Choice
}

// NewSelection returns a selection starting at current; explicit says it
// was chosen for this run (a flag), so personas' profiles do not apply.
func NewSelection(current Choice, explicit bool, persona map[string]Choice) *Selection {
	return &Selection{current: current, explicit: explicit, persona: persona}
}

// Current is the current choice.
func (s *Selection) Current() Choice {
	if s == nil {
		return Choice{}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.current
}

// Set makes c the current choice for every call of the default agent and
// returns the one it replaces.
func (s *Selection) Set(c Choice) (previous Choice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	previous, s.current, s.explicit = s.current, c, true
	return previous
}

// For is the choice of a call made as persona ("" for none) to the
// default agent (defaultAgent) or to another builtin agent; ok is false
// when the call keeps its agent. A configured choice takes the default
// agent's calls only; an explicit one (a flag, a switch) every builtin
// agent's.
func (s *Selection) For(persona string, defaultAgent bool) (Choice, bool) {
	if s == nil {
		return Choice{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !defaultAgent && !s.explicit {
		return Choice{}, false
	}
	if !s.explicit && persona != "" {
		if c, ok := s.persona[persona]; ok {
			return c, true
		}
	}
	return s.current, !s.current.IsZero()
}

// WithSelection installs the session's choice of its default agent.
func WithSelection(s *Selection) Option { return func(h *Host) { h.selection = s } }

// WithBudget installs the run's spending cap (--max-cost): every agent
// call is checked against it and charged to it.
func WithBudget(b *agent.Budget) Option { return func(h *Host) { h.budget = b } }

// usesDefault reports whether an invoke of alias ("" the built-in path)
// goes to the default agent a selection replaces.
func usesDefault(alias string) bool { return alias == "" || alias == agent.DefaultAlias }

// replaceable reports whether an explicit choice may take the calls of
// alias: a builtin agent (the claude CLI, a local model, an in-process
// stand-in, an API backend, an agent CLI), not a program of the story's
// own (subprocess, mcp_http), whose contract is its own.
func (h *Host) replaceable(alias string) bool {
	if h.registry == nil {
		return false
	}
	d, ok := h.registry.Declaration(alias)
	return ok && strings.HasPrefix(d.Plugin, "builtin.")
}

// choose applies the selection to a call: its choice, and the agent that
// answers it (nil: the call's own). A call a pin or an eval routes keeps
// its route.
func (h *Host) choose(c *askCall) (agent.Agent, error) {
	if c.route != nil || h.selection == nil {
		return nil, nil
	}
	def := usesDefault(c.alias)
	if !def && !h.replaceable(c.alias) {
		return nil, nil
	}
	persona := ""
	if c.persona != nil {
		persona = c.persona.Name
	}
	ch, ok := h.selection.For(persona, def)
	if !ok || ch.Alias == c.alias {
		return nil, nil
	}
	c.choice = &ch
	c.route = &Route{Profile: ch.Profile, Alias: c.alias, Model: ch.Model, Effort: ch.Effort}
	if ch.Alias == "" {
		return nil, nil
	}
	a, err := h.registry.Get(ch.Alias)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", ch.Profile, err)
	}
	return a, nil
}

// answeringAlias is the registry alias whose declaration describes the
// agent that answers c: the chosen profile's, else the call's own
// (agent.claude on the built-in path).
func (c *askCall) answeringAlias() string {
	if c.choice != nil && c.choice.Alias != "" {
		return c.choice.Alias
	}
	if c.alias == "" {
		return agent.DefaultAlias
	}
	return c.alias
}

// budgets are the caps a call counts against: the run's, and the quota of
// the agent that answers it (a profile's quota:).
func (h *Host) budgets(c *askCall) []*agent.Budget {
	var out []*agent.Budget
	if h.budget != nil {
		out = append(out, h.budget)
	}
	key, where, q := "", "", (*agent.Quota)(nil)
	switch {
	case c.choice != nil && c.choice.Quota != nil:
		key, where, q = "choice:"+c.choice.Profile, c.choice.Where, c.choice.Quota
	case h.registry != nil:
		alias := c.answeringAlias()
		if d, ok := h.registry.Declaration(alias); ok && d.Quota != nil {
			key, where, q = alias, d.Where(), d.Quota
		}
	}
	if q == nil {
		return out
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.quotas[key]
	if !ok {
		b = agent.NewBudget(where+" quota", "raise quota: under "+where, q.MaxCostUSD, q.MaxCalls)
		if h.quotas == nil {
			h.quotas = map[string]*agent.Budget{}
		}
		h.quotas[key] = b
	}
	return append(out, b)
}
