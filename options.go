package kitsoki

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// Option configures Open.
type Option func(*config)

// config is what the options set; the zero value is a session on the wall
// clock, traced to memory, with the story's declared agents.
type config struct {
	agents         map[string]AgentFunc
	agentOrder     []string
	inline         map[string]bool // aliases given with WithInlineAgent
	handlers       map[string]HandlerFunc
	handlerOrder   []string
	cassette       string
	cassetteStrict bool
	traceFile      string
	sessionID      string
	world          map[string]any
	root           string
	start          *time.Time
	logger         *slog.Logger
	workspace      string
	timeout        time.Duration
	timeoutSet     bool
	strictPins     bool
	semantic       *bool
	router         string
	minConfidence  *float64
	// key and sessionsDir make a durable session; fork is Resume's
	// answer to a changed story.
	key         string
	sessionsDir string
	fork        bool
	// cluster is where Resume finds the session (WithCluster).
	cluster Cluster
}

func newConfig(opts []Option) *config {
	cfg := &config{sessionID: DefaultSessionID}
	for _, o := range opts {
		o(cfg)
	}
	return cfg
}

// storyOptions are the story's load options the config implies.
func (c *config) storyOptions() []story.Option {
	var sopts []story.Option
	if c.workspace != "" {
		sopts = append(sopts, story.WithWorkspace(c.workspace))
	}
	sopts = append(sopts, story.WithProvidedHandlers(c.handlerOrder...)) // WithHandler's names are provided
	if c.cassette != "" {
		sopts = append(sopts, story.WithReplayedHandlers(replay.HandlerNames(c.cassette)...)) // and those the cassette answers
	}
	return sopts
}

// durable reports whether Open makes a durable session.
func (c *config) durable() bool { return c.key != "" || c.sessionsDir != "" }

// store is the sessions directory of a story whose workspace is ws.
func (c *config) store(ws string) session.Store {
	switch {
	case c.sessionsDir != "":
		return session.Store{Dir: c.sessionsDir}
	case os.Getenv(session.EnvDir) != "":
		return session.Store{Dir: os.Getenv(session.EnvDir)}
	}
	return session.Store{Dir: session.DefaultDir(ws)}
}

// resumeStore is the sessions directory Resume looks in: the story is not
// known yet, so the workspace is WithWorkspace's, else the working
// directory's.
func (c *config) resumeStore() (session.Store, error) {
	if c.sessionsDir != "" || os.Getenv(session.EnvDir) != "" {
		return c.store(""), nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return session.Store{}, err
	}
	ws, err := workspace.For(filepath.Join(cwd, "app.yaml"), c.workspace)
	if err != nil {
		return session.Store{}, fmt.Errorf("kitsoki.Resume: %w", err)
	}
	return c.store(ws.Dir()), nil
}

// WithKey makes the session durable and names it from outside: key is
// transport:thread ("jira:PLTFRM-12345", "slack:C024BE91L/1700000000.1"),
// the id a bot already has for the conversation. Resume(ctx, key) picks it
// up. One key names one session: Open refuses a key in use.
func WithKey(key string) Option { return func(c *config) { c.key = key } }

// WithSessionsDir makes the session durable, kept in dir (its journal,
// its index entry, its writer lock), and is where Resume looks. The
// default is $KITSOKI_SESSIONS_DIR, else .kitsoki/sessions in the
// workspace, as for kitsoki run.
func WithSessionsDir(dir string) Option { return func(c *config) { c.sessionsDir = dir } }

// WithFork lets Resume go on with a session whose story changed and
// decides differently: a new session is forked from the last turn that
// matched (its ID is the fork's). Without it such a resume is refused.
func WithFork() Option { return func(c *config) { c.fork = true } }

// WithAgent answers the agent calls routed to alias with fn. alias must be
// declared under the story's agent_plugins: — usually as builtin.inprocess,
// whose implementation only Go code can supply; an alias declared with
// another transport is replaced by fn (a test double), and "agent.claude"
// also answers the invokes that name no agent:. It wins over WithCassette
// for that alias. Registering an alias twice keeps the last fn.
func WithAgent(alias string, fn AgentFunc) Option {
	return func(c *config) { c.agent(alias, fn, false) }
}

// WithInlineAgent is WithAgent for a fn that answers without blocking: it
// never waits on I/O, a channel, a lock held for long, a process or time,
// only computes its answer (a scripted or table-driven agent, a test
// double). Its calls then run on the session's own goroutine instead of
// one the call's deadline could abandon, which saves a goroutine hand-off
// per call. The call's context still carries the deadline, and an answer
// given once it has passed is discarded (deadline_exceeded), as for
// WithAgent; but a fn that does block holds the session until it returns,
// so use WithAgent for anything that may wait. The last of WithAgent and
// WithInlineAgent given for an alias wins.
func WithInlineAgent(alias string, fn AgentFunc) Option {
	return func(c *config) { c.agent(alias, fn, true) }
}

func (c *config) agent(alias string, fn AgentFunc, inline bool) {
	if c.agents == nil {
		c.agents, c.inline = map[string]AgentFunc{}, map[string]bool{}
	}
	if _, dup := c.agents[alias]; !dup {
		c.agentOrder = append(c.agentOrder, alias)
	}
	c.agents[alias] = fn
	c.inline[alias] = inline
}

// agentOption is the name of the option that gave alias, for messages.
func (c *config) agentOption(alias string) string {
	if c.inline[alias] {
		return "kitsoki.WithInlineAgent"
	}
	return "kitsoki.WithAgent"
}

// WithHandler answers the invokes named name (e.g. "host.tickets.create")
// with fn. The story must invoke that name somewhere. Open counts the name
// as provided, so the story's invoke of it is not refused at load as a
// handler nothing provides (see docs/hosts.md). A handler for a
// host.agent.<verb> name replaces the agent verb. It wins over a cassette's
// episodes for that name. Registering a name twice keeps the last fn.
func WithHandler(name string, fn HandlerFunc) Option {
	return func(c *config) {
		if c.handlers == nil {
			c.handlers = map[string]HandlerFunc{}
		}
		if _, dup := c.handlers[name]; !dup {
			c.handlerOrder = append(c.handlerOrder, name)
		}
		c.handlers[name] = fn
	}
}

// WithCassette replays the cassette at path (.yaml or .yaml.zst) in place
// of every declared agent, of the built-in claude path, and of every host
// handler its episodes name, as `kitsoki run --cassette` does. A call no
// episode matches fails, and the turn's error includes a
// *ReplayMissError.
func WithCassette(path string) Option { return func(c *config) { c.cassette = path } }

// WithCassetteStrict refuses, during a WithCassette replay, an episode
// recorded for a different request (its request_hash differs), as
// `--cassette-strict` does: the call misses instead of answering with a
// warning.
func WithCassetteStrict() Option { return func(c *config) { c.cassetteStrict = true } }

// WithCassetteLenient undoes WithCassetteStrict: an episode recorded for
// a different request answers, with a warning in Outcome.Warnings (the
// default of Open; kitsokitest.Replay is strict unless given this, as
// kitsokitest.Lenient()).
func WithCassetteLenient() Option { return func(c *config) { c.cassetteStrict = false } }

// WithTraceFile writes the trace to a JSONL file at path (created with its
// directories; it must not already hold a session) instead of memory.
func WithTraceFile(path string) Option { return func(c *config) { c.traceFile = path } }

// WithSessionID sets the session id (default "session"); it is the
// AskRequest's session_id and appears in the trace.
func WithSessionID(id string) Option { return func(c *config) { c.sessionID = id } }

// WithWorld sets world values at start, over the declared defaults. Every
// key must be declared under world: and its value fit the declared type.
func WithWorld(kv map[string]any) Option { return func(c *config) { c.world = kv } }

// WithRoot starts the session in another state than the story's root.
func WithRoot(state string) Option { return func(c *config) { c.root = state } }

// WithStartTime runs the session on a test clock that starts at t and
// moves only when a cassette episode's delay: passes (instantly). Trace
// timestamps are then reproducible, and agent deadlines pass only through
// those delays. The default is the wall clock.
func WithStartTime(t time.Time) Option { return func(c *config) { c.start = &t } }

// WithLogger sets the logger of the runtime (a plugin's stderr, trace
// and agent diagnostics); the default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithWorkspace sets the directory every file the story names must stay
// inside, as `--workspace` does (default: the git work tree enclosing
// the story, else the story's directory).
func WithWorkspace(dir string) Option { return func(c *config) { c.workspace = dir } }

// WithAgentTimeout sets the hard deadline of an agent call whose with:
// sets no timeout (default 10 minutes), as `--agent-timeout` does; it
// must be positive.
func WithAgentTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout, c.timeoutSet = d, true }
}

// WithSemanticRouting turns the synonym and template tiers of free-text
// routing on or off, as `--semantic-routing` does (default: the story's
// routing.enabled, else off).
func WithSemanticRouting(on bool) Option { return func(c *config) { c.semantic = &on } }

// WithRouter names the agent_plugins alias that routes free text the
// deterministic tiers miss, as `--router` does (default: the story's
// routing.agent, else agent.claude). WithAgent can answer it with a Go
// func.
func WithRouter(alias string) Option { return func(c *config) { c.router = alias } }

// WithMinConfidence sets the router answer's bar, from 0 to 1, as
// `--min-confidence` does (default: the story's routing.min_confidence,
// else 0.5); an answer below it is a NO_MATCH *Rejection.
func WithMinConfidence(bar float64) Option { return func(c *config) { c.minConfidence = &bar } }

// WithStrictPins makes Open fail when a selection: pin's evidence is
// missing, stale or failing, as `--strict-pins` does; without it such a
// pin is reported in Warnings and the call takes its fallback route.
func WithStrictPins() Option { return func(c *config) { c.strictPins = true } }
