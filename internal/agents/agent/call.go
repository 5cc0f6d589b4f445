package agent

import "context"

// Call is one agent call as the host hands it to Agent.Ask: the wire
// request and everything the host decided about the call beyond it. The
// host builds one per call (and one per agent asked: a fallback gets its
// own); agents read it and never modify it. Plugins behind a wire see only
// Request.
type Call struct {
	// Request is what goes on the wire. Its session id, turn, state path,
	// call id and deadline are the call's place in its run.
	Request *AskRequest
	// Alias is the agent_plugins alias the call was routed to, "" on the
	// built-in claude path.
	Alias string
	// Persona is the agents: entry named by with.agent; nil when none.
	Persona *Persona
	// Model is the model the call runs on, resolved once by the host
	// (route, provider, persona, declaration) and recorded in the trace;
	// "" leaves it to the backend. Transports that choose a model use it
	// as given: none resolves one of its own.
	Model string
	// Effort is the reasoning effort the call was routed to ("" for the
	// transport's default).
	Effort string
	// ProviderName is the providers: entry the call names (with.provider,
	// or a route's), "" for none. Provider is that entry, nil when the
	// name resolves to nothing.
	ProviderName string
	Provider     *Provider
	// SchemaPath is the schema path as written in with.schema ("" if
	// none).
	SchemaPath string
	// Validate checks a candidate submission against the call's schema and
	// returns a readable violation list; nil when the call has no schema.
	Validate func(submission []byte) error
	// Run is the run the call belongs to; nil for a call detached from
	// any run (an eval, a test without a session).
	Run *Run
	// ReadOnly is set for a call made from a write_mode: read_only room:
	// the agent may not use mutating tools (ReadOnlyDeniedTools()).
	ReadOnly bool
}

// ReadOnlyDeniedTools are the tools a read-only call may not use.
func ReadOnlyDeniedTools() []string {
	return []string{"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"}
}

// NewCall returns the call of a bare request: no persona, model, schema or
// run. Tests and callers outside a story use it.
func NewCall(req *AskRequest) *Call { return &Call{Request: req} }

// Persona is the part of an agents: entry a transport needs.
type Persona struct {
	Name         string
	SystemPrompt string
	// Model is the persona's model: one input of the host's resolution
	// (Call.Model), never read by a transport.
	Model    string
	Tools    []string
	ToolsSet bool // tools: was present; an empty list means no tools
	// Effort is the persona's default reasoning effort (a route's wins),
	// handed to the transport in Call.Effort.
	Effort string
	// Provider names the providers: entry the persona's calls go through
	// when neither with.provider nor a route names one.
	Provider string
	// Cwd is the directory (absolute, inside the workspace) the claude CLI
	// runs the persona's calls in; "" is the declaration's directory.
	Cwd string
	// ExternalSideEffect is the persona's declared side-effect posture
	// (external_side_effect:); nil when not declared.
	ExternalSideEffect *bool
	// Bash is the persona's bash_profile:, nil when none: what its Bash
	// tool may run on the ask, decide and extract verbs.
	Bash *BashProfile
	// InheritDefault (inherit_claude_default:) keeps the claude CLI's own
	// default system prompt: the persona's is appended to it rather than
	// replacing it, and the story's context is not put before it.
	InheritDefault bool
}

// BashProfile is a persona's bash_profile: exactly one of ReadOnly,
// Commands and Sandboxed is set.
type BashProfile struct {
	// ReadOnly allows the read-only command list (ReadOnlyCommands()).
	ReadOnly bool
	// Commands is an explicit allow-list of programs (argv0).
	Commands []string
	// Sandboxed allows any command with the network denied (proxy
	// variables point at a closed port) and TMPDIR set to a fresh scratch
	// directory under SandboxBase (absolute; "" is the system temp dir).
	Sandboxed   bool
	SandboxBase string
}

// ReadOnlyCommands is the allow-list of bash_profile: read-only.
func ReadOnlyCommands() []string {
	return []string{"grep", "find", "cat", "head", "tail", "ls", "git", "jq", "rg", "wc", "stat", "awk",
		"sed", "sort", "uniq", "cut", "tr", "echo", "printf", "env", "which", "type", "python3"}
}

// Allowed is the programs a profile allows, nil for a sandboxed one
// (which allows any).
func (b *BashProfile) Allowed() []string {
	switch {
	case b == nil || b.Sandboxed:
		return nil
	case b.ReadOnly:
		return ReadOnlyCommands()
	}
	return b.Commands
}

// Run is what a call's run lends the tools of a launched agent (the MCP
// session the claude CLI gets): the ids that session binds and the facts
// its tool profile is resolved from.
type Run struct {
	// ID is the run (task) the call belongs to; "" means the request's
	// session id.
	ID string
	// WorkspaceID is the story's app id.
	WorkspaceID string
	// StoryDir is the story directory, the root of file-reading tools.
	StoryDir string
	// Autopilot is the run's autopilot setting; HasParent says whether the
	// run was started by another run.
	Autopilot bool
	HasParent bool
	// TitleOwned is true while the run's title is unset or agent-owned, so
	// the agent may set it.
	TitleOwned bool
	// ToolProviders names the tool providers attached to the run.
	ToolProviders []string
	// Live acts on the run; nil means the tools read the request's world
	// and refuse every action.
	Live LiveRun
	// Catalog is the run's plugin-tool catalog (internal/mcp's *Catalog,
	// which a transport's per-call MCP session subscribes to); nil means
	// no plugin tools. It is an interface because internal/mcp imports
	// this package.
	Catalog ToolCatalog
}

// ToolCatalog is a catalog of plugin-contributed tools. Generation
// identifies the kitsoki process that built it.
type ToolCatalog interface {
	Generation() string
}

// LiveRun is what a live agent call's run offers the tools of its MCP
// session. Every method acts on the call's own run, never on one named in
// tool arguments. Methods may block (AskOperator waits for the answer) and
// must honour ctx, which ends when the tool call or the agent call ends.
type LiveRun interface {
	// World returns a snapshot of the run's world variables.
	World() map[string]any
	// AskOperator shows question to the operator and returns the answer.
	AskOperator(ctx context.Context, question string) (string, error)
	// AskParent sends question to the parent run's agent or operator and
	// returns the answer.
	AskParent(ctx context.Context, question string) (string, error)
	// SetTitle sets the run's title.
	SetTitle(ctx context.Context, title string) error
	// CompleteStep records that the agent finished its current step, with
	// a short summary.
	CompleteStep(ctx context.Context, summary string) error
	// EmitIntent queues an intent (with slots) on the run, to fire once
	// the agent call has settled.
	EmitIntent(ctx context.Context, name string, slots map[string]any) error
}
