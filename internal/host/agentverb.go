package host

import (
	"context"
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
	ac := h.newCall(p.alias, p, call)
	ep := h.selectEpisode(ctx, p, ac)

	startPayload := trace.AgentCallStart{Verb: verb, Prompt: p.req.Prompt}
	startPayload.Agent, startPayload.Model = describe(ac)
	p.route.describeStart(&startPayload)
	if p.alias == "" {
		if p.schema != nil {
			startPayload.Input = map[string]any{"schema_path": p.schema.Path}
		}
	} else if p.schema != nil {
		startPayload.Input = map[string]any{"schema_present": true}
	}
	if err := h.sink.AppendPayload(&plugin.Event{Turn: call.Turn, StatePath: call.State, CallID: p.req.CallID,
		EpisodeID: ep.ID, MatchIdx: ep.MatchIdx}, startPayload); err != nil {
		return nil, &TraceError{err}
	}

	answered := ac // the call whose agent gave the final answer
	resp, submission, askErr := h.askOnce(ctx, p.alias, p.agent, ac, p, call)
	var subst *trace.Substitution
	if askErr != nil && askErr.Kind == agent.KindSchemaInvalid && p.alias != "" && p.alias != agent.DefaultAlias {
		if fe, ok := p.agent.(agent.FallbackEligible); ok && fe.FallbackEligible() {
			subst = &trace.Substitution{Reason: string(agent.KindSchemaInvalid), OriginalPlugin: p.alias, FallbackPlugin: agent.DefaultAlias}
			answered = h.newCall(agent.DefaultAlias, p, call)
			resp, submission, askErr = h.fallback(ctx, answered, p, call)
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
		// error_kind carries the kind on its own, so no masking of the
		// error text can change it.
		payload := trace.AgentCallError{Verb: verb, DurationMS: durMS, Error: askErr.Error(), ErrorKind: string(askErr.Kind), Substitution: subst}
		payload.Agent, payload.Model = describe(answered)
		if err := h.sink.AppendPayload(&plugin.Event{Turn: call.Turn, StatePath: call.State, CallID: p.req.CallID}, payload); err != nil {
			return nil, &TraceError{err}
		}
		data := map[string]any{"ok": false, "exit_code": 1, "error": askErr.Error()}
		if resp != nil && resp.Meta != nil {
			data["meta"] = resp.Meta
		}
		return &Result{Data: data, Err: askErr, CallID: p.req.CallID}, nil
	}

	payload := trace.AgentCallComplete{Verb: verb, DurationMS: durMS,
		Response: trace.AgentResponse{Submission: submission, Meta: resp.Meta}, Meta: resp.Meta, Substitution: subst}
	payload.Agent, payload.Model = describe(answered)
	if err := h.sink.AppendPayload(&plugin.Event{Turn: call.Turn, StatePath: call.State, CallID: p.req.CallID}, payload); err != nil {
		return nil, &TraceError{err}
	}
	if p.alias == "" {
		return &Result{Data: builtinData(verb, submission, resp.Meta)}, nil
	}
	return &Result{Data: map[string]any{
		"submission": submission, "submitted": submission, "meta": metaOrNil(resp.Meta), "ok": true, "exit_code": 0,
	}}, nil
}

// newCall builds the call value handed to the agent of alias ("" = the
// built-in claude path): the request, persona, schema validator, the
// provider and effort, the run, and the model resolved for that agent.
func (h *Host) newCall(alias string, p *prepared, call *Call) *agent.Call {
	ac := &agent.Call{Request: p.req, Alias: alias, Persona: p.persona}
	if p.schema != nil {
		ac.SchemaPath = p.schema.Path
		s := p.schema
		ac.Validate = func(b []byte) error { _, err := s.ValidateJSON(b); return err }
	}
	if pv, ok := call.Args["provider"].(string); ok {
		ac.ProviderName = pv
	}
	if p.route != nil {
		if p.route.Provider != "" {
			ac.ProviderName = p.route.Provider
		}
		ac.Effort = p.route.Effort
	}
	if ac.ProviderName != "" {
		if spec, ok := h.story.Providers[ac.ProviderName]; ok {
			ac.Provider = &spec
		}
	}
	ac.Model = h.resolveModel(alias, ac, p.route)
	if h.run != nil {
		ac.Run = h.run(call)
	}
	return ac
}

// selectEpisode asks a replaying agent (the cassette transport) which
// recorded episode will answer. A cassette-backed call takes its call_id
// from the cassette key, and its agent.call.start carries episode_id and
// match_idx. Other agents get the zero Episode and keep the live call_id.
func (h *Host) selectEpisode(ctx context.Context, p *prepared, ac *agent.Call) agent.Episode {
	sel, ok := p.agent.(agent.EpisodeSelector)
	if !ok {
		return agent.Episode{}
	}
	ep, ok := sel.SelectEpisode(ctx, ac)
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

// describe returns the persona and the model of the call that answered,
// as an agent event payload records them.
func describe(ac *agent.Call) (persona, model string) {
	if ac.Persona != nil {
		persona = ac.Persona.Name
	}
	return persona, ac.Model
}
