// Package replay puts a cassette (internal/agents/cassette) in place of a
// story's agents and host handlers, and records live runs as cassettes.
// It holds the cassette's host-handler role, the installer that wires
// both roles into a registry and host, the Recorder and the conversion of
// a trace into a cassette: the parts that need internal/hosts/host or
// internal/load/story, which the agent transport must not import.
package replay

import "github.com/kitsoki/kitsoki/internal/agents/cassette"

// Cassette is a loaded cassette with its host-handler role and its
// installer (ReplayAgents, ReplayHandlers). It has every method of
// cassette.Cassette: they share one play state.
type Cassette struct {
	*cassette.Cassette

	// fallback reports whether a call that misses in replay mode goes to
	// the live handler the cassette replaced (FallBackTo); nil = never.
	fallback func(invoke string) bool
}

// FallBackTo makes the live handler answer the calls that match no episode
// when bound(invoke) is true, in every record mode: the episodes intercept
// first, the real handler is the miss fallback (a flow's host_bindings).
// Such a miss is not a cassette miss and is not appended. Call it before
// ReplayHandlers.
func (c *Cassette) FallBackTo(bound func(invoke string) bool) { c.fallback = bound }

// fallsBack reports whether a miss of invoke goes to the live handler.
func (c *Cassette) fallsBack(invoke string) bool { return c.fallback != nil && c.fallback(invoke) }

// Wrap gives a cassette its host-handler role.
func Wrap(c *cassette.Cassette) *Cassette { return &Cassette{Cassette: c} }

// Load is cassette.Load, wrapped.
func Load(path string, opts ...cassette.LoadOption) (*Cassette, error) {
	c, err := cassette.Load(path, opts...)
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}

// HandlerNames are the host handlers the cassette at path has episodes
// for (agent roles left out), read before the story loads so its invokes
// of them are not refused (story.WithReplayedHandlers). A cassette that
// does not read gives none: the replay's own load reports why.
func HandlerNames(path string) []string {
	c, err := cassette.Load(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, h := range c.Handlers() {
		if !IsAgentHandler(h) {
			out = append(out, h)
		}
	}
	return out
}

// New is cassette.New, wrapped.
func New(appID string, episodes []*cassette.Episode, opts ...cassette.LoadOption) (*Cassette, error) {
	c, err := cassette.New(appID, episodes, opts...)
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}
