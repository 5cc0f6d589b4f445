package transports

import (
	"testing"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
)

// TestOnlyLocalLLMFallsBack: of the declarable transports, only
// builtin.local_llm reports itself fallback-eligible, so a schema_invalid
// answer from subprocess, mcp_http or claude fails hard instead of being
// silently substituted by agent.claude.
func TestOnlyLocalLLMFallsBack(t *testing.T) {
	reg := agent.NewRegistry(nil)
	Register(reg, nil)
	decls := map[string]agent.Declaration{
		"agent.local":      {Plugin: agent.PluginLocalLLM, Endpoint: "http://127.0.0.1:1"},
		"agent.sub":        {Plugin: agent.PluginSubprocess, Command: "/nonexistent/plugin"},
		"agent.remote":     {Plugin: agent.PluginMCPHTTP, Endpoint: "http://127.0.0.1:1/mcp"},
		"agent.cli":        {Plugin: agent.PluginClaudeCLI, Command: "/nonexistent/claude"},
		"agent.claude_api": {Plugin: agent.PluginAnthropic},
		"agent.gpt":        {Plugin: agent.PluginOpenAI},
		"agent.codex":      {Plugin: agent.PluginCodexCLI},
		"agent.copilot":    {Plugin: agent.PluginCopilotCLI},
	}
	reg.Configure(decls)
	t.Cleanup(func() { _ = reg.Close() })
	for alias, d := range decls {
		a, err := reg.Get(alias)
		if err != nil {
			t.Fatalf("%s: %v", alias, err)
		}
		fe, ok := a.(agent.FallbackEligible)
		eligible := ok && fe.FallbackEligible()
		if want := d.Plugin == agent.PluginLocalLLM; eligible != want {
			t.Errorf("%s (%s): fallback-eligible = %v, want %v", alias, d.Plugin, eligible, want)
		}
	}
}
