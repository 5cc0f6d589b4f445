package openai

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/httpllm"
	"github.com/kitsoki/kitsoki/internal/agents/toolloop"
	schemapkg "github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/plugin"
)

// repairText is sent when an answer does not match the schema.
const repairText = "Your answer does not match the required JSON schema: %s. Answer again with only the JSON, matching the schema."

// state is one call on its way.
type state struct {
	a     *Agent
	call  *agent.Call
	d     dialect
	hints httpllm.Hints
	tools *toolloop.Tools // nil for decide and extract

	structured *Structured
	validate   func([]byte) error
	maxTurns   int

	stats      httpllm.Stats
	tokens     httpllm.Tokens
	cost       float64
	priced     bool
	turns      int
	tries      int
	text       string
	submission json.RawMessage
	finish     string
	model, id  string

	threadKey string
	thread    *thread
	resumed   bool

	constrained bool           // response_format is sent
	meta        map[string]any // a flavor's own keys
}

// Ask answers one agent call on the model the host resolved (call.Model;
// none is the default model).
func (a *Agent) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	if call == nil || call.Request == nil {
		return nil, agent.Errorf(agent.KindTransportError, "%s: nil request", apiName)
	}
	if d, err := time.Parse(time.RFC3339Nano, call.Request.Deadline); err == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	s, err := a.prepare(ctx, call)
	if err != nil {
		return nil, err
	}
	if s.tools != nil {
		defer s.tools.Close()
	}
	if err := s.run(ctx); err != nil {
		ae := a.describe(ctx, err, s.hints)
		ae.CostUSD = s.cost // what the turns that were answered cost
		return nil, ae
	}
	a.keep(s)
	return s.response(), nil
}

// prepare finds the key, builds the endpoint and the thread, and opens
// the tools of the verbs that use them.
func (a *Agent) prepare(ctx context.Context, call *agent.Call) (*state, error) {
	defKey, model := a.defaults()
	keyEnv, key := httpllm.Key(a.decl, defKey, a.cfg.LookupEnv)
	if call.Model != "" {
		model = call.Model
	}
	s := &state{a: a, call: call, hints: a.hints(keyEnv, model), model: model, maxTurns: a.decl.MaxTurns, meta: a.flavorMeta()}
	if key == "" && (a.decl.APIKeyEnv != "" || a.official) {
		return nil, httpllm.MissingKey(s.hints)
	}
	if s.maxTurns <= 0 {
		s.maxTurns = DefaultMaxTurn
	}
	req := call.Request
	e := a.endpoint(key)
	if a.api == APIResponses {
		s.d = &responsesDialect{e: e, req: ResponsesRequest{Model: model}}
	} else {
		s.d = &chatDialect{e: e, req: ChatRequest{Model: model}, official: a.official}
	}
	if hasSchema(req.Schema) {
		s.structured, s.validate = a.prepared(req.Schema), call.Validate
		if s.validate == nil {
			sc, err := schemapkg.CompileDocument("call schema", req.Schema)
			if err != nil {
				return nil, agent.Errorf(agent.KindTransportError, "%s: the call's schema does not compile: %w", apiName, err)
			}
			s.validate = sc.Check()
		}
	}
	system := ""
	if p := call.Persona; p != nil {
		system = p.SystemPrompt
	}
	s.d.begin(system, req.Prompt, s.converse())
	format := s.structured
	if format != nil && !a.constrain(req.Schema, s.meta) {
		format = nil
	}
	s.constrained = format != nil
	s.d.format(format, call.Effort, a.decl.MaxTokens)
	if req.Verb == plugin.VerbDecide || req.Verb == plugin.VerbExtract {
		return s, nil
	}
	ns := call.Alias
	if ns == "" {
		ns = agent.DefaultAlias
	}
	tools, err := toolloop.Open(ctx, call, toolloop.Options{Namespace: ns, Secrets: append([]string{key}, a.decl.Secrets...), Clock: a.cfg.Clock, Logger: a.logger})
	if err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "%s: %w", apiName, err)
	}
	defs, err := tools.Defs(ctx, toolloop.Submit) // the answer is the final message, constrained
	if err != nil {
		tools.Close()
		return nil, agent.Errorf(agent.KindTransportError, "%s: %w", apiName, err)
	}
	s.tools = tools
	s.d.tools(defs)
	return s, nil
}

// prepared is Prepare of a schema text, once per text (a story's calls
// reuse a handful of schemas).
func (a *Agent) prepared(schema json.RawMessage) *Structured {
	if v, ok := a.schemas.Load(string(schema)); ok {
		return v.(*Structured)
	}
	st := Prepare(schema)
	a.schemas.Store(string(schema), &st)
	return &st
}

// converse finds the thread a converse call continues (nil for a new one
// and for the other verbs).
func (s *state) converse() *thread {
	req := s.call.Request
	if req.Verb != plugin.VerbConverse {
		return nil
	}
	persona := ""
	if s.call.Persona != nil {
		persona = s.call.Persona.Name
	}
	s.threadKey = strings.Join([]string{req.SessionID, persona, s.call.Alias}, "\x00")
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	if t := s.a.threads[s.threadKey]; t != nil {
		s.thread, s.resumed = t, true
	}
	return s.thread
}

// run takes turns until the model answers: its function calls are run
// and their results sent back; a structured answer that does not match
// the schema goes back with the violations (Repairs times).
func (s *state) run(ctx context.Context) error {
	for {
		if s.turns >= s.maxTurns {
			return httpllm.TooManyTurns(s.hints, s.turns)
		}
		if err := s.call.CheckCost(s.cost); err != nil {
			return err
		}
		t, err := s.d.send(ctx, &s.stats)
		if ae, ok := s.a.failOpen(err, s.constrained); ok {
			// The server could not apply the constraint: answer
			// unconstrained, record it, and let validation be the
			// guarantee.
			reply := agent.Clip(ae.Body)
			s.a.logger.Warn(s.hints.API+": server refused the schema constraint; retrying unconstrained", "status", ae.Status, "reply", reply)
			s.meta["fail_open"] = fmt.Sprintf("http %d: %s", ae.Status, reply)
			s.meta["grammar"], s.meta["json_schema"] = false, false
			s.constrained = false
			s.d.unconstrain()
			t, err = s.d.send(ctx, &s.stats)
		}
		if err != nil {
			return err
		}
		s.account(t)
		switch {
		case t.refusal != "":
			return agent.Errorf(agent.KindPluginCrash, "%s: the model refused to answer: %s", apiName, agent.Clip([]byte(t.refusal)))
		case t.truncated:
			return httpllm.Truncated(s.hints, s.a.decl.MaxTokens)
		case len(t.calls) > 0:
			rs, err := s.useTools(ctx, t.calls)
			if err != nil {
				return err
			}
			s.d.results(rs)
			continue
		}
		s.text = t.text
		if s.structured == nil {
			return nil
		}
		s.tries++
		sub, verr := s.check(t.text)
		if verr == nil {
			s.submission = sub
			return nil
		}
		if s.tries > Repairs {
			return httpllm.NoSubmission(s.call.Request.Verb, s.tries, verr.Error())
		}
		s.d.user(fmt.Sprintf(repairText, verr))
	}
}

// check reads a structured answer and validates it.
func (s *state) check(text string) (json.RawMessage, error) {
	b, ok := AnswerJSON(text)
	if !ok {
		return nil, fmt.Errorf("the answer is not JSON (%s)", agent.Clip(b))
	}
	b = s.structured.Unwrap(b)
	if err := s.validate(b); err != nil {
		return nil, err
	}
	return b, nil
}

// useTools runs the functions a turn called.
func (s *state) useTools(ctx context.Context, calls []funcCall) ([]toolResult, error) {
	out := make([]toolResult, 0, len(calls))
	for _, c := range calls {
		if s.tools == nil {
			out = append(out, toolResult{callID: c.id, text: "no tools are offered on this call"})
			continue
		}
		res, err := s.tools.Call(ctx, c.name, json.RawMessage(c.args))
		if err != nil {
			return nil, err
		}
		text := res.Text
		if res.IsError {
			text = "error: " + text
		}
		out = append(out, toolResult{callID: c.id, text: text})
	}
	return out, nil
}

// account adds a turn's usage and cost.
func (s *state) account(t *turn) {
	s.turns++
	s.finish, s.id = t.finish, t.id
	if t.model != "" && (s.a.cfg.Flavor == nil || !s.a.cfg.Flavor.CallModel || s.call.Model == "") {
		s.model = t.model
	}
	s.tokens = s.tokens.Add(t.tokens)
	if p, ok := httpllm.PriceFor(httpllm.ProviderOpenAI, s.model, s.a.decl.Pricing); ok {
		s.cost += httpllm.Cost(p, t.tokens)
		s.priced = true
	}
}

// keep stores a converse thread for the session's next call.
func (a *Agent) keep(s *state) {
	if s.threadKey == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	if s.thread == nil {
		s.thread = &thread{id: newID()}
	}
	s.d.save(s.thread)
	a.threads[s.threadKey] = s.thread
}

// response is the call's answer and its meta.
func (s *state) response() *agent.AskResponse {
	t := s.tokens
	provider := "openai"
	if f := s.a.cfg.Flavor; f != nil {
		provider = f.Provider
	}
	meta := map[string]any{
		"provider": provider, "api": s.a.api, "model": s.model, "result": s.text, "exit_code": 0,
		"finish_reason": s.finish, "num_turns": s.turns, "session_id": s.id,
		"usage": map[string]any{"input_tokens": t.Input + t.CacheRead, "output_tokens": t.Output, "cached_input_tokens": t.CacheRead},
	}
	if s.priced {
		meta["cost_usd"] = s.cost
	}
	if s.stats.Retries > 0 {
		meta["http_retries"] = s.stats.Retries
	}
	if s.tries > 1 {
		meta["repairs"] = s.tries - 1
	}
	if s.call.Effort != "" {
		meta["effort"] = s.call.Effort
	}
	if s.structured != nil {
		meta["strict"] = s.structured.Strict
	}
	if s.threadKey != "" {
		meta["session_id"], meta["session_resumed"] = s.thread.id, s.resumed
	}
	for k, v := range s.meta {
		meta[k] = v
	}
	resp := &agent.AskResponse{Meta: meta, Submission: s.submission}
	if s.tools != nil {
		resp.SubEvents = s.tools.SubEvents()
	}
	if s.structured == nil && s.call.Alias != "" {
		resp.Submission, _ = json.Marshal(s.text)
	}
	return resp
}

func hasSchema(s json.RawMessage) bool {
	t := bytes.TrimSpace(s)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "conv_" + hex.EncodeToString(b[:])
}
