// Package cassette is the host cassette (cassettes-and-flows.md): the file
// format (parse with !include and .zst, encode, secrets masking, request
// hashes, delays, episode matching, new_episodes appends) and its agent
// transport, an agent.Agent that answers agent calls from recorded
// episodes in place of a declared plugin (NewAgent, Cassette.Agent).
//
// It imports neither internal/hosts/host nor internal/load/story; the cassette's
// host-handler role, its installer, the recorder and the conversion of a
// trace into a cassette are internal/run/replay.
package cassette

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/base/yamlnode"
	"github.com/kitsoki/kitsoki/plugin"
)

// CassetteKind is the required value of a cassette's kind: field.
const CassetteKind = "host_cassette"

// Record modes (cassettes-and-flows.md §4).
const (
	ModeNone        = "none"
	ModeNewEpisodes = "new_episodes"
)

// Environment variables that change how a cassette is played.
const (
	// EnvRecord overrides the cassette's record_mode.
	EnvRecord = "KITSOKI_CASSETTE_RECORD"
	// EnvStrict set to 1 or true makes any record mode but none a setup
	// error, so CI never records by accident.
	EnvStrict = "KITSOKI_CASSETTE_STRICT"
)

// Cassette is a loaded host cassette: the file's fields, its episodes, and
// the play state both roles share (which episodes played, how often).
// A Cassette is safe for concurrent use.
type Cassette struct {
	Path        string // the file it was loaded from; "" when built in memory
	Kind        string
	AppID       string // used in cassette call_ids; "" means the story's app id
	AppVersion  string
	SourceRun   string
	GeneratedAt string
	MatchOn     any // informational, not enforced
	RecordMode  string
	PhaseFrom   string
	Episodes    []*Episode

	mode    string // effective record mode (after KITSOKI_CASSETTE_RECORD)
	strict  bool   // WithStrictRequests: an episode recorded for another request does not match
	phaseRe *regexp.Regexp
	clock   clock.Clock
	doc     *yaml.Node            // the file as parsed, includes unexpanded: appends edit it
	keys    map[string]*yaml.Node // the top-level keys' values, for errors about them (nil when built in memory)
	mask    *secret.Masker        // what every written cassette masks (WithSecrets)

	mu       sync.Mutex
	plays    []int                        // per episode
	pending  map[*agent.AskRequest]Picked // SelectEpisode → Ask
	misses   []string
	warnings []string
	appended bool  // new_episodes appended to doc in this process
	writeErr error // first failure to append to the file
}

// Episode is one recorded exchange.
type Episode struct {
	ID    string
	Match map[string]any // every entry must hold for the episode to answer
	// RequestHash is the hash of the request the episode was recorded for
	// (see agentRequestHash, HostRequestHash); "" in cassettes written
	// without one, which replay without the check.
	RequestHash string
	Response    Response
	// Delay is slept (on the cassette's clock) before answering.
	Delay     time.Duration
	DelayText string // as written, kept when the cassette is rewritten
	// Reusable is replay: any: the episode answers any number of calls.
	Reusable bool
	// Agent describes the agent exchange (host.agent.* and agent.* episodes).
	Agent *AgentBlock
	// Line and Col are the episode's place in the file, Path its key path
	// (episodes[i]); zero when built in memory.
	Line, Col int
	Path      string

	matchEnc map[string]string // JSON encodings of Match values
}

// Response is what an episode answers: data and/or a domain error, or an
// infrastructure failure.
type Response struct {
	Data       map[string]any
	HasData    bool // data: was written (an empty map counts)
	Error      string
	InfraError string
}

// AgentBlock is an episode's agent: block.
type AgentBlock struct {
	Verb           string  `yaml:"verb,omitempty"`
	Agent          string  `yaml:"agent,omitempty"`
	Model          string  `yaml:"model,omitempty"`
	Turn           int64   `yaml:"turn,omitempty"`
	DurationMS     int64   `yaml:"duration_ms,omitempty"`
	PromptTokens   int64   `yaml:"prompt_tokens,omitempty"`
	ResponseTokens int64   `yaml:"response_tokens,omitempty"`
	CostUSD        float64 `yaml:"cost_usd,omitempty"`
	SystemPrompt   string  `yaml:"system_prompt,omitempty"`
	Prompt         string  `yaml:"prompt,omitempty"`
	Input          any     `yaml:"input,omitempty"`
	// Response is the agent's answer: JSON text or plain text.
	Response string `yaml:"response,omitempty"`
	// Submission, when set, is the exact submission the agent role hands
	// the host, in place of Response's JSON-or-string rule. The recorder
	// writes it only for a submission that rule cannot reproduce byte for
	// byte (a JSON number, boolean or null, a JSON string whose text starts
	// with { or [, a string escaped differently from Go's encoder), so
	// record then replay stays exact.
	Submission string `yaml:"submission,omitempty"`
	Error      string `yaml:"error,omitempty"`
	// CallID is advisory: the call_id is always recomputed.
	CallID string `yaml:"call_id,omitempty"`
	// Transcript is the call's recorded agent-action transcript: a replay
	// writes it to the trace's transcripts/ sidecar, byte for byte.
	Transcript *Transcript `yaml:"transcript,omitempty"`
}

// Transcript is an agent block's transcript: the transport's own event
// stream of the call, each event one line of JSON (kept as written), and
// the millisecond offset of each event's capture (optional, at most one
// per event).
type Transcript struct {
	Format  string   `yaml:"format,omitempty"`
	Events  []string `yaml:"events,omitempty"`
	Timings []int64  `yaml:"timings,omitempty,flow"`
}

// Trace is the transcript as an agent response and the trace carry it
// (nil for a transcript with no events).
func (t *Transcript) Trace() *plugin.Transcript {
	if t == nil || len(t.Events) == 0 {
		return nil
	}
	out := &plugin.Transcript{Format: t.Format, Events: make([]json.RawMessage, len(t.Events)), Timings: slices.Clone(t.Timings)}
	for i, e := range t.Events {
		out.Events[i] = json.RawMessage(e)
	}
	return out
}

// TranscriptOf is a response's transcript as an agent block records it
// (nil when there is none).
func TranscriptOf(t *plugin.Transcript) *Transcript {
	if t == nil || len(t.Events) == 0 {
		return nil
	}
	out := &Transcript{Format: t.Format, Events: make([]string, len(t.Events)), Timings: slices.Clone(t.Timings)}
	for i, e := range t.Events {
		out.Events[i] = string(e)
	}
	return out
}

// LoadOption configures how a cassette is loaded and played.
type LoadOption func(*loadOptions)

type loadOptions struct {
	clock   clock.Clock
	getenv  func(string) string
	secrets []string
	strict  bool
}

// WithStrictRequests makes an episode whose request_hash differs from the
// request's a non-match (`--cassette-strict`): the call misses with the
// mismatch as its message, instead of being answered with a warning.
func WithStrictRequests(strict bool) LoadOption {
	return func(o *loadOptions) { o.strict = strict }
}

// WithClock sets the clock episode delays are slept on. A clock with an
// Advance(time.Duration) method (clock.Fake) makes delays instant: the
// clock jumps instead. The default is the wall clock.
func WithClock(c clock.Clock) LoadOption {
	return func(o *loadOptions) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithGetenv sets how KITSOKI_CASSETTE_RECORD and KITSOKI_CASSETTE_STRICT
// are read (default os.Getenv).
func WithGetenv(f func(string) string) LoadOption {
	return func(o *loadOptions) {
		if f != nil {
			o.getenv = f
		}
	}
}

func newLoadOptions(opts []LoadOption) loadOptions {
	o := loadOptions{clock: clock.System{}, getenv: os.Getenv}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Load reads a cassette file (.yaml, or .yaml.zst compressed),
// expands its !include values, checks it, and applies the record-mode
// environment variables.
func Load(path string, opts ...LoadOption) (*Cassette, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %q: %w", path, err)
	}
	return Parse(b, path, opts...)
}

// Parse parses cassette bytes; path names the file in errors and
// anchors !include paths (its directory).
func Parse(b []byte, path string, opts ...LoadOption) (*Cassette, error) {
	c, err := parseCassette(b, path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", yamlnode.InFile(path, err))
	}
	if err := c.prepare(newLoadOptions(opts)); err != nil {
		return nil, fmt.Errorf("cassette: %w", yamlnode.InFile(path, err))
	}
	return c, nil
}

// New builds a cassette in memory (tests, recorders) and prepares it
// for play like a loaded one.
func New(appID string, episodes []*Episode, opts ...LoadOption) (*Cassette, error) {
	c := &Cassette{Kind: CassetteKind, AppID: appID, Episodes: episodes}
	if err := c.prepare(newLoadOptions(opts)); err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	return c, nil
}

// keyErr is an error about a top-level key: at its value in the file when
// the cassette was read from one.
func (c *Cassette) keyErr(key, format string, args ...any) error {
	if n := c.keys[key]; n != nil {
		return yamlnode.At(n, key, format, args...)
	}
	return fmt.Errorf("%s: %w", key, fmt.Errorf(format, args...))
}

// prepare checks the episodes, resolves the record mode and compiles what
// matching needs.
func (c *Cassette) prepare(o loadOptions) error {
	c.clock = o.clock
	c.mask = secret.New(o.secrets)
	c.strict = o.strict
	if c.Kind == "" {
		c.Kind = CassetteKind
	}
	mode := c.RecordMode
	src := "record_mode"
	if env := strings.TrimSpace(o.getenv(EnvRecord)); env != "" {
		mode, src = env, EnvRecord
	}
	switch mode {
	case "", ModeNone:
		c.mode = ModeNone
	case ModeNewEpisodes:
		c.mode = ModeNewEpisodes
	default:
		const valid = `valid values are "none" or "new_episodes"`
		if src == EnvRecord {
			return fmt.Errorf("%s: record_mode %q is not supported; %s", EnvRecord, mode, valid)
		}
		return c.keyErr("record_mode", "%q is not supported; %s", mode, valid)
	}
	if s := strings.TrimSpace(o.getenv(EnvStrict)); (s == "1" || strings.EqualFold(s, "true")) && c.mode != ModeNone {
		return fmt.Errorf("%s=1 but cassette record mode is %q", EnvStrict, c.mode)
	}
	if c.PhaseFrom != "" {
		re, err := regexp.Compile(c.PhaseFrom)
		if err != nil {
			return c.keyErr("phase_from", "%w", err)
		}
		if re.NumSubexp() < 1 {
			return c.keyErr("phase_from", "%q has no capture group; its first group is the phase", c.PhaseFrom)
		}
		c.phaseRe = re
	}
	for _, ep := range c.Episodes {
		if err := ep.prepare(); err != nil {
			return err
		}
	}
	c.plays = make([]int, len(c.Episodes))
	c.pending = map[*agent.AskRequest]Picked{}
	return nil
}

// errorf is an error about the episode's key sub (under it; "" for the
// episode itself): at its place in the file when it has one.
func (ep *Episode) errorf(sub, format string, args ...any) error {
	if ep.Line == 0 {
		return fmt.Errorf("episode %q: %w", ep.ID, fmt.Errorf(format, args...))
	}
	path := ep.Path
	if sub != "" {
		path += "." + sub
	}
	e := yamlnode.At(nil, path, format, args...)
	e.Line, e.Col = ep.Line, ep.Col
	return e
}

// prepare checks an episode's response and normalises its values to the
// types a live answer has (JSON numbers as int64 or float64).
func (ep *Episode) prepare() error {
	r := &ep.Response
	if r.InfraError != "" && (r.HasData || r.Error != "") {
		return ep.errorf("response.infra_error", "cannot be combined with data or error")
	}
	if !r.HasData && r.Error == "" && r.InfraError == "" && ep.Agent == nil {
		return ep.errorf("", "needs a response: data, error or infra_error (or an agent: block)")
	}
	if r.HasData {
		v, err := NormalizeJSON(r.Data)
		if err != nil {
			return ep.errorf("response.data", "%w", err)
		}
		r.Data, _ = v.(map[string]any)
		if r.Data == nil {
			r.Data = map[string]any{}
		}
	}
	ep.matchEnc = make(map[string]string, len(ep.Match))
	for k, v := range ep.Match {
		j, err := json.Marshal(v)
		if err != nil {
			return ep.errorf("match."+k, "%w", err)
		}
		ep.matchEnc[k] = string(j)
	}
	return nil
}

// NormalizeJSON round-trips v through JSON so numbers become int64 or
// float64 and maps map[string]any, as in a decoded live answer.
func NormalizeJSON(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return schema.Decode(b)
}

// Mode is the effective record mode: none or new_episodes.
func (c *Cassette) Mode() string { return c.mode }

// Handlers lists the distinct match.handler values of the episodes, in
// first-seen order.
func (c *Cassette) Handlers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, ep := range c.Episodes {
		h, ok := ep.Match["handler"].(string)
		if ok && h != "" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// HasHandler reports whether some episode names handler.
func (c *Cassette) HasHandler(handler string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ep := range c.Episodes {
		if h, _ := ep.Match["handler"].(string); h == handler {
			return true
		}
	}
	return false
}

// Phase is the phase of a state path: the first capture of phase_from
// ("" when it does not match), else the first dot segment.
func (c *Cassette) Phase(state string) string {
	if c.phaseRe != nil {
		if m := c.phaseRe.FindStringSubmatch(state); len(m) > 1 {
			return m[1]
		}
		return ""
	}
	first, _, _ := strings.Cut(state, ".")
	return first
}

// Remaining lists the ids of episodes that never played.
func (c *Cassette) Remaining() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for i, ep := range c.Episodes {
		if c.plays[i] == 0 {
			out = append(out, ep.ID)
		}
	}
	return out
}

// TakeMisses returns the miss messages recorded since the last call and
// forgets them. The flow runner adds them to the turn's failures.
func (c *Cassette) TakeMisses() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.misses
	c.misses = nil
	return out
}

// TakeWarnings returns the warnings recorded since the last call (episodes
// that answered a request other than the one they were recorded for) and
// forgets them.
func (c *Cassette) TakeWarnings() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.warnings
	c.warnings = nil
	return out
}

func (c *Cassette) addMiss(msg string) {
	c.mu.Lock()
	c.misses = append(c.misses, msg)
	c.mu.Unlock()
}

// cloneNode deep-copies a YAML node tree.
func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = cloneNode(ch)
	}
	return &c
}
