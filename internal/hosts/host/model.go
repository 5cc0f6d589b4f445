package host

import (
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// resolveModel is the one place that decides which model an agent call runs
// on: the model handed to the transport in agent.Call.Model and recorded in
// the call's trace events. alias is the agent asked ("" = the built-in
// claude path, configured from the agent.claude declaration).
//
// By what the agent's declaration is:
//   - the claude CLI (the built-in path, builtin.claude_cli): the route's
//     model, else the provider's, else the persona's, else the
//     declaration's;
//   - builtin.local_llm with endpoint:: the route's model, else the
//     declaration's (a persona's model names a claude model, not one the
//     endpoint serves);
//   - builtin.local_llm managed: the declaration's, always: the sidecar
//     serves its one pinned model;
//   - builtin.anthropic and builtin.openai: the route's, else the
//     declaration's, else the backend's default model (the API needs one);
//   - builtin.codex_cli and builtin.copilot_cli: the route's, else the
//     declaration's ("": the CLI's default);
//   - anything else (plugins, in-process agents), whose wire carries no
//     model: the route's, else the persona's, else the declaration's.
//
// A persona's model names a claude model: only the claude CLI takes it.
//
// A call a profile took over (c.choice) is resolved on the profile's
// declaration: its model: (the profile's model, or a live :model, arrives
// as the route's).
func (h *Host) resolveModel(c *askCall, ac *agent.Call) string {
	var d agent.Declaration
	if h.registry != nil {
		d, _ = h.registry.Declaration(c.answeringAlias())
	}
	var provider string
	if ac.Provider != nil {
		provider = ac.Provider.Model
	}
	builtin := c.alias == "" && (c.choice == nil || c.choice.Alias == "")
	return modelFor(builtin, d, c.route, provider, ac.Persona)
}

// RouteModel is the model a call made as persona (nil for none) and routed
// by r runs on, by the rule the host applies to every call: for labels
// decided before any call is made (eval candidates).
func RouteModel(st *story.Story, r *Route, persona *agent.Persona) string {
	alias, provider := r.Alias, ""
	declAlias := alias
	if declAlias == "" {
		declAlias = agent.DefaultAlias
	}
	if p, ok := st.Providers[r.Provider]; ok && r.Provider != "" {
		provider = p.Model
	}
	return modelFor(alias == "", st.Plugins[declAlias], r, provider, persona)
}

// modelFor is resolveModel's rule on its inputs: builtin says the call
// takes the built-in claude path, d is the declaration of the agent asked
// (agent.claude's on the built-in path).
func modelFor(builtin bool, d agent.Declaration, r *Route, provider string, p *agent.Persona) string {
	kind := d.Plugin
	if builtin {
		kind = agent.PluginClaudeCLI
	}
	var route, persona string
	if r != nil {
		route = r.Model
	}
	if p != nil {
		persona = p.Model
	}
	switch {
	case kind == agent.PluginClaudeCLI:
		return firstOf(route, provider, persona, d.Model)
	case kind == agent.PluginLocalLLM && d.Endpoint == "":
		return d.Model
	case kind == agent.PluginLocalLLM:
		return firstOf(route, d.Model)
	case kind == agent.PluginAnthropic || kind == agent.PluginOpenAI:
		return firstOf(route, d.Model, agent.DefaultModel(kind))
	case kind == agent.PluginCodexCLI || kind == agent.PluginCopilotCLI:
		return firstOf(route, d.Model)
	default:
		return firstOf(route, persona, d.Model)
	}
}

func firstOf(models ...string) string {
	for _, m := range models {
		if m != "" {
			return m
		}
	}
	return ""
}
