package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// Handler returns the host-handler role of the cassette for a registered
// handler name: it answers the invokes routed to name (exactly, or by the
// host's dotted-prefix fallback) from the episodes whose match.handler is
// name. Episodes with an agent: block also write agent.call.* events to
// sink; their call_ids use the cassette's app_id, or appID when it has
// none.
//
// live is the handler the cassette replaces (nil if none). It answers
// misses in new_episodes mode (the exchange is then appended), and, for a
// host.agent.* name, the calls whose invoke names an agent alias that this
// cassette replays in the agent role, and, in any mode, the misses of the
// invokes FallBackTo names.
func (c *Cassette) Handler(name string, sink host.Sink, appID string, live host.Handler) host.Handler {
	return &cassetteHandler{c: c, name: name, sink: sink, appID: appID, live: live}
}

type cassetteHandler struct {
	c     *Cassette
	name  string
	sink  host.Sink
	appID string
	live  host.Handler
}

// Invoke answers one call.
func (h *cassetteHandler) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	if h.live != nil && strings.HasPrefix(h.name, host.AgentNamespace) && call.Invoke != nil && call.Invoke.Agent != "" &&
		h.c.HasHandler(call.Invoke.Agent) {
		return h.live.Invoke(ctx, call)
	}
	if h.live != nil && host.RunsOnReplay(h.live, call) { // it runs; its agent calls are answered here
		return h.live.Invoke(ctx, call)
	}
	k := cassette.NewKey(h.name, h.c.Phase(call.PhaseState()), call.Args, func() string { return cassette.HostRequestHash(call.Namespace, call.Args) })
	p, ok := h.c.Pick(k)
	if !ok {
		if h.c.Mode() == cassette.ModeNewEpisodes && h.live != nil {
			return h.recordMiss(ctx, call)
		}
		if h.live != nil && h.c.fallsBack(call.Namespace) {
			return h.live.Invoke(ctx, call)
		}
		return nil, errors.New(h.c.Miss(k))
	}
	if err := h.c.Sleep(ctx, p.Episode); err != nil {
		return nil, err
	}
	r := p.Episode.Response
	if r.InfraError != "" {
		return nil, errors.New(r.InfraError)
	}
	if p.Episode.Agent != nil {
		if err := h.writeAgentEvents(call, p); err != nil {
			return nil, &host.TraceError{Err: err}
		}
	}
	res := &host.Result{KeptNoWorld: true} // an episode answers from its args alone
	if r.HasData {
		res.Data = CopyMap(r.Data)
	}
	if r.Error != "" {
		res.Err = errors.New(r.Error)
	}
	return res, nil
}

// writeAgentEvents writes agent.call.start then agent.call.complete or
// agent.call.error for an episode's agent: block (trace-format.md §6). The
// block never changes what is bound.
func (h *cassetteHandler) writeAgentEvents(call *host.Call, p cassette.Picked) error {
	ab := p.Episode.Agent
	app := h.c.AppID
	if app == "" {
		app = h.appID
	}
	callID := trace.CallID(app, trace.CassetteCallKey(p.Episode.ID, p.Index))
	verb := ab.Verb
	if verb == "" {
		verb = strings.TrimPrefix(call.Namespace, host.AgentNamespace)
	}
	start := trace.AgentCallStart{Verb: verb, Agent: ab.Agent, Model: ab.Model, Input: ab.Input, Prompt: ab.Prompt}
	if err := call.SinkOr(h.sink).AppendPayload(&plugin.Event{Turn: call.Turn, StatePath: call.State,
		CallID: callID, EpisodeID: p.Episode.ID, MatchIdx: p.Index}, start); err != nil {
		return err
	}
	// The recorded transcript goes beside the trace as it was recorded;
	// the closing event points at it.
	ref, err := trace.WriteTranscript(call.SinkOr(h.sink), callID, ab.Transcript.Trace())
	if err != nil {
		return fmt.Errorf("episode %q: agent.transcript: %w", p.Episode.ID, err)
	}
	if ab.Error != "" {
		// The error as the agent role replays it: the recorded kind when
		// the text is an AskError rendering, else plugin_crash.
		ae := cassette.ReplayedError(ab.Error)
		payload := trace.AgentCallError{Verb: verb, Agent: ab.Agent, DurationMS: ab.DurationMS, Error: ae.Error(), ErrorKind: string(ae.Kind), TranscriptRef: ref}
		return call.SinkOr(h.sink).AppendPayload(&plugin.Event{Turn: call.Turn, StatePath: call.State, CallID: callID}, payload)
	}
	payload := trace.AgentCallComplete{Verb: verb, Agent: ab.Agent, Model: ab.Model, DurationMS: ab.DurationMS, TranscriptRef: ref}
	if ab.Response != "" {
		payload.Response = responseValue(ab.Response)
	}
	meta := map[string]any{}
	if u := ab.Usage(); u != nil {
		meta["usage"] = u
	}
	if ab.CostUSD != 0 {
		meta["cost_usd"] = ab.CostUSD
	}
	if len(meta) > 0 {
		payload.Meta = meta
	}
	return call.SinkOr(h.sink).AppendPayload(&plugin.Event{Turn: call.Turn, StatePath: call.State, CallID: callID}, payload)
}

// responseValue is an agent response as a trace payload value: the JSON
// itself when the text starts with { or [ (and parses), else the text.
func responseValue(text string) any {
	if cassette.StartsJSON(text) && json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	return text
}

// CopyMap copies m and the maps and lists inside it, so a replayed answer
// or a fixture's world is never shared with what it was copied from. A nil
// map stays nil.
func CopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopy(v)
	}
	return out
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return CopyMap(t)
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// recordMiss answers a new_episodes miss with the live handler and appends
// the call.
func (h *cassetteHandler) recordMiss(ctx context.Context, call *host.Call) (*host.Result, error) {
	if strings.HasPrefix(h.name, host.AgentNamespace) && call.Invoke != nil && call.Invoke.Agent != "" {
		return h.live.Invoke(ctx, call) // the alias's agent role records it
	}
	res, err := h.live.Invoke(ctx, call)
	var te *host.TraceError
	if errors.As(err, &te) {
		return res, err
	}
	h.c.Append(hostEpisode(h.name, h.c.Phase(call.PhaseState()), call, res, err))
	return res, err
}
