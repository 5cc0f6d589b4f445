package cassette

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// NewAgent returns the agent transport of a cassette: an
// agent.Agent that answers the calls routed to alias from the episodes
// whose match.handler is alias (matched with args = {verb} + the request's
// with). Register it with the agent registry's Register; it is not
// declarable in agent_plugins:.
func NewAgent(c *Cassette, alias string) agent.Agent { return c.Agent(alias, nil) }

// Agent is NewAgent with a live agent: in new_episodes mode a miss
// is answered by live and the exchange is appended to the cassette file.
func (c *Cassette) Agent(alias string, live agent.Agent) agent.Agent {
	return &cassetteAgent{c: c, alias: alias, live: live}
}

// cassetteAgent is the agent role of a cassette.
type cassetteAgent struct {
	c     *Cassette
	alias string
	live  agent.Agent
}

var (
	_ agent.EpisodeSelector = (*cassetteAgent)(nil)
	_ agent.Inline          = (*cassetteAgent)(nil)
)

// key builds the match key of a request: handler = the alias, args = the
// request's with plus its verb.
func (a *cassetteAgent) key(req *agent.AskRequest) *Key {
	args := make(map[string]any, len(req.With)+1)
	for k, v := range req.With {
		args[k] = v
	}
	args["verb"] = req.Verb
	return NewKey(a.alias, a.c.Phase(req.StatePath), args, func() string { return agentRequestHash(req) })
}

// SelectEpisode picks the episode that will answer the call and reserves
// it for the Ask that follows, so the host can put episode_id and
// match_idx on agent.call.start and derive the call_id from the cassette
// key.
func (a *cassetteAgent) SelectEpisode(_ context.Context, call *agent.Call) (agent.Episode, bool) {
	req := call.Request
	p, ok := a.c.Pick(a.key(req))
	if !ok {
		return agent.Episode{}, false
	}
	a.c.mu.Lock()
	a.c.pending[req] = p
	a.c.mu.Unlock()
	return agent.Episode{ID: p.Episode.ID, MatchIdx: p.Index, AppID: a.c.AppID}, true
}

// AnswersInline reports whether the call replays an episode reserved for
// it (SelectEpisode) that has no delay, on a cassette that records
// nothing: its Ask is then a lookup and a copy of the recorded answer,
// with nothing to wait for, so the host may ask it on the caller's
// goroutine. A call still to be matched, one whose episode has a delay to
// wait out, and every call of a new_episodes cassette with a live agent
// (whose misses are asked live and appended to the file under the
// cassette's lock) run on a worker.
func (a *cassetteAgent) AnswersInline(call *agent.Call) bool {
	if a.c.mode == ModeNewEpisodes && a.live != nil {
		return false
	}
	a.c.mu.Lock()
	p, ok := a.c.pending[call.Request]
	a.c.mu.Unlock()
	return ok && p.Episode.Delay <= 0
}

// Ask answers from the reserved episode, or matches now when the host did
// not select one first.
func (a *cassetteAgent) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	req := call.Request
	a.c.mu.Lock()
	p, ok := a.c.pending[req]
	delete(a.c.pending, req)
	a.c.mu.Unlock()
	callID := req.CallID
	if !ok {
		k := a.key(req)
		if p, ok = a.c.Pick(k); !ok {
			if a.c.mode == ModeNewEpisodes && a.live != nil {
				return a.recordMiss(ctx, call)
			}
			msg := a.c.Miss(k)
			return nil, agent.Errorf(agent.KindTransportError, "cassette agent %q: %s", a.alias, msg)
		}
		callID = trace.CallID(a.c.AppID, trace.CassetteCallKey(p.Episode.ID, p.Index))
	}
	if err := a.c.Sleep(ctx, p.Episode); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, agent.Errorf(agent.KindDeadlineExceeded, "cassette agent %q: %w", a.alias, err)
		}
		return nil, agent.Errorf(agent.KindDeadlineExceeded, "cassette agent %q: call cancelled: %w", a.alias, err)
	}
	return answer(p, callID)
}

// answer turns a matched episode into the agent's response or error
// (cassettes-and-flows.md §3, agent plugin role).
func answer(p Picked, callID string) (*agent.AskResponse, error) {
	ep := p.Episode
	r := ep.Response
	switch {
	case r.InfraError != "":
		return nil, &agent.AskError{Kind: agent.KindTransportError, Detail: r.InfraError}
	case ep.Agent != nil && ep.Agent.Error != "":
		ae := ReplayedError(ep.Agent.Error)
		ae.Transcript = ep.Agent.Transcript.Trace()
		return nil, ae
	case ep.Agent == nil && r.Error != "":
		return nil, ReplayedError(r.Error)
	}
	resp := &agent.AskResponse{Meta: agentMeta(p, callID)}
	if ep.Agent != nil {
		resp.Transcript = ep.Agent.Transcript.Trace()
	}
	switch {
	case ep.Agent != nil && ep.Agent.Submission != "":
		resp.Submission = json.RawMessage(ep.Agent.Submission)
	case ep.Agent != nil:
		resp.Submission = submissionOf(ep.Agent.Response)
	case r.HasData:
		b, err := json.Marshal(r.Data)
		if err != nil {
			return nil, agent.Errorf(agent.KindPluginCrash, "episode %q: response.data: %w", ep.ID, err)
		}
		resp.Submission = b
	}
	return resp, nil
}

// agentMeta is the meta of a replayed answer.
func agentMeta(p Picked, callID string) map[string]any {
	m := map[string]any{"transport": "cassette", "episode_id": p.Episode.ID, "match_idx": p.Index, "call_id": callID}
	if ab := p.Episode.Agent; ab != nil {
		if ab.Model != "" {
			m["model"] = ab.Model
		}
		if ab.Agent != "" {
			m["agent"] = ab.Agent
		}
		if ab.DurationMS != 0 {
			m["duration_ms"] = ab.DurationMS
		}
		if u := ab.Usage(); u != nil {
			m["usage"] = u
		}
		if ab.CostUSD != 0 {
			m["cost_usd"] = ab.CostUSD
		}
	}
	return m
}

// Usage maps the token counts to meta.usage (only non-zero parts; nil when
// there are none).
func (ab *AgentBlock) Usage() map[string]any {
	u := map[string]any{}
	if ab.PromptTokens != 0 {
		u["input_tokens"] = ab.PromptTokens
	}
	if ab.ResponseTokens != 0 {
		u["output_tokens"] = ab.ResponseTokens
	}
	if len(u) == 0 {
		return nil
	}
	return u
}

// submissionOf applies the JSON-or-string rule to an agent response: text
// starting with { or [ is the JSON itself, anything else a JSON string.
// An empty response is no submission.
func submissionOf(text string) json.RawMessage {
	if text == "" {
		return nil
	}
	if StartsJSON(text) {
		return json.RawMessage(text)
	}
	b, _ := json.Marshal(text)
	return b
}

// StartsJSON reports whether s, leading white space aside, starts with {
// or [: the agent response rule for text that is JSON.
func StartsJSON(s string) bool {
	t := strings.TrimLeft(s, " \t\r\n")
	return strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")
}

// ReplayedError is the error a recorded agent error replays as: the kind it
// was recorded with when the text is an AskError rendering
// ("agent: <kind>: <detail>"), else plugin_crash with the text as detail.
func ReplayedError(text string) *agent.AskError {
	if rest, ok := strings.CutPrefix(text, "agent: "); ok {
		kind, detail, _ := strings.Cut(rest, ": ")
		for _, k := range knownKinds {
			if string(k) == kind {
				return &agent.AskError{Kind: k, Detail: detail}
			}
		}
	}
	return &agent.AskError{Kind: agent.KindPluginCrash, Detail: text}
}

var knownKinds = []agent.ErrorKind{agent.KindSchemaInvalid, agent.KindPluginCrash, agent.KindDeadlineExceeded,
	agent.KindTransportError, agent.KindSubEventNamespaceViolation, agent.KindSubEventCallIDMismatch}

// Close does nothing: a cassette holds no process or connection.
func (a *cassetteAgent) Close() error { return nil }
