package host

import "github.com/kitsoki/kitsoki/internal/agent"

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
//   - anything else (plugins, in-process agents), whose wire carries no
//     model: the route's, else the persona's, else the declaration's.
func (h *Host) resolveModel(alias string, ac *agent.Call, r *Route) string {
	declAlias := alias
	if declAlias == "" {
		declAlias = agent.DefaultAlias
	}
	var d agent.Declaration
	if h.registry != nil {
		d, _ = h.registry.Declaration(declAlias)
	}
	kind := d.Plugin
	if alias == "" {
		kind = agent.PluginClaudeCLI
	}
	var route, provider, persona string
	if r != nil {
		route = r.Model
	}
	if ac.Provider != nil {
		provider = ac.Provider.Model
	}
	if ac.Persona != nil {
		persona = ac.Persona.Model
	}
	switch {
	case kind == agent.PluginClaudeCLI:
		return firstOf(route, provider, persona, d.Model)
	case kind == agent.PluginLocalLLM && d.Endpoint == "":
		return d.Model
	case kind == agent.PluginLocalLLM:
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
