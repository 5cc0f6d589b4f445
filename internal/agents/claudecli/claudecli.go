// Package claudecli is the Claude Code CLI transport. It runs `claude -p`
// non-interactively for each agent call, with the prompt on stdin, and
// hands the CLI a per-call session of kitsoki's own MCP tool server
// (internal/agents/toolserver) through --mcp-config. Structured results come back
// through that server's submit tool, which validates each submit against
// the call's schema and returns violations to the model so it can correct
// itself; a run that ends without a valid submit is resumed with a nudge a
// bounded number of times before the call fails schema_invalid.
//
// Both routes of wire-protocols.md §6 use it: NewBuiltin builds the agent
// the host calls for host.agent.* invokes that name no agent: alias (6a),
// and Build is the builtin.claude_cli transport for an explicit alias (6b).
package claudecli

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// DefaultCommand is the binary looked up on PATH when no command is set.
const DefaultCommand = "claude"

// Defaults of the bounded behaviours.
const (
	DefaultNudges     = 3
	DefaultMaxRetries = 2
)

// PermissionModeEnv overrides the permission mode of every verb.
const PermissionModeEnv = "KITSOKI_CLAUDE_PERMISSION_MODE"

// Options configures a claude CLI agent. The zero value is usable: claude
// from PATH, stream-json output, the per-verb permission modes, three
// nudges, two API retries, and an MCP server started on first use.
type Options struct {
	// Command is the claude binary: a path, or a name looked up on PATH
	// ("" means claude). It is resolved at the first call, never before.
	Command string
	// Args are appended after kitsoki's own flags.
	Args []string
	// Env is added to the child's environment; Secrets are resolved
	// secret values, kept out of errors and meta.
	Env     map[string]string
	Secrets []string
	// PermissionMode, if set, is used for every verb. Otherwise the
	// KITSOKI_CLAUDE_PERMISSION_MODE environment variable, else per verb:
	// task → acceptEdits, the judgement verbs → default. kitsoki never
	// picks bypassPermissions itself, and refuses it when running as root
	// (the CLI does too).
	PermissionMode string
	// MaxTurns is passed as --max-turns when positive.
	MaxTurns int
	// MaxRetries is the child's CLAUDE_CODE_MAX_RETRIES (default 2) unless
	// the environment already sets it, so an unreachable API fails fast.
	MaxRetries int
	// Nudges bounds how often a run that ended without a valid submit is
	// resumed with a nudge (0 means DefaultNudges; negative means none).
	Nudges int
	// JSONOutput selects --output-format json instead of stream-json
	// --verbose.
	JSONOutput bool
	// Dir is the child's working directory ("" means kitsoki's).
	Dir string
	// Alias is the agent_plugins alias ("" on the built-in path); tool
	// calls are recorded as sub-events "<alias>.mcp.<tool>", with
	// agent.claude on the built-in path.
	Alias string
	// MCP is the server per-call MCP sessions are opened on. Nil means the
	// agent starts its own on 127.0.0.1 at first use and closes it in
	// Close.
	MCP *toolserver.HTTPServer
	// Environ is the base environment of the child; nil means
	// os.Environ().
	Environ []string
	Logger  *slog.Logger
	Clock   clock.Clock
}

// Agent runs the claude CLI. It is safe for concurrent use.
type Agent struct {
	opts    Options
	builtin bool

	mu       sync.Mutex
	srv      *toolserver.HTTPServer
	ownsSrv  bool
	sessions map[string]string // reuse key → claude session id
	closed   bool
}

// NewBuiltin returns the agent of the built-in host.agent.* claude path
// (wire-protocols.md §6a): the host calls its Ask with an agent.Call like
// any agent's: the request, and the persona, model, schema path,
// validator, provider and run the host decided. Its AskResponse.Meta
// carries result, session_id, usage, cost_usd, total_cost_usd,
// duration_ms, num_turns, model and exit_code, which the host maps to the
// route's bind keys (story-format.md §9).
func NewBuiltin(opts Options) *Agent {
	return newAgent(opts, true)
}

// Build is the builtin.claude_cli transport builder (wire-protocols.md
// §6b): command:, args:, env: and the story directory come from the
// declaration (its model: reaches the CLI through the host's resolution,
// agent.Call.Model); output is the single JSON envelope.
func Build(decl agent.Declaration, env agent.BuildEnv) (agent.Agent, error) {
	return newAgent(Options{
		Command:    decl.Command,
		Args:       decl.Args,
		Env:        decl.Env,
		Secrets:    decl.Secrets,
		Dir:        decl.Dir,
		Alias:      decl.Alias,
		JSONOutput: true,
		Logger:     env.Logger,
	}, false), nil
}

func newAgent(opts Options, builtin bool) *Agent {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Nudges == 0 {
		opts.Nudges = DefaultNudges
	} else if opts.Nudges < 0 {
		opts.Nudges = 0
	}
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = DefaultMaxRetries
	}
	return &Agent{opts: opts, builtin: builtin, srv: opts.MCP, sessions: map[string]string{}}
}

// namespace is the alias sub-event kinds start with.
func (a *Agent) namespace() string {
	if a.opts.Alias != "" {
		return a.opts.Alias
	}
	return agent.DefaultAlias
}

// InstallCommand installs the Claude Code CLI.
const InstallCommand = "npm install -g @anthropic-ai/claude-code"

// binary resolves the claude binary, failing with a message that says how
// to install or point at it.
func (a *Agent) binary() (string, error) {
	name := a.opts.Command
	if name == "" {
		name = DefaultCommand
	}
	path, err := exec.LookPath(name)
	if err != nil {
		missing := &agent.NotInstalled{Program: name, Install: InstallCommand, Docs: "docs/agents/claude.md", Err: err}
		return "", agent.Errorf(agent.KindTransportError,
			"claude CLI %q not found (%w): install Claude Code ("+InstallCommand+") so that claude is on PATH, or set command: <path to claude> under agent_plugins.%s",
			name, missing, a.namespace())
	}
	return path, nil
}

// server returns the MCP server, starting one on first use.
func (a *Agent) server() (*toolserver.HTTPServer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, agent.Errorf(agent.KindTransportError, "claude CLI agent is closed")
	}
	if a.srv == nil {
		srv, err := toolserver.ListenHTTP("", a.opts.Logger)
		if err != nil {
			return nil, agent.Errorf(agent.KindTransportError, "start kitsoki's MCP server: %w", err)
		}
		a.srv, a.ownsSrv = srv, true
	}
	return a.srv, nil
}

// Close forgets the claude sessions kept for reuse and stops the MCP server
// the agent started. Calls in flight end with their own context.
func (a *Agent) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	a.sessions = nil
	if a.ownsSrv && a.srv != nil {
		return a.srv.Close()
	}
	return nil
}

// newSessionID returns a random UUIDv4 for --session-id.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// deadline parses the request's soft deadline.
func deadline(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

func isRoot() bool { return os.Geteuid() == 0 }
