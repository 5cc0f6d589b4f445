package localllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	schemapkg "github.com/kitsoki/kitsoki/internal/base/schema"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
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
}

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
	client    *http.Client
	maxTokens int
	chatURL   string // endpoint mode

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
	a := &Agent{decl: decl, cfg: cfg, logger: logger, client: cfg.HTTPClient, maxTokens: cfg.MaxTokens}
	if a.maxTokens <= 0 {
		a.maxTokens = DefaultMaxTokens
	}
	if a.client == nil {
		a.client = &http.Client{Transport: &http.Transport{
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
		a.chatURL = strings.TrimRight(decl.Endpoint, "/") + "/v1/chat/completions"
	case decl.Model == "":
		return nil, errors.New("builtin.local_llm plugin requires model: or endpoint:")
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
	return a, nil
}

// FallbackEligible reports that a submission of this agent rejected by
// kitsoki's validation may be retried once on agent.claude: a local model's
// schema failure is deterministic, so the same backend would fail again.
func (a *Agent) FallbackEligible() bool { return true }

// Ask sends the call to the model and returns its answer as the
// submission. The model is the call's (call.Model, as the host resolved it):
// an endpoint is asked for it by name, and a managed sidecar, which serves
// its one pinned model, refuses any other.
func (a *Agent) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, agent.Errorf(agent.KindDeadlineExceeded, "local_llm agent: context already done: %w", err)
	}
	req, model := call.Request, call.Model
	if a.chatURL == "" { // managed: the sidecar serves its pinned model
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

	chatURL := a.chatURL
	var proc *process
	meta := make(map[string]any, 8)
	if chatURL == "" {
		p, restarted, err := a.managedEndpoint(ctx)
		if err != nil {
			return nil, err
		}
		proc = p
		chatURL = p.baseURL + "/v1/chat/completions"
		if restarted != "" {
			meta["sidecar_restarted"] = restarted
		}
	}

	body, c := a.buildRequest(req, call.Persona, model, meta)
	status, raw, err := a.post(ctx, chatURL, key, &body)
	if err == nil && body.ResponseFormat != nil && isFailOpen(status, raw) {
		// The server could not apply the constraint: answer unconstrained,
		// record it, and let validation be the guarantee.
		a.logger.Warn("local_llm: server refused the schema constraint; retrying unconstrained", "status", status, "reply", agent.Clip(a.scrub(raw, key)))
		meta["fail_open"] = fmt.Sprintf("http %d: %s", status, agent.Clip(a.scrub(raw, key)))
		body.ResponseFormat, c.grammar, c.jsonSchema = nil, false, false
		status, raw, err = a.post(ctx, chatURL, key, &body)
	}
	if err != nil {
		if proc != nil {
			if crash := a.crashed(proc); crash != nil {
				return nil, crash
			}
		}
		return nil, err
	}
	if status >= 400 {
		return nil, agent.Errorf(agent.KindTransportError, "local_llm agent: http %d: %s", status, agent.Clip(a.scrub(raw, key)))
	}
	return a.parseReply(raw, model, c, meta)
}

// constraint is what a request asked of the server.
type constraint struct {
	hasSchema, grammar, jsonSchema bool
}

// buildRequest assembles the chat request: the model, the persona's
// system prompt and the prompt as messages, max_tokens, and response_format
// when the declaration and the schema call for it.
func (a *Agent) buildRequest(req *agent.AskRequest, persona *agent.Persona, model string, meta map[string]any) (chatRequest, constraint) {
	body := chatRequest{Model: model, MaxTokens: a.maxTokens, Messages: make([]chatMessage, 0, 2)}
	if persona != nil && persona.SystemPrompt != "" {
		body.Messages = append(body.Messages, chatMessage{Role: "system", Content: persona.SystemPrompt})
	}
	body.Messages = append(body.Messages, chatMessage{Role: "user", Content: req.Prompt})
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

// parseReply turns a 2xx body into the response, or names what is wrong
// with it.
func (a *Agent) parseReply(raw []byte, model string, c constraint, meta map[string]any) (*agent.AskResponse, error) {
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return nil, agent.Errorf(agent.KindTransportError, "local_llm agent: unmarshal chat response: %w (raw: %s)", err, agent.Clip(raw))
	}
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
	meta["prompt_tokens"] = cr.Usage.PromptTokens
	meta["completion_tokens"] = cr.Usage.CompletionTokens
	meta["grammar"] = c.grammar
	meta["json_schema"] = c.jsonSchema
	return &agent.AskResponse{Submission: submissionFrom(*first.Message.Content, c.hasSchema), Meta: meta}, nil
}

// post sends one chat request and returns the status and the body (at most
// maxBody bytes). Only transport failures are errors.
func (a *Agent) post(ctx context.Context, u, key string, body *chatRequest) (int, []byte, error) {
	buf := body.encode()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(buf))
	if err != nil {
		return 0, nil, agent.Errorf(agent.KindTransportError, "local_llm agent: build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if key != "" {
		hreq.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := a.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, agent.Errorf(agent.KindDeadlineExceeded, "local_llm agent: http do: %w", err)
		}
		return 0, nil, agent.Errorf(agent.KindTransportError, "local_llm agent: http do: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, agent.Errorf(agent.KindDeadlineExceeded, "local_llm agent: read response: %w", err)
		}
		return 0, nil, agent.Errorf(agent.KindTransportError, "local_llm agent: read response: %w", err)
	}
	if len(raw) > maxBody {
		return 0, nil, agent.Errorf(agent.KindTransportError, "local_llm agent: response body exceeds %d MiB: refused", maxBody>>20)
	}
	return resp.StatusCode, raw, nil
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
func (a *Agent) Close() error { return a.sidecarHold.close(a.client, a.cfg.Pool) }
