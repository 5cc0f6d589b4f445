// Package agent is kitsoki's agent contract: the Agent interface every
// transport implements, the AskError kinds, the declarations read from a
// story's agent_plugins: block, and the Registry that turns declarations into
// agents. It knows nothing about stories or the orchestrator.
package agent

import (
	"context"

	"github.com/kitsoki/kitsoki/plugin"
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

// Inline is implemented by an agent that can say, per call, that its Ask
// answers without blocking: it never waits on I/O, a channel, a lock that
// another goroutine may hold for longer than a few instructions, a process
// or time, so it returns as soon as its own CPU work is done. The host asks
// such a call on the caller's goroutine, with the same context (the call's
// hard deadline in it), instead of on a worker it could stop waiting for;
// the outcome is judged as on the worker: an answer given once the
// context has ended is late and dropped. Every other call, and every call
// of an agent that does not implement Inline, runs on a worker, so an
// agent that hangs is still abandoned at its deadline. An agent must not
// answer true for a call it might block on: nothing could then end the
// call before it returns.
type Inline interface {
	AnswersInline(call *Call) bool
}

// InlineFunc adapts a function that answers without blocking (see Inline)
// to an Agent with a no-op Close: its calls run on the caller's goroutine.
// Use AgentFunc for a function that may block.
type InlineFunc func(ctx context.Context, call *Call) (*AskResponse, error)

// Ask calls f.
func (f InlineFunc) Ask(ctx context.Context, call *Call) (*AskResponse, error) {
	return f(ctx, call)
}

// Close does nothing.
func (InlineFunc) Close() error { return nil }

// AnswersInline is true for every call: f promised not to block.
func (InlineFunc) AnswersInline(*Call) bool { return true }

// FallbackEligible is implemented by transports whose answers, when the
// host's schema validation rejects them, are retried once on agent.claude
// (builtin.local_llm). Every other transport fails hard.
type FallbackEligible interface {
	FallbackEligible() bool
}
