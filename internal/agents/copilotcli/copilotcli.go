// Package copilotcli is the builtin.copilot_cli transport: agent calls
// answered by the GitHub Copilot CLI, run non-interactively (`copilot
// --output-format json`) with the prompt on stdin. Like the claude CLI it
// is handed a per-call session of kitsoki's MCP tool server (with
// --additional-mcp-config, the server's tools approved), its tool
// approvals are named per verb (read-only for the judgement verbs, edits
// for task; never all tools unless declared), a structured answer comes
// through kitsoki's submit tool or the final message, and the usage the
// CLI reports (--usage-output-file) goes into the answer's meta. With
// base_url: it runs on that OpenAI-compatible provider (Copilot's BYOK
// mode), offline.
package copilotcli

import (
	"log/slog"
	"sync"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/clirun"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/plugin"
)

// The approval modes of approval:.
const (
	ApprovalReadOnly = "read-only"
	ApprovalEdit     = "edit"
	ApprovalAll      = "all"
)

func copilotCLI() clirun.CLI {
	return clirun.CLI{Name: "copilot CLI", Command: "copilot",
		Install: "install it (scripts/setup-agent-clis.sh, or npm install -g @github/copilot)"}
}

// Options configures an agent beyond its declaration; the zero value is
// the process environment, the system clock and a discarded log.
type Options struct {
	// Environ is the base environment of the child; nil means
	// os.Environ().
	Environ []string
	Logger  *slog.Logger
	Clock   clock.Clock
	// LookupEnv reads api_key_env (nil: from Environ).
	LookupEnv func(string) (string, bool)
	// OnOutput, when set, receives each run's stdout (the tests record
	// it).
	OnOutput func(stdout []byte)
}

// Agent runs the copilot CLI. It is safe for concurrent use.
type Agent struct {
	decl agent.Declaration
	opts Options
	mcp  clirun.Server

	mu       sync.Mutex
	sessions map[string]string // converse's copilot sessions, by session, persona and alias
}

// Build is the builtin.copilot_cli transport builder.
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
	a := &Agent{decl: decl, opts: o, sessions: map[string]string{}}
	a.mcp.Logger = o.Logger
	return a
}

// Close stops the MCP server the agent started and forgets its sessions.
func (a *Agent) Close() error {
	a.mu.Lock()
	a.sessions = nil
	a.mu.Unlock()
	return a.mcp.Close()
}

// approval is a call's approval mode: read-only in a read-only room;
// else the declaration's; else edit for task and read-only for the
// judgement verbs.
func (a *Agent) approval(c *agent.Call) string {
	switch {
	case c.ReadOnly:
		return ApprovalReadOnly
	case a.decl.Approval != "":
		return a.decl.Approval
	case c.Request.Verb == plugin.VerbTask:
		return ApprovalEdit
	}
	return ApprovalReadOnly
}
