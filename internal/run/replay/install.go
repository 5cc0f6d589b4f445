package replay

import (
	"maps"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// IsAgentHandler reports whether an episode handler names an agent alias
// (agent role) rather than an invoke name (host-handler role).
func IsAgentHandler(name string) bool { return strings.HasPrefix(name, "agent.") }

// ReplayAgents puts the cassette's agent role in place of every alias the
// story declares (and every agent.* handler its episodes name), so no
// declared agent is reached: a call with no matching episode is a cassette
// miss. In new_episodes mode a miss goes to the agent the registry resolved
// before, and the exchange is appended.
//
// It returns the agent for the built-in path (host.WithBuiltin): the
// cassette under agent.claude, with liveBuiltin answering its misses in
// new_episodes mode. In new_episodes mode without a liveBuiltin it returns
// nil: keep the host's live built-in agent, and the host.agent.* handlers
// ReplayHandlers installs replay and record the built-in path.
func (c *Cassette) ReplayAgents(st *story.Story, reg *agent.Registry, liveBuiltin agent.Agent) agent.Agent {
	aliases := map[string]bool{}
	for a := range st.Plugins {
		aliases[a] = true
	}
	for _, hd := range c.Handlers() {
		if IsAgentHandler(hd) {
			aliases[hd] = true
		}
	}
	record := c.Mode() == cassette.ModeNewEpisodes
	for _, alias := range slices.Sorted(maps.Keys(aliases)) {
		var live agent.Agent
		if record {
			if a, err := reg.Get(alias); err == nil {
				live = a
			}
		}
		reg.Register(alias, c.Agent(alias, live))
	}
	switch {
	case !record:
		return c.Agent(agent.DefaultAlias, nil)
	case liveBuiltin != nil:
		return c.Agent(agent.DefaultAlias, liveBuiltin)
	}
	return nil
}

// ReplayHandlers installs the cassette's host-handler role for every
// handler its episodes name that is not an agent alias, under the exact
// name and as a dotted prefix (an episode for host.git also serves
// host.git.open_pr, and also the ops a built-in registers one by one). Episodes with an agent: block write their agent
// events to sink, with call_ids from the cassette's app_id or appID.
//
// In new_episodes mode every host.agent.<verb> gets such a handler too, in
// front of the live one, so a built-in path call (an invoke with no agent:)
// that misses is answered live and appended as a host.agent.<verb>
// episode; calls to an alias are recorded by its agent role.
func (c *Cassette) ReplayHandlers(h *host.Host, sink host.Sink, appID string) {
	names := c.Handlers()
	if c.Mode() == cassette.ModeNewEpisodes {
		for _, verb := range agentVerbs {
			names = append(names, host.AgentNamespace+verb)
		}
	}
	seen := map[string]bool{}
	for _, name := range names {
		if IsAgentHandler(name) || seen[name] {
			continue
		}
		seen[name] = true
		// The episodes answer every op under name, also those a built-in
		// registers one by one (host.git_worktree.create), each with that
		// op's own handler as its live one.
		for _, op := range h.Under(name) {
			if seen[op] {
				continue
			}
			live, _ := h.Handler(op)
			h.Register(op, c.Handler(name, sink, appID, live))
		}
		live, _ := h.Handler(name)
		hd := c.Handler(name, sink, appID, live)
		h.Register(name, hd)
		h.RegisterPrefix(name, hd)
	}
}
