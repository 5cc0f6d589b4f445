package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/kitsoki/kitsoki/internal/agent"
	"github.com/kitsoki/kitsoki/internal/schema"
	"github.com/kitsoki/kitsoki/internal/trace"
	"github.com/kitsoki/kitsoki/pkg/plugin"
)

// agentHandler answers host.agent.<verb>.
type agentHandler struct {
	h    *Host
	verb string
}

// prepared is an agent call ready to send.
type prepared struct {
	alias   string // "" on the built-in path
	agent   agent.Agent
	persona *agent.Persona
	schema  *schema.Schema
	req     *agent.AskRequest
	timeout time.Duration
	route   *Route // nil unless a pin or an eval routes the invoke
}

func (ah *agentHandler) Invoke(ctx context.Context, call *Call) (*Result, error) {
	p, err := ah.prepare(call)
	if err != nil {
		return nil, err
	}
	return ah.h.ask(ctx, ah.verb, call, p)
}

// prepare renders the prompt, resolves persona, schema and agent, and builds
// the request. Failures here happen before anything is sent or traced.
func (ah *agentHandler) prepare(call *Call) (*prepared, error) {
	h, verb := ah.h, ah.verb
	name := AgentNamespace + verb
	p := &prepared{timeout: h.timeout}

	p.route = h.routeFor(call)
	if alias := p.route.alias(call.Invoke); alias != "" {
		p.alias = alias
		a, err := h.registry.Get(p.alias)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p.agent = a
	} else {
		if h.builtin == nil {
			return nil, fmt.Errorf("%s: the built-in claude path (an invoke with no agent:) is not available in this build; name an agent_plugins alias with agent:", name)
		}
		p.agent = h.builtin
	}

	if pn, ok := call.Args["agent"].(string); ok && pn != "" {
		persona, ok := h.story.Agents[pn]
		if !ok {
			return nil, fmt.Errorf("%s: with.agent %q is not declared in agents", name, pn)
		}
		p.persona = persona
	}
	p.persona = p.route.persona(p.persona)

	if sp, ok := call.Args["schema"].(string); ok && sp != "" {
		s, err := h.schema(sp)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p.schema = s
	} else if verb == plugin.VerbDecide {
		return nil, fmt.Errorf("%s: with.schema is required (a JSON Schema file relative to the story directory)", name)
	}

	prompt, err := h.renderPrompt(call.Args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}

	if t, ok := call.Args["timeout"]; ok {
		d, err := parseTimeout(t)
		if err != nil {
			return nil, fmt.Errorf("%s: with.timeout: %w", name, err)
		}
		p.timeout = d
	}

	p.req = &agent.AskRequest{
		SessionID: call.SessionID,
		Turn:      int(call.Turn),
		StatePath: call.State,
		Verb:      verb,
		Prompt:    prompt,
		With:      call.Args,
		World:     plugin.World{Vars: call.World},
	}
	if p.schema != nil {
		p.req.Schema = p.schema.Raw
	}
	return p, nil
}

// parseTimeout accepts a Go duration string ("90s") or a number of seconds.
func parseTimeout(v any) (time.Duration, error) {
	var d time.Duration
	switch t := v.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(t); err != nil {
			n, nerr := strconv.ParseFloat(t, 64)
			if nerr != nil {
				return 0, fmt.Errorf("%q is not a duration (write e.g. \"90s\" or 90)", t)
			}
			d = time.Duration(n * float64(time.Second))
		}
	case int:
		d = time.Duration(t) * time.Second
	case int64:
		d = time.Duration(t) * time.Second
	case float64:
		d = time.Duration(t * float64(time.Second))
	default:
		return 0, fmt.Errorf("%v is not a duration", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive, got %v", v)
	}
	return d, nil
}

// ask sends a prepared call and turns the answer into a Result, writing the
// agent.call.* events.
func (h *Host) ask(ctx context.Context, verb string, call *Call, p *prepared) (*Result, error) {
	start := h.clock.Now()
	seq := h.sink.NextSeq(call.Turn)
	p.req.CallID = trace.CallID(h.story.App.ID, strconv.FormatInt(call.Turn, 10)+":"+call.State+":"+strconv.Itoa(seq))
	p.req.Deadline = start.Add(p.timeout).UTC().Format(time.RFC3339Nano)
	ep := h.selectEpisode(ctx, p)

	startPayload := map[string]any{"verb": verb, "prompt": p.req.Prompt}
	h.describe(startPayload, p)
	p.route.describeStart(startPayload)
	if p.alias == "" {
		if p.schema != nil {
			startPayload["input"] = map[string]any{"schema_path": p.schema.Path}
		}
	} else if p.schema != nil {
		startPayload["input"] = map[string]any{"schema_present": true}
	}
	if err := h.sink.Append(&plugin.Event{Turn: call.Turn, Kind: trace.KindAgentCallStart, StatePath: call.State, CallID: p.req.CallID,
		EpisodeID: ep.ID, MatchIdx: ep.MatchIdx, Payload: startPayload}); err != nil {
		return nil, &TraceError{err}
	}

	ci := &agent.CallInfo{Alias: p.alias, Persona: p.persona}
	if p.schema != nil {
		ci.SchemaPath = p.schema.Path
		s := p.schema
		ci.Validate = func(b []byte) error { _, err := s.ValidateJSON(b); return err }
	}
	if pv, ok := call.Args["provider"].(string); ok {
		ci.Provider = pv
		if spec, ok := h.story.Providers[pv]; ok {
			ci.ProviderSpec = &spec
		}
	}
	p.route.callInfo(ci, h.story)
	actx := agent.WithCallInfo(ctx, ci)
	if h.callContext != nil {
		actx = h.callContext(actx, call)
	}

	resp, submission, askErr := h.askOnce(actx, p.alias, p.agent, p, call)
	var subst map[string]any
	if askErr != nil && askErr.Kind == agent.KindSchemaInvalid && p.alias != "" && p.alias != agent.DefaultAlias {
		if fe, ok := p.agent.(agent.FallbackEligible); ok && fe.FallbackEligible() {
			subst = map[string]any{"reason": string(agent.KindSchemaInvalid), "original_plugin": p.alias, "fallback_plugin": agent.DefaultAlias}
			resp, submission, askErr = h.fallback(actx, p, call)
			if askErr == nil {
				// The agent's response may be shared (a cassette replays
				// the same one): annotate a copy.
				r := *resp
				r.Meta = maps.Clone(resp.Meta)
				if r.Meta == nil {
					r.Meta = map[string]any{}
				}
				r.Meta["fallback_of"] = p.alias
				resp = &r
			}
		}
	}
	durMS := h.clock.Now().Sub(start).Milliseconds()

	if askErr != nil {
		payload := map[string]any{"verb": verb, "duration_ms": durMS, "error": askErr.Error()}
		h.describe(payload, p)
		if subst != nil {
			payload["substitution"] = subst
		}
		if err := h.sink.Append(&plugin.Event{Turn: call.Turn, Kind: trace.KindAgentCallError, StatePath: call.State, CallID: p.req.CallID, Payload: payload}); err != nil {
			return nil, &TraceError{err}
		}
		data := map[string]any{"ok": false, "exit_code": 1, "error": askErr.Error()}
		if resp != nil && resp.Meta != nil {
			data["meta"] = resp.Meta
		}
		return &Result{Data: data, Err: askErr}, nil
	}

	payload := map[string]any{"verb": verb, "duration_ms": durMS,
		"response": map[string]any{"submission": submission, "meta": metaOrNil(resp.Meta)}}
	h.describe(payload, p)
	if resp.Meta != nil {
		payload["meta"] = resp.Meta
	}
	if subst != nil {
		payload["substitution"] = subst
	}
	if err := h.sink.Append(&plugin.Event{Turn: call.Turn, Kind: trace.KindAgentCallComplete, StatePath: call.State, CallID: p.req.CallID, Payload: payload}); err != nil {
		return nil, &TraceError{err}
	}
	if p.alias == "" {
		return &Result{Data: builtinData(verb, submission, resp.Meta)}, nil
	}
	return &Result{Data: map[string]any{
		"submission": submission, "submitted": submission, "meta": metaOrNil(resp.Meta), "ok": true, "exit_code": 0,
	}}, nil
}

// selectEpisode asks a replaying agent (the cassette transport) which
// recorded episode will answer. A cassette-backed call takes its call_id
// from the cassette key, and its agent.call.start carries episode_id and
// match_idx. Other agents get the zero Episode and keep the live call_id.
func (h *Host) selectEpisode(ctx context.Context, p *prepared) agent.Episode {
	sel, ok := p.agent.(agent.EpisodeSelector)
	if !ok {
		return agent.Episode{}
	}
	ep, ok := sel.SelectEpisode(ctx, p.req)
	if !ok {
		return agent.Episode{}
	}
	app := ep.AppID
	if app == "" {
		app = h.story.App.ID
	}
	p.req.CallID = trace.CallID(app, trace.CassetteCallKey(ep.ID, ep.MatchIdx))
	return ep
}

func metaOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// describe adds the persona and model to an agent event payload.
func (h *Host) describe(payload map[string]any, p *prepared) {
	model := ""
	if p.persona != nil {
		payload["agent"] = p.persona.Name
		model = p.persona.Model
	}
	if model == "" && p.alias != "" {
		if d, ok := h.registry.Declaration(p.alias); ok {
			model = d.Model
		}
	}
	if model = p.route.model(model); model != "" {
		payload["model"] = model
	}
}

// askOnce asks one agent under the hard deadline, then checks sub-events
// and validates the submission. Sub-events that pass land in the trace.
func (h *Host) askOnce(ctx context.Context, alias string, a agent.Agent, p *prepared, call *Call) (*agent.AskResponse, any, *agent.AskError) {
	resp, err := h.askWithDeadline(ctx, a, p)
	if err != nil {
		return nil, nil, err
	}
	ns := alias
	if ns == "" {
		ns = agent.DefaultAlias
	}
	if err := checkSubEvents(resp.SubEvents, ns, p.req.CallID); err != nil {
		return resp, nil, err
	}
	for i := range resp.SubEvents {
		ev := resp.SubEvents[i]
		ev.Turn, ev.StatePath, ev.CallID, ev.TS, ev.Seq = call.Turn, call.State, p.req.CallID, "", 0
		ev.ParentTurn, ev.EpisodeID, ev.MatchIdx = 0, "", 0
		if err := h.sink.Append(&ev); err != nil {
			return resp, nil, agent.Errorf(agent.KindTransportError, "sub_event[%d]: %v", i, &TraceError{err})
		}
	}
	sub, verr := validate(p.schema, resp.Submission)
	if verr != nil {
		return resp, nil, verr
	}
	return resp, sub, nil
}

// askWithDeadline runs Ask under the call's hard deadline. An agent that
// overruns it is abandoned: its late answer is discarded when it arrives.
func (h *Host) askWithDeadline(ctx context.Context, a agent.Agent, p *prepared) (*agent.AskResponse, *agent.AskError) {
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	type answer struct {
		resp *agent.AskResponse
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		r, err := a.Ask(cctx, p.req)
		ch <- answer{r, err}
	}()
	var ans answer
	select {
	case ans = <-ch:
	case <-cctx.Done():
		return nil, deadlineError(ctx, p.timeout)
	}
	if ans.err != nil {
		if ae, ok := agent.AsAskError(ans.err); ok {
			return nil, ae
		}
		if cctx.Err() != nil {
			return nil, deadlineError(ctx, p.timeout)
		}
		return nil, &agent.AskError{Kind: agent.KindPluginCrash, Detail: ans.err.Error(), Err: ans.err}
	}
	if ans.resp == nil {
		return nil, agent.Errorf(agent.KindPluginCrash, "agent returned no response and no error")
	}
	return ans.resp, nil
}

func deadlineError(parent context.Context, timeout time.Duration) *agent.AskError {
	if err := parent.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return agent.Errorf(agent.KindDeadlineExceeded, "call cancelled: %w", err)
	}
	return agent.Errorf(agent.KindDeadlineExceeded, "no answer within the hard deadline of %s; a late answer is discarded", timeout)
}

// fallback retries a schema-invalid answer once on agent.claude.
func (h *Host) fallback(ctx context.Context, p *prepared, call *Call) (*agent.AskResponse, any, *agent.AskError) {
	fb, err := h.registry.Get(agent.DefaultAlias)
	if err != nil {
		return nil, nil, agent.Errorf(agent.KindTransportError, "fallback to %s: %v", agent.DefaultAlias, err)
	}
	return h.askOnce(ctx, agent.DefaultAlias, fb, p, call)
}

// checkSubEvents enforces the sub-event contract before any of them lands.
func checkSubEvents(evs []plugin.Event, alias, callID string) *agent.AskError {
	prefix := alias + "."
	for i := range evs {
		if len(evs[i].Kind) < len(prefix) || evs[i].Kind[:len(prefix)] != prefix {
			return &agent.AskError{Kind: agent.KindSubEventNamespaceViolation,
				Detail: fmt.Sprintf("sub_event[%d]: Kind %q does not start with required namespace prefix %q", i, evs[i].Kind, prefix)}
		}
		if evs[i].CallID != callID {
			return &agent.AskError{Kind: agent.KindSubEventCallIDMismatch,
				Detail: fmt.Sprintf("sub_event[%d]: CallID %q does not match parent call_id %q", i, evs[i].CallID, callID)}
		}
	}
	return nil
}

// validate parses and validates a submission. Without a schema a JSON
// submission is parsed and anything else is kept as a string.
func validate(s *schema.Schema, raw json.RawMessage) (any, *agent.AskError) {
	if s == nil {
		if len(raw) == 0 {
			return nil, nil
		}
		v, err := schema.Decode(raw)
		if err != nil {
			return string(raw), nil
		}
		return v, nil
	}
	if len(raw) == 0 {
		return nil, &agent.AskError{Kind: agent.KindSchemaInvalid, Detail: "submission is not valid JSON: empty submission"}
	}
	v, err := s.ValidateJSON(raw)
	if err != nil {
		return nil, &agent.AskError{Kind: agent.KindSchemaInvalid, Detail: err.Error(), Err: err}
	}
	return v, nil
}

// builtinData maps a built-in (claude path) answer to the bind keys of
// story-format.md §9: decide → submitted, rationale, exit_code, ok,
// claude_session_id; the other verbs → stdout, exit_code, ok, submitted.
func builtinData(verb string, submission any, meta map[string]any) map[string]any {
	exit := 0
	if v, ok := meta["exit_code"]; ok {
		switch n := v.(type) {
		case int:
			exit = n
		case int64:
			exit = int(n)
		case float64:
			exit = int(n)
		}
	}
	d := map[string]any{"submitted": submission, "exit_code": exit, "ok": exit == 0, "meta": metaOrNil(meta)}
	if verb == plugin.VerbDecide {
		d["rationale"] = meta["result"]
		d["claude_session_id"] = meta["session_id"]
	} else {
		d["stdout"] = meta["result"]
	}
	return d
}
