// Package plugintools runs the agent tools subprocess plugins contribute
// through kitsoki's MCP server (plugin-agent-tools seed, read with
// mcp-surfaces.md): it keeps each tool-declaring plugin's lifecycle state
// (active, disabled, errored), recomputes the plugin-tool catalog after
// every change and publishes it to every live MCP session, and answers the
// tool calls by sending agent_tool.invoke to the plugin's existing
// process.
//
// A plugin is active when it is enabled and its process has not crashed
// (a process that has not started yet is fine: it starts on the first
// call). Only active plugins contribute tools. A crash makes the plugin
// errored until its process is respawned; the service respawns it with a
// growing delay, and recovery republishes the catalog.
package plugintools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/subprocess"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/serve/mcpserve"
	"github.com/kitsoki/kitsoki/plugin"
)

// Plugin states, as PluginStatus reports them.
const (
	StateActive   = "active"
	StateDisabled = "disabled"
	StateErrored  = "errored"
)

// Process is what the service needs of a plugin's agent: the subprocess
// transport's Agent. A registry entry that is not one (a cassette replay
// standing in for the plugin) leaves the plugin errored.
type Process interface {
	// InvokeTool sends agent_tool.invoke on the plugin's process and
	// returns the raw result, sending $/cancelRequest when ctx ends first.
	InvokeTool(ctx context.Context, req *plugin.AgentToolRequest) (json.RawMessage, error)
	// Watch reports the process's starts, crashes and failed spawns.
	Watch(func(subprocess.ProcessEvent)) (stop func())
	// Start spawns the process unless one runs.
	Start() error
}

// Options configure a Service.
type Options struct {
	// Registry resolves plugin aliases to their agents; required.
	Registry *agent.Registry
	// Catalog receives every recomputed snapshot; nil means a new one.
	Catalog *toolserver.Catalog
	// RunLive reports whether runID is a live run of this process; a call
	// from a session bound to anything else is refused. Nil accepts any
	// non-empty run id.
	RunLive func(runID string) bool
	// Timeout is the deadline of one call (default agent.ToolCallTimeout).
	Timeout time.Duration
	// RespawnDelay is the first wait before respawning a crashed plugin
	// (default 500 ms); it doubles after each failed attempt, up to 30 s.
	RespawnDelay time.Duration
	Logger       *slog.Logger
	Clock        clock.Clock
}

// Service owns the tool-declaring plugins of one kitsoki process. It is
// safe for concurrent use.
type Service struct {
	opts    Options
	catalog *toolserver.Catalog
	logger  *slog.Logger

	pubMu sync.Mutex // serialises recomputation and publication, so revisions follow state changes

	mu      sync.Mutex
	plugins map[string]*pluginState
	lastKey string // names and versions of the last published catalog
	closed  bool
}

// pluginState is one plugin's declaration, tools and lifecycle.
type pluginState struct {
	alias    string
	decl     agent.Declaration
	tools    map[string]*tool // by local name
	enabled  bool
	crashed  bool
	detail   string // why it is errored
	proc     Process
	unwatch  func()
	seq      uint64                             // the latest spawn attempt an event was seen for
	calls    map[uint64]context.CancelCauseFunc // in flight
	nextCall uint64
	respawn  *time.Timer
	backoff  time.Duration
}

func (p *pluginState) state() string {
	switch {
	case !p.enabled:
		return StateDisabled
	case p.crashed || p.proc == nil:
		return StateErrored
	}
	return StateActive
}

// New builds the service for a story's plugin declarations and publishes
// the first catalog. Declarations without agent tools are ignored.
func New(decls map[string]agent.Declaration, opts Options) (*Service, error) {
	if opts.Registry == nil {
		return nil, errors.New("plugintools: a registry is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = agent.ToolCallTimeout
	}
	if opts.RespawnDelay <= 0 {
		opts.RespawnDelay = 500 * time.Millisecond
	}
	if opts.Catalog == nil {
		opts.Catalog = toolserver.NewCatalog(opts.Logger)
	}
	tools, err := buildTools(decls)
	if err != nil {
		return nil, err
	}
	s := &Service{opts: opts, catalog: opts.Catalog, logger: opts.Logger.With("component", "plugin-tools"),
		plugins: map[string]*pluginState{}}
	s.mu.Lock()
	for alias, ts := range tools {
		s.plugins[alias] = s.newState(decls[alias], ts, decls[alias].Enabled)
	}
	s.mu.Unlock()
	s.publish("start")
	return s, nil
}

// newState binds a plugin to its agent and watches its process. mu is
// held.
func (s *Service) newState(d agent.Declaration, tools map[string]*tool, enabled bool) *pluginState {
	p := &pluginState{alias: d.Alias, decl: d, tools: tools, enabled: enabled,
		calls: map[uint64]context.CancelCauseFunc{}, backoff: s.opts.RespawnDelay}
	a, err := s.opts.Registry.Get(d.Alias)
	switch proc, ok := a.(Process); {
	case err != nil:
		p.detail = err.Error()
	case !ok:
		p.detail = fmt.Sprintf("the agent running %s in this run serves no tools (it is not the subprocess plugin; a cassette replay?)", d.Alias)
	default:
		p.proc = proc
		p.unwatch = proc.Watch(func(ev subprocess.ProcessEvent) { s.processEvent(p, ev) })
	}
	return p
}

// Catalog is the catalog the service publishes to.
func (s *Service) Catalog() *toolserver.Catalog { return s.catalog }

// PluginStatus lists the tool-declaring plugins, by alias.
func (s *Service) PluginStatus() []mcpserve.PluginStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]mcpserve.PluginStatus, 0, len(s.plugins))
	for _, alias := range s.aliases() {
		out = append(out, s.status(s.plugins[alias]))
	}
	return out
}

func (s *Service) status(p *pluginState) mcpserve.PluginStatus {
	st := mcpserve.PluginStatus{Alias: p.alias, State: p.state(), Tools: []string{}}
	if st.State == StateErrored {
		st.Detail = p.detail
	}
	for _, t := range p.tools {
		st.Tools = append(st.Tools, t.exposed)
	}
	sort.Strings(st.Tools)
	return st
}

// aliases lists the plugins' aliases, sorted. mu is held.
func (s *Service) aliases() []string {
	out := make([]string, 0, len(s.plugins))
	for a := range s.plugins {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// errDisabled is the cause of the calls cancelled by a disable.
var errDisabled = errors.New("the plugin was disabled")

// SetPluginEnabled enables or disables a tool-declaring plugin while the
// run is live. Disabling cancels its calls in flight; either change
// recomputes and publishes the catalog.
func (s *Service) SetPluginEnabled(_ context.Context, alias string, enabled bool) (mcpserve.PluginStatus, error) {
	s.mu.Lock()
	p, ok := s.plugins[alias]
	if !ok {
		known := strings.Join(s.aliases(), ", ")
		s.mu.Unlock()
		if known == "" {
			known = "none"
		}
		return mcpserve.PluginStatus{}, fmt.Errorf("no plugin %q contributes agent tools (plugins with agent_tools: %s)", alias, known)
	}
	var cancels []context.CancelCauseFunc
	changed := p.enabled != enabled
	p.enabled = enabled
	if !enabled {
		for _, c := range p.calls {
			cancels = append(cancels, c)
		}
	} else if changed && p.crashed {
		s.scheduleRespawn(p, 0)
	}
	s.mu.Unlock()
	for _, c := range cancels {
		c(errDisabled)
	}
	if changed {
		verb := "enabled"
		if !enabled {
			verb = "disabled"
		}
		s.logger.Info("plugin "+verb, "plugin", alias)
		s.publish(verb + " " + alias)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status(p), nil
}

// Reload replaces the plugin declarations with those of a reloaded story.
// The new tool declarations are checked first; if any is invalid, nothing
// changes and the previous plugins and tools stay in force. Plugins whose
// declaration changed get a new agent (the registry closes the old one,
// cancelling its calls); a plugin keeps a live enable/disable unless its
// declared enabled: changed.
func (s *Service) Reload(decls map[string]agent.Declaration) error {
	tools, err := buildTools(decls)
	if err != nil {
		return fmt.Errorf("reload refused, the previous plugins and tools stay in force: %w", err)
	}
	s.opts.Registry.Reconfigure(decls)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("plugintools: service is closed")
	}
	old := s.plugins
	s.plugins = map[string]*pluginState{}
	for alias, ts := range tools {
		d := decls[alias]
		enabled := d.Enabled
		prev, had := old[alias]
		if had && prev.decl.Enabled == d.Enabled {
			enabled = prev.enabled
		}
		p := s.newState(d, ts, enabled)
		if had && prev.proc != nil && prev.proc == p.proc {
			// The same agent and process: an errored plugin stays errored
			// (and keeps being restarted) until its process runs again.
			p.crashed, p.detail, p.seq, p.backoff = prev.crashed, prev.detail, prev.seq, prev.backoff
			if p.crashed && p.enabled {
				s.scheduleRespawn(p, p.backoff)
			}
		}
		s.plugins[alias] = p
	}
	s.mu.Unlock()
	for _, p := range old {
		s.retire(p)
	}
	s.publish("reload")
	return nil
}

// retire stops watching a replaced plugin state.
func (s *Service) retire(p *pluginState) {
	s.mu.Lock()
	if p.respawn != nil {
		p.respawn.Stop()
		p.respawn = nil
	}
	unwatch := p.unwatch
	p.unwatch = nil
	s.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
}

// Close stops respawning and watching; the registry closes the agents.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	plugins := make([]*pluginState, 0, len(s.plugins))
	for _, p := range s.plugins {
		plugins = append(plugins, p)
	}
	s.mu.Unlock()
	for _, p := range plugins {
		s.retire(p)
	}
	return nil
}

// processEvent follows a plugin process: a crash or failed spawn makes
// the plugin errored and schedules a respawn; a start makes it active
// again. Either republishes the catalog when the tool set changes.
func (s *Service) processEvent(p *pluginState, ev subprocess.ProcessEvent) {
	s.mu.Lock()
	if s.closed || s.plugins[p.alias] != p || ev.Seq < p.seq {
		s.mu.Unlock()
		return // a replaced plugin, or an earlier process than one already seen
	}
	p.seq = ev.Seq
	switch ev.Kind {
	case subprocess.ProcessStarted:
		if !p.crashed {
			s.mu.Unlock()
			return
		}
		p.crashed, p.detail, p.backoff = false, "", s.opts.RespawnDelay
		if p.respawn != nil {
			p.respawn.Stop()
			p.respawn = nil
		}
		s.mu.Unlock()
		s.logger.Info("plugin recovered", "plugin", p.alias, "pid", ev.PID)
		s.publish("recovered " + p.alias)
	case subprocess.ProcessCrashed, subprocess.ProcessSpawnFailed:
		p.crashed, p.detail = true, ev.Detail
		if p.enabled {
			s.scheduleRespawn(p, p.backoff)
		}
		s.mu.Unlock()
		s.logger.Warn("plugin errored; its tools are withdrawn until it respawns", "plugin", p.alias)
		s.publish("errored " + p.alias)
	default:
		s.mu.Unlock()
	}
}

// maxBackoff caps the wait between respawn attempts.
const maxBackoff = 30 * time.Second

// scheduleRespawn tries to start p's process after delay; a failure
// reports ProcessSpawnFailed, which schedules the next attempt with a
// doubled delay. mu is held.
func (s *Service) scheduleRespawn(p *pluginState, delay time.Duration) {
	if p.proc == nil || p.respawn != nil || s.closed {
		return
	}
	p.backoff = min(max(delay, s.opts.RespawnDelay)*2, maxBackoff)
	p.respawn = time.AfterFunc(delay, func() {
		s.mu.Lock()
		p.respawn = nil
		live := !s.closed && s.plugins[p.alias] == p && p.enabled && p.crashed
		s.mu.Unlock()
		if !live {
			return
		}
		if err := p.proc.Start(); err != nil {
			s.logger.Debug("plugin respawn failed", "plugin", p.alias, "err", err)
		}
	})
}

// publish recomputes the catalog from the active plugins and, if its
// tools (names and versions) changed, publishes it as the next revision.
func (s *Service) publish(why string) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	s.mu.Lock()
	var (
		tools []toolserver.CatalogTool
		key   strings.Builder
	)
	for _, alias := range s.aliases() {
		p := s.plugins[alias]
		if p.state() != StateActive {
			continue
		}
		for _, t := range p.tools {
			tools = append(tools, toolserver.CatalogTool{
				Tool:     toolserver.Tool{Def: t.def, Handler: s.handler(alias, t.decl.Name), Version: t.version},
				Plugin:   alias,
				Surfaces: t.surfaces,
			})
		}
	}
	slices.SortFunc(tools, func(a, b toolserver.CatalogTool) int { return strings.Compare(a.Def.Name, b.Def.Name) })
	for _, t := range tools {
		key.WriteString(t.Def.Name + "@" + t.Version + ",")
	}
	first := s.catalog.Current().Revision == 0
	if !first && key.String() == s.lastKey {
		s.mu.Unlock()
		return
	}
	s.lastKey = key.String()
	s.mu.Unlock()
	snap, err := s.catalog.Publish(tools)
	if err != nil {
		s.logger.Error("plugin-tool catalog not published", "why", why, "err", err)
		return
	}
	s.logger.Info("plugin-tool catalog published", "why", why, "generation", snap.Generation, "revision", snap.Revision, "tools", len(snap.Tools))
}
