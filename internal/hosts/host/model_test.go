package host

import (
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// TestResolveModel: the one rule for which model a call runs on, by the
// kind of agent asked and the sources the call has.
func TestResolveModel(t *testing.T) {
	reg := agent.NewRegistry(nil)
	reg.Configure(map[string]agent.Declaration{
		agent.DefaultAlias: {Plugin: agent.PluginClaudeCLI, Model: "claude-decl"},
		"agent.cli":        {Plugin: agent.PluginClaudeCLI, Model: "cli-decl"},
		"agent.endpoint":   {Plugin: agent.PluginLocalLLM, Endpoint: "http://127.0.0.1:1", Model: "endpoint-decl"},
		"agent.bare":       {Plugin: agent.PluginLocalLLM, Endpoint: "http://127.0.0.1:1"},
		"agent.managed":    {Plugin: agent.PluginLocalLLM, Model: "pinned"},
		"agent.plugin":     {Plugin: agent.PluginSubprocess, Model: "plugin-decl"},
	})
	h := &Host{registry: reg}
	persona := &agent.Persona{Name: "p", Model: "persona"}
	provider := &agent.Provider{Name: "glm", Model: "provider"}
	route := &Route{Model: "route"}
	tests := []struct {
		name     string
		alias    string
		persona  *agent.Persona
		provider *agent.Provider
		route    *Route
		want     string
	}{
		{"built-in: declaration of agent.claude", "", nil, nil, nil, "claude-decl"},
		{"built-in: persona over declaration", "", persona, nil, nil, "persona"},
		{"built-in: provider over persona", "", persona, provider, nil, "provider"},
		{"built-in: route over provider", "", persona, provider, route, "route"},
		{"claude_cli alias: declaration", "agent.cli", nil, nil, nil, "cli-decl"},
		{"claude_cli alias: provider over persona", "agent.cli", persona, provider, nil, "provider"},
		{"endpoint: persona never applies", "agent.endpoint", persona, provider, nil, "endpoint-decl"},
		{"endpoint: route over declaration", "agent.endpoint", persona, nil, route, "route"},
		{"endpoint without a model: the server's", "agent.bare", persona, nil, nil, ""},
		{"managed sidecar: its pinned model, whatever the route", "agent.managed", persona, provider, route, "pinned"},
		{"plugin: declaration", "agent.plugin", nil, nil, nil, "plugin-decl"},
		{"plugin: persona over declaration, provider ignored", "agent.plugin", persona, provider, nil, "persona"},
		{"plugin: route over persona", "agent.plugin", persona, nil, route, "route"},
		{"registered in code, undeclared: persona", "agent.code", persona, nil, nil, "persona"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ac := &agent.Call{Persona: tt.persona, Provider: tt.provider}
			if got := h.resolveModel(tt.alias, ac, tt.route); got != tt.want {
				t.Errorf("model = %q, want %q", got, tt.want)
			}
		})
	}
}
