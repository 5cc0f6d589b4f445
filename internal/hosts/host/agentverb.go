package host

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/plugin"
)

// agentHandler answers host.agent.<verb>.
type agentHandler struct {
	h    *Host
	verb string
	name string // AgentNamespace + verb, built once
}

// Invoke prepares the call and sends it through the host's ask chain
// (ask_chain.go).
func (ah *agentHandler) Invoke(ctx context.Context, call *Call) (*Result, error) {
	c, err := ah.prepare(call)
	if err != nil {
		return nil, err
	}
	a, err := ah.h.ask(ctx, c)
	if err != nil {
		return nil, err
	}
	return c.result(a), nil
}

// prepare renders the prompt, resolves persona, schema and agent, and builds
// the request and the call value. Failures here happen before anything is
// sent or traced.
func (ah *agentHandler) prepare(call *Call) (*askCall, error) {
	h, verb, name := ah.h, ah.verb, ah.name
	p := &askCall{verb: verb, call: call, timeout: h.timeout}

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
			//lint:ignore ST1005 the message ends with a YAML key as the author writes it, colon included.
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

	if call.Schema != nil {
		p.schema = call.Schema
	} else if sp := schemaPath(call.Args); sp != "" {
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

	p.reqv = agent.AskRequest{
		SessionID: call.SessionID,
		Turn:      int(call.Turn),
		StatePath: call.State,
		Verb:      verb,
		Prompt:    prompt,
		With:      call.Args,
		World:     plugin.World{Vars: call.World},
	}
	p.req = &p.reqv
	if p.schema != nil {
		p.req.Schema = p.schema.Raw
	}
	h.fillCall(&p.acv, p)
	p.ac = &p.acv
	return p, nil
}

// schemaPath is with.schema, else Kitsoki's task form acceptance.schema.
func schemaPath(with map[string]any) string {
	if sp, _ := with["schema"].(string); sp != "" {
		return sp
	}
	if a, ok := with["acceptance"].(map[string]any); ok {
		sp, _ := a["schema"].(string)
		return sp
	}
	return ""
}

// ParseTimeout reads a with.timeout value as the agent verbs do (a Go
// duration string or a number of seconds).
func ParseTimeout(v any) (time.Duration, error) { return parseTimeout(v) }

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

// newCall builds the call value handed to the agent of c.alias ("" = the
// built-in claude path): the request, persona, schema validator, the
// provider and effort, the run, and the model resolved for that agent.
func (h *Host) newCall(c *askCall) *agent.Call {
	ac := &agent.Call{}
	h.fillCall(ac, c)
	return ac
}

// fillCall sets *ac to newCall's value (prepare keeps it in the askCall).
func (h *Host) fillCall(ac *agent.Call, c *askCall) {
	*ac = agent.Call{Request: c.req, Alias: c.alias, Persona: withContext(c.persona, h.story.App.Context)}
	if c.schema != nil {
		ac.SchemaPath = c.schema.Path
		ac.Validate = c.schema.Check()
	}
	if c.persona != nil {
		// The persona's defaults: with.provider and a route win.
		ac.ProviderName, ac.Effort = c.persona.Provider, c.persona.Effort
	}
	if pv, ok := c.call.Args["provider"].(string); ok && pv != "" {
		ac.ProviderName = pv
	}
	if c.route != nil {
		if c.route.Provider != "" {
			ac.ProviderName = c.route.Provider
		}
		if c.route.Effort != "" {
			ac.Effort = c.route.Effort
		}
	}
	if ac.ProviderName != "" {
		if spec, ok := h.story.Providers[ac.ProviderName]; ok {
			ac.Provider = &spec
			if ac.Effort == "" {
				ac.Effort = spec.Effort // the provider's effort: under the persona's and a route's
			}
		}
	}
	if st := h.story.States[c.req.StatePath]; st != nil && st.WriteMode == story.WriteReadOnly {
		ac.ReadOnly = true
	}
	ac.Model = h.resolveModel(c.alias, ac, c.route)
	if h.run != nil {
		ac.Run = h.run(c.call)
	}
}

// withContext is p with the story's app.context: put before its system
// prompt (a persona of its own when p is nil); p itself when there is no
// context.
func withContext(p *agent.Persona, context string) *agent.Persona {
	if context == "" || (p != nil && p.InheritDefault) {
		return p
	}
	out := &agent.Persona{}
	if p != nil {
		cp := *p
		out = &cp
	}
	if out.SystemPrompt == "" {
		out.SystemPrompt = context
	} else {
		out.SystemPrompt = context + "\n\n" + out.SystemPrompt
	}
	return out
}
