package toolserver

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// CatalogTool is one plugin-contributed tool in a catalog snapshot: its
// MCP definition (named kitsoki_<slug>_<name>), handler and version, the
// plugin alias it belongs to, and the task surfaces it targets.
type CatalogTool struct {
	Tool
	Plugin   string
	Surfaces []Surface
}

// CatalogSnapshot is one revision of the plugin-tool catalog: the complete,
// sorted set of tools of every active plugin. Snapshots are immutable.
type CatalogSnapshot struct {
	// Generation identifies the kitsoki process that built the snapshot;
	// it is new at every start.
	Generation string
	// Revision grows by one with every published snapshot of a generation.
	Revision uint64
	// Tools are sorted by name.
	Tools []CatalogTool
}

// For returns the snapshot's tools that target surface, in name order.
func (s *CatalogSnapshot) For(surface Surface) []Tool {
	if s == nil {
		return nil
	}
	var out []Tool
	for _, t := range s.Tools {
		if slices.Contains(t.Surfaces, surface) {
			out = append(out, t.Tool)
		}
	}
	return out
}

// Names lists the snapshot's tool names, sorted.
func (s *CatalogSnapshot) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		out[i] = t.Def.Name
	}
	return out
}

// newerThan reports whether s must replace applied: a snapshot of another
// generation always does (kitsoki restarted); within one generation only a
// higher revision does.
func (s *CatalogSnapshot) newerThan(applied *CatalogSnapshot) bool {
	return applied == nil || s.Generation != applied.Generation || s.Revision > applied.Revision
}

// Catalog is the authoritative plugin-tool catalog of one kitsoki process.
// Whoever owns the plugins' lifecycle publishes a new snapshot after every
// change (a plugin enabled, disabled, crashed, respawned, a story reload);
// the catalog hands it to every live session attached to it, which
// filters it by its own surface and replaces its tool set atomically. No
// session, server or agent process restarts.
//
// Publish delivers outside its lock, so snapshots published concurrently
// may reach a session out of order; a session ignores a snapshot older
// than the one it applied (Session.ApplyCatalog).
type Catalog struct {
	gen    string
	logger *slog.Logger

	mu       sync.Mutex
	rev      uint64
	cur      *CatalogSnapshot
	sessions map[*Session]struct{}
}

// NewCatalog returns an empty catalog (revision 0) with a fresh generation
// id.
func NewCatalog(logger *slog.Logger) *Catalog {
	if logger == nil {
		logger = slog.Default()
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	gen := time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	c := &Catalog{gen: gen, logger: logger, sessions: map[*Session]struct{}{}}
	c.cur = &CatalogSnapshot{Generation: gen}
	return c
}

// Generation is the catalog's generation id.
func (c *Catalog) Generation() string { return c.gen }

// Current returns the latest snapshot.
func (c *Catalog) Current() *CatalogSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// Publish makes tools the next revision and delivers it to every attached
// session. Tools must have distinct names; they are sorted by name. It
// returns the published snapshot.
func (c *Catalog) Publish(tools []CatalogTool) (*CatalogSnapshot, error) {
	sorted := slices.Clone(tools)
	slices.SortFunc(sorted, func(a, b CatalogTool) int { return strings.Compare(a.Def.Name, b.Def.Name) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Def.Name == sorted[i-1].Def.Name {
			return nil, fmt.Errorf("mcp catalog: tool %q is published twice (plugins %s and %s)", sorted[i].Def.Name, sorted[i-1].Plugin, sorted[i].Plugin)
		}
	}
	c.mu.Lock()
	c.rev++
	snap := &CatalogSnapshot{Generation: c.gen, Revision: c.rev, Tools: sorted}
	c.cur = snap
	sessions := make([]*Session, 0, len(c.sessions))
	for s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	c.logger.Debug("mcp catalog published", "generation", snap.Generation, "revision", snap.Revision, "tools", len(snap.Tools), "sessions", len(sessions))
	for _, s := range sessions {
		s.ApplyCatalog(snap)
	}
	return snap, nil
}

// Sessions reports how many live sessions are attached.
func (c *Catalog) Sessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// attach subscribes s and returns the current snapshot, which s starts
// from.
func (c *Catalog) attach(s *Session) *CatalogSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions[s] = struct{}{}
	return c.cur
}

func (c *Catalog) detach(s *Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, s)
}

// ApplyCatalog replaces the session's plugin tools with snap, filtered by
// the session's surface, unless the session already applied a newer
// revision of the same generation (a delayed delivery must not restore
// tools a later snapshot removed). When the resulting tool set differs,
// it is swapped in at once with exactly one tools/list_changed. It
// reports whether snap was applied.
func (s *Session) ApplyCatalog(snap *CatalogSnapshot) bool {
	if snap == nil {
		return false
	}
	s.amu.Lock()
	defer s.amu.Unlock()
	if s.isClosed() {
		return false
	}
	if !snap.newerThan(s.applied) {
		s.cfg.Logger.Debug("mcp: ignoring an older catalog snapshot", "generation", snap.Generation,
			"revision", snap.Revision, "applied_revision", s.applied.Revision, "run", s.cfg.RunID)
		return false
	}
	s.applied = snap
	if p := s.Profile(); p.Surface != "" {
		s.apply(p)
	}
	return true
}

// AppliedCatalog returns the catalog snapshot the session applied last, or
// nil.
func (s *Session) AppliedCatalog() *CatalogSnapshot {
	s.amu.Lock()
	defer s.amu.Unlock()
	return s.applied
}
