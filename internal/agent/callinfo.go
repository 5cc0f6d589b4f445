package agent

import "context"

// CallInfo is what the host knows about a call beyond the wire request:
// the persona it runs as, the alias it was routed to, and how to validate a
// candidate submission. Transports that drive a model themselves (the claude
// CLI, a local model) read it from the context; plugins behind a wire never
// see it.
type CallInfo struct {
	// Alias is the agent_plugins alias, or "" on the built-in claude path.
	Alias string
	// Persona is the agents: entry named by with.agent, if any.
	Persona *Persona
	// SchemaPath is the schema path as written in with.schema ("" if none).
	SchemaPath string
	// Validate checks a candidate submission against the call's schema and
	// returns a readable violation list; nil when the call has no schema.
	Validate func(submission []byte) error
	// Provider names a providers: entry for the built-in claude path.
	Provider string
	// ProviderSpec is that entry, resolved by the host; nil when the call
	// names no provider.
	ProviderSpec *Provider
	// Model, when set, is the model the call was routed to (a pin or an
	// eval candidate); it takes precedence over the persona's and the
	// declaration's model.
	Model string
	// Effort is the reasoning effort the call was routed to ("" for the
	// transport's default).
	Effort string
}

// Persona is the part of an agents: entry a transport needs.
type Persona struct {
	Name         string
	SystemPrompt string
	Model        string
	Tools        []string
	ToolsSet     bool // tools: was present; an empty list means no tools
}

type callInfoKey struct{}

// WithCallInfo returns a context carrying ci.
func WithCallInfo(ctx context.Context, ci *CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
}

// CallInfoFrom returns the call info carried by ctx, or nil.
func CallInfoFrom(ctx context.Context) *CallInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*CallInfo)
	return ci
}
