// Package codexcli is the builtin.codex_cli transport: agent calls
// answered by the OpenAI Codex CLI, run non-interactively (`codex exec
// --json`) with the prompt on stdin. Like the claude CLI it is handed a
// per-call session of kitsoki's MCP tool server (as an mcp_servers entry
// given with -c, its bearer token in an environment variable), its
// sandbox and approval policy are named (per verb by default, never a
// bypass), a structured answer comes through kitsoki's submit tool or
// the final message (constrained with --output-schema where the schema
// allows it), and the usage the CLI reports goes into the answer's meta.
package codexcli

import (
	"log/slog"
	"sync"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/clirun"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/plugin"
)

// The sandbox modes and approval policies of the CLI.
const (
	SandboxReadOnly       = "read-only"
	SandboxWorkspaceWrite = "workspace-write"
	ApprovalNever         = "never"
)

// TokenEnv carries the MCP session's bearer token to the CLI.
const TokenEnv = "KITSOKI_MCP_TOKEN"

// ProviderID names the model provider kitsoki declares when base_url: is
// set.
const ProviderID = "kitsoki"

func codexCLI() clirun.CLI {
	return clirun.CLI{Name: "codex CLI", Command: "codex",
		Install: "install it (scripts/setup-agent-clis.sh, or npm install -g @openai/codex)"}
}

// Options configures an agent beyond its declaration; the zero value is
// the process environment, the system clock and a discarded log.
type Options struct {
	// Environ is the base environment of the child; nil means
	// os.Environ().
	Environ []string
	Logger  *slog.Logger
	Clock   clock.Clock
	// OnOutput, when set, receives each run's stdout (the tests record
	// it).
	OnOutput func(stdout []byte)
}

// Agent runs the codex CLI. It is safe for concurrent use.
type Agent struct {
	decl agent.Declaration
	opts Options
	mcp  clirun.Server

	mu      sync.Mutex
	threads map[string]string // converse's codex threads, by session, persona and alias
}

// Build is the builtin.codex_cli transport builder.
func Build(decl agent.Declaration, env agent.BuildEnv) (agent.Agent, error) {
	return New(decl, Options{Logger: env.Logger}), nil
}

// New returns an agent that starts nothing until asked.
func New(decl agent.Declaration, o Options) *Agent {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	a := &Agent{decl: decl, opts: o, threads: map[string]string{}}
	a.mcp.Logger = o.Logger
	return a
}

// Close stops the MCP server the agent started and forgets its threads.
func (a *Agent) Close() error {
	a.mu.Lock()
	a.threads = nil
	a.mu.Unlock()
	return a.mcp.Close()
}

// sandbox is the sandbox mode of a call: a read-only room's is
// read-only; else the declaration's; else workspace-write for task and
// read-only for the judgement verbs. kitsoki never picks
// danger-full-access itself.
func (a *Agent) sandbox(c *agent.Call) string {
	switch {
	case c.ReadOnly:
		return SandboxReadOnly
	case a.decl.Sandbox != "":
		return a.decl.Sandbox
	case c.Request.Verb == plugin.VerbTask:
		return SandboxWorkspaceWrite
	}
	return SandboxReadOnly
}

// approval is the approval policy: the declaration's, else never (no one
// can approve a non-interactive run: what the sandbox refuses fails).
func (a *Agent) approval() string {
	if a.decl.Approval != "" {
		return a.decl.Approval
	}
	return ApprovalNever
}
