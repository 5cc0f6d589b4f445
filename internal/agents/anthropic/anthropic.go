// Package anthropic is the builtin.anthropic transport: agent calls
// answered by Anthropic's Messages API directly, with an API key and no
// CLI. A structured answer comes through a tool whose input schema is the
// call's schema (kitsoki's submit tool; decide and extract force it), a
// task runs a tool loop over kitsoki's tools in process
// (internal/agents/toolloop), converse keeps its conversation per session,
// answers are streamed, the system prompt and tools are marked for prompt
// caching, and usage and cost go into the answer's meta.
package anthropic

import (
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
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultKeyEnv    = "ANTHROPIC_API_KEY"
	DefaultMaxTokens = 4096
	DefaultMaxTurns  = 40
	// Repairs is how often an answer that does not match the schema (or
	// a run that ends without one) is sent back for the model to correct.
	Repairs = 2
	apiName = "anthropic API"
)

// Config is what the builder needs beyond a declaration; the zero value
// is the system clock, a default HTTP client and the process environment.
type Config struct {
	HTTP      *http.Client
	Clock     clock.Clock
	LookupEnv func(string) (string, bool)
	// Backoff is the first retry wait (0: httpllm.DefaultBackoff).
	Backoff time.Duration
}

// Build is the builtin.anthropic transport builder.
func Build(decl agent.Declaration, env agent.BuildEnv) (agent.Agent, error) {
	return NewBuilder(Config{})(decl, env)
}

// NewBuilder returns a builder using cfg.
func NewBuilder(cfg Config) agent.Builder {
	return func(decl agent.Declaration, env agent.BuildEnv) (agent.Agent, error) {
		return New(decl, cfg, env.Logger)
	}
}

// Agent is a builtin.anthropic agent. It is safe for concurrent use.
type Agent struct {
	decl   agent.Declaration
	cfg    Config
	logger *slog.Logger
	url    string // the messages endpoint

	mu     sync.Mutex
	convs  map[string]*conversation // converse's, by session, persona and alias
	closed bool
}

// conversation is one converse thread: its id and messages so far.
type conversation struct {
	id       string
	messages []message
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
		return nil, fmt.Errorf("builtin.anthropic base_url: %q is not an http(s) URL (e.g. %s)", base, DefaultBaseURL)
	}
	if decl.API != "" && decl.API != "messages" {
		return nil, fmt.Errorf("builtin.anthropic api: %q: the Anthropic API has one, messages (drop api:)", decl.API)
	}
	return &Agent{decl: decl, cfg: cfg, logger: logger, url: strings.TrimRight(base, "/") + "/v1/messages", convs: map[string]*conversation{}}, nil
}

// Close forgets the conversations kept for converse.
func (a *Agent) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed, a.convs = true, nil
	return nil
}

// hints are what the call's failure messages name.
func (a *Agent) hints(keyEnv, model string) httpllm.Hints {
	return httpllm.Hints{API: apiName, Where: a.decl.Where(), KeyEnv: keyEnv, Model: model, ModelExample: agent.DefaultModel(agent.PluginAnthropic)}
}

// client is the HTTP client of one call: the declaration's retries and
// timeout, the call's key masked.
func (a *Agent) client(key string, secrets []string) *httpllm.Client {
	retries := a.decl.RetriesOr(httpllm.DefaultRetries)
	if retries == 0 {
		retries = -1
	}
	return httpllm.New(httpllm.Options{
		Name: apiName, HTTP: a.cfg.HTTP, Clock: a.cfg.Clock, Retries: retries, Backoff: a.cfg.Backoff,
		Timeout: a.decl.Timeout, Secrets: append([]string{key}, secrets...), ErrorDetail: errorDetail, Logger: a.logger,
	})
}

// header is the request header: the key, the API version and the
// declaration's headers.
func (a *Agent) header(key string) http.Header {
	h := http.Header{}
	for k, v := range a.decl.Headers {
		h.Set(k, v)
	}
	h.Set("x-api-key", key)
	h.Set("anthropic-version", Version)
	if a.decl.StreamOr(true) {
		h.Set("Accept", "text/event-stream")
	}
	return h
}

// thinkingFor is the extended-thinking setting of an effort: its token
// budget ("" is no thinking).
func thinkingFor(effort string) (*thinking, error) {
	budget := 0
	switch effort {
	case "":
		return nil, nil
	case "low":
		budget = 1024
	case "medium":
		budget = 4096
	case "high":
		budget = 16384
	case "xhigh":
		budget = 32000
	case "max":
		budget = 64000
	default:
		return nil, httpllm.ErrUnsupportedEffort(apiName, effort, "low, medium, high, xhigh, max")
	}
	return &thinking{Type: "enabled", BudgetTokens: budget}, nil
}
