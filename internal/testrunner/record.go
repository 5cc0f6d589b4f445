package testrunner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/host"
	"github.com/kitsoki/kitsoki/internal/story"
)

// appendedComment heads the episodes a new_episodes run appends.
const appendedComment = "appended by KITSOKI_CASSETTE_RECORD"

// reservedMatchKeys are match keys with a meaning of their own; arguments of
// the same name are not recorded as match entries.
var reservedMatchKeys = map[string]bool{"handler": true, "phase": true, "schema_name": true}

// firstSegment is the default phase: the state path's first dot segment.
func firstSegment(state string) string {
	first, _, _ := strings.Cut(state, ".")
	return first
}

// episodeID is the id of a recorded episode before de-duplication.
func episodeID(handler, state string) string { return "recorded_" + handler + "_" + state }

// uniqueID returns id, or id_2, id_3, ... when taken already.
func uniqueID(id string, taken func(string) bool) string {
	if !taken(id) {
		return id
	}
	for n := 2; ; n++ {
		if c := id + "_" + strconv.Itoa(n); !taken(c) {
			return c
		}
	}
}

// agentEpisode records one agent exchange under alias: match on handler
// and phase; the answer lives in the agent: block (agent episodes store no
// data), so a replay hands the host the same raw submission and the host
// validates it again.
func agentEpisode(ctx context.Context, alias, phase string, call *agent.Call, resp *agent.AskResponse, err error) *Episode {
	req := call.Request
	ab := &AgentBlock{Verb: req.Verb, Turn: int64(req.Turn), Prompt: req.Prompt, Model: call.Model}
	if call.Persona != nil {
		ab.Agent = call.Persona.Name
	}
	if resp != nil {
		fillFromMeta(ab, resp.Meta)
	}
	switch {
	case err != nil:
		ab.Error = askErrorText(ctx, err)
	case resp != nil:
		ab.Response = responseText(resp.Submission)
		if !bytes.Equal(submissionOf(ab.Response), resp.Submission) {
			ab.Submission = string(resp.Submission) // response alone would replay other bytes
		}
	}
	return &Episode{ID: episodeID(alias, req.StatePath),
		Match: map[string]any{"handler": alias, "phase": phase}, RequestHash: agentRequestHash(req), Agent: ab}
}

// askErrorText is the error as the host classifies it: an AskError as
// is; a plain error returned once the call's context ended is
// deadline_exceeded, any other plain error plugin_crash.
func askErrorText(ctx context.Context, err error) string {
	if ae, ok := agent.AsAskError(err); ok {
		return ae.Error()
	}
	kind := agent.KindPluginCrash
	if ctx.Err() != nil {
		kind = agent.KindDeadlineExceeded
	}
	return (&agent.AskError{Kind: kind, Detail: err.Error()}).Error()
}

// responseText is a submission as an agent: response: the text of a JSON
// string, the JSON itself otherwise.
func responseText(sub json.RawMessage) string {
	if len(sub) == 0 {
		return ""
	}
	var s string
	if sub[0] == '"' && json.Unmarshal(sub, &s) == nil {
		return s
	}
	return string(sub)
}

// fillFromMeta copies model, duration, token counts and cost from a
// transport's meta (claude: usage.input_tokens/output_tokens and cost_usd;
// local models: prompt_tokens/completion_tokens).
func fillFromMeta(ab *AgentBlock, meta map[string]any) {
	if meta == nil {
		return
	}
	if m, ok := meta["model"].(string); ok && m != "" {
		ab.Model = m
	}
	if n, ok := toInt(meta["duration_ms"]); ok {
		ab.DurationMS = n
	}
	if u, ok := meta["usage"].(map[string]any); ok {
		if n, ok := toInt(u["input_tokens"]); ok {
			ab.PromptTokens = n
		}
		if n, ok := toInt(u["output_tokens"]); ok {
			ab.ResponseTokens = n
		}
	}
	if n, ok := toInt(meta["prompt_tokens"]); ok && ab.PromptTokens == 0 {
		ab.PromptTokens = n
	}
	if n, ok := toInt(meta["completion_tokens"]); ok && ab.ResponseTokens == 0 {
		ab.ResponseTokens = n
	}
	if f, ok := toFloat(meta["cost_usd"]); ok {
		ab.CostUSD = f
	}
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// hostEpisode records one host call. Non-agent handlers match on handler,
// phase and every argument; host.agent.* (the built-in agent path) match on
// handler and phase and keep the bound data, with an agent: block that
// describes the exchange.
func hostEpisode(name, phase string, call *host.Call, res *host.Result, err error) *Episode {
	ep := &Episode{ID: episodeID(name, call.State), Match: map[string]any{"handler": name, "phase": phase},
		RequestHash: hostRequestHash(call)}
	isAgent := strings.HasPrefix(name, host.AgentNamespace)
	if !isAgent {
		for k, v := range call.Args {
			if !reservedMatchKeys[k] {
				nv, nerr := normalizeJSON(v)
				if nerr != nil {
					nv = fmt.Sprint(v)
				}
				ep.Match[k] = nv
			}
		}
	}
	if err != nil {
		ep.Response.InfraError = err.Error()
		return ep
	}
	if res == nil {
		res = &host.Result{}
	}
	if res.Data != nil {
		v, nerr := normalizeJSON(res.Data)
		if m, ok := v.(map[string]any); ok && nerr == nil {
			ep.Response.Data = m
		} else {
			ep.Response.Data = map[string]any{}
		}
		ep.Response.HasData = true
	}
	if res.Err != nil {
		ep.Response.Error = res.Err.Error()
	}
	if !ep.Response.HasData && ep.Response.Error == "" {
		ep.Response.HasData, ep.Response.Data = true, map[string]any{}
	}
	if isAgent {
		ab := &AgentBlock{Verb: strings.TrimPrefix(name, host.AgentNamespace), Turn: call.Turn}
		if pn, ok := call.Args["agent"].(string); ok {
			ab.Agent = pn
		}
		meta, _ := res.Data["meta"].(map[string]any)
		fillFromMeta(ab, meta)
		if sub, ok := res.Data["submitted"]; ok && sub != nil {
			if b, jerr := json.Marshal(sub); jerr == nil {
				ab.Response = responseText(b)
			}
		}
		if res.Err != nil {
			ab.Error = res.Err.Error()
		}
		ep.Agent = ab
	}
	return ep
}

// Recorder writes the cassette of a live run: every agent exchange and
// every host call's result, as episodes in call order. It wraps the live
// agents and handlers (Agent, Handler, Install) and renders the cassette
// with Encode or WriteFile. A Recorder is safe for concurrent use.
type Recorder struct {
	mu         sync.Mutex
	appID      string
	appVersion string
	opts       []LoadOption // WithSecrets: what the recording masks
	episodes   []*Episode
	ids        map[string]bool
}

// NewRecorder returns an empty recorder for a story. Pass WithSecrets with
// the story's secrets so the recording masks them.
func NewRecorder(appID, appVersion string, opts ...LoadOption) *Recorder {
	return &Recorder{appID: appID, appVersion: appVersion, opts: opts, ids: map[string]bool{}}
}

func (r *Recorder) add(ep *Episode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ep.ID = uniqueID(ep.ID, func(id string) bool { return r.ids[id] })
	r.ids[ep.ID] = true
	r.episodes = append(r.episodes, ep)
}

// Len is the number of episodes recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.episodes)
}

// Cassette returns what was recorded as a cassette (record_mode none),
// ready to play.
func (r *Recorder) Cassette(opts ...LoadOption) (*Cassette, error) {
	r.mu.Lock()
	eps := append([]*Episode(nil), r.episodes...)
	r.mu.Unlock()
	c, err := NewCassette(r.appID, eps, append(slices.Clip(r.opts), opts...)...)
	if err != nil {
		return nil, err
	}
	c.AppVersion = r.appVersion
	return c, nil
}

// Encode renders the recording. Recording the same run twice gives the
// same bytes: no timestamps, ids derived from handler and state.
func (r *Recorder) Encode() ([]byte, error) {
	c, err := r.Cassette(WithGetenv(func(string) string { return "" }))
	if err != nil {
		return nil, err
	}
	doc, err := c.node()
	if err != nil {
		return nil, err
	}
	doc.HeadComment = recordedComment
	return encodeNode(doc)
}

// recordedComment heads a recording.
const recordedComment = "Recorded by `kitsoki run --record`. Replay it with `kitsoki run <app.yaml> --cassette <this file>`\n" +
	"or name it as a flow's host_cassette. Re-recording the same run gives the same bytes."

// WriteFile writes the recording to path (.yaml.zst compresses).
func (r *Recorder) WriteFile(path string) error {
	b, err := r.Encode()
	if err != nil {
		return fmt.Errorf("cassette: %q: %w", path, err)
	}
	if err := writeFileAtomic(path, b); err != nil {
		return fmt.Errorf("cassette: %q: %w", path, err)
	}
	return nil
}

// Agent wraps a live agent so its exchanges under alias are recorded.
func (r *Recorder) Agent(alias string, live agent.Agent) agent.Agent {
	return &recordingAgent{alias: alias, live: live, add: r.add}
}

// Handler wraps a live host handler so its calls are recorded. For a
// host.agent.* name only the built-in path (an invoke with no agent:) is
// recorded here; calls to an alias are recorded by its wrapped agent.
func (r *Recorder) Handler(name string, live host.Handler) host.Handler {
	return &recordingHandler{name: name, live: live, add: r.add}
}

// Install wraps, for a story's session, every agent the registry resolves
// for a declared alias, the host.agent.* verbs and every other invoke name
// that has a handler. Call it after host.New and before the first turn.
func (r *Recorder) Install(st *story.Story, reg *agent.Registry, h *host.Host) {
	for _, alias := range sortedKeys(st.Plugins) {
		if a, err := reg.Get(alias); err == nil {
			reg.Register(alias, r.Agent(alias, a))
		}
	}
	names := InvokeNames(st)
	for _, verb := range agentVerbs {
		names = append(names, host.AgentNamespace+verb)
	}
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		if live, ok := h.Handler(name); ok {
			h.Register(name, r.Handler(name, live))
		}
	}
}

var agentVerbs = []string{"ask", "decide", "extract", "task", "converse"}

// InvokeNames lists every invoke name a story's effects use, sorted.
func InvokeNames(st *story.Story) []string {
	seen := map[string]bool{}
	add := func(effs []*story.Effect) {
		for _, e := range effs {
			if e.Invoke != nil {
				seen[e.Invoke.Name] = true
			}
		}
	}
	for _, s := range st.States {
		add(s.OnEnter)
		for _, arms := range s.On {
			for _, a := range arms {
				add(a.Effects)
			}
		}
	}
	out := sortedKeys(seen)
	sort.Strings(out)
	return out
}

// recordingAgent records the exchanges of a live agent.
type recordingAgent struct {
	alias string
	live  agent.Agent
	add   func(*Episode)
}

func (a *recordingAgent) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	resp, err := a.live.Ask(ctx, call)
	a.add(agentEpisode(ctx, a.alias, firstSegment(call.Request.StatePath), call, resp, err))
	return resp, err
}

func (a *recordingAgent) Close() error { return nil } // the registry closes the live agent

// recordingHandler records the calls of a live handler.
type recordingHandler struct {
	name string
	live host.Handler
	add  func(*Episode)
}

func (h *recordingHandler) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	if strings.HasPrefix(h.name, host.AgentNamespace) && call.Invoke != nil && call.Invoke.Agent != "" {
		return h.live.Invoke(ctx, call)
	}
	res, err := h.live.Invoke(ctx, call)
	var te *host.TraceError
	if errors.As(err, &te) {
		return res, err
	}
	h.add(hostEpisode(h.name, firstSegment(call.State), call, res, err))
	return res, err
}
