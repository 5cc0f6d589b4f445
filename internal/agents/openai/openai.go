// Package openai is the builtin.openai transport: agent calls answered by
// the OpenAI API, or by any server that speaks it (vLLM, Ollama, LM
// Studio, llama-server, a gateway), through Chat Completions (api: chat,
// the default) or the Responses API (api: responses). A structured answer
// is constrained with response_format / text.format json_schema (strict
// where the schema allows it) and validated, the violations sent back for
// the model to correct; ask, converse and task get kitsoki's tools as
// functions, run in process (internal/agents/toolloop); answers are
// streamed; usage and cost go into the answer's meta. Endpoint is also
// how builtin.local_llm talks to its llama-server.
package openai

import (
	"context"
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
	"github.com/kitsoki/kitsoki/internal/base/clock"
)

// Defaults of a declaration's keys.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	DefaultKeyEnv  = "OPENAI_API_KEY"
	DefaultMaxTurn = 40
	// Repairs is how often an answer that does not match the schema is
	// sent back for the model to correct.
	Repairs = 2
	apiName = "openai API"
)

// The wire APIs of api:.
const (
	APIChat      = "chat"
	APIResponses = "responses"
)

// Config is what the builder needs beyond a declaration; the zero value
// is the system clock, a default HTTP client and the process environment.
type Config struct {
	HTTP      *http.Client
	Clock     clock.Clock
	LookupEnv func(string) (string, bool)
	// Backoff is the first retry wait (0: httpllm.DefaultBackoff).
	Backoff time.Duration
	// Flavor is another transport's way of running its calls through
	// this agent (nil: builtin.openai).
	Flavor *Flavor
}

// Build is the builtin.openai transport builder.
func Build(decl agent.Declaration, env agent.BuildEnv) (agent.Agent, error) {
	return NewBuilder(Config{})(decl, env)
}

// NewBuilder returns a builder using cfg.
func NewBuilder(cfg Config) agent.Builder {
	return func(decl agent.Declaration, env agent.BuildEnv) (agent.Agent, error) {
		return New(decl, cfg, env.Logger)
	}
}

// Agent is a builtin.openai agent. It is safe for concurrent use.
type Agent struct {
	decl     agent.Declaration
	cfg      Config
	logger   *slog.Logger
	base     string
	api      string
	official bool // the OpenAI API itself, not a compatible server

	schemas sync.Map // schema text → *Structured, as sent
	clients sync.Map // API key → *httpllm.Client

	mu      sync.Mutex
	threads map[string]*thread // converse's, by session, persona and alias
	closed  bool
}

// thread is one converse conversation: its id and the thread so far, in
// the agent's API's form.
type thread struct {
	id    string
	chat  []ChatMessage
	items []itemJSON
}

// New checks decl and returns an agent that sends nothing until asked.
func New(decl agent.Declaration, cfg Config, logger *slog.Logger) (*Agent, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	base := decl.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("builtin.openai base_url: %q is not an http(s) URL (e.g. %s, or http://127.0.0.1:8000/v1 for a local server)", base, DefaultBaseURL)
	}
	api := decl.API
	switch api {
	case "":
		api = APIChat
	case APIChat, APIResponses:
	default:
		return nil, fmt.Errorf("builtin.openai api: %q: want %s (Chat Completions) or %s (the Responses API)", decl.API, APIChat, APIResponses)
	}
	return &Agent{decl: decl, cfg: cfg, logger: logger, base: strings.TrimRight(base, "/"), api: api,
		official: u.Host == "api.openai.com" && cfg.Flavor == nil, threads: map[string]*thread{}}, nil
}

// Close forgets the conversations kept for converse.
func (a *Agent) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed, a.threads = true, nil
	return nil
}

// NewClient is the HTTP client of a declaration's calls: its retries
// (0 → none) and timeout, the key and secrets masked.
func NewClient(decl agent.Declaration, cfg Config, logger *slog.Logger, name string, defaultRetries int, secrets ...string) *httpllm.Client {
	retries := decl.RetriesOr(defaultRetries)
	if retries == 0 {
		retries = -1
	}
	return httpllm.New(httpllm.Options{
		Name: name, HTTP: cfg.HTTP, Clock: cfg.Clock, Retries: retries, Backoff: cfg.Backoff, Timeout: decl.Timeout,
		Secrets: append(secrets, decl.Secrets...), ErrorDetail: ErrorDetail, Logger: logger,
	})
}

// endpoint is the call's endpoint, with the key (none for a compatible
// server that needs none) and the declaration's headers.
func (a *Agent) endpoint(key string) *Endpoint {
	h := AuthHeader(key)
	for k, v := range a.decl.Headers {
		h.Set(k, v)
	}
	return &Endpoint{Client: a.client(key), BaseURL: a.base, Header: h, Stream: a.decl.StreamOr(true)}
}

// client is the HTTP client of the calls sent with key, made once per
// key (a Client does not change once made).
func (a *Agent) client(key string) *httpllm.Client {
	if c, ok := a.clients.Load(key); ok {
		return c.(*httpllm.Client)
	}
	name, retries := apiName, httpllm.DefaultRetries
	if f := a.cfg.Flavor; f != nil {
		name, retries = f.Server, f.Retries
	}
	c, _ := a.clients.LoadOrStore(key, NewClient(a.decl, a.cfg, a.logger, name, retries, key))
	return c.(*httpllm.Client)
}

// hints are what the call's failure messages name.
func (a *Agent) hints(keyEnv, model string) httpllm.Hints {
	if f := a.cfg.Flavor; f != nil {
		return httpllm.Hints{API: f.API, Where: a.decl.Where(), KeyEnv: keyEnv, Model: model}
	}
	return httpllm.Hints{API: apiName, Where: a.decl.Where(), KeyEnv: keyEnv, Model: model, ModelExample: agent.DefaultModel(agent.PluginOpenAI)}
}

// describe words a failed call.
func (a *Agent) describe(ctx context.Context, err error, h httpllm.Hints) *agent.AskError {
	if f := a.cfg.Flavor; f != nil && f.Describe != nil {
		return f.Describe(ctx, err, h)
	}
	return httpllm.Describe(ctx, err, h)
}

// keyEnv is the variable the key is read from when api_key_env: names
// none, and the model asked for when the call names none ("" for a
// flavor: a compatible server may need no key, and serves its own model).
func (a *Agent) defaults() (keyEnv, model string) {
	if a.cfg.Flavor != nil {
		return "", ""
	}
	return DefaultKeyEnv, agent.DefaultModel(agent.PluginOpenAI)
}
