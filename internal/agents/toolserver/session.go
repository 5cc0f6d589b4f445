package toolserver

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

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/base/version"
)

// ServerName is the MCP server name kitsoki gives its sessions; agents see
// its tools as mcp__kitsoki__<tool>.
const ServerName = "kitsoki"

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
	// PluginTools supplies plugin-contributed tools through a pull seam,
	// until a catalog snapshot is applied (which then takes precedence).
	PluginTools ToolSource
	// Catalog, if set, pushes plugin-tool snapshots to the session: it
	// starts from the current snapshot and applies every newer one.
	Catalog *Catalog

	// Secrets are the resolved ${VAR} values of the story the session
	// serves; every tool result is masked for them (internal/base/secret).
	Secrets []string

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
	mask     *secret.Masker // Secrets: masked in every tool result
	wrapped  bool           // the call's schema is not an object: submit takes {"value": ...}
	ctx      context.Context
	cancel   context.CancelFunc

	amu      sync.Mutex             // serialises assembly; guards the fields below
	prepared map[string]preparedDef // by tool name
	width    int                    // the largest set assembled so far
	cache    map[string][]Tool      // per-group tools of non-dynamic groups
	key      string                 // names and versions of the current set
	applied  *CatalogSnapshot       // the plugin-tool snapshot in force

	mu         sync.RWMutex
	profile    Profile
	offered    map[string]bool              // what clients may list and call
	installed  map[string]string            // name → version in the server's map
	defs       map[string]server.ServerTool // every definition installed
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
	s := &Session{cfg: cfg, reg: cfg.Registry, mask: secret.New(cfg.Secrets), cache: map[string][]Tool{},
		installed: map[string]string{}, defs: map[string]server.ServerTool{}, prepared: map[string]preparedDef{}}
	if err := s.prepareSubmit(); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.Catalog != nil {
		s.applied = cfg.Catalog.attach(s)
	}
	hooks := &server.Hooks{}
	hooks.AddOnError(s.refusedCall)
	s.srv = server.NewMCPServer(ServerName, version.String(),
		server.WithToolCapabilities(true),
		server.WithRecovery(),
		server.WithHooks(hooks),
		server.WithToolHandlerMiddleware(s.guard),
		server.WithToolFilter(s.offer),
		server.WithInstructions("kitsoki's tools. On a live agent call they act on that call's own run."),
	)
	if _, err := s.SetProfile(cfg.Profile); err != nil {
		s.Close()
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
// (and versions) differs from the current one, replaces the offered set at
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

// apply assembles p and, if the result differs from the offered set,
// swaps it in. amu is held.
//
// The server's tool map holds every definition the session ever offered;
// what clients may list and call is the offered set, enforced by a tool
// filter on both tools/list and tools/call. A replacement that only
// offers definitions the server already holds swaps the offered set and
// sends one tools/list_changed; one that brings new or changed definitions
// also installs them with the server's atomic SetTools, whose single
// notification is then the only one sent.
func (s *Session) apply(p Profile) bool {
	tools, key := s.assemble(p)
	s.mu.Lock()
	s.profile = p
	if key == s.key && s.offered != nil {
		s.mu.Unlock()
		return false
	}
	offered := make(map[string]bool, len(tools))
	install := false
	for _, t := range tools {
		offered[t.Def.Name] = true
		if v, ok := s.installed[t.Def.Name]; !ok || v != t.Version {
			install = true
		}
	}
	s.key, s.offered = key, offered
	var all []server.ServerTool
	if install {
		for _, t := range tools {
			s.installed[t.Def.Name] = t.Version
			s.defs[t.Def.Name] = server.ServerTool{Tool: t.Def, Handler: t.Handler}
		}
		all = make([]server.ServerTool, 0, len(s.defs))
		for _, st := range s.defs {
			all = append(all, st)
		}
	}
	s.mu.Unlock()
	if install {
		s.srv.SetTools(all...)
	} else {
		s.srv.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
	}
	return true
}

// offer is the tool filter: it keeps the tools of the offered set.
func (s *Session) offer(_ context.Context, tools []mcp.Tool) []mcp.Tool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := tools[:0:0]
	for _, t := range tools {
		if s.offered[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// assemble walks the registry and returns the enabled groups' tools and a
// key naming them (names and versions). amu is held.
func (s *Session) assemble(p Profile) ([]*Tool, string) {
	var (
		out  = make([]*Tool, 0, s.width)
		key  strings.Builder
		seen = make(map[string]string, s.width)
	)
	key.Grow(s.width * 32)
	for _, g := range s.reg.groups {
		if !g.Enabled(p) {
			continue
		}
		tools, ok := s.cache[g.Name]
		if !ok || g.Dynamic {
			tools = s.prepare(g.Name, g.Register(s, p))
			if !g.Dynamic {
				s.cache[g.Name] = tools
			}
		}
		for i := range tools {
			t := &tools[i]
			name := t.Def.Name
			if other, dup := seen[name]; dup {
				s.cfg.Logger.Warn("mcp: skipping a tool whose name is already taken", "group", g.Name, "tool", name, "taken_by", other)
				continue
			}
			seen[name] = g.Name
			out = append(out, t)
			key.WriteString(name)
			key.WriteByte('@')
			key.WriteString(t.Version)
			key.WriteByte(',')
		}
	}
	s.width = max(s.width, len(out))
	return out, key.String()
}

// prepare checks a group's freshly registered tools, dropping those with
// an invalid name, and turns structured input schemas into their JSON
// once: the server re-reads every schema it installs, and reading JSON is
// far cheaper than marshalling the structure again. Definitions of dynamic
// groups are kept by name and version, so a source that hands out the
// same tools again costs no re-encoding (a source must change a tool's
// Version when it changes its definition).
func (s *Session) prepare(group string, tools []Tool) []Tool {
	out := make([]Tool, 0, len(tools))
	for _, t := range tools {
		if !validToolName(t.Def.Name) {
			s.cfg.Logger.Warn("mcp: skipping a tool with an invalid name", "group", group, "tool", t.Def.Name)
			continue
		}
		if pd, ok := s.prepared[t.Def.Name]; ok && pd.version == t.Version {
			t.Def = pd.def
		} else {
			if t.Def.RawInputSchema == nil && t.Def.InputSchema.Type != "" {
				if b, err := json.Marshal(t.Def.InputSchema); err == nil {
					t.Def.RawInputSchema, t.Def.InputSchema = b, mcp.ToolInputSchema{}
				}
			}
			s.prepared[t.Def.Name] = preparedDef{t.Version, t.Def}
		}
		out = append(out, t)
	}
	return out
}

// preparedDef is a prepared definition and the version it was prepared
// for.
type preparedDef struct {
	version string
	def     mcp.Tool
}

// validToolName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func validToolName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
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

// HasCatalog reports whether the session takes plugin tools from a catalog,
// so its tool set can grow while an agent is connected.
func (s *Session) HasCatalog() bool { return s.cfg.Catalog != nil }

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
	if s.cfg.Catalog != nil {
		s.cfg.Catalog.detach(s)
	}
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
			cctx, cancel := context.WithCancel(context.WithValue(ctx, sessionKey{}, s))
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
		s.record(ToolEvent{Tool: name, Outcome: outcome, At: start, Duration: s.cfg.Clock.Now().Sub(start)})
		return MaskResult(s.mask, res), s.mask.Error(err)
	}
}

// record keeps a tool call for the trace and tells OnToolCall.
func (s *Session) record(ev ToolEvent) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	s.cfg.Logger.Debug("mcp tool call", "tool", ev.Tool, "outcome", ev.Outcome, "run", s.cfg.RunID, "duration", ev.Duration)
	if s.cfg.OnToolCall != nil {
		s.cfg.OnToolCall(ev)
	}
}

// refusedCall records a tools/call the server refused before any handler
// ran: a stale client calling a tool the profile no longer offers is
// answered "not found" by the tool filter, and that call belongs in the
// trace like any other.
func (s *Session) refusedCall(_ context.Context, _ any, method mcp.MCPMethod, message any, err error) {
	if method != mcp.MethodToolsCall || !errors.Is(err, server.ErrToolNotFound) {
		return
	}
	req, ok := message.(*mcp.CallToolRequest)
	if !ok || req == nil {
		return
	}
	now := s.cfg.Clock.Now()
	s.record(ToolEvent{Tool: req.Params.Name, Outcome: "refused", At: now})
}

type sessionKey struct{}

// SessionFrom returns the session whose tool call ctx belongs to, or nil.
// Tool handlers shared by several sessions (plugin tools) read the ids the
// session binds through it, never from the call's arguments.
func SessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

// RunID is the run (task) the session is bound to.
func (s *Session) RunID() string { return s.cfg.RunID }

// SessionID is the agent call's session id.
func (s *Session) SessionID() string { return s.cfg.SessionID }

// WorkspaceID is the story's app id.
func (s *Session) WorkspaceID() string { return s.cfg.WorkspaceID }

// Closed reports whether the session was closed.
func (s *Session) Closed() bool { return s.isClosed() }

func (s *Session) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// JSONResult answers with v as structured content and the same JSON as
// text.
func JSONResult(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return mcp.NewToolResultError("encode result: " + err.Error())
	}
	return mcp.NewToolResultStructured(v, string(b))
}

// ToolError answers with a tool error the model can read and act on.
func ToolError(format string, args ...any) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf(format, args...))
}

// errText is err's message, with ErrDetached explained.
func errText(err error) string {
	if errors.Is(err, ErrDetached) {
		return err.Error() + " (kitsoki started this agent without a run to act on)"
	}
	return err.Error()
}

// Annotate sets all four MCP annotations explicitly.
func Annotate(t *mcp.Tool, readOnly, destructive, idempotent, openWorld bool) {
	t.Annotations.ReadOnlyHint = mcp.ToBoolPtr(readOnly)
	t.Annotations.DestructiveHint = mcp.ToBoolPtr(destructive)
	t.Annotations.IdempotentHint = mcp.ToBoolPtr(idempotent)
	t.Annotations.OpenWorldHint = mcp.ToBoolPtr(openWorld)
}
