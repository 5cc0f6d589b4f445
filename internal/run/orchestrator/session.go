// Package orchestrator runs a story: one Session holds the world and the
// current state, takes turns (an intent plus slots), picks transitions, runs
// effects, queues and dispatches invokes through the host, binds their
// results, and writes every step to the trace.
package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/base/inbox"
	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/plugin"
)

// Sink is where a session writes its trace.
type Sink interface {
	host.Sink
	// EndTurn marks a turn boundary (the file writer fsyncs here).
	EndTurn() error
}

// Dispatcher is what a session dispatches its invokes through: the host
// (host.Host implements it). Each call carries the run environment the
// session lends it (host.Call.Run), so the dispatcher needs no reference
// back to the session.
type Dispatcher interface {
	Dispatch(ctx context.Context, call *host.Call) (*host.Result, error)
}

// Caps on loops the engine stops itself.
const (
	MaxEmitDepth    = 24 // nested emit_intent hops in one turn
	MaxPostBindPass = 8  // post-bind emit passes in one turn
	MaxOnErrorDepth = 4  // chained on_error redirects in one dispatch
)

// Session is one run of a story. It is not safe for concurrent use: turns
// are sequential by nature.
type Session struct {
	story  *story.Story
	host   Dispatcher
	sink   Sink
	clock  clock.Clock
	logger *slog.Logger

	id    string
	world map[string]any
	// worldLent is set while world is also held by someone the session
	// handed it to (a host call, a trace snapshot): the next write copies
	// the map first (setWorld), so what they hold never changes.
	worldLent bool
	state     string
	turn      int64
	root      string
	// cfg is state parsed (see config), kept while state is cfgText.
	cfg     *story.Config
	cfgText string

	overrides map[string]any
	// asGiven takes initial values and world overrides without checking
	// them against the declared types (WithWorldAsGiven).
	asGiven bool
	// nextOverride is the world override the next turn applies first
	// (OverrideWorld); nil for none.
	nextOverride map[string]any
	// execMode is the execution mode (ModeOneShot when "").
	execMode string
	// history is the room-history stack Back pops (History).
	history []string
	started bool

	timers   []timer             // armed timeouts of the active states
	over     *overlay            // the open off_path or meta mode, nil on the path
	kept     map[string]*overlay // closed persistent meta modes, by name
	operator Operator
	live     liveState
	journal  int // snapshot every this many turns; 0: no journal events (WithJournal)
	routing  RoutingConfig
	cache    *turnCache        // the turn cache, when the story keeps one
	ranker   Ranker            // the embedding tier's model (routing.embedding)
	ideProbe IDEProbe          // world.ide.connected's source (WithIDEProbe)
	stems    map[string]string // the words stemmed so far (semantic.go)

	jobs        *jobs.Scheduler
	inbox       *inbox.Inbox
	runningJobs map[string]*running // started jobs whose completion is not delivered yet
	openJobs    trace.OpenJobs      // the jobs not ended as this session's job events tell it (snapshots record it)
	jobsStarted int                 // background jobs this session started

	ev plugin.Event // the envelope emit hands the sink

	// routerSchemas are the router schemas compiled so far, by state and
	// schema text (routerSchema).
	routerSchemas map[string]*schema.Schema
}

// Option configures a Session.
type Option func(*Session)

// WithSessionID sets the session id (AskRequest.session_id, run.id).
func WithSessionID(id string) Option { return func(s *Session) { s.id = id } }

// WithWorld overrides world values at start (after defaults).
func WithWorld(kv map[string]any) Option { return func(s *Session) { s.overrides = kv } }

// WithWorldAsGiven takes the WithWorld values and later OverrideWorld
// values as given, without checking them against the declared types: they
// are a test fixture's seed, whose misfits the caller reports (WorldMisfits)
// as warnings. A story's own world: defaults are checked at load either way.
func WithWorldAsGiven() Option { return func(s *Session) { s.asGiven = true } }

// WithRoot starts the session in another state than the story's root.
func WithRoot(state string) Option { return func(s *Session) { s.root = state } }

// WithClock sets the clock.
func WithClock(c clock.Clock) Option { return func(s *Session) { s.clock = c } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Session) { s.logger = l } }

// New returns a session for st that dispatches through h and traces to sink.
// Call Start before the first Turn.
func New(st *story.Story, h Dispatcher, sink Sink, opts ...Option) (*Session, error) {
	s := &Session{story: st, host: storableDispatcher{next: h}, sink: sink, clock: clock.System{}, logger: slog.Default(), root: st.Root}
	for _, o := range opts {
		o(s)
	}
	if s.jobs == nil {
		s.jobs = jobs.New(s.clock)
	}
	if s.inbox == nil {
		s.inbox = inbox.New()
	}
	if st.Routing.Cache.Enabled {
		s.cache = newTurnCache(st.Routing.Cache)
	}
	if _, ok := st.States[s.root]; !ok {
		if c, err := story.ParseConfig(s.root); err == nil && !c.IsParallel() {
			return nil, fmt.Errorf("root state %q does not exist (states: %s)", s.root, strings.Join(sortedKeys(st.States), ", "))
		}
		if err := checkConfig(st, s.root); err != nil {
			return nil, err
		}
	}
	if err := CheckExecMode(s.execMode); err != nil {
		return nil, err
	}
	if !s.asGiven {
		if err := CheckWorld(st, s.overrides); err != nil {
			return nil, err
		}
	}
	s.world = InitialWorld(st)
	for k, v := range s.overrides {
		s.setWorld(k, v)
	}
	return s, nil
}

// CheckWorld checks initial world values (WithWorld: a flow's initial_world,
// the world an MCP client starts a session with) against the declared
// types, and names the first, by key, that does not fit. Undeclared keys are
// left to the caller.
func CheckWorld(st *story.Story, kv map[string]any) error {
	if m := WorldMisfits(st, kv); len(m) > 0 {
		return errors.New(m[0])
	}
	return nil
}

// WorldMisfits lists, by key, the initial world values that do not fit
// their declared types, one message each ("world key "k" is declared
// string; the initial value [1] is not a string"). Undeclared keys are
// left to the caller.
func WorldMisfits(st *story.Story, kv map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		for _, wv := range st.World {
			if wv.Name == k && !wv.Fits(kv[k]) {
				out = append(out, fmt.Sprintf("world key %q is declared %s; the initial value %s is not %s", k, wv.Type, showValue(kv[k]), wv.Takes()))
			}
		}
	}
	return out
}

// showValue renders a value for a message: strings quoted, the rest as
// compact JSON.
func showValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// InitialWorld returns the world a session starts with: declared defaults
// (deep-copied) plus the seeded keys.
func InitialWorld(st *story.Story) map[string]any {
	w := make(map[string]any, len(st.World)+4)
	for _, v := range st.World {
		if v.HasDefault {
			w[v.Name] = DeepCopy(v.Default)
		}
	}
	seed := map[string]any{"session_cost_usd": 0.0, "turn_cost_usd": 0.0, "last_error": "", "write_mode_scope": "", "session_id": ""}
	for k, v := range seed {
		if _, ok := w[k]; !ok {
			w[k] = v
		}
	}
	return w
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// State returns the current state path.
func (s *Session) State() string { return s.state }

// Turn returns the number of the last turn taken (0 before any).
func (s *Session) TurnNumber() int64 { return s.turn }

// World returns the live world. Callers must not modify it, and a write
// the session makes later may go to a new map: read it again after a turn.
func (s *Session) World() map[string]any { return s.world }

// Story returns the story the session runs.
func (s *Session) Story() *story.Story { return s.story }

// Done reports whether the session reached a terminal state, and the exit
// name when that state is an @exit: target.
func (s *Session) Done() (done bool, exit string) {
	if c := s.config(); c.IsParallel() {
		// A parallel state is done when every region rests in a terminal
		// leaf, or in a nested parallel state that is done.
		return s.isDone(c), ""
	}
	st := s.story.States[s.state]
	if st == nil || !st.Terminal {
		return false, ""
	}
	return true, st.Exit
}

// Start runs turn 0: the initial entry into the root state (its on_enter,
// emits, calls and post-bind passes). Its outcome carries the view.
func (s *Session) Start(ctx context.Context) (*Outcome, error) {
	if s.started {
		return nil, fmt.Errorf("session already started")
	}
	s.started = true
	t := s.newTurn(0, "__seed__", nil)
	if err := s.emit(t, trace.MachineTransition{From: "", To: s.root, Intent: "__seed__"}); err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(s.overrides) {
		if err := s.emit(t, trace.WorldUpdate{Set: map[string]any{k: s.overrides[k]}}); err != nil {
			return nil, err
		}
	}
	if err := s.seedRuntimeWorld(ctx, t); err != nil {
		return nil, err
	}
	out, err := s.runTurn(ctx, t, func() error {
		_, err := s.enterPath(t, "", s.root)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, s.endTurn(t)
}

// emit appends one event of the current turn at the current state.
func (s *Session) emit(t *turnCtx, p trace.Payload) error {
	s.ev = plugin.Event{Turn: t.n, StatePath: s.state} // reused: sinks copy what they keep (host.Sink)
	if err := s.sink.AppendPayload(&s.ev, p); err != nil {
		return &host.TraceError{Err: err}
	}
	return nil
}

// env builds the expression scope for the current turn.
// The event and run maps are built once per turn and kept while the
// turn's intent, its slots map and the session id stay the same
// (turnScope); expressions only read them.
func (s *Session) env(t *turnCtx) expr.Env {
	sc := &t.scope
	if sc.run == nil || sc.id != s.id || sc.n != t.n {
		sc.run, sc.id, sc.n = map[string]any{"id": s.id, "turn": t.n}, s.id, t.n
	}
	if sc.event == nil || sc.intent != t.intent || !sameMap(sc.slots, t.slots) {
		sc.event, sc.intent, sc.slots = map[string]any{"intent": t.intent, "slots": t.slots}, t.intent, t.slots
	}
	return expr.Env{
		"world": s.world,
		"slots": t.slots,
		"event": sc.event,
		"run":   sc.run,
	}
}

// turnScope keeps the event and run maps of a turn's expression scope
// with what they were built from.
type turnScope struct {
	run    map[string]any
	id     string
	n      int64
	event  map[string]any
	intent string
	slots  map[string]any
}

// sameMap reports whether a and b are the same map (or both nil).
func sameMap(a, b map[string]any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// stateEnv is the text-template scope (view, say): it adds the state.
func (s *Session) stateEnv(t *turnCtx) expr.Env {
	env := s.env(t)
	desc := ""
	if st := s.focus(); st != nil {
		desc = st.Description
	}
	env["state"] = map[string]any{"path": s.state, "description": desc}
	if s.story.UsesMenu {
		env["menu"] = expr.Menu(s.Menu())
	}
	return env
}

// View renders the current state's view ("" when it has none).
func (s *Session) View() (string, error) {
	if !s.inParallel() {
		return s.viewOf(s.viewHolder(s.state, ""))
	}
	vs := s.viewStates()
	var parts []string
	for _, st := range vs {
		text, err := s.viewOf(st)
		if err != nil {
			return "", err
		}
		if text != "" {
			parts = append(parts, text)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// viewOf renders one state's view ("" when it has none).
func (s *Session) viewOf(st *story.State) (string, error) {
	switch {
	case st == nil:
		return "", nil
	case st.View != nil:
		return st.View.Render(s.stateEnv(&turnCtx{n: s.turn}))
	case st.ViewDoc != nil:
		return viewText(st.ViewDoc, s.stateEnv(&turnCtx{n: s.turn}))
	}
	return "", nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DeepCopy copies maps and lists recursively, so a world value can be handed
// out or seeded without sharing its insides.
func DeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = DeepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = DeepCopy(e)
		}
		return l
	}
	return v
}

// lendWorld returns the world for a host call or a trace event to keep
// without copying it: the map is marked lent, and the session's next write
// copies it first, so the holder's map never changes. A turn that
// dispatches several calls with no write between them hands out one map.
func (s *Session) lendWorld() map[string]any {
	s.worldLent = true
	return s.world
}

// setWorld writes world key k. A lent map is copied first (one shallow
// copy, as each dispatch made before copy-on-write).
func (s *Session) setWorld(k string, v any) {
	if s.worldLent {
		s.world = maps.Clone(s.world)
		s.worldLent = false
	}
	s.world[k] = v
}
