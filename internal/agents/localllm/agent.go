package localllm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	// MaxTokens is sent as max_tokens when the declaration sets no
	// max_tokens: (0 → DefaultMaxTokens).
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

// Agent is a builtin.local_llm agent. Its calls run through the
// builtin.openai agent (Chat Completions) with the local_llm flavor: one
// agent on the endpoint in endpoint mode, one per sidecar process in
// managed mode.
type Agent struct {
	decl    agent.Declaration
	cfg     Config
	logger  *slog.Logger
	http    *http.Client
	baseURL string // endpoint mode: the API root, <endpoint>/v1
	flavor  *openai.Flavor

	sidecarHold // managed mode: the sidecar, acquired on first Ask

	omu    sync.Mutex
	oa     *openai.Agent // the calls' agent: the endpoint's, or oaProc's
	oaProc *process      // managed mode: the sidecar process oa talks to
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
	a := &Agent{decl: decl, cfg: cfg, logger: logger, http: cfg.HTTPClient}
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
	a.flavor = a.newFlavor()
	if a.baseURL != "" {
		oa, err := a.openaiAgent(a.baseURL)
		if err != nil {
			return nil, err
		}
		a.oa = oa
	}
	return a, nil
}

// newFlavor is how this agent's calls differ from builtin.openai's: an
// endpoint someone else runs is retried on 429 and 5xx like any API
// (retries:, default 2); a managed sidecar is not (kitsoki owns it: a
// failure is its crash, reported as one). json_schema: true constrains
// any schema, grammar: true only one inside the llama.cpp grammar subset.
func (a *Agent) newFlavor() *openai.Flavor {
	f := &openai.Flavor{API: "local_llm agent", Server: "local model server", Provider: "local_llm",
		Retries: httpllm.DefaultRetries, Constraint: openai.ConstrainNever, FailOpen: true, CallModel: true, Describe: a.describe}
	if a.baseURL == "" {
		f.Retries = 0
	}
	switch {
	case a.decl.JSONSchema:
		f.Constraint = openai.ConstrainAlways
	case a.decl.Grammar:
		f.Constraint = openai.ConstrainGrammar
	}
	return f
}

// openaiAgent is the builtin.openai agent of the declaration on the API
// root base: its timeout (default DefaultTimeout), a whole answer unless
// stream: true, max_tokens (default Config.MaxTokens, else
// DefaultMaxTokens).
func (a *Agent) openaiAgent(base string) (*openai.Agent, error) {
	d := a.decl
	d.BaseURL, d.API = base, openai.APIChat
	if d.Timeout <= 0 {
		d.Timeout = DefaultTimeout
	}
	if d.Stream == nil {
		off := false
		d.Stream = &off
	}
	if d.MaxTokens <= 0 {
		d.MaxTokens = a.cfg.MaxTokens
	}
	if d.MaxTokens <= 0 {
		d.MaxTokens = DefaultMaxTokens
	}
	oa, err := openai.New(d, openai.Config{HTTP: a.http, Clock: a.cfg.Clock, LookupEnv: a.cfg.LookupEnv, Backoff: a.cfg.Backoff, Flavor: a.flavor}, a.logger)
	if err != nil {
		return nil, fmt.Errorf("builtin.local_llm: %w", err)
	}
	return oa, nil
}

// FallbackEligible reports that a call of this agent that ends
// schema_invalid (its repairs did not help) may be retried once on
// agent.claude: a small local model that failed three times would fail
// again.
func (a *Agent) FallbackEligible() bool { return true }

// Ask runs the call through the builtin.openai agent on the endpoint
// (or the managed sidecar): every verb as builtin.openai runs it, tools
// and repairs included. The model is the call's (call.Model, as the host
// resolved it): an endpoint is asked for it by name, and a managed
// sidecar, which serves its one pinned model, refuses any other.
func (a *Agent) Ask(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, agent.Errorf(agent.KindDeadlineExceeded, "local_llm agent: context already done: %w", err)
	}
	if a.baseURL == "" { // managed: the sidecar serves its pinned model
		if call.Model != "" && call.Model != a.decl.Model {
			return nil, agent.Errorf(agent.KindTransportError, "local_llm agent: model %q is not served here: a managed sidecar serves its pinned model %q only (declare another alias for %q)", call.Model, a.decl.Model, call.Model)
		}
		cp := *call
		cp.Model = a.decl.Model
		call = &cp
	}
	if name := a.decl.APIKeyEnv; name != "" {
		if _, v := httpllm.Key(a.decl, "", a.cfg.LookupEnv); v == "" {
			return nil, agent.Errorf(agent.KindTransportError, "local_llm agent: api_key_env %s is not set: refusing to send an unauthenticated request (export %s or remove api_key_env:)", name, name)
		}
	}
	oa, proc, restarted, err := a.agentFor(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := oa.Ask(ctx, call)
	if err != nil {
		var ce *httpllm.ConnError
		if proc != nil && errors.As(err, &ce) {
			if crash := a.crashed(proc); crash != nil {
				return nil, crash
			}
		}
		return nil, err
	}
	if restarted != "" {
		resp.Meta["sidecar_restarted"] = restarted
	}
	return resp, nil
}

// agentFor is the openai agent of the call: the endpoint's, or the one
// of the managed sidecar's current process (started when needed).
func (a *Agent) agentFor(ctx context.Context) (*openai.Agent, *process, string, error) {
	if a.baseURL != "" {
		return a.oa, nil, "", nil
	}
	p, restarted, err := a.managedEndpoint(ctx)
	if err != nil {
		return nil, nil, restarted, err
	}
	a.omu.Lock()
	defer a.omu.Unlock()
	if a.oa == nil || a.oaProc != p {
		oa, err := a.openaiAgent(p.baseURL + "/v1")
		if err != nil {
			return nil, nil, restarted, err
		}
		if a.oa != nil {
			_ = a.oa.Close()
		}
		a.oa, a.oaProc = oa, p
	}
	return a.oa, p, restarted, nil
}

// describe words a failed exchange the way this backend's errors read
// (docs/agents/local-llm.md): the server's refusal with its body, a
// connection that failed, the call's end; anything else as
// builtin.openai words it.
func (a *Agent) describe(ctx context.Context, err error, h httpllm.Hints) *agent.AskError {
	var (
		ae *httpllm.APIError
		ce *httpllm.ConnError
	)
	switch {
	case ctx.Err() != nil:
		return agent.Errorf(agent.KindDeadlineExceeded, "local_llm agent: the call ended before the answer came: %w", context.Cause(ctx))
	case errors.As(err, &ae):
		msg := fmt.Sprintf("local_llm agent: http %d: %s", ae.Status, agent.Clip(bytes.TrimSpace(ae.Body)))
		if ae.Attempts > 1 {
			msg += fmt.Sprintf(" (after %d attempts)", ae.Attempts)
		}
		return &agent.AskError{Kind: agent.KindTransportError, Detail: msg, Err: ae}
	case errors.As(err, &ce):
		return agent.Errorf(agent.KindTransportError, "local_llm agent: %w: check endpoint: under %s (and that the server is up)", ce, a.decl.Where())
	}
	return httpllm.Describe(ctx, err, h)
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
// idle connections. The openai agent forgets its conversations.
func (a *Agent) Close() error {
	a.omu.Lock()
	if a.oa != nil {
		_ = a.oa.Close()
	}
	a.omu.Unlock()
	return a.sidecarHold.close(a.http, a.cfg.Pool)
}
