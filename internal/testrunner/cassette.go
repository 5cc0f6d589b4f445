package testrunner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/clock"
	"github.com/kitsoki/kitsoki/internal/schema"
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
	phaseRe *regexp.Regexp
	clock   clock.Clock
	doc     *yaml.Node // the file as parsed, includes unexpanded: appends edit it

	mu       sync.Mutex
	plays    []int                        // per episode
	pending  map[*agent.AskRequest]picked // SelectEpisode → Ask
	misses   []string
	appended bool  // new_episodes appended to doc in this process
	writeErr error // first failure to append to the file
}

// Episode is one recorded exchange.
type Episode struct {
	ID       string
	Match    map[string]any // every entry must hold for the episode to answer
	Response Response
	// Delay is slept (on the cassette's clock) before answering.
	Delay     time.Duration
	DelayText string // as written, kept when the cassette is rewritten
	// Reusable is replay: any: the episode answers any number of calls.
	Reusable bool
	// Agent describes the agent exchange (host.agent.* and agent.* episodes).
	Agent *AgentBlock
	// Line is the episode's line in the file (0 when built in memory).
	Line int

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
	Error    string `yaml:"error,omitempty"`
	// CallID is advisory: the call_id is always recomputed.
	CallID     string `yaml:"call_id,omitempty"`
	Transcript any    `yaml:"transcript,omitempty"`
}

// LoadOption configures how a cassette is loaded and played.
type LoadOption func(*loadOptions)

type loadOptions struct {
	clock  clock.Clock
	getenv func(string) string
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

// LoadCassette reads a cassette file (.yaml, or .yaml.zst compressed),
// expands its !include values, checks it, and applies the record-mode
// environment variables.
func LoadCassette(path string, opts ...LoadOption) (*Cassette, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %q: %w", path, err)
	}
	return ParseCassette(b, path, opts...)
}

// ParseCassette parses cassette bytes; path names the file in errors and
// anchors !include paths (its directory).
func ParseCassette(b []byte, path string, opts ...LoadOption) (*Cassette, error) {
	c, err := parseCassette(b, path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %q: %w", path, err)
	}
	if err := c.prepare(newLoadOptions(opts)); err != nil {
		return nil, fmt.Errorf("cassette: %q: %w", path, err)
	}
	return c, nil
}

// NewCassette builds a cassette in memory (tests, recorders) and prepares it
// for play like a loaded one.
func NewCassette(appID string, episodes []*Episode, opts ...LoadOption) (*Cassette, error) {
	c := &Cassette{Kind: CassetteKind, AppID: appID, Episodes: episodes}
	if err := c.prepare(newLoadOptions(opts)); err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	return c, nil
}

var cassetteKeys = []string{"kind", "app_id", "app_version", "source_run", "generated_at", "match_on", "record_mode", "phase_from", "episodes"}

func parseCassette(b []byte, path string) (*Cassette, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(trimBOM(b), &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf(`kind must be %q, got ""`, CassetteKind)
	}
	orig := cloneNode(&doc)
	if err := expandIncludes(&doc, filepath.Dir(path)); err != nil {
		return nil, err
	}
	top, err := fields(doc.Content[0], "cassette", cassetteKeys...)
	if err != nil {
		return nil, err
	}
	c := &Cassette{Path: path, doc: orig}
	if c.Kind, err = str(top, "kind", "cassette"); err != nil {
		return nil, err
	}
	if c.Kind != CassetteKind {
		return nil, fmt.Errorf("kind must be %q, got %q", CassetteKind, c.Kind)
	}
	for key, dst := range map[string]*string{"app_id": &c.AppID, "app_version": &c.AppVersion, "source_run": &c.SourceRun,
		"generated_at": &c.GeneratedAt, "record_mode": &c.RecordMode, "phase_from": &c.PhaseFrom} {
		if *dst, err = str(top, key, "cassette"); err != nil {
			return nil, err
		}
	}
	if v, ok := top["match_on"]; ok {
		if c.MatchOn, err = value(v); err != nil {
			return nil, err
		}
	}
	if eps, ok := top["episodes"]; ok && eps.Tag != "!!null" {
		if eps.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("line %d: episodes must be a list, got %s", eps.Line, kindName(eps))
		}
		for i, en := range eps.Content {
			ep, err := parseEpisode(en, i)
			if err != nil {
				return nil, err
			}
			c.Episodes = append(c.Episodes, ep)
		}
	}
	return c, nil
}

var (
	episodeKeys  = []string{"id", "match", "response", "delay", "replay", "agent"}
	responseKeys = []string{"data", "error", "infra_error", "delay", "replay"}
	agentKeys    = []string{"verb", "agent", "model", "turn", "duration_ms", "prompt_tokens", "response_tokens", "cost_usd",
		"system_prompt", "prompt", "input", "response", "error", "call_id", "transcript"}
)

func parseEpisode(n *yaml.Node, i int) (*Episode, error) {
	where := fmt.Sprintf("episodes[%d]", i)
	m, err := fields(n, where, episodeKeys...)
	if err != nil {
		return nil, err
	}
	ep := &Episode{Line: n.Line}
	if ep.ID, err = str(m, "id", where); err != nil {
		return nil, err
	}
	if ep.ID == "" {
		ep.ID = "episode_" + strconv.Itoa(i+1)
	}
	where = fmt.Sprintf("episode %q", ep.ID)
	if ep.Match, _, err = mapping(m, "match", where); err != nil {
		return nil, err
	}
	delay, replay := m["delay"], m["replay"]
	if rn, ok := m["response"]; ok && rn.Tag != "!!null" {
		rm, err := fields(rn, where+".response", responseKeys...)
		if err != nil {
			return nil, err
		}
		r := &ep.Response
		if r.Data, r.HasData, err = mapping(rm, "data", where+".response"); err != nil {
			return nil, err
		}
		if r.HasData && r.Data == nil {
			r.Data = map[string]any{}
		}
		if r.Error, err = str(rm, "error", where+".response"); err != nil {
			return nil, err
		}
		if r.InfraError, err = str(rm, "infra_error", where+".response"); err != nil {
			return nil, err
		}
		for key, dst := range map[string]**yaml.Node{"delay": &delay, "replay": &replay} {
			if v, ok := rm[key]; ok {
				if *dst != nil {
					return nil, fmt.Errorf("line %d: %s: %s is written both on the episode and in response", v.Line, where, key)
				}
				*dst = v
			}
		}
	}
	if delay != nil && delay.Tag != "!!null" {
		ep.DelayText = delay.Value
		if ep.Delay, err = parseDelay(delay.Value); err != nil {
			return nil, fmt.Errorf("line %d: %s: delay: %w", delay.Line, where, err)
		}
	}
	if replay != nil && replay.Tag != "!!null" {
		if replay.Value != "any" {
			return nil, fmt.Errorf("line %d: %s: replay must be \"any\" (reusable) or absent, got %q", replay.Line, where, replay.Value)
		}
		ep.Reusable = true
	}
	if an, ok := m["agent"]; ok && an.Tag != "!!null" {
		if ep.Agent, err = parseAgentBlock(an, where+".agent"); err != nil {
			return nil, err
		}
	}
	return ep, nil
}

func parseAgentBlock(n *yaml.Node, where string) (*AgentBlock, error) {
	m, err := fields(n, where, agentKeys...)
	if err != nil {
		return nil, err
	}
	// response may be written as a mapping or list for readability; it is
	// the JSON text of that value then.
	var resp *yaml.Node
	if r, ok := m["response"]; ok && (r.Kind == yaml.MappingNode || r.Kind == yaml.SequenceNode) {
		resp = r
		delete(m, "response")
	}
	b := &AgentBlock{}
	if err := rebuild(m).Decode(b); err != nil {
		return nil, fmt.Errorf("line %d: %s: %w", n.Line, where, err)
	}
	if resp != nil {
		j, err := nodeJSON(resp)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s.response: %w", resp.Line, where, err)
		}
		b.Response = string(j)
	}
	if b.Input != nil {
		b.Input = stringKeys(b.Input)
	}
	return b, nil
}

// rebuild makes a mapping node from checked fields (sorted, for stable
// decoding errors).
func rebuild(m map[string]*yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, k := range sortedKeys(m) {
		out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, m[k])
	}
	return out
}

// parseDelay reads a Go duration, also accepting days ("3d", "1d12h").
func parseDelay(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (write e.g. 200ms, 2s, 3d)", s)
		}
		days = time.Duration(n * float64(24*time.Hour))
		s = s[i+1:]
		if s == "" {
			return checkDelay(days)
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (write e.g. 200ms, 2s, 3d)", s)
	}
	return checkDelay(days + d)
}

func checkDelay(d time.Duration) (time.Duration, error) {
	if d < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	return d, nil
}

// prepare checks the episodes, resolves the record mode and compiles what
// matching needs.
func (c *Cassette) prepare(o loadOptions) error {
	c.clock = o.clock
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
		msg := fmt.Sprintf(`record_mode %q is not supported; valid values are "none" or "new_episodes"`, mode)
		if src == EnvRecord {
			msg = EnvRecord + ": " + msg
		}
		return fmt.Errorf("%s", msg)
	}
	if s := strings.TrimSpace(o.getenv(EnvStrict)); (s == "1" || strings.EqualFold(s, "true")) && c.mode != ModeNone {
		return fmt.Errorf("%s=1 but cassette record mode is %q", EnvStrict, c.mode)
	}
	if c.PhaseFrom != "" {
		re, err := regexp.Compile(c.PhaseFrom)
		if err != nil {
			return fmt.Errorf("phase_from: %w", err)
		}
		if re.NumSubexp() < 1 {
			return fmt.Errorf("phase_from %q has no capture group; its first group is the phase", c.PhaseFrom)
		}
		c.phaseRe = re
	}
	for _, ep := range c.Episodes {
		if err := ep.prepare(); err != nil {
			return err
		}
	}
	c.plays = make([]int, len(c.Episodes))
	c.pending = map[*agent.AskRequest]picked{}
	return nil
}

// prepare checks an episode's response and normalises its values to the
// types a live answer has (JSON numbers as int64 or float64).
func (ep *Episode) prepare() error {
	where := fmt.Sprintf("episode %q", ep.ID)
	if ep.Line > 0 {
		where = fmt.Sprintf("line %d: %s", ep.Line, where)
	}
	r := &ep.Response
	if r.InfraError != "" && (r.HasData || r.Error != "") {
		return fmt.Errorf("%s: response.infra_error cannot be combined with data or error", where)
	}
	if !r.HasData && r.Error == "" && r.InfraError == "" && ep.Agent == nil {
		return fmt.Errorf("%s: needs a response: data, error or infra_error (or an agent: block)", where)
	}
	if r.HasData {
		v, err := normalizeJSON(r.Data)
		if err != nil {
			return fmt.Errorf("%s: response.data: %w", where, err)
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
			return fmt.Errorf("%s: match.%s: %w", where, k, err)
		}
		ep.matchEnc[k] = string(j)
	}
	return nil
}

// normalizeJSON round-trips v through JSON so numbers become int64 or
// float64 and maps map[string]any, as in a decoded live answer.
func normalizeJSON(v any) (any, error) {
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

// phase is the phase of a state path: the first capture of phase_from
// ("" when it does not match), else the first dot segment.
func (c *Cassette) phase(state string) string {
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
