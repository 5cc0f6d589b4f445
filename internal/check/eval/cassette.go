package eval

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// Eval cassettes are ordinary host cassettes (cassettes-and-flows.md) whose
// episodes are keyed so that each answer goes back to the candidate and
// example that produced it, whatever order parallel calls finish in:
//
//	match: {handler: <candidate key>, call: <invoke id>, args: <example args>}
//
// The handler is the candidate key profile[@model][#effort]; an answer
// from another agent in the same call (the agent.claude fallback of a
// local model) is keyed "<candidate key>><alias>". Repeats of one example
// are separate episodes with the same match and play in order. Episodes
// are written in matrix order (candidate, example, repeat), so recording
// the same answers twice gives the same file.

// Replay answers an eval run's calls from a cassette.
type Replay struct {
	c    *replay.Cassette
	path string
}

// LoadReplay loads the cassette at path for replay.
func LoadReplay(path string, opts ...cassette.LoadOption) (*Replay, error) {
	c, err := replay.Load(path, opts...)
	if err != nil {
		return nil, err
	}
	return &Replay{c: c, path: path}, nil
}

// handlerFor is the cassette handler of the calls a candidate makes to
// alias ("" = the built-in path, always the candidate's primary agent).
func handlerFor(c *candidate, alias string) string {
	if alias == "" || alias == c.route.Alias {
		return c.key()
	}
	return c.key() + ">" + alias
}

// fallbackAgent wraps an agent and says whether the host may retry its
// schema-invalid answers on agent.claude, as it would for the wrapped
// transport.
type fallbackAgent struct {
	agent.Agent
	eligible func() bool
}

func (f *fallbackAgent) FallbackEligible() bool { return f.eligible() }

// agents are the agents one candidate's calls see: every alias answered
// by the cassette under that candidate's keys.
func (rp *Replay) agents(st *story.Story, c *candidate) runtime.Agents {
	over := map[string]agent.Agent{}
	// The host retries a schema-invalid answer on agent.claude for a
	// local_llm transport, or for any transport whose recorded run did
	// (the cassette then holds that call's agent.claude answer).
	recordedFallback := false
	for _, h := range rp.c.Handlers() {
		if h == handlerFor(c, agent.DefaultAlias) && c.route.Alias != agent.DefaultAlias {
			recordedFallback = true
		}
	}
	for _, alias := range aliasesOf(st) {
		eligible := st.Plugins[alias].Plugin == agent.PluginLocalLLM || (recordedFallback && alias == c.route.Alias)
		over[alias] = &fallbackAgent{Agent: rp.c.Agent(handlerFor(c, alias), nil), eligible: func() bool { return eligible }}
	}
	return runtime.Agents{Override: over, Builtin: rp.c.Agent(handlerFor(c, ""), nil)}
}

// misses returns the cassette misses of the run, as an error.
func (rp *Replay) misses() error {
	ms := rp.c.TakeMisses()
	if len(ms) == 0 {
		return nil
	}
	return fmt.Errorf("cassette %s has no answer for %d call(s); re-record it with --live --record: first miss: %s", rp.path, len(ms), ms[0])
}

func aliasesOf(st *story.Story) []string {
	seen := map[string]bool{agent.DefaultAlias: true}
	for a := range st.Plugins {
		seen[a] = true
	}
	return sortedKeys(seen)
}

// Recording keeps the exchanges of a live run so they can be written as an
// eval cassette. It is safe for concurrent use.
type Recording struct {
	mu    sync.Mutex
	calls map[int64]*recordedCall // by turn (one per eval call)
}

// NewRecording returns an empty recording.
func NewRecording() *Recording { return &Recording{calls: map[int64]*recordedCall{}} }

// recordedCall is what one eval call exchanged.
type recordedCall struct {
	match     map[string]any // call and args keys (handler added per exchange)
	id        string         // episode id stem
	exchanges []*cassette.Episode
}

// expect registers the match keys and id stem of the call made on turn.
func (r *Recording) expect(turn int64, id string, match map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[turn] = &recordedCall{match: match, id: id}
}

// add records one exchange of the call on turn.
func (r *Recording) add(turn int64, handler string, ep *cassette.Episode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc := r.calls[turn]
	if rc == nil {
		return
	}
	ep.Match = map[string]any{"handler": handler}
	for k, v := range rc.match {
		ep.Match[k] = v
	}
	ep.ID = rc.id
	if i := strings.LastIndex(handler, ">"); i >= 0 {
		ep.ID += handler[i:]
	}
	if len(rc.exchanges) > 0 {
		ep.ID += fmt.Sprintf("~%d", len(rc.exchanges)+1)
	}
	rc.exchanges = append(rc.exchanges, ep)
}

// Cassette renders the recording as a cassette for st, episodes in call
// order.
func (r *Recording) Cassette(st *story.Story) (*replay.Cassette, error) {
	r.mu.Lock()
	turns := make([]int64, 0, len(r.calls))
	for t := range r.calls {
		turns = append(turns, t)
	}
	sort.Slice(turns, func(i, j int) bool { return turns[i] < turns[j] })
	var eps []*cassette.Episode
	for _, t := range turns {
		eps = append(eps, r.calls[t].exchanges...)
	}
	r.mu.Unlock()
	c, err := replay.New(st.App.ID, eps, cassette.WithGetenv(func(string) string { return "" }), cassette.WithSecrets(st.Secrets))
	if err != nil {
		return nil, err
	}
	c.AppVersion = st.App.Version
	return c, nil
}

// WriteFile writes the recording as a cassette (zstd-compressed when the
// name ends in .zst).
func (r *Recording) WriteFile(st *story.Story, path string) error {
	c, err := r.Cassette(st)
	if err != nil {
		return fmt.Errorf("cassette: %q: %w", path, err)
	}
	return c.WriteFile(path)
}

// agents are the agents one candidate's calls see while recording: every
// alias resolved by the live registry, wrapped so each exchange is kept
// under the candidate's keys.
func (r *Recording) agents(st *story.Story, c *candidate, live *agent.Registry, builtin agent.Agent, clk clock.Clock) runtime.Agents {
	over := map[string]agent.Agent{}
	for _, alias := range aliasesOf(st) {
		alias := alias
		get := func() (agent.Agent, error) { return live.Get(alias) }
		ra := &recordingAgent{rec: r, handler: handlerFor(c, alias), get: get, clock: clk}
		over[alias] = &fallbackAgent{Agent: ra, eligible: ra.fallbackEligible}
	}
	out := runtime.Agents{Override: over}
	if builtin != nil {
		out.Builtin = &recordingAgent{rec: r, handler: handlerFor(c, ""), get: func() (agent.Agent, error) { return builtin, nil }, clock: clk}
	}
	return out
}

// recordingAgent forwards to a live agent and records the exchange.
type recordingAgent struct {
	rec     *Recording
	handler string
	get     func() (agent.Agent, error)
	clock   clock.Clock
}

func (a *recordingAgent) fallbackEligible() bool {
	live, err := a.get()
	if err != nil {
		return false
	}
	fe, ok := live.(agent.FallbackEligible)
	return ok && fe.FallbackEligible()
}

func (a *recordingAgent) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	live, err := a.get()
	if err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "%v", err)
	}
	req := call.Request
	start := a.clock.Now()
	resp, err := live.Ask(ctx, call)
	dur := a.clock.Now().Sub(start).Milliseconds()
	ab := &cassette.AgentBlock{Verb: req.Verb, Prompt: req.Prompt, Model: call.Model}
	if call.Persona != nil {
		ab.Agent = call.Persona.Name
	}
	ab.DurationMS = dur
	if resp != nil {
		cassette.FillFromMeta(ab, resp.Meta)
	}
	switch {
	case err != nil:
		if ae, ok := agent.AsAskError(err); ok {
			ab.Error = ae.Error()
		} else {
			ab.Error = (&agent.AskError{Kind: agent.KindPluginCrash, Detail: err.Error()}).Error()
		}
	case resp != nil:
		ab.Response = cassette.ResponseText(resp.Submission)
	}
	a.rec.add(int64(req.Turn), a.handler, &cassette.Episode{Agent: ab})
	return resp, err
}

func (a *recordingAgent) Close() error { return nil }
