// Package transports wires every transport this build has into a registry.
// Adding a transport is one line here.
package transports

import (
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/anthropic"
	"github.com/kitsoki/kitsoki/internal/agents/claudecli"
	"github.com/kitsoki/kitsoki/internal/agents/codexcli"
	"github.com/kitsoki/kitsoki/internal/agents/copilotcli"
	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/kitsoki/kitsoki/internal/agents/mcphttp"
	"github.com/kitsoki/kitsoki/internal/agents/openai"
	"github.com/kitsoki/kitsoki/internal/agents/subprocess"
)

// Register installs the builder of every available transport. models is
// the pool the builtin.local_llm agents start their llama-server sidecars
// in (the run's, runtime.Open); nil gives each managed agent its own.
func Register(r *agent.Registry, models *localllm.Pool) {
	r.RegisterTransport(agent.PluginClaudeCLI, claudecli.Build)
	r.RegisterTransport(agent.PluginLocalLLM, localllm.NewBuilder(localllm.Config{Pool: models}))
	r.RegisterTransport(agent.PluginSubprocess, subprocess.Build)
	r.RegisterTransport(agent.PluginMCPHTTP, mcphttp.Build)
	r.RegisterTransport(agent.PluginAnthropic, anthropic.Build)
	r.RegisterTransport(agent.PluginOpenAI, openai.Build)
	r.RegisterTransport(agent.PluginCodexCLI, codexcli.Build)
	r.RegisterTransport(agent.PluginCopilotCLI, copilotcli.Build)
}
