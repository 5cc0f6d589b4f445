// Package agent is kitsoki's agent contract: the Agent interface every
// transport implements, the AskError kinds, the declarations read from a
// story's agent_plugins: block, and the Registry that turns declarations into
// agents. It knows nothing about stories or the orchestrator.
package agent

import (
	"context"

	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// Wire types are defined once, in the public SDK.
type (
	AskRequest  = plugin.AskRequest
	AskResponse = plugin.AskResponse
	Event       = plugin.Event
)

// Agent answers agent calls. Ask gets the call value the host built
// (call.Request is the wire request) and returns a *AskError on failure.
// Close releases whatever the agent holds (processes, connections); it is
// called once, at the end of the session.
type Agent interface {
	Ask(ctx context.Context, call *Call) (*AskResponse, error)
	Close() error
}

// AgentFunc adapts a function to an Agent with a no-op Close.
type AgentFunc func(ctx context.Context, call *Call) (*AskResponse, error)

// Ask calls f.
func (f AgentFunc) Ask(ctx context.Context, call *Call) (*AskResponse, error) {
	return f(ctx, call)
}

// Close does nothing.
func (AgentFunc) Close() error { return nil }

// FallbackEligible is implemented by transports whose answers, when the
// host's schema validation rejects them, are retried once on agent.claude
// (builtin.local_llm). Every other transport fails hard.
type FallbackEligible interface {
	FallbackEligible() bool
}
