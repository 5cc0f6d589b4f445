package localllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	schemapkg "github.com/kitsoki/kitsoki/internal/base/schema"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/httpllm"
	"github.com/kitsoki/kitsoki/internal/agents/openai"
	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// DefaultParallel is the --parallel slot count of a managed sidecar: routing
// fires on nearly every turn, and llama-server serves one slot at a time
// without it.
const DefaultParallel = 4

// Config is what the builder needs beyond a declaration. The zero value is
// the user cache, the spec's pins and a sidecar pool of the agent's own;
// runtime.Open passes its run's pool, so the agents of a run share one
// server per model.
type Config struct {
	// Options configures fetching in managed mode.
	Options
	// Pool shares sidecars (nil → a pool of the agent's own, shared with
	// nothing).
	Pool *Pool
	// HTTPClient sends chat requests (nil → a client with keep-alive and no
	// timeout: the call's context bounds each request).
	HTTPClient *http.Client
	// MaxTokens is sent as max_tokens (0 → DefaultMaxTokens).
	MaxTokens int
	// Parallel is the sidecar's --parallel (0 → DefaultParallel).
	Parallel int
	// HealthTimeout bounds the wait for a new sidecar's /health (0 → 5 min).
	HealthTimeout time.Duration
	// StopGrace is how long Close waits after SIGTERM before SIGKILL (0 → 5 s).
	StopGrace time.Duration
	// LookupEnv reads api_key_env at call time (nil → os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Backoff is the first wait before an endpoint-mode request is
	// retried (0 → httpllm.DefaultBackoff); Options.Clock measures it.
	Backoff time.Duration
}

// DefaultTimeout bounds the wait for an answer (a cold CPU model is slow)
// when the declaration sets no timeout:.
const DefaultTimeout = 10 * time.Minute

// Builder builds builtin.local_llm agents with the zero Config: each
// managed agent has a sidecar of its own (NewBuilder with a Pool shares
// them). It validates the declaration and nothing else: no fetch, spawn or
// connection happens before the first Ask.
func Builder(decl agent.Declaration, env agent.BuildEnv) (agent.Agent, error) {
	return NewBuilder(Config{})(decl, env)
}

// NewBuilder returns a builder using cfg.
func NewBuilder(cfg Config) agent.Builder {
	return func(decl agent.Declaration, env agent.BuildEnv) (agent.Agent, error) {
		return New(decl, cfg, env.Logger)
	}
}

// Agent is a builtin.local_llm agent.
type Agent struct {
	decl      agent.Declaration
	cfg       Config
	logger    *slog.Logger
	http      *http.Client
	client    *httpllm.Client // sends through builtin.openai's Endpoint
	maxTokens int
	baseURL   string // endpoint mode: the API root, <endpoint>/v1

	sidecarHold // managed mode: the sidecar, acquired on first Ask

	subset  sync.Map // schema text → []Violation (grammar gate cache)
	compact sync.Map // schema text → the schema compacted, as sent
}

// New validates decl and returns an agent that does nothing until asked.
func New(decl agent.Declaration, cfg Config, logger *slog.Logger) (*Agent, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.Logger == nil {
		cfg.Logger = logger
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	if cfg.Pool == nil {
		cfg.Pool = NewPool()
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.HealthTimeout <= 0 {
		cfg.HealthTimeout = defaultHealthTimeout
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = defaultStopGrace
	}
	a := &Agent{decl: decl, cfg: cfg, logger: logger, http: cfg.HTTPClient, maxTokens: cfg.MaxTokens}
	if a.maxTokens <= 0 {
		a.maxTokens = DefaultMaxTokens
	}
	if a.http == nil {
		a.http = &http.Client{Transport: &http.Transport{
			Proxy:               nil, // a local model server is never reached through a proxy
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	switch {
	case decl.Endpoint != "":
		u, err := url.Parse(decl.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("builtin.local_llm endpoint: %q is not an http(s) URL (e.g. http://127.0.0.1:8080)", decl.Endpoint)
		}
		a.baseURL = strings.TrimRight(decl.Endpoint, "/") + "/v1"
	case decl.Model == "":
		return nil, errors.New("builtin.local_llm plugin requires model: or endpoint: (model: names a pinned model that kitsoki serves, endpoint: the URL of a server you run)")
	default:
		// Managed mode: check the pins now (no I/O) so a typo fails at
		// the first routing with a clear message, not deep in a fetch.
		if _, err := cfg.pins().model(decl.Model); err != nil {
			return nil, fmt.Errorf("builtin.local_llm: %w", err)
		}
		if decl.ServerBin == "" {
			if _, err := cfg.pins().release(cfg.platform()); err != nil {
				return nil, fmt.Errorf("builtin.local_llm: %w", err)
			}
		}
	}
	a.client = a.newClient()
	return a, nil
}

// newClient is the agent's HTTP client: an endpoint someone else runs is
// retried on 429 and 5xx like any API (retries:, default 2); a managed
// sidecar is not (kitsoki owns it: a failure is its crash, reported as
// one).
func (a *Agent) newClient() *httpllm.Client {
	retries := httpllm.DefaultRetries
	if a.baseURL == "" {
		retries = 0
	}
	d := a.decl
	if d.Timeout <= 0 {
		d.Timeout = DefaultTimeout
	}
	return openai.NewClient(d, openai.Config{HTTP: a.http, Clock: a.cfg.Clock, Backoff: a.cfg.Backoff}, a.logger, "local model server", retries)
}

// FallbackEligible reports that a submission of this agent rejected by
// kitsoki's validation may be retried once on agent.claude: a local model's
// schema failure is deterministic, so the same backend would fail again.
func (a *Agent) FallbackEligible() bool { return true }

// Ask sends the call to the model and returns its answer as the
// submission. The model is the call's (call.Model, as the host resolved it):
// an endpoint is asked for it by name, and a managed sidecar, which serves
// its one pinned model, refuses any other. The exchange goes through the
// builtin.openai transport's Endpoint: one chat completion, constrained by
// the schema when the declaration says so, unconstrained again when the
// server refuses the constraint (fail open).
func (a *Agent) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, agent.Errorf(agent.KindDeadlineExceeded, "local_llm agent: context already done: %w", err)
	}
	req, model := call.Request, call.Model
	if a.baseURL == "" { // managed: the sidecar serves its pinned model
		if model != "" && model != a.decl.Model {
			return nil, agent.Errorf(agent.KindTransportError, "local_llm agent: model %q is not served here: a managed sidecar serves its pinned model %q only (declare another alias for %q)", model, a.decl.Model, model)
		}
		model = a.decl.Model
	}
	if req.Deadline != "" { // the request's own soft deadline bounds the call too
		if d, err := time.Parse(time.RFC3339Nano, req.Deadline); err == nil {
			if cur, ok := ctx.Deadline(); !ok || d.Before(cur) {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, d)
				defer cancel()
			}
		}
	}
	var key string
	if name := a.decl.APIKeyEnv; name != "" {
		v, ok := a.cfg.LookupEnv(name)
		if !ok || v == "" {
			return nil, agent.Errorf(agent.KindTransportError, "local_llm agent: api_key_env %s is not set: refusing to send an unauthenticated request (export %s or remove api_key_env:)", name, name)
		}
		key = v
	}

	base := a.baseURL
	var proc *process
	meta := make(map[string]any, 8)
	if base == "" {
		p, restarted, err := a.managedEndpoint(ctx)
		if err != nil {
			return nil, err
		}
		proc = p
		base = p.baseURL + "/v1"
		if restarted != "" {
			meta["sidecar_restarted"] = restarted
		}
	}

	ep := a.endpoint(base, key)
	body, c := a.buildRequest(req, call.Persona, model, meta)
	st := &httpllm.Stats{}
	resp, err := ep.Chat(ctx, &body, st)
	var ae *httpllm.APIError
	if errors.As(err, &ae) && body.ResponseFormat != nil && isFailOpen(ae.Status, ae.Body) {
		// The server could not apply the constraint: answer unconstrained,
		// record it, and let validation be the guarantee.
		reply := agent.Clip(a.scrub(ae.Body, key))
		a.logger.Warn("local_llm: server refused the schema constraint; retrying unconstrained", "status", ae.Status, "reply", reply)
		meta["fail_open"] = fmt.Sprintf("http %d: %s", ae.Status, reply)
		body.ResponseFormat, c.grammar, c.jsonSchema = nil, false, false
		resp, err = ep.Chat(ctx, &body, st)
	}
	if st.Retries > 0 {
		meta["http_retries"] = st.Retries
	}
	if err != nil {
		var ce *httpllm.ConnError
		if proc != nil && errors.As(err, &ce) {
			if crash := a.crashed(proc); crash != nil {
				return nil, crash
			}
		}
		return nil, a.exchangeError(ctx, err, key)
	}
	return a.parseReply(resp, model, c, meta)
}

// endpoint is the call's endpoint: the agent's client, with the key (if
// any) masked and sent as a bearer token.
func (a *Agent) endpoint(base, key string) *openai.Endpoint {
	client := a.client
	if key != "" {
		cp := *client
		cp.Mask = secret.New(append([]string{key}, a.decl.Secrets...))
		client = &cp
	}
	return &openai.Endpoint{Client: client, BaseURL: base, Header: openai.AuthHeader(key), Stream: a.decl.StreamOr(false)}
}

// exchangeError is the call's failure when the exchange failed: the
// server's refusal with its body, a connection that failed, the call's
// end.
func (a *Agent) exchangeError(ctx context.Context, err error, key string) error {
	var (
		ae *httpllm.APIError
		ce *httpllm.ConnError
	)
	switch {
	case ctx.Err() != nil:
		return agent.Errorf(agent.KindDeadlineExceeded, "local_llm agent: the call ended before the answer came: %w", context.Cause(ctx))
	case errors.As(err, &ae):
		msg := fmt.Sprintf("local_llm agent: http %d: %s", ae.Status, agent.Clip(a.scrub(bytes.TrimSpace(ae.Body), key)))
		if ae.Attempts > 1 {
			msg += fmt.Sprintf(" (after %d attempts)", ae.Attempts)
		}
		return agent.Errorf(agent.KindTransportError, "%s", msg)
	case errors.As(err, &ce):
		return agent.Errorf(agent.KindTransportError, "local_llm agent: %v: check endpoint: under %s (and that the server is up)", ce, a.decl.Where())
	}
	return agent.Errorf(agent.KindTransportError, "local_llm agent: %s", a.scrub([]byte(err.Error()), key))
}

// constraint is what a request asked of the server.
type constraint struct {
	hasSchema, grammar, jsonSchema bool
}

// buildRequest assembles the chat request: the model, the persona's
// system prompt and the prompt as messages, max_tokens, and response_format
// when the declaration and the schema call for it.
func (a *Agent) buildRequest(req *agent.AskRequest, persona *agent.Persona, model string, meta map[string]any) (openai.ChatRequest, constraint) {
	body := openai.ChatRequest{Model: model, MaxTokens: a.maxTokens, Messages: make([]openai.ChatMessage, 0, 2)}
	if persona != nil && persona.SystemPrompt != "" {
		body.Messages = append(body.Messages, openai.ChatMessage{Role: "system", Content: persona.SystemPrompt})
	}
	body.Messages = append(body.Messages, openai.ChatMessage{Role: "user", Content: req.Prompt})
	c := constraint{hasSchema: hasSchema(req.Schema)}
	switch {
	case !c.hasSchema:
	case a.decl.JSONSchema:
		body.ResponseFormat, c.jsonSchema = newResponseFormat(a.compacted(req.Schema)), true
	case a.decl.Grammar:
		if vs := a.subsetViolations(req.Schema); len(vs) > 0 {
			meta["grammar_skipped"] = vs[0].String() + " is outside the llama.cpp grammar subset"
		} else {
			body.ResponseFormat, c.grammar = newResponseFormat(a.compacted(req.Schema)), true
		}
	}
	return body, c
}

// parseReply turns a completion into the response, or names what is
// wrong with it.
func (a *Agent) parseReply(cr *openai.ChatResponse, model string, c constraint, meta map[string]any) (*agent.AskResponse, error) {
	raw := cr.Raw
	if len(cr.Choices) == 0 {
		return nil, agent.Errorf(agent.KindTransportError, "local_llm agent: response has no choices (raw: %s)", agent.Clip(raw))
	}
	first := cr.Choices[0]
	if first.FinishReason == "length" {
		return nil, agent.Errorf(agent.KindTransportError, "local_llm agent: answer truncated at max_tokens %d (finish_reason \"length\"): the JSON is incomplete; shorten the expected answer or raise max_tokens", a.maxTokens)
	}
	if first.Message.Content == nil || strings.TrimSpace(*first.Message.Content) == "" {
		return nil, agent.Errorf(agent.KindTransportError, "local_llm agent: first choice has empty content (raw: %s)", agent.Clip(raw))
	}
	if model == "" { // the call named none: the server's
		model = cr.Model
	}
	meta["model"] = model
	meta["prompt_tokens"] = int(cr.Usage.PromptTokens)
	meta["completion_tokens"] = int(cr.Usage.CompletionTokens)
	meta["grammar"] = c.grammar
	meta["json_schema"] = c.jsonSchema
	return &agent.AskResponse{Submission: submissionFrom(*first.Message.Content, c.hasSchema), Meta: meta}, nil
}

// scrub removes the bearer token from server text quoted in an error, in
// case a server echoes the request headers.
func (a *Agent) scrub(b []byte, key string) []byte {
	if key == "" {
		return b
	}
	return bytes.ReplaceAll(b, []byte(key), []byte("[redacted]"))
}

// subsetViolations caches the grammar-subset check per schema text.
func (a *Agent) subsetViolations(schema json.RawMessage) []schemapkg.Violation {
	if v, ok := a.subset.Load(string(schema)); ok {
		return v.([]schemapkg.Violation)
	}
	vs, err := schemapkg.GrammarSubsetViolations(schema)
	if err != nil {
		vs = []schemapkg.Violation{{Construct: "invalid JSON", Pointer: ""}}
	}
	a.subset.Store(string(schema), vs)
	return vs
}

// compacted caches the compacted form of each schema text sent.
func (a *Agent) compacted(schema json.RawMessage) json.RawMessage {
	if v, ok := a.compact.Load(string(schema)); ok {
		return v.(json.RawMessage)
	}
	c := compactSchema(schema)
	a.compact.Store(string(schema), c)
	return c
}

// managedEndpoint acquires (once) and starts (when needed) the sidecar.
func (a *Agent) managedEndpoint(ctx context.Context) (*process, string, error) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, "", agent.Errorf(agent.KindTransportError, "local_llm agent: agent is closed")
	}
	if a.sidecar == nil {
		a.sidecar = a.cfg.Pool.acquire(sidecarConfig{
			opts:          a.cfg.Options,
			serverBin:     a.decl.ServerBin,
			model:         a.decl.Model,
			port:          a.decl.Port,
			parallel:      a.cfg.Parallel,
			healthTimeout: a.cfg.HealthTimeout,
			stopGrace:     a.cfg.StopGrace,
			logger:        a.cfg.Logger,
		})
	}
	s := a.sidecar
	a.mu.Unlock()
	p, restarted, err := s.endpoint(ctx)
	if err != nil {
		return nil, restarted, startAskError(ctx, err)
	}
	return p, restarted, nil
}

// startAskError classifies a failure to bring the sidecar up.
func startAskError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return agent.Errorf(agent.KindDeadlineExceeded, "local_llm agent: managed mode: %w", err)
	}
	var se *startError
	if errors.As(err, &se) && se.crash {
		return agent.Errorf(agent.KindPluginCrash, "local_llm agent: managed mode: %w", err)
	}
	return agent.Errorf(agent.KindTransportError, "local_llm agent: managed mode: %w", err)
}

// crashed reports the sidecar's death during a request as the call's error
// (so the trace records the crash) and forgets the process, so the next call
// starts a new one.
func (a *Agent) crashed(p *process) error {
	select {
	case <-p.done:
	case <-time.After(200 * time.Millisecond): // the exit may trail the reset connection
		return nil
	}
	a.sidecar.forget(p)
	return agent.Errorf(agent.KindPluginCrash, "local_llm agent: llama-server died during the call: %s (it is restarted on the next call)", p.exitReason())
}

// Close releases this agent's hold on the sidecar; the last holder stops it
// (SIGTERM, then SIGKILL after the grace period). Endpoint mode only drops
// idle connections.
func (a *Agent) Close() error { return a.sidecarHold.close(a.http, a.cfg.Pool) }
