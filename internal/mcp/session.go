package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kitsoki/kitsoki/internal/clock"
)

// ServerName is the MCP server name kitsoki gives its sessions; agents see
// its tools as mcp__kitsoki__<tool>.
const ServerName = "kitsoki"

// Version is reported to MCP clients.
const Version = "0.1.0"

// SessionConfig describes one MCP session: its profile, the run it is bound
// to, and the seams its tools call.
type SessionConfig struct {
	// Profile is the initial profile; SetProfile replaces it.
	Profile Profile
	// Registry holds the tool groups; nil means DefaultRegistry().
	Registry *Registry

	// RunID, SessionID and WorkspaceID are the ids the session binds:
	// the run (task), the agent call's session and the story app.
	RunID       string
	SessionID   string
	WorkspaceID string

	// Live acts on the run; required on live surfaces.
	Live LiveCall
	// Schema is the call's schema: the submit tool's input schema. Nil
	// means any object is accepted.
	Schema json.RawMessage
	// Validate checks a candidate submission. Nil with a Schema set means
	// the schema is compiled here (without resolving $refs to files).
	Validate func(submission []byte) error

	// StoryDir is the root of the story-files provider's tools.
	StoryDir string
	// Root is the directory configuration tools may read; paths outside it
	// are refused.
	Root string
	// LoadStory and StartRun back the configuration and external tools.
	LoadStory StoryLoader
	StartRun  RunStarter
	// PluginTools supplies plugin-contributed tools (issue 6's catalog).
	PluginTools ToolSource

	// OnToolCall, if set, is called after every tool call.
	OnToolCall func(ToolEvent)
	Clock      clock.Clock
	Logger     *slog.Logger
}

// ToolEvent records one tool call, without its arguments or results.
type ToolEvent struct {
	Tool string
	// Outcome is "ok", "tool_error" (the tool answered with isError),
	// "refused" (the tool is not in the session's profile, or the call
	// ended) or "error" (the handler failed).
	Outcome  string
	At       time.Time
	Duration time.Duration
}

// Session is one MCP server instance with its own tool set, bound to one
// agent call (or, for kitsoki mcp serve, to one outside client). It is safe
// for concurrent use.
type Session struct {
	cfg      SessionConfig
	reg      *Registry
	srv      *server.MCPServer
	validate func([]byte) error
	wrapped  bool // the call's schema is not an object: submit takes {"value": ...}
	ctx      context.Context
	cancel   context.CancelFunc

	amu   sync.Mutex        // serialises assembly
	cache map[string][]Tool // per-group tools of non-dynamic groups
	key   string            // names and versions of the current set

	mu         sync.RWMutex
	profile    Profile
	offered    map[string]bool
	submission json.RawMessage
	events     []ToolEvent
	closed     bool
	onClose    func()
	token, url string
}

// NewSession builds a session and installs its initial tool set.
func NewSession(cfg SessionConfig) (*Session, error) {
	if cfg.Registry == nil {
		cfg.Registry = DefaultRegistry()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := checkProfile(cfg.Registry, cfg.Profile); err != nil {
		return nil, err
	}
	if cfg.Profile.Surface.Live() && cfg.Live == nil {
		return nil, fmt.Errorf("mcp session: surface %s needs a live call", cfg.Profile.Surface)
	}
	s := &Session{cfg: cfg, reg: cfg.Registry, cache: map[string][]Tool{}}
	if err := s.prepareSubmit(); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.srv = server.NewMCPServer(ServerName, Version,
		server.WithToolCapabilities(true),
		server.WithRecovery(),
		server.WithToolHandlerMiddleware(s.guard),
		server.WithInstructions("kitsoki's tools for this agent call. Tools act on the call's own run."),
	)
	if _, err := s.SetProfile(cfg.Profile); err != nil {
		return nil, err
	}
	return s, nil
}

func checkProfile(r *Registry, p Profile) error {
	if p.Surface == "" {
		return fmt.Errorf("mcp session: the profile has no surface")
	}
	if _, err := NewProfile(p.Surface, p.Capabilities, p.Providers); err != nil {
		return fmt.Errorf("mcp session: %w", err)
	}
	return r.Check(p)
}

// Profile returns the current profile.
func (s *Session) Profile() Profile {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.profile
}

// SetProfile assembles the tools profile p enables and, if the set of names
// (and versions) differs from the current one, replaces the whole set at
// once, which sends exactly one tools/list_changed to every connected
// client. It reports whether the set changed. A profile on another surface
// kind (live versus not) than the session's is refused: the bound run does
// not change.
func (s *Session) SetProfile(p Profile) (bool, error) {
	if err := checkProfile(s.reg, p); err != nil {
		return false, err
	}
	if cur := s.Profile(); cur.Surface != "" && cur.Surface.Live() != p.Surface.Live() {
		return false, fmt.Errorf("mcp session: cannot move from surface %s to %s", cur.Surface, p.Surface)
	}
	s.amu.Lock()
	defer s.amu.Unlock()
	return s.apply(p), nil
}

// Refresh re-assembles the current profile, picking up a changed plugin
// catalog. Like SetProfile it notifies clients only when the set changed.
func (s *Session) Refresh() bool {
	s.amu.Lock()
	defer s.amu.Unlock()
	return s.apply(s.Profile())
}

// apply assembles p and swaps the tool set if it changed. amu is held.
func (s *Session) apply(p Profile) bool {
	tools, key := s.assemble(p)
	s.mu.Lock()
	s.profile = p
	if key == s.key && s.offered != nil {
		s.mu.Unlock()
		return false
	}
	s.key = key
	s.offered = make(map[string]bool, len(tools))
	for _, t := range tools {
		s.offered[t.Tool.Name] = true
	}
	s.mu.Unlock()
	s.srv.SetTools(tools...)
	return true
}

// assemble walks the registry and returns the enabled groups' tools and a
// key naming them. amu is held.
func (s *Session) assemble(p Profile) ([]server.ServerTool, string) {
	var (
		out  []server.ServerTool
		key  strings.Builder
		seen = map[string]string{}
	)
	for _, g := range s.reg.groups {
		if !g.Enabled(p) {
			continue
		}
		tools, ok := s.cache[g.Name]
		if !ok || g.Dynamic {
			tools = g.Register(s, p)
			if !g.Dynamic {
				s.cache[g.Name] = tools
			}
		}
		for _, t := range tools {
			name := t.Def.Name
			if !toolName.MatchString(name) {
				s.cfg.Logger.Warn("mcp: skipping a tool with an invalid name", "group", g.Name, "tool", name)
				continue
			}
			if other, dup := seen[name]; dup {
				s.cfg.Logger.Warn("mcp: skipping a tool whose name is already taken", "group", g.Name, "tool", name, "taken_by", other)
				continue
			}
			seen[name] = g.Name
			out = append(out, server.ServerTool{Tool: t.Def, Handler: t.Handler})
			key.WriteString(name)
			key.WriteByte('@')
			key.WriteString(t.Version)
			key.WriteByte(',')
		}
	}
	return out, key.String()
}

// ToolNames lists the tools currently offered, sorted.
func (s *Session) ToolNames() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.offered))
	for n := range s.offered {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Submission returns the first valid submission, if any.
func (s *Session) Submission() (json.RawMessage, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.submission, s.submission != nil
}

// ToolEvents returns the tool calls recorded so far, in order.
func (s *Session) ToolEvents() []ToolEvent {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]ToolEvent(nil), s.events...)
}

// Token is the bearer token of a session opened on an HTTPServer.
func (s *Session) Token() string { return s.token }

// URL is the endpoint of a session opened on an HTTPServer.
func (s *Session) URL() string { return s.url }

// MCPServer exposes the underlying mcp-go server (for stdio serving and
// tests).
func (s *Session) MCPServer() *server.MCPServer { return s.srv }

// Close ends the session: in-flight tool calls are cancelled, later calls
// are refused and, on an HTTPServer, the token stops working. It is
// idempotent.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	onClose := s.onClose
	s.mu.Unlock()
	s.cancel()
	if onClose != nil {
		onClose()
	}
}

// guard wraps every tool handler: it refuses calls after Close and calls
// to tools outside the current profile (a stale client may still call a
// removed tool), ties the handler's context to the session, and records the
// call.
func (s *Session) guard(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name := req.Params.Name
		start := s.cfg.Clock.Now()
		s.mu.RLock()
		closed, offered := s.closed, s.offered[name]
		s.mu.RUnlock()
		var (
			res     *mcp.CallToolResult
			err     error
			outcome = "ok"
		)
		switch {
		case closed:
			res, outcome = mcp.NewToolResultError("this agent call has ended; its tools are no longer available"), "refused"
		case !offered:
			res, outcome = mcp.NewToolResultError(fmt.Sprintf("tool %s is not offered in this session's profile (%s)", name, s.Profile())), "refused"
		default:
			cctx, cancel := context.WithCancel(ctx)
			stop := context.AfterFunc(s.ctx, cancel)
			res, err = next(cctx, req)
			stop()
			cancel()
			switch {
			case err != nil:
				outcome = "error"
			case res != nil && res.IsError:
				outcome = "tool_error"
			}
		}
		ev := ToolEvent{Tool: name, Outcome: outcome, At: start, Duration: s.cfg.Clock.Now().Sub(start)}
		s.mu.Lock()
		s.events = append(s.events, ev)
		s.mu.Unlock()
		s.cfg.Logger.Debug("mcp tool call", "tool", name, "outcome", outcome, "run", s.cfg.RunID, "duration", ev.Duration)
		if s.cfg.OnToolCall != nil {
			s.cfg.OnToolCall(ev)
		}
		return res, err
	}
}

// jsonResult answers with v as structured content and the same JSON as
// text.
func jsonResult(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return mcp.NewToolResultError("encode result: " + err.Error())
	}
	return mcp.NewToolResultStructured(v, string(b))
}

// toolErr answers with a tool error the model can read and act on.
func toolErr(format string, args ...any) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf(format, args...))
}

// errText is err's message, with ErrDetached explained.
func errText(err error) string {
	if errors.Is(err, ErrDetached) {
		return err.Error() + " (kitsoki started this agent without a run to act on)"
	}
	return err.Error()
}

// annotate sets all four MCP annotations explicitly.
func annotate(t *mcp.Tool, readOnly, destructive, idempotent, openWorld bool) {
	t.Annotations.ReadOnlyHint = mcp.ToBoolPtr(readOnly)
	t.Annotations.DestructiveHint = mcp.ToBoolPtr(destructive)
	t.Annotations.IdempotentHint = mcp.ToBoolPtr(idempotent)
	t.Annotations.OpenWorldHint = mcp.ToBoolPtr(openWorld)
}
