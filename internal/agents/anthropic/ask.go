package anthropic

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/httpllm"
	"github.com/kitsoki/kitsoki/internal/agents/toolloop"
	"github.com/kitsoki/kitsoki/plugin"
)

// submitInstructions go into the system prompt of a call with a schema.
const submitInstructions = "Deliver your result by calling the " + toolloop.Submit + " tool: its input schema is the shape of the result. " +
	"If it returns an error, correct the arguments and call it again. Your text reply is not recorded as the result."

// nudge is sent when the model finished without a valid submission.
const nudge = "You finished without calling " + toolloop.Submit + ", so no result was recorded. " +
	"Call " + toolloop.Submit + " now with your answer as its arguments; they must match its input schema."

// state is one call on its way: the request, grown turn by turn, and
// what the turns cost.
type state struct {
	a      *Agent
	call   *agent.Call
	client *httpllm.Client
	header http.Header
	hints  httpllm.Hints
	tools  *toolloop.Tools
	req    request
	stream bool

	hasSchema bool
	forced    bool   // decide and extract: every turn forces submit
	effort    string // the effort sent as a thinking budget, "" for none
	skipped   string // why the call's effort was not sent
	maxTurns  int

	stats     httpllm.Stats
	tokens    httpllm.Tokens
	cost      float64
	priced    bool
	turns     int
	tries     int    // forced turns
	violation string // the last submit's error
	text      string // the last text the model wrote
	stop      string
	model     string // as the API reports it
	msgID     string

	convKey string
	conv    *conversation
	resumed bool
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
	defer s.tools.Close()
	if err := s.run(ctx); err != nil {
		ae := httpllm.Describe(ctx, err, s.hints)
		ae.CostUSD = s.cost // what the turns that were answered cost
		return nil, ae
	}
	a.keep(s)
	return s.response(), nil
}

// prepare finds the key, opens the call's tools and builds the first
// request.
func (a *Agent) prepare(ctx context.Context, call *agent.Call) (*state, error) {
	keyEnv, key := httpllm.Key(a.decl, DefaultKeyEnv, a.cfg.LookupEnv)
	req := call.Request
	model := call.Model
	if model == "" {
		model = agent.DefaultModel(agent.PluginAnthropic)
	}
	s := &state{a: a, call: call, hints: a.hints(keyEnv, model), stream: a.decl.StreamOr(true), model: model}
	if key == "" {
		return nil, httpllm.MissingKey(s.hints)
	}
	think, err := thinkingFor(call.Effort)
	if err != nil {
		return nil, err
	}
	s.hasSchema = hasSchema(req.Schema)
	s.forced = s.hasSchema && (req.Verb == plugin.VerbDecide || req.Verb == plugin.VerbExtract)
	if s.forced && think != nil {
		s.skipped, think = "extended thinking cannot be combined with the forced submit tool of "+req.Verb, nil
	}
	if think != nil {
		s.effort = call.Effort
	}
	s.maxTurns = a.decl.MaxTurns
	if s.maxTurns <= 0 {
		s.maxTurns = DefaultMaxTurns
	}
	secrets := append([]string{key}, a.decl.Secrets...)
	s.client, s.header = a.client(key, a.decl.Secrets), a.header(key)
	ns := call.Alias
	if ns == "" {
		ns = agent.DefaultAlias
	}
	if s.tools, err = toolloop.Open(ctx, call, toolloop.Options{Namespace: ns, Secrets: secrets, Clock: a.cfg.Clock, Logger: a.logger}); err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "%s: %w", apiName, err)
	}
	if err := s.build(ctx, model, think); err != nil {
		s.tools.Close()
		return nil, err
	}
	return s, nil
}

// build assembles the first request: model, output bound, the system
// prompt and the tools (both marked for prompt caching), the thread so
// far for converse, and the prompt.
func (s *state) build(ctx context.Context, model string, think *thinking) error {
	req := s.call.Request
	maxTokens := s.a.decl.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	if think != nil {
		maxTokens += think.BudgetTokens
	}
	s.req = request{Model: model, MaxTokens: maxTokens, Stream: s.stream, Thinking: think}
	var system []string
	if p := s.call.Persona; p != nil && p.SystemPrompt != "" {
		system = append(system, p.SystemPrompt)
	}
	if s.hasSchema {
		system = append(system, submitInstructions)
	}
	if len(system) > 0 {
		s.req.System = []block{{Type: "text", Text: strings.Join(system, "\n\n"), CacheControl: ephemeral}}
	}
	var except []string
	if !s.hasSchema {
		except = append(except, toolloop.Submit)
	}
	defs, err := s.tools.Defs(ctx, except...)
	if err != nil {
		return agent.Errorf(agent.KindTransportError, "%s: %w", apiName, err)
	}
	for _, d := range defs {
		if s.forced && d.Name != toolloop.Submit {
			continue
		}
		s.req.Tools = append(s.req.Tools, tool{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema})
	}
	if n := len(s.req.Tools); n > 0 {
		s.req.Tools[n-1].CacheControl = ephemeral
	}
	if req.Verb == plugin.VerbConverse {
		s.convKey = strings.Join([]string{req.SessionID, personaName(s.call.Persona), s.call.Alias}, "\x00")
		s.a.mu.Lock()
		if c := s.a.convs[s.convKey]; c != nil {
			s.conv, s.resumed = c, true
			s.req.Messages = append(s.req.Messages, c.messages...)
		}
		s.a.mu.Unlock()
	}
	s.req.Messages = append(s.req.Messages, message{Role: "user", Content: []block{{Type: "text", Text: req.Prompt}}})
	return nil
}

// run takes turns until the model has answered: tool calls are made and
// their results sent back; a structured call ends with the first valid
// submission, and a turn that ends without one is sent back to be
// corrected (Repairs times).
func (s *state) run(ctx context.Context) error {
	force := s.forced
	for {
		if s.turns >= s.maxTurns {
			return httpllm.TooManyTurns(s.hints, s.turns)
		}
		if err := s.call.CheckCost(s.cost); err != nil {
			return err
		}
		resp, err := s.send(ctx, force)
		if err != nil {
			return err
		}
		s.account(resp)
		s.req.Messages = append(s.req.Messages, message{Role: "assistant", Content: resp.Content})
		switch resp.StopReason {
		case "max_tokens":
			return httpllm.Truncated(s.hints, s.req.MaxTokens)
		case "refusal":
			return agent.Errorf(agent.KindPluginCrash, "%s: the model refused to answer (stop_reason refusal)", apiName)
		}
		if force {
			s.tries++
		}
		var reply []block
		if uses := resp.toolUses(); len(uses) > 0 {
			if reply, err = s.useTools(ctx, uses, force); err != nil {
				return err
			}
		}
		if _, ok := s.tools.Submission(); ok || (!s.hasSchema && len(reply) == 0) {
			return nil
		}
		if len(reply) == 0 || force {
			if s.tries > Repairs {
				return httpllm.NoSubmission(s.call.Request.Verb, s.tries, s.violation)
			}
			if len(reply) == 0 {
				reply = []block{{Type: "text", Text: nudge}}
			}
			force = true
		}
		s.req.Messages = append(s.req.Messages, message{Role: "user", Content: reply})
	}
}

// useTools runs the tools a turn asked for and returns their results.
// While submit is forced, it is the only tool that runs.
func (s *state) useTools(ctx context.Context, uses []block, force bool) ([]block, error) {
	out := make([]block, 0, len(uses))
	for _, u := range uses {
		var res toolloop.Result
		if force && u.Name != toolloop.Submit {
			res = toolloop.Result{Text: "only " + toolloop.Submit + " may be called now", IsError: true}
		} else {
			var err error
			if res, err = s.tools.Call(ctx, u.Name, u.Input); err != nil {
				return nil, err
			}
		}
		if u.Name == toolloop.Submit && res.IsError {
			s.violation = res.Text
		}
		out = append(out, block{Type: "tool_result", ToolUseID: u.ID, Content: res.Text, IsError: res.IsError})
	}
	return out, nil
}

// send makes one request; force makes the model call submit.
func (s *state) send(ctx context.Context, force bool) (*response, error) {
	r := s.req
	if force {
		r.ToolChoice, r.Thinking = &toolChoice{Type: "tool", Name: toolloop.Submit}, nil
	}
	body, err := json.Marshal(r)
	if err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "%s: encode the request: %w", apiName, err)
	}
	var resp *response
	err = s.client.Call(ctx, httpllm.Request{URL: s.a.url, Header: s.header, Body: body}, func(h *http.Response) error {
		var e error
		if s.stream && !strings.HasPrefix(h.Header.Get("Content-Type"), "application/json") {
			resp, e = readStream(h)
		} else {
			resp, e = readMessage(h)
		}
		return e
	}, &s.stats)
	return resp, err
}

// account adds a turn's usage and cost.
func (s *state) account(r *response) {
	s.turns++
	s.stop, s.msgID = r.StopReason, r.ID
	if r.Model != "" {
		s.model = r.Model
	}
	if t := r.text(); t != "" {
		s.text = t
	}
	t := r.Usage.tokens()
	s.tokens = s.tokens.Add(t)
	if p, ok := httpllm.PriceFor(httpllm.ProviderAnthropic, s.model, s.a.decl.Pricing); ok {
		s.cost += httpllm.Cost(p, t)
		s.priced = true
	}
}

// keep stores a converse thread for the session's next call.
func (a *Agent) keep(s *state) {
	if s.convKey == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	if s.conv == nil {
		s.conv = &conversation{id: newID()}
	}
	s.conv.messages = s.req.Messages
	a.convs[s.convKey] = s.conv
}

// response is the call's answer: the submission (or, without a schema,
// the text on a plugin alias), the tool calls as sub-events, and the meta
// the trace, binds and usage read.
func (s *state) response() *agent.AskResponse {
	t := s.tokens
	meta := map[string]any{
		"provider": "anthropic", "api": "messages", "model": s.model, "result": s.text, "exit_code": 0,
		"stop_reason": s.stop, "num_turns": s.turns, "session_id": s.msgID,
		"usage": map[string]any{"input_tokens": t.Input, "output_tokens": t.Output,
			"cache_creation_input_tokens": t.CacheWrite, "cache_read_input_tokens": t.CacheRead},
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
	if s.effort != "" {
		meta["effort"] = s.effort
	}
	if s.skipped != "" {
		meta["effort_skipped"] = s.skipped
	}
	if s.convKey != "" {
		meta["session_id"], meta["session_resumed"] = s.conv.id, s.resumed
	}
	resp := &agent.AskResponse{Meta: meta, SubEvents: s.tools.SubEvents()}
	if sub, ok := s.tools.Submission(); ok {
		resp.Submission = sub
	} else if !s.hasSchema && s.call.Alias != "" {
		resp.Submission, _ = json.Marshal(s.text)
	}
	return resp
}

func personaName(p *agent.Persona) string {
	if p == nil {
		return ""
	}
	return p.Name
}

// hasSchema reports whether a request carries a schema document.
func hasSchema(s json.RawMessage) bool {
	t := bytes.TrimSpace(s)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "conv_" + hex.EncodeToString(b[:])
}
