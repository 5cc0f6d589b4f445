// Package transports wires every transport this build has into a registry.
// Adding a transport is one line here.
package transports

import (
	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/agent/claudecli"
	"github.com/kitsoki/kitsoki/internal/agent/localllm"
	"github.com/kitsoki/kitsoki/internal/agent/mcphttp"
	"github.com/kitsoki/kitsoki/internal/agent/subprocess"
)

// Register installs the builder of every available transport.
func Register(r *agent.Registry) {
	r.RegisterTransport(agent.PluginClaudeCLI, claudecli.Build)
	r.RegisterTransport(agent.PluginLocalLLM, localllm.Builder)
	r.RegisterTransport(agent.PluginSubprocess, subprocess.Build)
	r.RegisterTransport(agent.PluginMCPHTTP, mcphttp.Build)
}
