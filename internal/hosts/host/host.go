// Package host dispatches invoke effects to handlers: the host.agent.<verb>
// family (render the prompt, route to an agent, enforce the deadline, check
// sub-events, validate the submission) and whatever other handlers a run
// registers (stubs, cassette episodes, other hosts).
package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// Call is one invoke being dispatched.
type Call struct {
	Namespace string         // the invoke name, e.g. host.agent.decide
	Args      map[string]any // the with: map as rendered for dispatch (incl. "call")
	Invoke    *story.Invoke  // the effect; nil for calls made outside a story
	SessionID string
	Turn      int64
	State     string
	// TurnState is the state the session was in when the call's turn
	// began (before its transition); a cassette's phase is derived from
	// it. "" means State.
	TurnState string
	World     map[string]any // the world at dispatch; handlers must not modify it
	// Run is what the session dispatching the call lends it for this call
	// (the zero value outside a session, e.g. an eval's calls).
	Run RunEnv
	// Schema, when set, is the compiled schema of an agent call kitsoki
	// makes itself (the router's, generated from the current state); it
	// takes the place of with.schema.
	Schema *schema.Schema
	// Purpose says why kitsoki made an agent call that no invoke asked
	// for ("route" for the router agent); agent.call.start records it.
	Purpose string
	// Attempt numbers the calls of one dispatch under its invoke's retry:
	// 1 for the first, 2 for the first retry; 0 for a call no session
	// dispatched.
	Attempt int
	// Sink, when set, takes the trace events the call writes in place of
	// the host's sink: a background job's calls write to the job's own
	// buffer, which the session writes out in the job's completion turn.
	Sink Sink
}

// PhaseState is the state a cassette derives the call's phase from: the
// state its turn began in (TurnState), else the state it runs in.
func (c *Call) PhaseState() string {
	if c.TurnState != "" {
		return c.TurnState
	}
	return c.State
}

// SinkOr returns the call's own sink, or def when it has none.
func (c *Call) SinkOr(def Sink) Sink {
	if c != nil && c.Sink != nil {
		return c.Sink
	}
	return def
}

// RunEnv is what a session hands each call it dispatches: the actions the
// call's agent may take on the run (through kitsoki's MCP tools), and
// whether agents own the run's title. A session builds it per dispatch, so
// nothing that wires a run needs a reference to the session.
type RunEnv struct {
	Live       LiveActions // nil outside a session
	TitleOwned bool
}

// LiveActions is what one in-flight agent call may do to its run: the
// agent's LiveRun, which the call's agent.Run carries on to the MCP tools.
type LiveActions = agent.LiveRun

// Result is a handler's answer. Data is what bind: reads. Err is a domain
// error (an agent failure, a stub's scripted error): the run records it in
// world.last_error and world.host_error (Data in host_error.data); a failed
// call binds nothing.
type Result struct {
	Data map[string]any
	Err  error
	// CallID is the call_id of the agent call that failed with Err ("" for
	// other handlers), so the failure can be shown next to its trace lines.
	CallID string
	// Transcript is the agent-action transcript of the agent call that
	// answered a host.agent.* invoke, when its transport gave one: a
	// recorder keeps it in the episode's agent block. It is never bound.
	Transcript *plugin.Transcript
	// KeptNoWorld says the call's World and Run were not kept: the handler
	// that answered read them at most while it ran, and holds nothing of
	// them now. The dispatching session then writes its world in place
	// instead of copying it first (Session.setWorld). Set it only in a
	// handler that answers itself (a fixture's stub, a cassette's
	// episode); a handler that hands the call to another and returns its
	// Result keeps the flag only if it keeps nothing of the call either.
	KeptNoWorld bool
}

// Handler answers invokes. A returned error is an infrastructure failure
// (no data at all); domain errors travel in Result.Err.
type Handler interface {
	Invoke(ctx context.Context, call *Call) (*Result, error)
}

// LiveOnReplay is implemented by a handler some of whose calls keep state
// of the run itself (a chat's transcript): a recording does not keep those
// calls and a replay runs them, the agent calls they make recorded and
// replayed in their place.
type LiveOnReplay interface {
	Handler
	LiveOnReplay(call *Call) bool
}

// RunsOnReplay reports whether h is a LiveOnReplay handler that runs call
// on a replay.
func RunsOnReplay(h Handler, call *Call) bool {
	l, ok := h.(LiveOnReplay)
	return ok && l.LiveOnReplay(call)
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, call *Call) (*Result, error)

// Invoke calls f.
func (f HandlerFunc) Invoke(ctx context.Context, call *Call) (*Result, error) { return f(ctx, call) }

// Sink is the part of the trace the host writes to. The trace package's
// Writer and MemSink implement it. A sink may set the seq and ts of the
// event it is handed, and copies whatever it keeps of it: the caller
// reuses the Event once Append or AppendPayload has returned.
type Sink interface {
	// Append writes an event with an open payload (a plugin's sub-event).
	Append(ev *plugin.Event) error
	// AppendPayload writes an event of a kind kitsoki writes; p sets its
	// kind.
	AppendPayload(ev *plugin.Event, p trace.Payload) error
	// NextSeq is the seq the next event of turn will get; agent call ids
	// are derived from it.
	NextSeq(turn int64) int
	Now() time.Time
}

// DefaultTimeout is the hard deadline of an agent call whose with: sets no
// timeout.
const DefaultTimeout = 10 * time.Minute

// Host routes invokes to handlers. It is safe for concurrent use once
// configured.
type Host struct {
	story    *story.Story
	registry *agent.Registry
	sink     Sink
	builtin  agent.Agent
	clock    clock.Clock
	logger   *slog.Logger
	timeout  time.Duration
	mask     *secret.Masker // the story's secrets: refused in sub-event kinds

	mu       sync.RWMutex
	handlers map[string]Handler
	prefixes map[string]Handler // handler for every name under "<prefix>."

	prompts sync.Map // path -> *expr.Text, for prompt paths not compiled at load

	routes map[*story.Invoke]*Route // per-invoke routes (pins, eval candidates)

	selection *Selection               // the default agent's profile (WithSelection)
	budget    *agent.Budget            // the run's --max-cost (WithBudget)
	quotas    map[string]*agent.Budget // profiles' quotas by alias, guarded by mu

	run func(*Call) *agent.Run // the run of each agent call (WithRun)

	rankerFor RankerFor
	// corpusRanker ranks the corpus form's chunks: the story's routing.embedding model.
	corpusRanker Ranker
	rankers      map[string]Ranker // by alias, guarded by mu
	closers      []io.Closer

	calls *runner // goroutines agent calls run on
	// outcomes keeps the reply channels of answered agent calls for the
	// next ones (askAgent); an abandoned call's channel is never reused.
	outcomes sync.Pool

	ask askFunc // the chain every agent call goes through (ask_chain.go)

	presentOnce sync.Once
	present     map[string]any // schemaPresent's input
}

// Option configures a Host.
type Option func(*Host)

// WithBuiltin sets the agent that answers host.agent.* invokes that name no
// agent: alias (the built-in claude path).
func WithBuiltin(a agent.Agent) Option { return func(h *Host) { h.builtin = a } }

// WithRun installs the hook that names the run of every agent call: what
// the MCP tools of a launched agent act on (agent.Call.Run). Without it,
// or when it returns nil, calls are detached from any run.
func WithRun(f func(call *Call) *agent.Run) Option {
	return func(h *Host) { h.run = f }
}

// WithClock sets the clock used for durations and deadlines.
func WithClock(c clock.Clock) Option { return func(h *Host) { h.clock = c } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(h *Host) { h.logger = l } }

// WithDefaultTimeout sets the hard deadline of agent calls that set none.
func WithDefaultTimeout(d time.Duration) Option { return func(h *Host) { h.timeout = d } }

// New returns a host for st that routes agent calls through reg and writes
// agent events to sink. The host.agent.<verb> handlers are registered.
func New(st *story.Story, reg *agent.Registry, sink Sink, opts ...Option) *Host {
	h := &Host{
		story:    st,
		registry: reg,
		sink:     sink,
		mask:     secret.New(st.Secrets),
		clock:    clock.System{},
		logger:   slog.Default(),
		timeout:  DefaultTimeout,
		handlers: map[string]Handler{},
		prefixes: map[string]Handler{},
		calls:    newRunner(),
	}
	for _, o := range opts {
		o(h)
	}
	h.ask = h.askChain()
	for _, verb := range []string{plugin.VerbAsk, plugin.VerbDecide, plugin.VerbExtract, plugin.VerbTask, plugin.VerbConverse} {
		h.handlers[AgentNamespace+verb] = &agentHandler{h: h, verb: verb, name: AgentNamespace + verb}
	}
	return h
}

// AgentNamespace prefixes the agent verbs' invoke names.
const AgentNamespace = "host.agent."

// Register installs a handler for an exact invoke name, replacing any.
func (h *Host) Register(name string, hd Handler) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handlers[name] = hd
}

// RegisterPrefix installs a handler for every invoke name that starts with
// prefix + "." and has no exact handler.
func (h *Host) RegisterPrefix(prefix string, hd Handler) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.prefixes[strings.TrimSuffix(prefix, ".")] = hd
}

// Under lists, sorted, the exactly registered names below prefix (those
// that start with prefix + "."): the ops a handler registers one by one.
func (h *Host) Under(prefix string) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	for n := range h.handlers {
		if strings.HasPrefix(n, prefix+".") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Handler returns the handler for name: an exact registration first, then
// the longest registered prefix.
func (h *Host) Handler(name string) (Handler, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if hd, ok := h.handlers[name]; ok {
		return hd, true
	}
	for p := name; ; {
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return nil, false
		}
		p = p[:i]
		if hd, ok := h.prefixes[p]; ok {
			return hd, true
		}
	}
}

// Names lists the exactly registered handler names, sorted.
func (h *Host) Names() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]string, 0, len(h.handlers))
	for n := range h.handlers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Dispatch runs one call. An unknown invoke name is an infrastructure
// failure naming what is registered.
func (h *Host) Dispatch(ctx context.Context, call *Call) (*Result, error) {
	hd, ok := h.Handler(call.Namespace)
	if !ok {
		return nil, fmt.Errorf("no handler for invoke %q (registered: %s)", call.Namespace, strings.Join(h.Names(), ", "))
	}
	return hd.Invoke(ctx, call)
}

// Close releases what the host holds besides the registry's agents: the
// built-in agent and the search rankers. The caller closes the registry.
func (h *Host) Close() error {
	h.mu.Lock()
	cs := h.closers
	h.closers, h.rankers = nil, nil
	b := h.builtin
	h.builtin = nil
	h.mu.Unlock()
	h.calls.close()
	var errs []error
	if b != nil {
		if err := b.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range cs {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// TraceError is a failure to write the trace. It stops the run: a turn whose
// record cannot be kept must not go on.
type TraceError struct{ Err error }

func (e *TraceError) Error() string { return "trace: " + e.Err.Error() }
func (e *TraceError) Unwrap() error { return e.Err }
