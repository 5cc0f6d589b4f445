package story

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/usercache"
)

// Routing is the routing: block: how free text is turned into an intent
// (docs/runtime.md, "Free text"). Every key of Kitsoki's routing block is
// read; the tuning keys default as Kitsoki's do (Defaults).
type Routing struct {
	// Enabled turns on the semantic tiers (synonyms, templates, the
	// embedding tier, the turn cache); nil when the story does not say (the
	// run's --semantic-routing and KITSOKI_SEMANTIC_ROUTING win over it
	// either way).
	Enabled *bool
	// Agent is the agent_plugins alias of the router agent ("" = the run's
	// --router, else agent.claude).
	Agent string
	// MinConfidence is the router answer's bar; nil = the run's
	// --min-confidence, else 0.5.
	MinConfidence *float64
	// SemanticHighBar and SemanticMidBar band a semantic verdict: at or
	// above the high bar it is taken, at or above the mid bar the user is
	// asked to confirm or fill the missing slots, below it the next tier
	// runs. Zero means the default (0.80, 0.65).
	SemanticHighBar, SemanticMidBar float64
	// Cache is the turn cache (routing.cache_*); Enabled false when the
	// story does not ask for one.
	Cache TurnCache
	// StopwordsExtra extends the built-in stopword list of the synonym
	// matcher and the cache's signature (lower-cased).
	StopwordsExtra []string
	// ExtractLLMOnNoMatch asks ExtractLLMAgent (an agent_plugins alias,
	// default agent.local) to route the text when every tier before the
	// router missed.
	ExtractLLMOnNoMatch bool
	ExtractLLMAgent     string
	// Embedding is routing.embedding (nil when absent or disabled).
	Embedding *Embedding
	// FreeFormFallback is routing.free_form_fallback as written (nil when
	// absent; see freeform.go for the landing.work default).
	FreeFormFallback *FreeFormFallback
	Pos              Pos // where routing: is written (zero when absent)
}

// TurnCache is the routing.cache_* keys: the router's answers remembered
// per state and lexical signature, so the same phrasing is not asked twice.
type TurnCache struct {
	Enabled bool
	// MaxAge is how long a row is served after it was written (0: no
	// expiry). ConfidenceDecay halves it for rows below 0.7 confidence.
	MaxAge          time.Duration
	ConfidenceDecay bool
	// Cap is the number of rows kept; when a write exceeds it, the
	// TrimFraction least recently used rows are dropped.
	Cap          int
	TrimFraction float64
	// RevalidateStrikes is how many times in a row a cached answer may be
	// refused by the state (its intent no longer allowed, a slot no longer
	// valid) before the row is dropped.
	RevalidateStrikes int
}

// Embedding is routing.embedding: an embedding model ranks the routable
// intents against the text when the lexical tiers miss.
type Embedding struct {
	Endpoint string // a running embedding server ("" = a managed one for Model)
	Model    string // the embedding model id
	Dim      int    // vector truncation (0 = the model's default)
	// Tier is whether the embedding routing tier runs (enabled:, default
	// true); the embedder serves host.agent.search's corpus form either way.
	Tier bool
	// CacheDir is where vectors are kept across runs, by model and text
	// (cache_dir: resolved inside the workspace or the user cache
	// directory); "" keeps them in memory for the run.
	CacheDir string
	// ConfidentBar is the top cosine needed (default 0.82); Margin the gap
	// to the second (default 0.08).
	ConfidentBar, Margin float64
	Pos                  Pos
}

// Routing defaults, as Kitsoki's.
const (
	DefaultSemanticHighBar   = 0.80
	DefaultSemanticMidBar    = 0.65
	DefaultCacheMaxAge       = 30 * 24 * time.Hour
	DefaultCacheCap          = 10000
	DefaultCacheTrimFraction = 0.10
	DefaultRevalidateStrikes = 3
	DefaultExtractLLMAgent   = "agent.local"
	DefaultEmbeddingModel    = "nomic-embed-text-v1.5"
	DefaultConfidentBar      = 0.82
	DefaultMargin            = 0.08
)

// Bars are the semantic high and mid bars, defaults filled in.
func (r *Routing) Bars() (high, mid float64) {
	high, mid = r.SemanticHighBar, r.SemanticMidBar
	if high == 0 {
		high = DefaultSemanticHighBar
	}
	if mid == 0 {
		mid = DefaultSemanticMidBar
	}
	return high, mid
}

var routingKeys = &keySpec{v1: []string{"enabled", "agent", "min_confidence", "semantic_high_bar", "semantic_mid_bar",
	"cache_enabled", "cache_max_age", "cache_cap", "cache_trim_fraction", "revalidate_strikes", "confidence_decay",
	"stopwords_extra", "extract_llm_on_no_match", "extract_llm_agent", "embedding", "free_form_fallback"}}

// embeddingKeys are the keys of routing.embedding.
var embeddingKeys = &keySpec{v1: []string{"enabled", "endpoint", "model", "dim", "cache_dir", "confident_bar", "margin"}}

// loadRouting reads the top-level routing: block.
func (l *loader) loadRouting(f *file, e entry) {
	if !l.once(f, e) {
		return
	}
	r := &l.st.Routing
	r.Pos = l.pos(f, e.key)
	fs, ok := l.fields(f, e.val, "routing", routingKeys)
	if !ok {
		return
	}
	if v, ok := fs.get("enabled"); ok {
		if b, ok := l.boolean(f, v.val, "routing.enabled"); ok {
			r.Enabled = &b
		}
	}
	if v, ok := fs.get("agent"); ok {
		if s, ok := l.str(f, v.val, "routing.agent"); ok {
			if s == "" {
				l.errAt(f, v.val, "routing.agent", "routing.agent is empty; name an agent_plugins alias (e.g. agent.claude)")
			}
			r.Agent = s
			l.routingAgent = &nodeRef{f: f, n: v.val, path: "routing.agent", value: s}
		}
	}
	if v, ok := fs.get("min_confidence"); ok {
		if c, ok := l.fraction(f, v.val, "routing.min_confidence"); ok {
			r.MinConfidence = &c
		}
	}
	l.loadBars(f, fs, r)
	l.loadCache(f, fs, &r.Cache)
	if strListField(l, f, fs, "routing", "stopwords_extra", &r.StopwordsExtra) {
		for i, w := range r.StopwordsExtra {
			r.StopwordsExtra[i] = strings.ToLower(strings.TrimSpace(w))
		}
	}
	boolField(l, f, fs, "routing", "extract_llm_on_no_match", &r.ExtractLLMOnNoMatch)
	r.ExtractLLMAgent = DefaultExtractLLMAgent
	if v, ok := fs.get("extract_llm_agent"); ok {
		strField(l, f, fs, "routing", "extract_llm_agent", &r.ExtractLLMAgent)
		if r.ExtractLLMAgent == "" {
			l.errAt(f, v.val, "routing.extract_llm_agent", "routing.extract_llm_agent is empty; name an agent_plugins alias (default agent.local)")
		}
		if !r.ExtractLLMOnNoMatch {
			l.warnAt(f, v.key, "routing.extract_llm_agent", "routing.extract_llm_agent has no effect unless routing.extract_llm_on_no_match is true")
		}
	}
	if r.ExtractLLMOnNoMatch {
		n := e.key
		if v, ok := fs.get("extract_llm_agent"); ok {
			n = v.val
		} else if v, ok := fs.get("extract_llm_on_no_match"); ok {
			n = v.val
		}
		l.extractAgent = &nodeRef{f: f, n: n, path: "routing.extract_llm_agent", value: r.ExtractLLMAgent}
	}
	if v, ok := fs.get("embedding"); ok {
		r.Embedding = l.loadEmbedding(f, v.val)
	}
	if v, ok := fs.get("free_form_fallback"); ok {
		l.loadFallback(f, v.val)
	}
}

// loadBars reads semantic_high_bar and semantic_mid_bar: numbers from 0
// to 1, the mid bar below the high one.
func (l *loader) loadBars(f *file, fs fieldSet, r *Routing) {
	hv, hasHigh := fs.get("semantic_high_bar")
	if hasHigh {
		r.SemanticHighBar, _ = l.fraction(f, hv.val, "routing.semantic_high_bar")
	}
	mv, hasMid := fs.get("semantic_mid_bar")
	if hasMid {
		r.SemanticMidBar, _ = l.fraction(f, mv.val, "routing.semantic_mid_bar")
	}
	if high, mid := r.Bars(); (hasHigh || hasMid) && mid >= high {
		at := mv
		if !hasMid {
			at = hv
		}
		l.errAt(f, at.val, "routing.semantic_mid_bar", "routing.semantic_mid_bar (%v) must be below routing.semantic_high_bar (%v): verdicts between them ask the user to confirm", mid, high)
	}
}

// loadCache reads the turn cache keys. A tuning key without
// cache_enabled: true is a warning: the cache is off.
func (l *loader) loadCache(f *file, fs fieldSet, c *TurnCache) {
	const path = "routing"
	*c = TurnCache{MaxAge: DefaultCacheMaxAge, Cap: DefaultCacheCap, TrimFraction: DefaultCacheTrimFraction, RevalidateStrikes: DefaultRevalidateStrikes}
	boolField(l, f, fs, path, "cache_enabled", &c.Enabled)
	boolField(l, f, fs, path, "confidence_decay", &c.ConfidenceDecay)
	if v, ok := fs.get("cache_max_age"); ok {
		if d, ok := l.duration(f, v.val, "routing.cache_max_age"); ok {
			c.MaxAge = d
		}
	}
	for key, dst := range map[string]*int{"cache_cap": &c.Cap, "revalidate_strikes": &c.RevalidateStrikes} {
		if v, ok := fs.get(key); ok {
			if n, ok := l.integer(f, v.val, joinPath(path, key)); ok {
				if n < 1 {
					l.errAt(f, v.val, joinPath(path, key), "routing.%s must be a whole number of at least 1, got %d", key, n)
					continue
				}
				*dst = int(n)
			}
		}
	}
	if v, ok := fs.get("cache_trim_fraction"); ok {
		if x, ok := l.fraction(f, v.val, "routing.cache_trim_fraction"); ok {
			if x == 0 {
				l.errAt(f, v.val, "routing.cache_trim_fraction", "routing.cache_trim_fraction must be above 0 (the share of cache_cap dropped when it is full), got 0")
			} else {
				c.TrimFraction = x
			}
		}
	}
	if c.Enabled {
		return
	}
	for _, key := range []string{"cache_max_age", "cache_cap", "cache_trim_fraction", "revalidate_strikes", "confidence_decay"} {
		if v, ok := fs.get(key); ok {
			l.warnAt(f, v.key, joinPath(path, key), "routing.%s has no effect: the turn cache is off unless routing.cache_enabled is true", key)
		}
	}
}

// loadEmbedding reads routing.embedding. It configures the embedding
// tier unless enabled: false; endpoint or model must say which embedder.
func (l *loader) loadEmbedding(f *file, n *yaml.Node) *Embedding {
	const path = "routing.embedding"
	fs, ok := l.fields(f, n, path, embeddingKeys)
	if !ok {
		return nil
	}
	on := true
	boolField(l, f, fs, path, "enabled", &on)
	em := &Embedding{ConfidentBar: DefaultConfidentBar, Margin: DefaultMargin, Pos: l.pos(f, deref(n))}
	strField(l, f, fs, path, "endpoint", &em.Endpoint)
	strField(l, f, fs, path, "model", &em.Model)
	if v, ok := fs.get("cache_dir"); ok {
		em.CacheDir = l.cacheDir(f, v.val, joinPath(path, "cache_dir"))
	}
	if v, ok := fs.get("dim"); ok {
		if d, ok := l.integer(f, v.val, joinPath(path, "dim")); ok {
			if d <= 0 {
				l.errAt(f, v.val, joinPath(path, "dim"), "dim must be a positive whole number, got %d", d)
			}
			em.Dim = int(d)
		}
	}
	for key, dst := range map[string]*float64{"confident_bar": &em.ConfidentBar, "margin": &em.Margin} {
		if v, ok := fs.get(key); ok {
			if x, ok := l.fraction(f, v.val, joinPath(path, key)); ok {
				*dst = x
			}
		}
	}
	em.Tier = on
	if em.Endpoint == "" && em.Model == "" {
		// Kitsoki: an embedding block naming neither leaves the tier off.
		if on {
			l.warnAt(f, n, path, "routing.embedding names neither endpoint nor model: the embedding tier is off (set endpoint: to a running embedding server, or model: for a managed one)")
		}
		return nil
	}
	if em.Model == "" {
		em.Model = DefaultEmbeddingModel
	}
	return em
}

// cacheDir reads routing.embedding.cache_dir: a directory relative to the
// workspace root (or absolute), inside the workspace or the user cache
// directory ($KITSOKI_CACHE_DIR, else kitsoki/ under the OS's cache
// directory). It need not exist: the first vector written makes it.
func (l *loader) cacheDir(f *file, n *yaml.Node, path string) string {
	d, ok := l.str(f, n, path)
	if !ok {
		return ""
	}
	if strings.TrimSpace(d) == "" {
		l.errAt(f, n, path, "cache_dir is empty; name a directory for the embedding cache (e.g. .kitsoki/cache/embeddings), or remove the key to keep vectors in memory")
		return ""
	}
	ws := l.st.Workspace
	if ws.IsZero() {
		return ""
	}
	roots := ws
	user := userCacheDir()
	if user != "" {
		roots = ws.With(user)
	}
	real, err := roots.Resolve(ws.Dir(), d)
	if err != nil {
		where := "the workspace " + ws.Dir()
		if user != "" {
			where += " or the user cache directory " + user
		}
		l.errAt(f, n, path, "cache_dir %q must be inside %s (a path relative to the workspace root, or one under the user cache directory): %v", d, where, err)
		return ""
	}
	return real
}

// userCacheDir is kitsoki's directory in the user cache, symlinks
// resolved ("" when the OS has none).
func userCacheDir() string {
	d, err := usercache.Dir()
	if err != nil {
		return ""
	}
	if abs, err := filepath.Abs(d); err == nil {
		d = abs
	}
	if real, err := filepath.EvalSymlinks(d); err == nil {
		d = real
	}
	return d
}

// fraction reads a number from 0 to 1.
func (l *loader) fraction(f *file, n *yaml.Node, path string) (float64, bool) {
	x, _ := l.value(f, n, path)
	var c float64
	switch v := x.(type) {
	case int:
		c = float64(v)
	case int64:
		c = float64(v)
	case float64:
		c = v
	default:
		l.errAt(f, n, path, "%s must be a number from 0 to 1, got %s", lastSeg(path), kindName(deref(n)))
		return 0, false
	}
	if c < 0 || c > 1 {
		l.errAt(f, n, path, "%s must be from 0 to 1, got %v", lastSeg(path), c)
		return 0, false
	}
	return c, true
}

// duration reads a duration: "30d", "12h", "90s" (or 0 for none).
func (l *loader) duration(f *file, n *yaml.Node, path string) (time.Duration, bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode {
		l.errAt(f, n, path, "%s must be a duration such as \"30d\", \"12h\" or \"90s\", got %s", lastSeg(path), kindName(d))
		return 0, false
	}
	if d.Value == "0" {
		return 0, true
	}
	v, err := ParseDuration(d.Value)
	if err != nil || v < 0 {
		l.errAt(f, d, path, "%s must be a duration such as \"30d\", \"12h\" or \"90s\" (0 for none), got %q", lastSeg(path), d.Value)
		return 0, false
	}
	return v, true
}

func lastSeg(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// checkRoutingAgents checks routing.agent and, when the extraction tier is
// on, routing.extract_llm_agent name declared agent plugins.
func (l *loader) checkRoutingAgents() {
	for _, r := range []*nodeRef{l.routingAgent, l.extractAgent} {
		if r == nil || r.value == "" {
			continue
		}
		if _, ok := l.st.Plugins[r.value]; ok {
			continue
		}
		names := slices.Sorted(maps.Keys(l.st.Plugins))
		l.errAt(r.f, r.n, r.path, "%s %q is not declared in agent_plugins%s (declared: %s)", r.path, r.value, didYouMean(r.value, names), strings.Join(names, ", "))
	}
}
