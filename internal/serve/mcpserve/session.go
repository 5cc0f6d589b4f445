// Package mcpserve is the MCP surface kitsoki serves to outside clients:
// the configuration tools (validate and inspect stories, list their agent
// plugins, compile schemas, and, in a run started with --control-mcp, the
// live plugin controls) and the external surface's create_task. `kitsoki
// mcp serve` runs Serve; `kitsoki run --control-mcp` opens a session with
// Open. It loads stories, so it sits above the loader; the sessions, the
// HTTP endpoint and the profiles it runs on are internal/agents/toolserver's,
// which no story code reaches.
package mcpserve

import (
	"fmt"
	"log/slog"

	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
)

// The tool groups of the outside surface, in the order they are assembled
// (GroupSessions last).
const (
	GroupConfiguration = "configuration"
	GroupExternal      = "external"
)

// Config describes one session of the outside surface: its profile and what
// its tools read and call.
type Config struct {
	// Profile is the configuration or external surface; live surfaces
	// belong to an agent call and are refused.
	Profile toolserver.Profile
	// Root is the directory the tools may read; paths outside it are
	// refused. "" means the working directory.
	Root string
	// Workspace is the directory every file a story loaded by a tool reads
	// must stay inside ("" = Root).
	Workspace string
	// LoadStory backs the story tools (validate, inspect, list plugins),
	// which are left out without it; StartRun backs create_task, left out
	// without it.
	LoadStory StoryLoader
	StartRun  RunStarter
	// Sessions backs the session tools (external surface), left out
	// without it.
	Sessions Sessions
	// Plugins, if set, adds the live plugin controls (status, enable,
	// disable) to the configuration tools.
	Plugins PluginControl
	// Secrets are masked in every tool result (internal/base/secret), besides
	// the secrets of each story a tool loads.
	Secrets []string
	Logger  *slog.Logger
}

// surface is the state the outside surface's tool handlers read.
type surface struct{ cfg Config }

// Registry returns the tool registry of the outside surface, whose groups
// are backed by cfg: configuration (both surfaces) and external.
func Registry(cfg Config) (*toolserver.Registry, error) {
	s := &surface{cfg: cfg}
	return toolserver.NewRegistry(
		toolserver.Group{Name: GroupConfiguration, Register: s.configurationTools,
			Enabled: func(p toolserver.Profile) bool {
				return p.Surface == toolserver.Configuration || p.Surface == toolserver.External
			}},
		toolserver.Group{Name: GroupExternal, Register: s.externalTools,
			Enabled: func(p toolserver.Profile) bool { return p.Surface == toolserver.External }},
		toolserver.Group{Name: GroupSessions, Register: s.sessionTools,
			Enabled: func(p toolserver.Profile) bool { return p.Surface == toolserver.External }},
	)
}

// NewSession builds a session of the outside surface, not yet served
// (serve it on stdio through its MCPServer, or attach it to an
// HTTPServer).
func NewSession(cfg Config) (*toolserver.Session, error) {
	sc, err := sessionConfig(cfg)
	if err != nil {
		return nil, err
	}
	return toolserver.NewSession(sc)
}

// Open builds a session of the outside surface on h, with a fresh bearer
// token (Session.Token).
func Open(h *toolserver.HTTPServer, cfg Config) (*toolserver.Session, error) {
	sc, err := sessionConfig(cfg)
	if err != nil {
		return nil, err
	}
	return h.Open(sc)
}

func sessionConfig(cfg Config) (toolserver.SessionConfig, error) {
	if cfg.Profile.Surface.Live() {
		return toolserver.SessionConfig{}, fmt.Errorf("mcp session: surface %s acts on a live agent call; the outside surface offers %s or %s",
			cfg.Profile.Surface, toolserver.Configuration, toolserver.External)
	}
	reg, err := Registry(cfg)
	if err != nil {
		return toolserver.SessionConfig{}, err
	}
	return toolserver.SessionConfig{Profile: cfg.Profile, Registry: reg, Secrets: cfg.Secrets, Logger: cfg.Logger}, nil
}
