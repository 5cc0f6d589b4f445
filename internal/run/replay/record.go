package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// reservedMatchKeys are match keys with a meaning of their own; arguments of
// the same name are not recorded as match entries.
var reservedMatchKeys = map[string]bool{"handler": true, "phase": true, "schema_name": true}

// firstSegment is the default phase: the state path's first dot segment.
func firstSegment(state string) string {
	first, _, _ := strings.Cut(state, ".")
	return first
}

// hostEpisode records one host call. Non-agent handlers match on handler,
// phase and every argument; host.agent.* (the built-in agent path) match on
// handler and phase and keep the bound data, with an agent: block that
// describes the exchange.
func hostEpisode(name, phase string, call *host.Call, res *host.Result, err error) *cassette.Episode {
	ep := &cassette.Episode{ID: cassette.EpisodeID(name, call.State), Match: map[string]any{"handler": name, "phase": phase},
		RequestHash: cassette.HostRequestHash(call.Namespace, call.Args)}
	isAgent := strings.HasPrefix(name, host.AgentNamespace)
	if !isAgent {
		for k, v := range call.Args {
			if !reservedMatchKeys[k] {
				nv, nerr := cassette.NormalizeJSON(v)
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
		v, nerr := cassette.NormalizeJSON(res.Data)
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
		ab := &cassette.AgentBlock{Verb: strings.TrimPrefix(name, host.AgentNamespace), Turn: call.Turn}
		if pn, ok := call.Args["agent"].(string); ok {
			ab.Agent = pn
		}
		meta, _ := res.Data["meta"].(map[string]any)
		cassette.FillFromMeta(ab, meta)
		if sub, ok := res.Data["submitted"]; ok && sub != nil {
			if b, jerr := json.Marshal(sub); jerr == nil {
				ab.Response = cassette.ResponseText(b)
			}
		}
		if res.Err != nil {
			ab.Error = res.Err.Error()
		}
		ab.Transcript = cassette.TranscriptOf(res.Transcript)
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
	opts       []cassette.LoadOption // WithSecrets: what the recording masks
	episodes   []*cassette.Episode
	ids        map[string]bool
}

// NewRecorder returns an empty recorder for a story. Pass cassette.WithSecrets with
// the story's secrets so the recording masks them.
func NewRecorder(appID, appVersion string, opts ...cassette.LoadOption) *Recorder {
	return &Recorder{appID: appID, appVersion: appVersion, opts: opts, ids: map[string]bool{}}
}

func (r *Recorder) add(ep *cassette.Episode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ep.ID = cassette.UniqueID(ep.ID, func(id string) bool { return r.ids[id] })
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
func (r *Recorder) Cassette(opts ...cassette.LoadOption) (*Cassette, error) {
	r.mu.Lock()
	eps := append([]*cassette.Episode(nil), r.episodes...)
	r.mu.Unlock()
	c, err := New(r.appID, eps, append(slices.Clip(r.opts), opts...)...)
	if err != nil {
		return nil, err
	}
	c.AppVersion = r.appVersion
	return c, nil
}

// Encode renders the recording. Recording the same run twice gives the
// same bytes: no timestamps, ids derived from handler and state.
func (r *Recorder) Encode() ([]byte, error) {
	c, err := r.Cassette(cassette.WithGetenv(func(string) string { return "" }))
	if err != nil {
		return nil, err
	}
	return c.EncodeWithComment(recordedComment)
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
	if err := cassette.WriteFileAtomic(path, b); err != nil {
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
	for _, alias := range slices.Sorted(maps.Keys(st.Plugins)) {
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
	var add func(effs []*story.Effect)
	add = func(effs []*story.Effect) {
		for _, e := range effs {
			if e.Invoke != nil {
				seen[e.Invoke.Name] = true
				add(e.Invoke.OnComplete) // a background invoke's completion chain
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
	out := slices.Sorted(maps.Keys(seen))
	sort.Strings(out)
	return out
}

// recordingAgent records the exchanges of a live agent.
type recordingAgent struct {
	alias string
	live  agent.Agent
	add   func(*cassette.Episode)
}

func (a *recordingAgent) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	resp, err := a.live.Ask(ctx, call)
	a.add(cassette.AgentEpisode(ctx, a.alias, firstSegment(call.Request.StatePath), call, resp, err))
	return resp, err
}

func (a *recordingAgent) Close() error { return nil } // the registry closes the live agent

// recordingHandler records the calls of a live handler.
type recordingHandler struct {
	name string
	live host.Handler
	add  func(*cassette.Episode)
}

func (h *recordingHandler) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	if strings.HasPrefix(h.name, host.AgentNamespace) && call.Invoke != nil && call.Invoke.Agent != "" {
		return h.live.Invoke(ctx, call)
	}
	if host.RunsOnReplay(h.live, call) { // its agent calls are recorded instead
		return h.live.Invoke(ctx, call)
	}
	res, err := h.live.Invoke(ctx, call)
	var te *host.TraceError
	if errors.As(err, &te) {
		return res, err
	}
	h.add(hostEpisode(h.name, firstSegment(call.PhaseState()), call, res, err))
	return res, err
}
