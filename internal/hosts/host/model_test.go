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
		"agent.api":        {Plugin: agent.PluginAnthropic},
		"agent.gpt":        {Plugin: agent.PluginOpenAI, Model: "gpt-decl"},
		"agent.codex":      {Plugin: agent.PluginCodexCLI},
		"profile.fast":     {Plugin: agent.PluginOpenAI, Model: "fast-decl"},
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
		choice   *Choice
	}{
		{"built-in: declaration of agent.claude", "", nil, nil, nil, "claude-decl", nil},
		{"built-in: persona over declaration", "", persona, nil, nil, "persona", nil},
		{"built-in: provider over persona", "", persona, provider, nil, "provider", nil},
		{"built-in: route over provider", "", persona, provider, route, "route", nil},
		{"claude_cli alias: declaration", "agent.cli", nil, nil, nil, "cli-decl", nil},
		{"claude_cli alias: provider over persona", "agent.cli", persona, provider, nil, "provider", nil},
		{"endpoint: persona never applies", "agent.endpoint", persona, provider, nil, "endpoint-decl", nil},
		{"endpoint: route over declaration", "agent.endpoint", persona, nil, route, "route", nil},
		{"endpoint without a model: the server's", "agent.bare", persona, nil, nil, "", nil},
		{"managed sidecar: its pinned model, whatever the route", "agent.managed", persona, provider, route, "pinned", nil},
		{"plugin: declaration", "agent.plugin", nil, nil, nil, "plugin-decl", nil},
		{"plugin: persona over declaration, provider ignored", "agent.plugin", persona, provider, nil, "persona", nil},
		{"plugin: route over persona", "agent.plugin", persona, nil, route, "route", nil},
		{"registered in code, undeclared: persona", "agent.code", persona, nil, nil, "persona", nil},
		{"anthropic without a model: the backend's default", "agent.api", persona, nil, nil, "claude-sonnet-4-5", nil},
		{"openai: declaration, persona never applies", "agent.gpt", persona, nil, nil, "gpt-decl", nil},
		{"openai: route over declaration", "agent.gpt", persona, nil, route, "route", nil},
		{"codex without a model: the CLI's", "agent.codex", persona, nil, nil, "", nil},
		{"built-in, taken by a profile: the profile's declaration", "", persona, nil, nil, "fast-decl", &Choice{Profile: "fast", Alias: "profile.fast"}},
		{"built-in, taken by a profile with a model", "", persona, nil, nil, "switched", &Choice{Profile: "fast", Alias: "profile.fast", Model: "switched"}},
		{"agent.claude, a claude profile with a model", agent.DefaultAlias, persona, provider, nil, "claude-pro", &Choice{Profile: "claude", Model: "claude-pro"}},
		{"built-in, a claude profile without a model: the usual rule", "", persona, nil, nil, "persona", &Choice{Profile: "claude"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ac := &agent.Call{Persona: tt.persona, Provider: tt.provider}
			c := &askCall{alias: tt.alias, route: tt.route, choice: tt.choice}
			if tt.choice != nil {
				c.route = &Route{Profile: tt.choice.Profile, Model: tt.choice.Model}
			}
			if got := h.resolveModel(c, ac); got != tt.want {
				t.Errorf("model = %q, want %q", got, tt.want)
			}
		})
	}
}
