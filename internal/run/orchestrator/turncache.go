package orchestrator

import (
	"maps"
	"sort"
	"time"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// TierCache is the tier that answers from the turn cache.
const TierCache = "cache"

// turnCache remembers the answers of the model tiers (the router, the
// extraction call) per state and lexical signature, as the story's
// routing.cache_* keys say: rows expire after max age (halved below 0.7
// confidence with confidence_decay), the least recently used are trimmed
// when the cap is passed, and a row the state refuses revalidate_strikes
// times in a row is dropped. It lives as long as the session.
type turnCache struct {
	cfg  story.TurnCache
	rows map[string]*cacheRow
	tick uint64 // use order
}

type cacheRow struct {
	intent     string
	slots      map[string]any
	confidence float64
	written    time.Time
	used       uint64
	strikes    int
}

func newTurnCache(cfg story.TurnCache) *turnCache {
	return &turnCache{cfg: cfg, rows: map[string]*cacheRow{}}
}

func cacheKey(state, sig string) string { return state + "\x00" + sig }

// maxAge is the row's lifetime (0: none).
func (c *turnCache) maxAge(r *cacheRow) time.Duration {
	if c.cfg.ConfidenceDecay && r.confidence < 0.7 {
		return c.cfg.MaxAge / 2
	}
	return c.cfg.MaxAge
}

// get returns the live row for key, dropping it when it has expired.
func (c *turnCache) get(key string, now time.Time) *cacheRow {
	r := c.rows[key]
	if r == nil {
		return nil
	}
	if age := c.maxAge(r); age > 0 && now.Sub(r.written) >= age {
		delete(c.rows, key)
		return nil
	}
	c.tick++
	r.used = c.tick
	return r
}

// strike counts a refusal of the row; it reports whether the row was
// dropped.
func (c *turnCache) strike(key string) bool {
	r := c.rows[key]
	if r == nil {
		return false
	}
	r.strikes++
	if r.strikes >= c.cfg.RevalidateStrikes {
		delete(c.rows, key)
		return true
	}
	return false
}

// put writes a row, trimming the coldest rows when the cap is passed.
func (c *turnCache) put(key string, r Route, now time.Time) {
	c.tick++
	c.rows[key] = &cacheRow{intent: r.Intent, slots: maps.Clone(r.Slots), confidence: r.Confidence, written: now, used: c.tick}
	if len(c.rows) <= c.cfg.Cap {
		return
	}
	n := max(1, int(float64(c.cfg.Cap)*c.cfg.TrimFraction))
	keys := make([]string, 0, len(c.rows))
	for k := range c.rows {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.rows[keys[i]].used < c.rows[keys[j]].used })
	for _, k := range keys[:min(n, len(keys))] {
		delete(c.rows, k)
	}
}

// Len is the number of rows (tests).
func (c *turnCache) Len() int { return len(c.rows) }

// cacheLookup answers from the turn cache when the story keeps one: the
// row for this state and signature, if the state still takes it (a row
// refused too many times in a row is dropped).
func (s *Session) cacheLookup(text string) (Route, bool) {
	if s.cache == nil {
		return Route{}, false
	}
	key := cacheKey(s.state, s.Signature(text))
	r := s.cache.get(key, s.clock.Now())
	if r == nil {
		return Route{}, false
	}
	if rej := s.Check(r.intent, r.slots); rej != nil && rej.Code != CodeMissingSlots {
		s.cache.strike(key)
		return Route{}, false
	}
	r.strikes = 0
	return Route{Tier: TierCache, Intent: r.intent, Slots: maps.Clone(r.slots), Confidence: r.confidence}, true
}

// cacheStore remembers a model tier's accepted answer.
func (s *Session) cacheStore(text string, r Route) {
	if s.cache == nil || r.Intent == "" || r.Rejection != nil {
		return
	}
	s.cache.put(cacheKey(s.state, s.Signature(text)), r, s.clock.Now())
}
