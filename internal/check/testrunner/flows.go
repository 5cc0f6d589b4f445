package testrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/hosts/starlark"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/replay"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// FlowResult is the outcome of one fixture. Exported field names are the
// --json report's keys (cassettes-and-flows.md §6).
type FlowResult struct {
	File    string
	Passed  bool
	Turns   []TurnResult
	Skipped bool
	// DroppedHostCalls counts the host calls answered with nothing because
	// the fixture has no host_handlers, host_cassette or clock fields.
	DroppedHostCalls int `json:",omitempty"`
	// Warnings are the cassette's replay warnings (an episode answered a
	// request other than the one it was recorded for), each prefixed with
	// its turn: "turn 2: cassette episode 1 ...".
	Warnings []string `json:",omitempty"`
	// HostErrors are the failures of host calls no on_error handled, each
	// prefixed with its turn ("turn 3: iface.ticket.comment: ..."). As in
	// Kitsoki they fail no assertion (expect_no_errors counts rejections);
	// the report shows them under --v.
	HostErrors []string `json:",omitempty"`
	// SetupError is why the fixture could not run at all (its story, its
	// cassette or its fields against the story); the flow then fails with
	// no turns.
	SetupError string `json:",omitempty"`

	Name       string `json:"-"` // report name (base name, #N for multi-document files)
	SkipReason string `json:"-"`
	Trace      []byte `json:"-"` // the run's JSONL trace, with WithTrace
	// Sidecars are the files the trace refers to (agent-action
	// transcripts), with WithTrace: each path is relative to the trace
	// file's directory.
	Sidecars []trace.Sidecar `json:"-"`
}

// TurnResult is the outcome of one turn. The session checks come last,
// with TurnIndex -1.
type TurnResult struct {
	TurnIndex int // 0-based index into the fixture's turns; -1 = session checks
	Passed    bool
	Failures  []string
	NewState  string
	View      string
	Events    []trace.Event // the turn's trace events, with WithEvents

	traceTurns []int64 // the trace turns the fixture turn wrote (its own, then delivered job turns)
}

// SessionIndex is the TurnIndex of the session checks.
const SessionIndex = -1

// FlowOption configures a Runner.
type FlowOption func(*flowConfig)

type flowConfig struct {
	getenv      func(string) string
	workspace   string   // --workspace; "" = the workspace of each fixture's story
	storiesPath []string // --stories-path: where @kitsoki/NAME imports are looked up first
	logger      *slog.Logger
	keepEvents  bool
	keepTrace   bool
	summary     bool // WithSummaryReport
	strict      bool
	start       time.Time
}

// WithFlowGetenv sets how KITSOKI_CASSETTE_* are read (default os.Getenv).
func WithFlowGetenv(f func(string) string) FlowOption {
	return func(c *flowConfig) {
		if f != nil {
			c.getenv = f
		}
	}
}

// WithFlowLogger sets the logger of the sessions (default: discard).
func WithFlowLogger(l *slog.Logger) FlowOption {
	return func(c *flowConfig) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithEvents keeps each turn's trace events in its TurnResult (the --json
// report carries them).
func WithEvents() FlowOption { return func(c *flowConfig) { c.keepEvents = true } }

// WithCassetteStrict makes every host_cassette strict about request
// hashes (WithStrictRequests, `--cassette-strict`): an episode recorded for
// another request does not answer, so the call misses and the turn fails.
func WithCassetteStrict(strict bool) FlowOption { return func(c *flowConfig) { c.strict = strict } }

// WithTrace keeps each flow's JSONL trace in FlowResult.Trace.
func WithTrace() FlowOption { return func(c *flowConfig) { c.keepTrace = true } }

// WithSummaryReport makes RunFixtures and RunFiles keep in the report only
// each flow's outcome (its file, name, pass, skip and setup error, and its
// trace with WithTrace), not its turns, warnings and host errors: once each
// has seen the result, what else it holds is not needed. For a caller that
// prints every result as it comes and reads the summary (kitsoki test flows
// without --json), so a run's memory does not grow with its flows' views.
func WithSummaryReport() FlowOption { return func(c *flowConfig) { c.summary = true } }

// FlowEpoch is where a flow's clock starts. Flows run on a fake clock, so
// their traces are reproducible and cassette delays are instant.
var FlowEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Runner prepares and runs flow fixtures, loading each story once.
type Runner struct {
	cfg     flowConfig
	mu      sync.Mutex
	stories map[string]*story.Story
}

// NewRunner returns a runner.
func NewRunner(opts ...FlowOption) *Runner {
	cfg := flowConfig{getenv: os.Getenv, logger: slog.New(slog.DiscardHandler), start: FlowEpoch}
	for _, o := range opts {
		o(&cfg)
	}
	return &Runner{cfg: cfg, stories: map[string]*story.Story{}}
}

// Close releases the loaded stories.
func (r *Runner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, st := range r.stories {
		errs = append(errs, st.Close())
	}
	r.stories = map[string]*story.Story{}
	return errors.Join(errs...)
}

func (r *Runner) story(path, ws string) (*story.Story, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.stories[abs]; ok {
		return st, nil
	}
	st, err := story.Load(abs, story.WithWorkspace(ws), story.WithStubbedHosts(), story.WithStoriesPath(r.cfg.storiesPath...)) // fixtures may stub handlers kitsoki does not build
	if err != nil {
		return nil, err
	}
	r.stories[abs] = st
	// A load allocates several times what the loaded story keeps (parse
	// trees, file contents, compiler scratch), and its last collections
	// run while the loader still holds some of it, so they leave a heap
	// goal near twice that peak for the flows that follow. One collection
	// here, with the load finished, sets the goal from the story alone:
	// it lowers the peak memory of a run by a few MiB and costs one
	// collection per story (docs/performance.md, "Peak memory").
	goruntime.GC()
	return st, nil
}

// Flow is a fixture ready to run once: its story loaded, its cassette
// parsed, its clock set.
type Flow struct {
	Fixture  *Fixture
	Story    *story.Story
	Cassette *replay.Cassette // nil without host_cassette

	cfg flowConfig
	clk *clock.Fake

	httpCassette *starlark.Cassette // starlark_http_cassette:, nil without
	// inspectCassette is starlark_inspect_cassette:, nil without.
	inspectCassette *starlark.InspectCassette
	// recording answers input: turns (recording:), nil without.
	recording *Recording
}

// Prepare loads what a fixture needs and checks it against its story. An
// error is a setup error: the fixture cannot run at all.
func (r *Runner) Prepare(fx *Fixture) (*Flow, error) {
	f := &Flow{Fixture: fx, cfg: r.cfg, clk: clock.NewFake(r.cfg.start)}
	if fx.SkipReason != "" {
		return f, nil
	}
	if fx.AppPath == "" && fx.AppID != "" {
		return nil, fmt.Errorf("%s:%d:%d: app: %q is a story id, and a story id names the story under test, which this run does not have: "+
			"write app: as the story's path relative to the fixture (app: ../app.yaml), or run kitsoki test flows with the story",
			fx.File, fx.appAt.line, fx.appAt.col, fx.AppID)
	}
	if fx.AppPath == "" {
		return nil, fmt.Errorf("%s: app: is required (the story, relative to the fixture)", fx.Name)
	}
	ws, err := r.confine(fx)
	if err != nil {
		return nil, err
	}
	st, err := r.story(fx.AppPath, ws)
	if err != nil {
		return nil, fmt.Errorf("%s: story %s: %w", fx.Name, fx.AppPath, err)
	}
	f.Story = st
	if fx.AppID != "" && fx.AppID != st.App.ID {
		return nil, fmt.Errorf("%s:%d:%d: app: %q names a story by id, but the story under test (%s) has id %q: "+
			"write app: %s, or the story's path relative to the fixture",
			fx.File, fx.appAt.line, fx.appAt.col, fx.AppID, fx.AppPath, st.App.ID, st.App.ID)
	}
	if fx.InitialState != "" {
		if err := checkInitialState(fx, st); err != nil {
			return nil, err
		}
	}
	if err := checkStubNames(fx, st); err != nil {
		return nil, err
	}
	if fx.CassettePath != "" {
		c, err := replay.Load(fx.CassettePath, cassette.WithClock(f.clk), cassette.WithGetenv(r.cfg.getenv), cassette.WithSecrets(st.Secrets), cassette.WithStrictRequests(r.cfg.strict))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fx.Name, err)
		}
		f.Cassette = c
	}
	if fx.RecordingPath != "" {
		rec, err := LoadRecording(fx.RecordingPath)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fx.Name, err)
		}
		f.recording = rec
	}
	if err := checkBindings(fx, st, f.Cassette); err != nil {
		return nil, err
	}
	if fx.HTTPCassettePath != "" {
		// Flows replay only: a flow never reaches the network.
		c, err := starlark.LoadCassette(fx.HTTPCassettePath, starlark.ModeNone)
		if err != nil {
			return nil, fmt.Errorf("%s: starlark_http_cassette: %w", fx.Name, err)
		}
		f.httpCassette = c
	}
	if fx.InspectCassettePath != "" {
		c, err := starlark.LoadInspectCassette(fx.InspectCassettePath)
		if err != nil {
			return nil, fmt.Errorf("%s: starlark_inspect_cassette: %w", fx.Name, err)
		}
		f.inspectCassette = c
	}
	return f, nil
}

// checkStubNames refuses a host_handlers entry keyed by an agent alias:
// stubs answer invoke names, so such an entry would never answer anything
// and the call would go on to the (unavailable) agent.
func checkStubNames(fx *Fixture, st *story.Story) error {
	for _, name := range sortedKeys(fx.HostHandlers) {
		_, declared := st.Plugins[name]
		if !declared && !replay.IsAgentHandler(name) {
			continue
		}
		stub := fx.HostHandlers[name]
		invokes := invokesVia(st, name)
		how := "its invoke name (host.agent.<verb>)"
		if len(invokes) > 0 {
			q := make([]string, len(invokes))
			for i, n := range invokes {
				q[i] = fmt.Sprintf("%q", n)
			}
			how = "its invoke name (" + strings.Join(q, ", ") + ")"
		}
		return fmt.Errorf("%s:%d:%d: host_handlers[%q]: %q is an agent alias, not a host handler, so this stub would answer nothing; "+
			"key the stub by %s, or answer the agent from a host_cassette whose episodes have match.handler: %s",
			fx.File, stub.Line, stub.Col, name, name, how, name)
	}
	return nil
}

// invokesVia lists, sorted, the invoke names of the effects that route to
// an agent alias (agent: <alias>).
func invokesVia(st *story.Story, alias string) []string {
	seen := map[string]bool{}
	add := func(effs []*story.Effect) {
		for _, e := range effs {
			if e.Invoke != nil && e.Invoke.Agent == alias {
				seen[e.Invoke.Name] = true
			}
		}
	}
	for _, s := range st.States {
		add(s.OnEnter)
		for _, arms := range s.On {
			for _, a := range arms {
				add(a.Effects)
			}
		}
	}
	return sortedKeys(seen)
}

// captureSink is the flow's trace: a sink that applies the writer's rules
// (a MemSink when the trace or its events are kept, else a trace.Discard,
// which encodes nothing) and also keeps the events as they are appended,
// so each turn's assertions read its own events without decoding the
// trace. It keeps one turn's events (turn drops the rest), so a long
// flow's memory stays flat.
type captureSink struct {
	trace.Sink
	events []capturedEvent
	total  int // events appended, those dropped included
}

// turn starts the next turn's events.
func (s *captureSink) turn() {
	clear(s.events)
	s.events = s.events[:0]
}

// capturedEvent is one event as appended: the envelope, and the typed
// payload of a kind kitsoki writes (a plugin's sub-event keeps its map in
// Event.Payload instead).
type capturedEvent struct {
	trace.Event
	typed trace.Payload
}

// payload is the event's payload as appended, typed or map.
func (e *capturedEvent) payload() any {
	if e.typed != nil {
		return e.typed
	}
	return e.Payload
}

// WriteTranscript keeps a call's transcript in the flow's trace (when one
// is kept).
func (s *captureSink) WriteTranscript(callID string, t *trace.Transcript) (*trace.TranscriptRef, error) {
	return trace.WriteTranscript(s.Sink, callID, t)
}

func (s *captureSink) Append(ev *trace.Event) error {
	if err := s.Sink.Append(ev); err != nil {
		return err
	}
	s.events = append(s.events, capturedEvent{Event: *ev})
	s.total++
	return nil
}

func (s *captureSink) AppendPayload(ev *trace.Event, p trace.Payload) error {
	if err := s.Sink.AppendPayload(ev, p); err != nil {
		return err
	}
	s.events = append(s.events, capturedEvent{Event: *ev, typed: p})
	s.total++
	return nil
}

// seedMisfit words a WorldMisfits message for a fixture's seed, which is
// used as given.
func seedMisfit(m string) string {
	return strings.Replace(m, "the initial value", "the seeded value", 1) + "; the flow uses it as given"
}

// Run runs the flow: seed, every turn with its assertions, then the session
// checks. A Flow runs once.
func (f *Flow) Run(ctx context.Context) *FlowResult {
	fx := f.Fixture
	res := &FlowResult{File: fx.File, Name: fx.Name}
	if fx.SkipReason != "" {
		res.Skipped, res.SkipReason = true, fx.SkipReason
		return res
	}
	cfg, sink, mem := f.runtimeConfig(res)
	rt, err := runtime.Open(f.Story, cfg)
	if err != nil {
		res.Turns = append(res.Turns, TurnResult{TurnIndex: SessionIndex, Failures: []string{"seed: " + err.Error()}})
		return f.finish(res, mem)
	}
	defer rt.Close()
	r := &flowRun{f: f, fx: fx, res: res, sink: sink, sess: rt.Session()}
	r.installHosts(rt.Host())
	if err := r.sess.SeedContext(ctx); err != nil {
		res.Turns = append(res.Turns, TurnResult{TurnIndex: SessionIndex, Failures: []string{"seed: " + err.Error()}})
		return f.finish(res, mem)
	}
	r.seeded = sink.total
	for i, ts := range fx.Turns {
		if !r.runTurn(ctx, i, ts) {
			break
		}
	}
	if sfails := r.sessionChecks(); len(sfails) > 0 || fx.hasSessionChecks() {
		res.Turns = append(res.Turns, TurnResult{TurnIndex: SessionIndex, Passed: len(sfails) == 0, Failures: sfails, NewState: r.sess.State()})
	}
	res.DroppedHostCalls = int(r.dropped.Load())
	return f.finish(res, mem)
}

// runtimeConfig is the runtime.Config a flow runs on: the flow's clock and
// logger, its trace sink (kept in memory only when someone reads it), the
// fixture's seed and execution mode, and its cassettes. A seed value that
// does not fit its key's declared type becomes a warning on res.
func (f *Flow) runtimeConfig(res *FlowResult) (runtime.Config, *captureSink, *trace.MemSink) {
	fx, st := f.Fixture, f.Story
	// A plugin's stderr is logged: the flow's logger masks the secrets of
	// the story it runs, which the logger's maker could not know.
	logger := slog.New(secret.New(st.Secrets).Handler(f.cfg.logger.Handler()))
	topts := []trace.Option{trace.WithSecrets(st.Secrets), trace.WithClock(f.clk)}
	var mem *trace.MemSink // nil: nobody reads the trace, so no line is encoded
	sink := &captureSink{Sink: trace.NewDiscard(topts...)}
	if f.cfg.keepTrace || f.cfg.keepEvents {
		mem = trace.NewMemSink(topts...)
		sink.Sink = mem
	}
	root := fx.InitialState
	if root == "" {
		root = st.Root
	}
	// Flows replay cassettes recorded against the story's own routes, so
	// pins do not apply.
	cfg := runtime.Config{Logger: logger, Clock: f.clk, Trace: runtime.Trace{Sink: sink}, IgnorePins: true,
		Session: &runtime.Session{ID: "flow", Root: root, World: replay.CopyMap(fx.InitialWorld), WorldAsGiven: true, ExecMode: fx.Mode,
			// Kitsoki's flow runner routes with routing.enabled, which
			// defaults to true.
			Routing: orchestrator.RoutingConfig{SemanticDefault: true}}}
	// A fixture's seed is taken as given: a value that does not fit its
	// key's declared type is a warning, not a failure (Kitsoki's flows
	// seed lists into keys declared string).
	for _, m := range orchestrator.WorldMisfits(st, fx.InitialWorld) {
		res.Warnings = append(res.Warnings, "initial_world: "+seedMisfit(m))
	}
	if f.Cassette != nil {
		// host_bindings next to a host_cassette: the episodes answer
		// first, the bound real handler answers their misses.
		if len(fx.HostBindings) > 0 {
			f.Cassette.FallBackTo(func(name string) bool { return fallsBack(fx.HostBindings, name) })
		}
		cfg.Cassette = f.Cassette
	}
	if f.httpCassette != nil {
		cfg.Starlark.HTTP = f.httpCassette.Client(nil)
	}
	if f.inspectCassette != nil {
		cfg.Starlark.Probe = f.inspectCassette
	}
	return cfg, sink, mem
}

// flowRun is one run of a flow once its runtime is open: the session, how
// host calls are answered and counted, and what the session checks at the
// end read from the turns.
type flowRun struct {
	f    *Flow
	fx   *Fixture
	res  *FlowResult
	sink *captureSink
	sess *orchestrator.Session

	dispatch bool                // host calls reach handlers (else they are dropped)
	counted  func(hostCall) bool // which dispatched calls count as the turn's host calls
	dropped  atomic.Int64        // host calls answered with nothing
	seeded   int                 // trace events written before the first turn

	rejected  bool       // a turn was rejected (expect_no_errors)
	allCalls  []hostCall // every turn's counted calls, for expect_no_host_calls: true
	everyCall []hostCall // every turn's calls, for expect_no_host_calls: [names]
}

// installHosts decides how the flow's host calls are answered and installs
// the handlers for it. Host calls are dispatched only when the fixture says
// how to answer them (a cassette, stubs, a moving clock); otherwise they
// are dropped (answered with nothing), as Kitsoki does, so older fixtures
// keep passing. host_bindings: a bound handler is the real one runtime.Open
// registered (nothing to install); a bound interface is routed to its
// handler. With bindings alone, every other call is still dropped, and only
// the bound calls count as host calls.
func (r *flowRun) installHosts(h *host.Host) {
	f, fx := r.f, r.fx
	r.dispatch = !fx.NoDispatch && (f.Cassette != nil || fx.HostHandlers != nil || fx.AdvanceClock || f.httpCassette != nil || f.inspectCassette != nil)
	if r.dispatch && f.Cassette == nil && fx.HostHandlers != nil {
		for _, name := range sortedKeys(fx.HostHandlers) {
			hd := &stubHandler{stub: fx.HostHandlers[name], clk: f.clk, name: name}
			// The stub answers every op under its name, also those a
			// built-in registers one by one (host.git_worktree.create).
			for _, op := range h.Under(name) {
				h.Register(op, hd)
			}
			h.Register(name, hd)
			h.RegisterPrefix(name, hd)
		}
	}
	for _, b := range fx.HostBindings {
		if b.Interface {
			ih := runtime.InterfaceHandler(h, b.Key, b.Handler)
			h.Register(interfaceNamespace+b.Key, ih)
			h.RegisterPrefix(interfaceNamespace+b.Key, ih)
		}
	}
	if !r.dispatch {
		drop := host.HandlerFunc(func(context.Context, *host.Call) (*host.Result, error) {
			r.dropped.Add(1)
			return &host.Result{KeptNoWorld: true}, nil
		})
		for _, name := range replay.InvokeNames(f.Story) {
			if !bound(fx.HostBindings, name) {
				h.Register(name, drop)
			}
		}
	}
	r.counted = func(hostCall) bool { return true }
	if !r.dispatch && len(fx.HostBindings) > 0 {
		r.dispatch = true
		r.counted = func(c hostCall) bool { return bound(fx.HostBindings, c.Namespace) }
	}
}

// runTurn plays turn i and checks it, and reports whether the flow goes
// on. A turn that cannot be played (a bad world_override or slot, a
// recording miss, a trace or job error) ends the flow with its failure.
func (r *flowRun) runTurn(ctx context.Context, i int, ts *TurnSpec) bool {
	sess := r.sess
	r.sink.turn()
	var before map[string]any
	if ts.wantsWorldBefore() {
		before = replay.CopyMap(sess.World())
	}
	var jobsBefore []jobs.Info
	if ts.wantsJobs() {
		jobsBefore = sess.Jobs().List()
	}
	if ts.WorldOverride != nil {
		for _, m := range orchestrator.WorldMisfits(r.f.Story, ts.WorldOverride) {
			r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("turn %d: world_override: %s", i+1, seedMisfit(m)))
		}
		if err := sess.OverrideWorld(replay.CopyMap(ts.WorldOverride)); err != nil {
			return r.stop(i, "world_override: "+err.Error())
		}
	}
	out, failure := r.playTurn(ctx, i, ts)
	if failure != "" {
		return r.stop(i, failure)
	}
	r.checkPlayedTurn(i, ts, out, before, jobsBefore)
	return true
}

// stop ends the flow at turn i with one failure, in the state the session
// is in.
func (r *flowRun) stop(i int, failure string) bool {
	r.res.Turns = append(r.res.Turns, TurnResult{TurnIndex: i, NewState: r.sess.State(), Failures: []string{failure}})
	return false
}

// playTurn plays turn i: no intent and no input is a turn that does
// nothing; an intent is dispatched with its rendered slots; an input is
// routed by the recording when the flow has one, else by the session as it
// routes typed text (its tiers, then the router agent, which stubs or a
// cassette answer). Background jobs then settle and the clock moves. It
// returns the outcome, or the failure that ends the flow.
func (r *flowRun) playTurn(ctx context.Context, i int, ts *TurnSpec) (*orchestrator.Outcome, string) {
	sess, rec := r.sess, r.f.recording
	var out *orchestrator.Outcome
	var err error
	if ts.Intent == "" && ts.Input == "" {
		out = &orchestrator.Outcome{Outcome: orchestrator.OutcomeTransitioned, From: sess.State(), State: sess.State()}
	} else {
		slots, serr := renderSlots(ts.Slots, sess.World())
		if serr != nil {
			return nil, fmt.Sprintf("turns[%d].intent.slots.%v", i, serr)
		}
		switch {
		case ts.Input == "":
			out, err = sess.Turn(ctx, ts.Intent, slots, ts.DisplayInput)
		case rec != nil:
			// The recording is the router: (state, input) → intent.
			name, rslots, ok := rec.Lookup(sess.State(), ts.Input)
			if !ok {
				return nil, fmt.Sprintf("UNKNOWN_INTENT: input %q in state %q has no entry in the recording %s; add one (state, input, intent: {name, slots})", ts.Input, sess.State(), rec.File)
			}
			out, err = sess.Turn(ctx, name, replay.CopyMap(rslots), ts.Input)
		default:
			out, err = sess.Say(ctx, ts.Input)
		}
	}
	if err != nil {
		return nil, "trace: " + err.Error()
	}
	// Background jobs settle (each finished, parked on the flow's
	// clock or waiting for an answer) and what they did is delivered,
	// before and after the clock moves: the clock decides, never the
	// machine's load.
	jobOuts, err := r.f.settle(ctx, sess, ts.AdvanceClock)
	if err != nil {
		return nil, err.Error()
	}
	out = withJobs(out, jobOuts)
	if ts.AdvanceClock > 0 {
		// Timeouts due once the clock moved fire, each as its own turn.
		if out, err = tick(ctx, sess, out); err != nil {
			return nil, "trace: " + err.Error()
		}
	}
	return out, ""
}

// checkPlayedTurn checks turn i's expectations against what it did (its
// outcome, world, events and host calls) and records its result, the
// cassette's misses and warnings, and its host errors. The turn's calls
// are also kept for the session checks that read them.
func (r *flowRun) checkPlayedTurn(i int, ts *TurnSpec, out *orchestrator.Outcome, before map[string]any, jobsBefore []jobs.Info) {
	f, fx, sess, res := r.f, r.fx, r.sess, r.res
	evs := r.sink.events
	tv := turnView{out: out, world: sess.World(), before: before, slots: acceptedSlots(evs), evs: evs, all: dispatched(evs, f.routeInterface)}
	if ts.wantsJobs() {
		tv.inbox, tv.jobs, tv.jobsBefore = sess.Inbox().Summary(), sess.Jobs().List(), jobsBefore
	}
	tv.terminal, _ = sess.Done()
	if fx.NoHostCallsOf != nil {
		r.everyCall = append(r.everyCall, tv.all...)
	}
	if r.dispatch {
		for _, c := range tv.all {
			if r.counted(c) {
				tv.calls = append(tv.calls, c)
			}
		}
		if fx.ExpectNoHostCalls {
			r.allCalls = append(r.allCalls, tv.calls...)
		}
	}
	fails := checkTurn(ts, tv)
	if f.Cassette != nil {
		fails = append(fails, f.Cassette.TakeMisses()...)
		for _, w := range f.Cassette.TakeWarnings() {
			res.Warnings = append(res.Warnings, fmt.Sprintf("turn %d: %s", i+1, w))
		}
	}
	if out.Outcome == orchestrator.OutcomeRejected {
		r.rejected = true
	}
	for _, e := range out.HostErrors {
		res.HostErrors = append(res.HostErrors, fmt.Sprintf("turn %d: %s", i+1, e.Error()))
	}
	tr := TurnResult{TurnIndex: i, Passed: len(fails) == 0, Failures: fails, NewState: out.State, View: out.View}
	if f.cfg.keepEvents {
		tr.traceTurns = traceTurns(evs)
	}
	res.Turns = append(res.Turns, tr)
}

// sessionChecks are the fixture's checks on the whole run, made once the
// turns are played: the end state and world, the files written, the host
// calls of every turn, the number of events the turns wrote, and the
// cassette's unused episodes. A turn's expect_world_final is checked here
// too, like the fixture's; only the turns that ran are checked.
func (r *flowRun) sessionChecks() []string {
	fx, sess := r.fx, r.sess
	var sfails []string
	if fx.ExpectTerminal {
		if done, _ := sess.Done(); !done {
			sfails = append(sfails, fmt.Sprintf("expect_terminal: state %q is not terminal", sess.State()))
		}
	}
	if fx.ExpectNoErrors && r.rejected {
		sfails = append(sfails, "expect_no_errors: there were validation errors")
	}
	if fx.ExpectWorldFinal != nil {
		sfails = append(sfails, checkKeys("expect_world_final", fx.ExpectWorldFinal, sess.World(), true)...)
	}
	for _, tr := range r.res.Turns {
		ts := fx.Turns[tr.TurnIndex]
		for _, b := range append([]*TurnSpec{ts}, ts.Then...) {
			if b.ExpectWorldFinal != nil {
				sfails = append(sfails, checkKeys(fmt.Sprintf("turns[%d].expect_world_final", tr.TurnIndex), b.ExpectWorldFinal, sess.World(), true)...)
			}
		}
	}
	sfails = append(sfails, checkFiles(fx.ExpectFiles)...)
	sfails = append(sfails, checkHostCalls("expect_host_calls", nil, fx.ExpectNoHostCalls, r.allCalls)...)
	sfails = append(sfails, checkNoHostCallsOf("expect_no_host_calls", fx.NoHostCallsOf, r.everyCall)...)
	if n, lo := r.sink.total-r.seeded, fx.ExpectEventsAtLeast; lo != nil && n < *lo {
		sfails = append(sfails, fmt.Sprintf("expect_events_count_atleast: the flow's turns wrote %d trace event(s), want at least %d", n, *lo))
	}
	if n, hi := r.sink.total-r.seeded, fx.ExpectEventsAtMost; hi != nil && n > *hi {
		sfails = append(sfails, fmt.Sprintf("expect_events_count_atmost: the flow's turns wrote %d trace event(s), want at most %d", n, *hi))
	}
	if fx.StrictCassetteCoverage && r.f.Cassette != nil {
		if rest := r.f.Cassette.Remaining(); len(rest) > 0 {
			sfails = append(sfails, fmt.Sprintf("unexpected remaining episodes: [%s]", strings.Join(rest, " ")))
		}
	}
	return sfails
}

func (fx *Fixture) hasSessionChecks() bool {
	if fx.ExpectTerminal || fx.ExpectNoErrors || fx.ExpectWorldFinal != nil || fx.ExpectNoHostCalls || fx.NoHostCallsOf != nil ||
		fx.StrictCassetteCoverage || fx.ExpectEventsAtLeast != nil || fx.ExpectEventsAtMost != nil {
		return true
	}
	for _, ts := range fx.Turns {
		for _, b := range append([]*TurnSpec{ts}, ts.Then...) {
			if b.ExpectWorldFinal != nil {
				return true
			}
		}
	}
	return false
}

// finish sets Passed and attaches events and the trace when asked.
func (f *Flow) finish(res *FlowResult, mem *trace.MemSink) *FlowResult {
	res.Passed = true
	for _, t := range res.Turns {
		if len(t.Failures) > 0 {
			res.Passed = false
		}
	}
	for i := range res.Turns {
		res.Turns[i].Passed = len(res.Turns[i].Failures) == 0
	}
	if f.cfg.keepTrace {
		res.Trace, res.Sidecars = mem.Bytes(), mem.Sidecars()
	}
	if f.cfg.keepEvents {
		evs, err := trace.Read(bytes.NewReader(mem.Bytes()))
		if err == nil {
			byTurn := map[int64][]trace.Event{}
			for _, ev := range evs {
				byTurn[ev.Turn] = append(byTurn[ev.Turn], ev)
			}
			// A fixture turn's events are its own trace turn's and those of
			// the background-job turns delivered after it.
			for i := range res.Turns {
				if t := &res.Turns[i]; t.TurnIndex >= 0 {
					for _, n := range t.traceTurns {
						t.Events = append(t.Events, byTurn[n]...)
					}
				}
			}
		}
	}
	return res
}

// acceptedSlots returns the slots of the turn's machine.intent_accepted
// event (defaults filled), or nil when the intent was not accepted.
func acceptedSlots(evs []capturedEvent) map[string]any {
	for _, ev := range evs {
		if p, ok := ev.typed.(trace.MachineIntentAccepted); ok {
			s := p.Slots
			if s == nil {
				s = map[string]any{}
			}
			return s
		}
	}
	return nil
}

// dispatched lists the host calls of a turn from its harness.dispatched
// events.
func dispatched(evs []capturedEvent, route func(string) string) []hostCall {
	var out []hostCall
	for _, ev := range evs {
		if p, ok := ev.typed.(trace.HarnessDispatched); ok {
			out = append(out, hostCall{Namespace: p.Namespace, Args: p.Args, Routed: route(p.Namespace)})
		}
	}
	return out
}

// routeInterface is the handler name an iface.<name>.<op> invoke is
// routed to in this flow: <handler>.<op>, where handler is the fixture's
// host_bindings entry for the interface, else the story's default; ""
// for any other name or an interface with neither.
func (f *Flow) routeInterface(name string) string {
	rest, ok := strings.CutPrefix(name, interfaceNamespace)
	if !ok {
		return ""
	}
	iface, op, _ := strings.Cut(rest, ".")
	handler := ""
	if in, ok := f.Story.Interfaces[iface]; ok && in != nil {
		handler = in.Default
	}
	for _, b := range f.Fixture.HostBindings {
		if b.Interface && b.Key == iface {
			handler = b.Handler
		}
	}
	if handler == "" {
		return ""
	}
	if op == "" {
		return handler
	}
	return handler + "." + op
}

// settle lets the session's background jobs settle and delivers what they
// did, then, when the turn has advance_clock:, moves the flow's clock and
// does it again.
func (f *Flow) settle(ctx context.Context, sess *orchestrator.Session, advance time.Duration) ([]*orchestrator.Outcome, error) {
	outs, err := sess.Settle(ctx)
	if err != nil {
		return nil, fmt.Errorf("background jobs: %w", err)
	}
	if advance <= 0 {
		return outs, nil
	}
	// The clock moves in steps, timer by timer, settling the jobs after
	// each: a job that a completion starts inside the span (an on_complete
	// target entering a state with another background invoke) runs on the
	// rest of the span, as it would on a real clock.
	end := f.clk.Now().Add(advance)
	for {
		step := end.Sub(f.clk.Now())
		if at, ok := f.clk.Next(); ok && at.Before(end) {
			step = at.Sub(f.clk.Now())
		}
		f.clk.Advance(step)
		more, err := sess.Settle(ctx)
		outs = append(outs, more...)
		if err != nil {
			return outs, fmt.Errorf("background jobs after advance_clock %s: %w", advance, err)
		}
		if !f.clk.Now().Before(end) {
			return outs, nil
		}
	}
}

// withJobs folds the job turns delivered after a user turn into its
// outcome: the state, view and done-ness are the last turn's; says and
// host errors add up; a fault in a job turn is the turn's error.
func withJobs(out *orchestrator.Outcome, jobOuts []*orchestrator.Outcome) *orchestrator.Outcome {
	if len(jobOuts) == 0 {
		return out
	}
	m := *out
	m.Says = slices.Clone(out.Says)
	m.HostErrors = slices.Clone(out.HostErrors)
	for _, j := range jobOuts {
		m.Says = append(m.Says, j.Says...)
		m.HostErrors = append(m.HostErrors, j.HostErrors...)
		m.Handled = append(m.Handled, j.Handled...)
		if j.Outcome == orchestrator.OutcomeError && m.Outcome != orchestrator.OutcomeError {
			m.Outcome, m.Err = orchestrator.OutcomeError, fmt.Errorf("background job %s: %w", j.Job, j.Err)
		}
	}
	last := jobOuts[len(jobOuts)-1]
	m.State, m.Done, m.Exit = last.State, last.Done, last.Exit
	if last.Outcome != orchestrator.OutcomeError {
		m.View = last.View
	}
	return &m
}

// traceTurns lists the trace turn numbers of evs, in order.
func traceTurns(evs []capturedEvent) []int64 {
	var out []int64
	for _, ev := range evs {
		if len(out) == 0 || out[len(out)-1] != ev.Turn {
			out = append(out, ev.Turn)
		}
	}
	return out
}

// renderSlots renders the {{ }} templates among a turn's slot values
// against the world as the turn finds it (job_id: "{{ world.last_job_id }}").
func renderSlots(slots map[string]any, world map[string]any) (map[string]any, error) {
	out := replay.CopyMap(slots)
	templated := false
	for _, v := range out {
		if src, ok := v.(string); ok && strings.Contains(src, "{{") {
			templated = true
			break
		}
	}
	if !templated {
		return out, nil
	}
	for _, k := range sortedKeys(out) {
		src, ok := out[k].(string)
		if !ok || !strings.Contains(src, "{{") {
			continue
		}
		v, err := expr.CompileValue(src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if out[k], err = v.Eval(expr.Env{"world": world}); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", k, src, err)
		}
	}
	return out, nil
}

// stubHandler answers a host_handlers entry.
type stubHandler struct {
	name string
	stub *Stub
	clk  clock.Clock
}

// Invoke answers from by_call (args.call), else by_op (args.op, or without
// one the rest of the invoke name under the stub's), else the stub's own
// envelope; an envelope replaces the whole answer.
func (s *stubHandler) Invoke(ctx context.Context, call *host.Call) (*host.Result, error) {
	env := s.envelope(call.Namespace, call.Args)
	delay := s.stub.Delay
	if env.HasDelay { // a by_call/by_op entry's own delay
		delay = env.Delay
	}
	if s.stub.Clarification != "" {
		// As a background job: ask, and wait (on the flow's clock) for the
		// answer a later turn gives with host.jobs.answer_clarification.
		if _, err := jobs.RequestClarification(ctx, jobs.Question{Prompt: s.stub.Clarification}); err != nil {
			return nil, fmt.Errorf("host_handlers.%s: %w", s.name, err)
		}
	}
	if jobs.InJob(ctx) {
		// A background job parks on the flow's clock: advance_clock wakes it.
		if err := jobs.Sleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("host_handlers.%s: delay %s: %w", s.name, delay, err)
		}
	} else if err := cassette.SleepOn(ctx, s.clk, delay, "host_handlers."+s.name); err != nil {
		return nil, err
	}
	if env.InfraError != "" {
		return nil, errors.New(env.InfraError)
	}
	res := &host.Result{KeptNoWorld: true} // a stub reads neither World nor Run
	if env.HasData {
		res.Data = replay.CopyMap(env.Data)
	}
	if env.Error != "" {
		res.Err = errors.New(env.Error)
	}
	return res, nil
}

func (s *stubHandler) envelope(namespace string, args map[string]any) Envelope {
	if id, ok := args["call"]; ok && id != nil {
		if e, ok := s.stub.ByCall[fmt.Sprint(id)]; ok {
			return e
		}
	}
	if op, ok := args["op"]; ok && op != nil {
		if e, ok := s.stub.ByOp[fmt.Sprint(op)]; ok {
			return e
		}
	} else if op, ok := strings.CutPrefix(namespace, s.name+"."); ok {
		// No op: arg: the op is the invoke name's rest under the stub
		// (host.chat.post answered by a host.chat stub is op post).
		if e, ok := s.stub.ByOp[op]; ok {
			return e
		}
	}
	return s.stub.Envelope
}

// DefaultFlowsGlob is where `kitsoki test flows` looks when --flows is not
// given: <app dir>/flows/*.yaml if that directory exists, else
// ./flows/*.yaml if that exists, else <app path without extension>-flows/*.yaml.
func DefaultFlowsGlob(appPath string) string {
	if d := filepath.Join(filepath.Dir(appPath), "flows"); isDir(d) {
		return filepath.Join(d, "*.yaml")
	}
	if isDir("flows") {
		return filepath.Join("flows", "*.yaml")
	}
	return strings.TrimSuffix(appPath, filepath.Ext(appPath)) + "-flows/*.yaml"
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// FixtureFiles finds the fixture files matching glob ("" = the default
// for appPath), sorted by name; appPath is returned as the story file it
// names (a story directory means its app.yaml).
func FixtureFiles(appPath, glob string) (files []string, app string, err error) {
	app = story.RootFile(appPath)
	if glob == "" {
		glob = DefaultFlowsGlob(app)
	}
	files, err = filepath.Glob(glob)
	if err != nil {
		return nil, app, fmt.Errorf("--flows %q: %w", glob, err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, app, fmt.Errorf("no flow fixtures match %q", glob)
	}
	return files, app, nil
}

// LoadFixtures finds the fixture files matching glob ("" = the default for
// appPath), sorted by name, and parses them; appPath is the story of the
// fixtures that name no app:.
func LoadFixtures(appPath, glob string) ([]*Fixture, error) {
	files, app, err := FixtureFiles(appPath, glob)
	if err != nil {
		return nil, err
	}
	var out []*Fixture
	for _, file := range files {
		fxs, err := ParseFixtureFile(file, app)
		if err != nil {
			return nil, err
		}
		out = append(out, fxs...)
	}
	return out, nil
}

// ParseFixtureFile reads and parses one fixture file; appPath is the
// story of the fixtures that name no app:.
func ParseFixtureFile(file, appPath string) ([]*Fixture, error) {
	b, err := cassette.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ParseFixtures(b, file, appPath)
}

// tick fires the timeouts due once a turn moved the clock; the turn's
// outcome then reports where they left the session (its rejection and host
// errors stay).
func tick(ctx context.Context, sess *orchestrator.Session, out *orchestrator.Outcome) (*orchestrator.Outcome, error) {
	fired, err := sess.Tick(ctx)
	if err != nil || fired == nil {
		return out, err
	}
	merged := *out
	merged.State, merged.View, merged.Done, merged.Exit = fired.State, fired.View, fired.Done, fired.Exit
	merged.Says = append(append([]string(nil), out.Says...), fired.Says...)
	merged.HostErrors = append(append([]error(nil), out.HostErrors...), fired.HostErrors...)
	if fired.Outcome == orchestrator.OutcomeError && out.Outcome != orchestrator.OutcomeError {
		merged.Outcome, merged.Err = fired.Outcome, fired.Err
	}
	return &merged, nil
}

// checkInitialState checks a fixture's initial_state: a state of the story,
// or a parallel configuration of it (story.Config's printed form).
func checkInitialState(fx *Fixture, st *story.Story) error {
	if _, ok := st.States[fx.InitialState]; ok {
		return nil
	}
	if c, err := story.ParseConfig(fx.InitialState); err == nil && c.IsParallel() {
		if _, err := story.CheckConfig(st, fx.InitialState); err != nil {
			return fmt.Errorf("%s: initial_state: %w", fx.Name, err)
		}
		return nil
	}
	return fmt.Errorf("%s: initial_state %q is not a state of %s (states: %s)",
		fx.Name, fx.InitialState, st.App.ID, strings.Join(sortedKeys(st.States), ", "))
}
