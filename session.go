package kitsoki

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// DefaultSessionID is the session id of a session opened without
// WithSessionID.
const DefaultSessionID = "session"

// Session is one run of a story, made by Open (the zero value is not
// usable). Its methods may be called from several goroutines; turns are
// taken one at a time.
type Session struct {
	mu sync.Mutex
	rt *run
	// remote is a session on a cluster (Resume with WithCluster); rt is
	// then nil.
	remote  *remoteRun
	started bool
	closed  bool
}

// Open loads the story at path (its app.yaml) and prepares a session:
// agents, host handlers, trace. Nothing runs until Start. A story that
// does not load fails with the same file:line:col message `kitsoki run`
// prints (exit code 2 there), and so does one that invokes a handler
// nothing provides: a WithHandler name and the handlers a WithCassette
// cassette has episodes for count as provided. An option the story cannot use (an
// undeclared agent alias, a handler name nothing invokes, an undeclared
// world key) fails naming the option.
//
// With WithKey or WithSessionsDir the session is durable: it is kept in
// a sessions directory (its journal and index entry), this process holds
// its writer lock until Close, and Resume picks it up later, in this
// process or another.
func Open(path string, opts ...Option) (*Session, error) {
	cfg := newConfig(opts)
	st, err := story.Load(path, cfg.storyOptions()...)
	if err != nil {
		return nil, err
	}
	var plan *driver.Plan
	if cfg.durable() {
		if cfg.traceFile != "" {
			st.Close()
			return nil, errors.New("kitsoki.WithTraceFile: a durable session (WithKey, WithSessionsDir) keeps its journal in the sessions directory; drop one of them")
		}
		id := cfg.sessionID
		if id == DefaultSessionID {
			id = "" // generated
		}
		plan, err = driver.NewPlan(context.Background(), driver.PlanRequest{Store: cfg.store(st.Workspace.Dir()), Story: st, ID: id,
			Key: cfg.key, World: cfg.world, Root: cfg.root, Mode: driver.PlanNew, Quiet: true})
		if err != nil {
			st.Close()
			return nil, publicSessionErr(err)
		}
	}
	rt, err := wire(st, cfg, plan)
	if err != nil {
		if plan != nil && cfg.key != "" {
			_ = cfg.store(st.Workspace.Dir()).UnbindKey(cfg.key, plan.ID())
		}
		st.Close()
		return nil, err
	}
	return &Session{rt: rt}, nil
}

// Resume picks up the durable session ref names (its key,
// transport:thread, or its id) in the sessions directory (WithSessionsDir,
// else $KITSOKI_SESSIONS_DIR, else .kitsoki/sessions in the workspace of
// the working directory) where its journal stopped: a turn a crash left
// unfinished is taken again, with the answers of the calls that had
// returned. The session is started; go on with Turn, Do or Say. The
// options give the agents and handlers, as to Open; the session keeps its
// id, key, world and root. A session another process holds is a
// *BusyError. A story changed since the session started is replayed
// against the journal: one that decides differently is refused, or with
// WithFork continued in a new session forked from the last turn that
// matched. With WithCluster the session is found on a Temporal cluster
// instead (WithCluster says which options apply).
func Resume(ctx context.Context, ref string, opts ...Option) (*Session, error) {
	cfg := newConfig(opts)
	if cfg.cluster != nil {
		return resumeOnCluster(ctx, ref, cfg)
	}
	store, err := cfg.resumeStore()
	if err != nil {
		return nil, err
	}
	m, err := store.Find(ref)
	if err != nil {
		return nil, fmt.Errorf("kitsoki.Resume: %w", err)
	}
	st, err := story.Load(m.Story, cfg.storyOptions()...)
	if err != nil {
		return nil, err
	}
	plan, err := driver.NewPlan(ctx, driver.PlanRequest{Store: store, Story: st, ID: m.ID, Fork: cfg.fork, Mode: driver.PlanExisting, Quiet: true})
	if err != nil {
		st.Close()
		return nil, publicSessionErr(err)
	}
	cfg.world, cfg.root = nil, "" // the journal's
	rt, err := wire(st, cfg, plan)
	if err != nil {
		st.Close()
		return nil, err
	}
	s := &Session{rt: rt, started: true}
	if _, err := rt.d.Begin(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// publicSessionErr gives a busy session its public error type; other
// errors keep their text.
func publicSessionErr(err error) error {
	if be, ok := errors.AsType[*session.BusyError](err); ok {
		return &BusyError{ID: be.ID}
	}
	if ee, ok := errors.AsType[*driver.ExitError](err); ok {
		return ee.Err
	}
	return err
}

// Start runs turn 0: the entry into the root state (its on_enter, calls,
// emits). Call it once, before the first Turn. Its outcome and error are a
// turn's.
func (s *Session) Start(ctx context.Context) (*Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	if s.started {
		return nil, errors.New("kitsoki: session already started")
	}
	s.started = true
	out, err := s.rt.d.Begin(ctx)
	return s.outcome(out, err)
}

// Turn takes one turn: intent with its slots (typed values: strings,
// numbers, bools, lists, maps). A refused intent, a fault, a failed call
// no on_error handles and a cassette miss are returned as errors (see the
// package doc) together with the outcome; an error with a nil outcome
// means the turn could not run or its trace could not be written.
func (s *Session) Turn(ctx context.Context, intent string, slots map[string]any) (*Outcome, error) {
	return s.take(ctx, driver.Intent(intent, slots))
}

// Do takes one turn from a typed intent line: the intent name, then
// key=value slots ("greet name=Ada style=formal"; quote a value with
// spaces), as `kitsoki run` reads a typed line. Slot values are typed by the
// intent's declaration. Free text, which `kitsoki run` routes to an
// intent, goes through Say; Do reads every line as typed (a lone unknown
// word is INTENT_NOT_ALLOWED_IN_STATE). A line that does not parse is an error and
// takes no turn.
func (s *Session) Do(ctx context.Context, line string) (*Outcome, error) {
	return s.take(ctx, driver.Line(line))
}

// take takes one input through the session's driver.
func (s *Session) take(ctx context.Context, in driver.Input) (*Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(); err != nil {
		return nil, err
	}
	out, err := s.driver().Take(ctx, in)
	if ie, ok := errors.AsType[*driver.InputError](err); ok {
		return nil, fmt.Errorf("kitsoki: %w", ie.Err)
	}
	if err == nil {
		err = s.afterTurn(ctx)
	}
	return s.outcome(out, err)
}

// Say takes one free-text turn: text is routed to one of the current
// state's intents by the tiers `kitsoki run` uses (exact match; synonyms
// and slot templates with WithSemanticRouting or the story's
// routing.enabled; the state's default_intent; then the router agent), and
// the intent it resolved to is taken with the same validation as a typed
// one. The outcome's Route says how it routed. Text nothing routes
// confidently is a *Rejection with code NO_MATCH; a failed router call
// is a *Rejection ROUTER_FAILED joined with the router's *CallError.
func (s *Session) Say(ctx context.Context, text string) (*Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(); err != nil {
		return nil, err
	}
	out, err := s.driver().Take(ctx, driver.Text(text))
	if err == nil {
		err = s.afterTurn(ctx)
	}
	o, oerr := s.outcome(out, err)
	if o != nil && out.Route != nil {
		r := out.Route
		o.Route = &Route{Tier: r.Tier, Intent: r.Intent, Slots: deepCopyMap(r.Slots), Confidence: r.Confidence}
	}
	return o, oerr
}

// Settle waits until every background job of the session is finished,
// parked on the clock or waiting for an answer, and delivers what they
// did, one outcome per job turn (a question asked, a job ended). Turn
// delivers what has ended on its own; Settle is for a caller that waits
// for its jobs. The error joins the job turns' errors, as Turn's does.
func (s *Session) Settle(ctx context.Context) ([]*Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(); err != nil {
		return nil, err
	}
	outs, err := s.driver().Settle(ctx)
	var res []*Outcome
	var errs []error
	for _, out := range outs {
		o, oerr := s.outcome(out, nil)
		res = append(res, o)
		errs = append(errs, oerr)
	}
	return res, errors.Join(append(errs, err)...)
}

func (s *Session) usable() error {
	if s.closed {
		return errors.New("kitsoki: session is closed")
	}
	return nil
}

// ready is usable and started: what a turn needs.
func (s *Session) ready() error {
	if err := s.usable(); err != nil {
		return err
	}
	if !s.started {
		return errors.New("kitsoki: session not started: call Start first")
	}
	return nil
}

// outcome converts the orchestrator's outcome and collects the turn's
// errors and the cassette's warnings and misses.
func (s *Session) outcome(out *orchestrator.Outcome, err error) (*Outcome, error) {
	if err != nil {
		return nil, err
	}
	o := &Outcome{From: out.From, State: out.State, View: out.View, Says: out.Says, Done: out.Done, Exit: out.Exit, Job: out.Job}
	var errs []error
	for _, b := range out.Background {
		bo, berr := s.outcome(b, nil)
		o.Background = append(o.Background, bo)
		errs = append(errs, berr)
	}
	switch out.Outcome {
	case orchestrator.OutcomeRejected:
		r := out.Rejection
		errs = append(errs, &Rejection{Code: r.Code, Message: r.Message, MissingSlots: r.MissingSlots,
			Suggestions: r.Suggestions, AllowedIntents: r.AllowedIntents, GuardHint: r.GuardHint})
	case orchestrator.OutcomeError:
		errs = append(errs, &FaultError{Err: out.Err})
	}
	for _, h := range out.Handled {
		o.Handled = append(o.Handled, HandledError{Invoke: h.Namespace, ID: h.Call, CallID: h.CallID, Err: publicErr(h.Err), OnError: h.OnError})
	}
	for _, e := range out.HostErrors {
		errs = append(errs, callError(e))
	}
	if s.rt == nil {
		return o, errors.Join(errs...)
	}
	if c := s.rt.cassette; c != nil {
		o.Warnings = c.TakeWarnings()
		if misses := c.TakeMisses(); len(misses) > 0 {
			errs = append(errs, &ReplayMissError{Cassette: c.Path, Misses: misses})
		}
	}
	return o, errors.Join(errs...)
}

// callError turns an unhandled call failure ("<invoke>: <failure>", as
// the orchestrator wraps it) into a *CallError with the same text.
func callError(err error) error {
	inner := errors.Unwrap(err)
	if inner == nil {
		return err
	}
	msg, cause := err.Error(), inner.Error()
	if len(msg) <= len(cause)+2 || msg[len(msg)-len(cause)-2:] != ": "+cause {
		return err
	}
	return &CallError{Invoke: msg[:len(msg)-len(cause)-2], Err: publicErr(inner)}
}

// publicErr gives an agent failure its public type, with the same text.
func publicErr(err error) error {
	if ae, ok := agent.AsAskError(err); ok {
		detail := ae.Detail
		if detail == "" && ae.Err != nil {
			detail = ae.Err.Error()
		}
		return &AgentError{Kind: ErrorKind(ae.Kind), Detail: detail}
	}
	return err
}

// View renders the current state's view, as after a turn.
func (s *Session) View() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.remote; r != nil {
		return r.st.View, r.st.ViewErr
	}
	return s.rt.sess.View()
}

// World returns a copy of the world: changing it changes nothing.
func (s *Session) World() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.remote; r != nil {
		return deepCopyMap(r.st.World)
	}
	return deepCopyMap(s.rt.sess.World())
}

// State returns the current state path ("" before Start).
func (s *Session) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.remote; r != nil {
		return r.st.State
	}
	return s.rt.sess.State()
}

// Allowed lists, sorted, the intents the current state (or an ancestor)
// accepts.
func (s *Session) Allowed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.remote; r != nil {
		return intentNames(r.st.Intents)
	}
	return s.rt.sess.AllowedIntents()
}

// Done reports whether the session is in a terminal state, and the exit's
// name when that state is an @exit: target.
func (s *Session) Done() (done bool, exit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.remote; r != nil {
		return r.st.Done, r.st.Exit
	}
	return s.rt.sess.Done()
}

// ID returns the session id.
func (s *Session) ID() string {
	if s.remote != nil {
		return s.remote.d.ID()
	}
	return s.rt.sess.ID()
}

// Key returns the key a durable session was created under (WithKey), ""
// for one without.
func (s *Session) Key() string {
	if s.remote != nil {
		return s.remote.d.Key()
	}
	if p := s.rt.d.Plan(); p != nil {
		return p.Meta().Key
	}
	return ""
}

// Warnings are what Open found but did not refuse: the story's load
// warnings and the selection: pins that cannot be honoured (`kitsoki run`
// prints each as "warning: ...").
func (s *Session) Warnings() []string {
	if s.remote != nil {
		return nil
	}
	return append([]string(nil), s.rt.warnings...)
}

// Trace returns the JSONL trace written so far (the file's bytes with
// WithTraceFile), secrets masked. A session on a cluster reads it from
// there.
func (s *Session) Trace() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.remote != nil {
		// The trace is on the cluster: read it with the client's own
		// deadlines (Trace takes no context).
		return s.remote.d.Trace(context.Background())
	}
	if s.rt.mem != nil {
		return s.rt.mem.Bytes(), nil
	}
	return os.ReadFile(s.rt.file)
}

// Events returns the trace's events so far, decoded as `kitsoki trace`
// reads them (payload numbers as json.Number).
func (s *Session) Events() ([]Event, error) {
	b, err := s.Trace()
	if err != nil {
		return nil, err
	}
	return trace.Read(bytes.NewReader(b))
}

// Close stops the agents (and the processes they started), closes the
// trace and releases the story. It is safe to call more than once.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.remote != nil {
		return s.remote.d.Close()
	}
	return errors.Join(s.rt.close(), s.rt.story.Close())
}
