// Package runtime is kitsoki's composition root: Open puts a run of a
// story together — the agent registry and its transports, the routes of
// the story's selection pins, the host, the trace sink, the plugin tools
// and the session — in one place. Every caller (kitsoki run, runs started
// over MCP, test flows, cassette replays in go test, eval candidates)
// differs only in its Config.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/agents/localllm"
	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/inbox"
	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/hosts/artifacts"
	"github.com/kitsoki/kitsoki/internal/hosts/chat"
	"github.com/kitsoki/kitsoki/internal/hosts/ci"
	"github.com/kitsoki/kitsoki/internal/hosts/ghticket"
	"github.com/kitsoki/kitsoki/internal/hosts/gitwt"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/hostplugin"
	"github.com/kitsoki/kitsoki/internal/hosts/ide"
	hostjobs "github.com/kitsoki/kitsoki/internal/hosts/jobs"
	hostrun "github.com/kitsoki/kitsoki/internal/hosts/run"
	"github.com/kitsoki/kitsoki/internal/hosts/starlark"
	"github.com/kitsoki/kitsoki/internal/hosts/ticket"
	"github.com/kitsoki/kitsoki/internal/hosts/transport"
	"github.com/kitsoki/kitsoki/internal/hosts/vcs"
	"github.com/kitsoki/kitsoki/internal/hosts/wsmanager"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/plugintools"
	"github.com/kitsoki/kitsoki/internal/run/routes"
	"github.com/kitsoki/kitsoki/internal/run/session"
	"github.com/kitsoki/kitsoki/plugin"
)

// Config selects how Open wires a run. The zero value is a session of the
// story with only its declared agents (no transport registered, so none
// can be reached), an in-memory trace, the system clock and a discarded
// log.
type Config struct {
	// Logger receives the run's logs; nil discards them.
	Logger *slog.Logger
	// Clock is the run's time (host deadlines, trace times, the session);
	// nil is the system clock.
	Clock clock.Clock
	// Trace selects the trace sink.
	Trace Trace
	// Agents selects where the run's agents come from.
	Agents Agents
	// Timeout is the hard deadline of an agent call that sets no
	// with.timeout; 0 is host.DefaultTimeout.
	Timeout time.Duration
	// Cassette, when set, answers the story's agents and the hosts its
	// episodes name in place of the live ones (kitsoki run --cassette).
	Cassette Cassette
	// Recorder, when set, wraps the live agents and host handlers so every
	// exchange is recorded (kitsoki run --record).
	Recorder Recorder
	// StrictPins makes a selection: pin that cannot be honoured an error
	// of Open (a *PinsError), instead of a warning.
	StrictPins bool
	// PinWarning receives each pin that is not honoured (the call takes
	// its fallback route); nil logs it as a warning.
	PinWarning func(warning string)
	// IgnorePins routes every invoke as its own agent: field says, without
	// reading the story's selection: pins: flows and go-test replays play
	// cassettes recorded against those routes.
	IgnorePins bool
	// Routes, when non-nil, are the per-invoke routes instead of the ones
	// the story's selection: pins resolve to (routes.Resolve): an eval
	// candidate's route.
	Routes map[*story.Invoke]*host.Route
	// Session describes the session; nil builds no session (a host that
	// is dispatched to directly, as an eval does).
	Session *Session
	// Tools shapes the MCP tools the run's agent calls are offered.
	Tools Tools
	// AttachCalls gives agent calls their run's actions (host.Call.Run)
	// though no session is built here: a Temporal worker answering the
	// calls of a session that lives in a workflow (internal/run/cluster).
	AttachCalls bool
	// Handlers registers host handlers by invoke name (exact, as
	// host.Host.Register does) over a Cassette's: Go code answering a
	// host (kitsoki's WithHandler). A Recorder records them as it
	// records every live handler.
	Handlers map[string]host.Handler
	// Starlark configures host.starlark.run (its HTTP cassette, limits).
	Starlark starlark.Options
	// OnDispatch, when set, is called as the session dispatches each call
	// (an invoke, the router's decide) and the function it returns when
	// the call returned: the terminal UI's spinner follows calls with it.
	OnDispatch func(c *host.Call) (done func())
	// Out is the run's terminal: host.transport.post and host.diff.open
	// print there (kitsoki run passes its masked stdout); nil prints
	// nothing (flows, MCP-started runs, evals).
	Out io.Writer
	// Selection is the run's choice of its default agent (a .kitsoki.yaml
	// profile, --profile or --agent; internal/run/profiles), which live
	// switches change; nil keeps the story's own agents.
	Selection *host.Selection
	// Budget is the run's spending cap (--max-cost); an eval's candidates
	// share one. Nil is no cap.
	Budget *agent.Budget
	// SessionsDir is where the run's chats are kept (host.chat.*, beside
	// the session's journal); "" is the workspace's .kitsoki/sessions.
	SessionsDir string
	// LocalModels is the pool of llama-server sidecars the run's
	// builtin.local_llm agents and embedders start their servers in, for a
	// caller running several runtimes at once that should share one server
	// per model (mcp serve, a Temporal worker); the caller closes it after
	// them. Nil gives the run a pool of its own, shared with no other run
	// and closed (its servers stopped and reaped) by Close.
	LocalModels *localllm.Pool
}

// Trace selects a run's trace sink: a new JSONL file (Path), a sink the
// caller owns (Sink), or, with neither, memory (Runtime.Memory).
type Trace struct {
	// Path is a new trace file; one that already holds a session is
	// refused.
	Path string
	// SyncPerEvent fsyncs the file after every event instead of at turn
	// ends (kitsoki run --trace-sync=event).
	SyncPerEvent bool
	// NoSync never fsyncs the file (kitsoki run --durability process):
	// it survives a killed process, not a power cut.
	NoSync bool
	// Header is what a new file's session.header names (app, story,
	// hash, version, session id).
	Header trace.HeaderInfo
	// SyncHook, when set, is called after every fsync of the file (a
	// test hook).
	SyncHook func()
	// Sink is a sink the caller owns and closes.
	Sink orchestrator.Sink
	// Observer, when set, sees every event the chosen sink wrote (the
	// OpenTelemetry export). The caller owns it: the runtime never closes
	// it.
	Observer trace.Observer
}

// Agents says where a run's agents come from.
type Agents struct {
	// Live registers every transport this build has and the demo agent,
	// answers invokes with no agent: with the claude CLI (configured from
	// the story's agent.claude declaration) and ranks host.agent.search
	// with local embedding models. Without it only agents registered
	// through Override (or a Cassette) answer.
	Live bool
	// Registry, when set, is used instead of building one; Open neither
	// configures nor closes it (several runtimes share it).
	Registry *agent.Registry
	// Override registers agents by alias over the story's declarations
	// and over a Cassette's agents: the caller's agent answers its alias
	// even in a replay (as Builtin takes the built-in path).
	Override map[string]agent.Agent
	// Builtin answers invokes with no agent: in place of Live's claude CLI
	// (the host closes it).
	Builtin agent.Agent
}

// Session describes the session of a run.
type Session struct {
	// ID is the session id (run.id, AskRequest.session_id).
	ID string
	// World sets world values at start, over the declared defaults.
	World map[string]any
	// WorldAsGiven takes World and later world overrides as given, without
	// checking them against the declared types (a flow fixture's seed;
	// the caller reports the misfits, orchestrator.WorldMisfits).
	WorldAsGiven bool
	// Root is the state to start in; "" is the story's root.
	Root string
	// Title is the run's title from whoever started it; "" is none.
	Title string
	// Operator answers the questions agents ask; nil is no operator.
	Operator orchestrator.Operator
	// Routing is how free text is routed (the zero value: the story's
	// routing: block and the defaults).
	Routing orchestrator.RoutingConfig
	// ExecMode is the execution mode (orchestrator.ModeOneShot or
	// ModeStaged); "" is one_shot.
	ExecMode string
	// Journal makes the session write what a resume needs (decisions and
	// snapshots, orchestrator.WithJournal): a durable session.
	Journal bool
	// Resume, when set, continues the session its journal holds: the
	// trace is Trace.Path, appended to; state and world come from the
	// journal, and the calls of its unfinished turn that had returned are
	// answered from it (see session.Resume, which the caller runs before
	// the first input).
	Resume *Resume
	// Dispatcher, when set, is what the session dispatches its calls
	// through instead of the run's host (a Temporal session workflow
	// dispatches each call as an activity, internal/run/cluster); OnDispatch
	// and a Resume's answering dispatcher still wrap it.
	Dispatcher orchestrator.Dispatcher

	// dispatch wraps the session's dispatcher (CheckJournal).
	dispatch func(orchestrator.Dispatcher) orchestrator.Dispatcher
}

// Resume is a session picked up from its journal.
type Resume struct {
	Journal *session.Journal
	// SideEffects says what to do with an external_side_effect call in
	// flight at the crash (checked by the caller before Open).
	SideEffects session.SideEffects
}

// Tools shapes the MCP tools of the run's agent calls.
type Tools struct {
	// Plugins starts the plugin-tool service: tool-contributing plugins'
	// tools are offered to agent calls, and the service is available as
	// Runtime.Plugins (kitsoki run's :plugins, --control-mcp).
	Plugins bool
	// Providers are tool providers attached to every agent call
	// (toolserver.StoryFilesProvider).
	Providers []string
	// Autopilot means no operator is there to ask: agents are not offered
	// the tool that asks one.
	Autopilot bool
}

// Cassette is a cassette replayed in place of a story's agents and hosts
// (replay.Cassette).
type Cassette interface {
	// ReplayAgents registers the cassette's agents over reg's aliases and
	// returns the agent of the built-in path (nil: keep the live one).
	ReplayAgents(st *story.Story, reg *agent.Registry, liveBuiltin agent.Agent) agent.Agent
	// ReplayHandlers installs the cassette's host handlers on h.
	ReplayHandlers(h *host.Host, sink host.Sink, appID string)
}

// Recorder records the exchanges of a live run (replay.Recorder).
type Recorder interface {
	Install(st *story.Story, reg *agent.Registry, h *host.Host)
}

// PinsError is Open's error when StrictPins is set and a pin cannot be
// honoured: a load error of the story.
type PinsError struct{ Err error }

func (e *PinsError) Error() string { return e.Err.Error() }
func (e *PinsError) Unwrap() error { return e.Err }

// Runtime is one run of a story and everything it owns.
type Runtime struct {
	story    *story.Story
	reg      *agent.Registry
	ownReg   bool
	host     *host.Host
	sink     orchestrator.Sink
	file     *trace.Writer  // the trace file Open created, nil otherwise
	mem      *trace.MemSink // the memory trace, nil otherwise
	plugins  *plugintools.Service
	sess     *orchestrator.Session
	warnings []string
	closed   bool

	hostPlugins *hostplugin.Plugins // the story's host_plugins:, nil unless Agents.Live
	jobs        *jobs.Scheduler     // the session's background jobs
	inbox       *inbox.Inbox        // the session's notifications
	models      *localllm.Pool      // the local model servers (Config.LocalModels or its own)
	ownModels   bool                // models is the runtime's own: Close closes it
	embedder    io.Closer           // the story's embedding model (routing.embedding), nil without one
	// storyEmbedder is that model: the routing tier's and host.agent.search's corpus form's.
	storyEmbedder *localllm.LocalEmbedder
	ide           *ide.Handler // host.ide.*: its editor is world.ide.connected's source in a live run
}

// Open wires a run of st as cfg says. On error everything built so far is
// released.
func Open(st *story.Story, cfg Config) (_ *Runtime, err error) {
	cfg = withDefaults(cfg)
	if err := checkProviders(cfg.Tools); err != nil {
		return nil, err
	}
	rt := &Runtime{story: st, models: cfg.LocalModels}
	// Pins first: a strict-pins refusal is a load error, before anything
	// (a trace file) exists.
	routeMap, err := rt.routes(cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			rt.Close()
		}
	}()
	if rt.models == nil {
		rt.models, rt.ownModels = localllm.NewPool(), true
	}
	if err := rt.openSink(cfg); err != nil {
		return nil, err
	}
	rt.buildRegistry(cfg)
	builtin, err := rt.openAgents(cfg)
	if err != nil {
		return nil, err
	}
	if err := rt.openHost(cfg, builtin, routeMap); err != nil {
		return nil, err
	}
	if cfg.Session == nil {
		return rt, nil
	}
	if err := rt.openSession(cfg); err != nil {
		return nil, err
	}
	return rt, nil
}

// withDefaults fills in what cfg leaves zero: a logger that discards, the
// system clock and the host's default call timeout.
func withDefaults(cfg Config) Config {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = host.DefaultTimeout
	}
	return cfg
}

// checkProviders refuses a tool provider this build does not know.
func checkProviders(tools Tools) error {
	for _, p := range tools.Providers {
		if p != toolserver.StoryFilesProvider {
			return fmt.Errorf("tool provider %q: unknown tool provider (known: %s)", p, toolserver.StoryFilesProvider)
		}
	}
	return nil
}

// routes is the run's routing of invokes to agents: the caller's
// Config.Routes, else the story's resolved pins (none with IgnorePins).
func (rt *Runtime) routes(cfg Config) (map[*story.Invoke]*host.Route, error) {
	if cfg.Routes != nil || cfg.IgnorePins {
		return cfg.Routes, nil
	}
	return rt.pins(cfg)
}

// openAgents sets up the run's agents in the registry: a cassette's, the
// plugin-tool service, the caller's overrides and the story's embedding
// model. It returns the agent of the built-in path: the caller's, else a
// cassette's; nil leaves it to the host (the claude CLI in a live run).
func (rt *Runtime) openAgents(cfg Config) (agent.Agent, error) {
	st := rt.story
	builtin := cfg.Agents.Builtin
	if cfg.Cassette != nil {
		if b := cfg.Cassette.ReplayAgents(st, rt.reg, nil); b != nil && builtin == nil {
			builtin = b
		}
	}
	if cfg.Tools.Plugins {
		session := ""
		if cfg.Session != nil {
			session = cfg.Session.ID
		}
		svc, err := plugintools.New(st.Plugins, plugintools.Options{
			Registry: rt.reg,
			RunLive:  func(id string) bool { return id == session },
			Logger:   cfg.Logger,
		})
		if err != nil {
			return nil, err
		}
		rt.plugins = svc
	}
	rt.overrideAgents(cfg)
	if em := st.Routing.Embedding; em != nil && cfg.Agents.Live {
		// One embedder serves the routing tier and host.agent.search's
		// corpus form (Kitsoki's shared embedding sidecar).
		e, err := localllm.NewEmbedder(localllm.EmbedderConfig{Model: em.Model, Endpoint: em.Endpoint, CacheDir: em.CacheDir,
			Config: localllm.Config{Pool: rt.models}}, cfg.Logger)
		if err != nil {
			return nil, fmt.Errorf("routing.embedding: %w", err)
		}
		rt.embedder, rt.storyEmbedder = e, e
	}
	return builtin, nil
}

// openHost builds the host and registers its handlers: the built-in ones,
// the story's host_plugins: (live), a cassette's replays and the caller's.
// A recorder is installed last, so that it wraps them all.
func (rt *Runtime) openHost(cfg Config, builtin agent.Agent, routeMap map[*story.Invoke]*host.Route) error {
	st := rt.story
	rt.jobs, rt.inbox = jobs.New(cfg.Clock), inbox.New()
	rt.host = rt.newHost(cfg, builtin, routeMap)
	if cfg.Agents.Live { // the story's host_plugins:, before a cassette or recorder wraps them
		var err error
		if rt.hostPlugins, err = hostplugin.Register(rt.host, st, hostplugin.Options{Sink: rt.sink, Clock: cfg.Clock, Logger: cfg.Logger}); err != nil {
			return err
		}
	}
	if cfg.Cassette != nil {
		cfg.Cassette.ReplayHandlers(rt.host, rt.sink, st.App.ID)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Handlers)) {
		rt.host.Register(name, cfg.Handlers[name])
	}
	if cfg.Cassette == nil && cfg.Recorder != nil {
		cfg.Recorder.Install(st, rt.reg, rt.host)
	}
	return nil
}

// openSession builds the run's session on the host (or the caller's
// dispatcher) and restores the journal it resumes, if any.
func (rt *Runtime) openSession(cfg Config) error {
	st, s := rt.story, cfg.Session
	opts := rt.sessionOptions(cfg)
	var err error
	if rt.sess, err = orchestrator.New(st, rt.sessionDispatcher(cfg), rt.sink, opts...); err != nil {
		return err
	}
	if r := s.Resume; r != nil && r.Journal.Started {
		j := r.Journal
		w := orchestrator.DeepCopy(j.World).(map[string]any)
		session.Retype(st, w)
		if err := rt.sess.Restore(j.State, w, j.Turn); err != nil {
			return fmt.Errorf("resume %s: %w", j.Path, err)
		}
	}
	return nil
}

// sessionOptions are the orchestrator's options for Config.Session.
func (rt *Runtime) sessionOptions(cfg Config) []orchestrator.Option {
	st, s := rt.story, cfg.Session
	opts := []orchestrator.Option{orchestrator.WithSessionID(s.ID), orchestrator.WithWorld(s.World),
		orchestrator.WithJobs(rt.jobs), orchestrator.WithInbox(rt.inbox),
		orchestrator.WithClock(cfg.Clock), orchestrator.WithLogger(cfg.Logger), orchestrator.WithRouting(s.Routing)}
	if s.Root != "" {
		opts = append(opts, orchestrator.WithRoot(s.Root))
	}
	if em := st.Routing.Embedding; em != nil && em.Tier && rt.storyEmbedder != nil {
		opts = append(opts, orchestrator.WithRanker(embedRoutingRanker{rt.storyEmbedder}))
	}
	if s.WorldAsGiven {
		opts = append(opts, orchestrator.WithWorldAsGiven())
	}
	if cfg.Agents.Live && cfg.Cassette == nil {
		// world.ide.connected follows the run's editor in a live run; a
		// flow or a replay has none, as Kitsoki's flows are disconnected,
		// so a replay takes the branches its recording took headless.
		opts = append(opts, orchestrator.WithIDEProbe(rt.ide.Connected))
	}
	if s.Title != "" {
		opts = append(opts, orchestrator.WithTitle(s.Title))
	}
	if s.Operator != nil {
		opts = append(opts, orchestrator.WithOperator(s.Operator))
	}
	if s.ExecMode != "" {
		opts = append(opts, orchestrator.WithExecMode(s.ExecMode))
	}
	if s.Journal || s.Resume != nil {
		opts = append(opts, orchestrator.WithJournal(0))
	}
	return opts
}

// sessionDispatcher is what the session dispatches its calls through: the
// host or the caller's dispatcher, answering a resumed turn's calls from
// its journal, observed by Config.OnDispatch.
func (rt *Runtime) sessionDispatcher(cfg Config) orchestrator.Dispatcher {
	s := cfg.Session
	var d orchestrator.Dispatcher = rt.host
	if s.Dispatcher != nil {
		d = s.Dispatcher
	}
	if r := s.Resume; r != nil && r.Journal.Partial != nil {
		d = session.Answering(d, rt.sink, r.Journal.Partial, r.SideEffects)
	}
	if cfg.OnDispatch != nil {
		d = observedDispatcher{Dispatcher: d, on: cfg.OnDispatch}
	}
	if s.dispatch != nil {
		d = s.dispatch(d)
	}
	return d
}

// pins resolves the story's selection: pins into routes, reporting the
// ones that are not honoured, or refusing them with StrictPins.
func (rt *Runtime) pins(cfg Config) (map[*story.Invoke]*host.Route, error) {
	pins := routes.Resolve(rt.story)
	if cfg.StrictPins {
		if err := pins.Err(); err != nil {
			return nil, &PinsError{Err: err}
		}
	}
	rt.warnings = pins.Warnings
	for _, w := range pins.Warnings {
		if cfg.PinWarning != nil {
			cfg.PinWarning(w)
		} else {
			cfg.Logger.Warn("selection pin not honoured", "detail", w)
		}
	}
	return pins.Routes, nil
}

// openSink opens the trace sink cfg selects.
func (rt *Runtime) openSink(cfg Config) error {
	topts := []trace.Option{trace.WithSecrets(rt.story.Secrets), trace.WithLogger(cfg.Logger), trace.WithClock(cfg.Clock)}
	switch t := cfg.Trace; {
	case t.Sink != nil && t.Path != "":
		return errors.New("runtime: Trace.Path and Trace.Sink are exclusive: give one")
	case t.Sink != nil:
		rt.sink = t.Sink
	case t.Path != "":
		if s := cfg.Session; s != nil && (s.Journal || s.Resume != nil) {
			topts = append(topts, trace.WithCoalesce())
		}
		if cfg.Session != nil && cfg.Session.Resume != nil {
			topts = append(topts, trace.WithTailCheck())
		} else if err := EnsureNewTrace(t.Path); err != nil {
			return err
		}
		if t.SyncPerEvent {
			topts = append(topts, trace.WithSyncPerEvent())
		}
		if t.NoSync {
			topts = append(topts, trace.WithNoSync())
		}
		if t.SyncHook != nil {
			topts = append(topts, trace.WithSyncHook(t.SyncHook))
		}
		topts = append(topts, trace.WithHeader(t.Header))
		w, err := trace.Create(t.Path, topts...)
		if err != nil {
			return fmt.Errorf("trace %s: %w", t.Path, err)
		}
		rt.file, rt.sink = w, w
	default:
		if t.SyncPerEvent {
			return errors.New("runtime: Trace.SyncPerEvent applies to a trace file: give Trace.Path too")
		}
		rt.mem = trace.NewMemSink(topts...)
		rt.sink = rt.mem
	}
	if cfg.Trace.Observer != nil {
		rt.sink = observedSink{Sink: rt.sink, obs: cfg.Trace.Observer}
	}
	return nil
}

// EnsureNewTrace refuses to append a new session to a trace that already
// holds one: a trace file is one session.
func EnsureNewTrace(path string) error {
	fi, err := os.Stat(path)
	if err == nil && fi.Size() > 0 {
		return fmt.Errorf("trace %s already holds a session; pass another --trace path (or remove the file)", path)
	}
	return nil
}

// buildRegistry builds (or adopts) the agent registry.
func (rt *Runtime) buildRegistry(cfg Config) {
	if cfg.Agents.Registry != nil {
		rt.reg = cfg.Agents.Registry
	} else {
		rt.reg, rt.ownReg = newRegistry(rt.story, cfg.Logger, cfg.Agents.Live, rt.models), true
	}
}

// overrideAgents registers the caller's agents, after a cassette's so they
// win over it.
func (rt *Runtime) overrideAgents(cfg Config) {
	for _, alias := range slices.Sorted(maps.Keys(cfg.Agents.Override)) {
		rt.reg.Register(alias, cfg.Agents.Override[alias])
	}
}

// newHost builds the host the run dispatches through.
func (rt *Runtime) newHost(cfg Config, builtin agent.Agent, routeMap map[*story.Invoke]*host.Route) *host.Host {
	st := rt.story
	opts := []host.Option{host.WithLogger(cfg.Logger), host.WithClock(cfg.Clock), host.WithDefaultTimeout(cfg.Timeout),
		host.WithRoutes(routeMap), host.WithSelection(cfg.Selection), host.WithBudget(cfg.Budget)}
	if cfg.Agents.Live {
		if builtin == nil {
			builtin = liveBuiltin(st, cfg.Logger, cfg.Clock)
		}
		opts = append(opts, host.WithRanker(localRanker(cfg.Logger, rt.models)))
		if rt.storyEmbedder != nil {
			opts = append(opts, host.WithCorpusRanker(embedRanker{rt.storyEmbedder}))
		}
	}
	if builtin != nil {
		opts = append(opts, host.WithBuiltin(builtin))
	}
	if cfg.Session != nil || cfg.AttachCalls {
		opts = append(opts, liveCalls(st, rt.catalog(), cfg.Tools))
	}
	h := host.New(st, rt.reg, rt.sink, opts...)
	hostrun.Register(h, hostrun.Config{Workspace: st.Workspace, Clock: cfg.Clock, Logger: cfg.Logger})
	artifacts.Register(h, st.Workspace)
	gitwt.Register(h, gitwt.Config{Workspace: st.Workspace, Out: cfg.Out, Logger: cfg.Logger})
	ticket.Register(h, ticket.Config{Workspace: st.Workspace, Clock: cfg.Clock})
	transport.Register(h, cfg.Out)
	forgeLock := &sync.Mutex{} // the local forge's, shared by the vcs and ci handlers
	vcs.Register(h, vcs.Config{Workspace: st.Workspace, Clock: cfg.Clock, Logger: cfg.Logger, Lock: forgeLock})
	ci.Register(h, ci.Config{Workspace: st.Workspace, Clock: cfg.Clock, Logger: cfg.Logger, Lock: forgeLock})
	hostjobs.Register(h, rt.jobs, rt.inbox)
	so := cfg.Starlark
	if so.Logger == nil {
		so.Logger = cfg.Logger
	}
	starlark.Register(h, st, so)
	chat.Register(h, chat.Config{Dir: sessionsDir(cfg, st), Clock: cfg.Clock, Logger: cfg.Logger})
	rt.ide = ide.Register(h, ide.Config{Workspace: st.Workspace, Out: cfg.Out, Logger: cfg.Logger})
	ghticket.Register(h, ghticket.Config{Workspace: st.Workspace, Logger: cfg.Logger})
	wsmanager.Register(h, wsmanager.Config{Workspace: st.Workspace, Logger: cfg.Logger})
	registerInterfaces(h, st)
	return h
}

// sessionsDir is where the run keeps its chats: Config.SessionsDir, else
// the workspace's sessions directory ("" without a workspace: no chats).
func sessionsDir(cfg Config, st *story.Story) string {
	if cfg.SessionsDir != "" {
		return cfg.SessionsDir
	}
	if st.Workspace.IsZero() {
		return ""
	}
	if fsys, _ := st.Workspace.FS(); fsys != nil {
		return ""
	}
	return session.DefaultDir(st.Workspace.Dir())
}

func (rt *Runtime) catalog() *toolserver.Catalog {
	if rt.plugins == nil {
		return nil
	}
	return rt.plugins.Catalog()
}

// liveCalls names each agent call's run (agent.Call.Run), so the tools
// kitsoki's MCP server offers the agent (ask the operator, set the title,
// emit an intent…) act on the run that dispatched the call: the session
// hands its actions over in the call (host.Call.Run). No run of this build
// is started by another run, so HasParent is always false.
func liveCalls(st *story.Story, cat *toolserver.Catalog, tools Tools) host.Option {
	return host.WithRun(func(call *host.Call) *agent.Run {
		if call.Run.Live == nil {
			return nil
		}
		r := &agent.Run{
			ID: call.SessionID, WorkspaceID: st.App.ID, StoryDir: st.Dir,
			Autopilot: tools.Autopilot, ToolProviders: tools.Providers,
			TitleOwned: call.Run.TitleOwned, Live: call.Run.Live,
		}
		if cat != nil { // a nil *toolserver.Catalog must not become a non-nil interface
			r.Catalog = cat
		}
		return r
	})
}

// Story is the run's story.
func (rt *Runtime) Story() *story.Story { return rt.story }

// Record writes an event the operator caused between turns (a live
// switch of the agent, kitsoki.agent.switched) into the session's trace:
// under the turn the session is at and its state.
func (rt *Runtime) Record(p trace.Payload) error {
	ev := &plugin.Event{}
	if rt.sess != nil {
		ev.Turn, ev.StatePath = rt.sess.TurnNumber(), rt.sess.State()
	}
	return rt.sink.AppendPayload(ev, p)
}

// Registry is the run's agent registry.
func (rt *Runtime) Registry() *agent.Registry { return rt.reg }

// Host is the run's host.
func (rt *Runtime) Host() *host.Host { return rt.host }

// Sink is the run's trace sink.
func (rt *Runtime) Sink() orchestrator.Sink { return rt.sink }

// Memory is the in-memory trace, nil when the trace is a file or the
// caller's sink.
func (rt *Runtime) Memory() *trace.MemSink { return rt.mem }

// File is the trace file Open created (Trace.Path), nil otherwise.
func (rt *Runtime) File() *trace.Writer { return rt.file }

// Session is the run's session, nil when Config.Session was nil.
func (rt *Runtime) Session() *orchestrator.Session { return rt.sess }

// Plugins is the plugin-tool service, nil without Tools.Plugins.
func (rt *Runtime) Plugins() *plugintools.Service { return rt.plugins }

// PinWarnings are the selection pins that were not honoured.
func (rt *Runtime) PinWarnings() []string { return rt.warnings }

// Close stops the host (its in-flight calls and built-in agent), the
// plugin-tool service, the agents (when the registry is the runtime's
// own), the local model servers (when the pool is the runtime's own), then
// closes the trace file Open created. Only the first Close does anything.
func (rt *Runtime) Close() error {
	if rt.closed {
		return nil
	}
	rt.closed = true
	var errs []error
	if rt.jobs != nil { // first: a job's calls use the host, its processes are reaped here
		rt.jobs.Close()
	}
	if rt.host != nil {
		errs = append(errs, rt.host.Close())
	}
	if rt.plugins != nil {
		errs = append(errs, rt.plugins.Close())
	}
	if rt.hostPlugins != nil {
		errs = append(errs, rt.hostPlugins.Close())
	}
	if rt.reg != nil && rt.ownReg {
		errs = append(errs, rt.reg.Close())
	}
	if rt.embedder != nil {
		errs = append(errs, rt.embedder.Close())
	}
	if rt.ownModels { // after the agents and rankers released their servers: stops any left
		errs = append(errs, rt.models.Close())
	}
	if rt.file != nil {
		errs = append(errs, rt.file.Close())
	}
	return errors.Join(errs...)
}

// observedDispatcher tells Config.OnDispatch of each call the session
// dispatches, and when it returned.
type observedDispatcher struct {
	orchestrator.Dispatcher
	on func(*host.Call) func()
}

func (o observedDispatcher) Dispatch(ctx context.Context, c *host.Call) (*host.Result, error) {
	done := o.on(c)
	defer done()
	return o.Dispatcher.Dispatch(ctx, c)
}
