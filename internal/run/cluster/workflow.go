package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
)

// Names the workflow, its update and its queries are registered under.
const (
	SessionWorkflowName = "kitsoki.session"
	IntentUpdate        = "intent"
	QueryState          = "state"
	QueryWorld          = "world"
	QueryView           = "view"
	QueryAllowed        = "allowed_intents"
	QueryTrace          = "trace"
)

// NoHistoryError is the application error type of a back update on a
// session whose room history is empty (orchestrator.ErrNoHistory's text).
const NoHistoryError = "NO_HISTORY"

// DefaultContinueAsNewAfter is how many turns a run of the session
// workflow takes before it continues as new (SessionInput.ContinueAsNewAfter
// 0).
const DefaultContinueAsNewAfter = 200

// SessionInput starts (or continues) a session workflow.
type SessionInput struct {
	Story     StoryRef `json:"story"`
	SessionID string   `json:"session_id"`
	// World overrides the declared defaults at start.
	World Value  `json:"world"`
	Root  string `json:"root,omitempty"`
	// ContinueAsNewAfter is the turns a run takes before it continues as
	// new; 0 is DefaultContinueAsNewAfter.
	ContinueAsNewAfter int `json:"continue_as_new_after,omitempty"`
	// HeartbeatTimeout is the heartbeat timeout of the session's calls
	// (a dead worker's call is issued again after it); 0 is the worker's
	// Workflow.HeartbeatTimeout.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// Carried is the session a previous run handed over; nil starts it.
	Carried *Snapshot `json:"carried,omitempty"`
	// Routing is how the session routes free text (kitsoki run's
	// --router, --min-confidence, --semantic-routing); nil is the
	// story's routing: block and the defaults.
	Routing *orchestrator.RoutingConfig `json:"routing,omitempty"`
	// Fork names the session and turn this one was forked from (nil for
	// a session that was not); its trace's header says so.
	Fork *ForkOrigin `json:"fork,omitempty"`
	// Audit is the record of the call that created the session (an MCP
	// tool call), written into its trace after turn 0; nil writes none.
	// A continue-as-new does not carry it.
	Audit *Audit `json:"audit,omitempty"`
}

// Snapshot is what a continue-as-new carries: the story hash is the
// input's.
type Snapshot struct {
	State string `json:"state"`
	World Value  `json:"world"`
	Turn  int64  `json:"turn"`
	// Timeouts are the armed state timeouts, due on the workflow clock.
	Timeouts []orchestrator.ArmedTimeout `json:"timeouts,omitempty"`
	// The room history and the open and kept overlays.
	orchestrator.Handover
}

// IntentRequest is the intent update's argument.
type IntentRequest struct {
	Intent string `json:"intent"`
	Slots  Value  `json:"slots"`
	Input  string `json:"input,omitempty"`
	// Back returns to the previous room (a local run's :back,
	// Session.Back); Intent, Slots and Input are then empty.
	Back bool `json:"back,omitempty"`
	// Audit is the record of the call that sent the input (an MCP tool
	// call), written into the trace before the turn; nil writes none.
	Audit *Audit `json:"audit,omitempty"`
}

// TurnResult is a turn's outcome as the update returns it.
type TurnResult struct {
	Outcome    string                  `json:"outcome"`
	From       string                  `json:"from,omitempty"`
	State      string                  `json:"state"`
	View       string                  `json:"view,omitempty"`
	Says       []string                `json:"says,omitempty"`
	Rejection  *orchestrator.Rejection `json:"rejection,omitempty"`
	Error      string                  `json:"error,omitempty"`
	HostErrors []string                `json:"host_errors,omitempty"`
	Handled    []HandledCall           `json:"handled,omitempty"`
	Done       bool                    `json:"done,omitempty"`
	Exit       string                  `json:"exit,omitempty"`
	Turn       int64                   `json:"turn"`
}

// SessionResult is the workflow's result once the session reached a
// terminal state.
type SessionResult struct {
	State string `json:"state"`
	World Value  `json:"world"`
	Turn  int64  `json:"turn"`
	Exit  string `json:"exit,omitempty"`
}

// Workflow is the session workflow's dependencies on a worker.
type Workflow struct {
	// Stories loads the pinned story (the same directory the activities
	// read).
	Stories *Stories
	// CallTimeout is the hard deadline of a call that sets no
	// with.timeout; 0 is host.DefaultTimeout.
	CallTimeout time.Duration
	// HeartbeatTimeout is the heartbeat timeout of the calls of a session
	// whose input sets none; 0 is DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration
	// LostCallAttempts is how many times a call lost with its worker is
	// issued in all; 0 is DefaultLostCallAttempts.
	LostCallAttempts int
}

// Session is the kitsoki.session workflow: one story session, its turns
// taken one at a time from intent updates, every call an activity.
func (w *Workflow) Session(ctx workflow.Context, in SessionInput) (*SessionResult, error) {
	st, err := w.loadStory(ctx, in)
	if err != nil {
		return nil, err
	}
	r := &sessionRun{ctx: ctx, cur: ctx, in: in, after: continueAsNewAfter(in)}
	rt, err := w.openRuntime(r, st)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	r.sess = rt.Session()
	if err := r.register(); err != nil {
		return nil, err
	}
	if err := r.begin(); err != nil {
		return nil, err
	}
	return r.serve()
}

// sessionRun is one run of the session workflow. It holds the session and
// the state that the update handlers and the main loop share. Workflow
// coroutines run one at a time, so the fields need no lock.
type sessionRun struct {
	ctx workflow.Context // the workflow's main coroutine
	// cur is the coroutine taking the turn: the main loop or an update
	// handler. The trace clock and the dispatcher read it.
	cur   workflow.Context
	in    SessionInput
	after int // the turns this run takes before it continues as new
	sess  *orchestrator.Session
	sink  *trace.MemSink
	// started is set once the session has started or been restored; busy
	// while a turn runs.
	started, busy bool
	turns         int         // the turns this run took
	fault         error       // a turn's failure, which fails the workflow
	last          *TurnResult // the latest turn's result, for the status query
}

// loadStory loads the pinned story and refuses one a workflow cannot run.
func (w *Workflow) loadStory(ctx workflow.Context, in SessionInput) (*story.Story, error) {
	st, err := w.Stories.Load(in.Story)
	if err != nil {
		if workflow.IsReplaying(ctx) || in.Carried != nil {
			// A running session whose story this worker cannot read now
			// (a blob store it does not share, a bundle lost from it): the
			// workflow task fails and is retried, on any worker, until one
			// can; the session is not failed.
			panic(fmt.Sprintf("session %s: %v", in.SessionID, err))
		}
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "kitsoki.story", nil)
	}
	if err := checkWorkflowStory(st); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "kitsoki.story", nil)
	}
	return st, nil
}

// continueAsNewAfter is the input's turns before continuing as new, or
// the default when it sets none.
func continueAsNewAfter(in SessionInput) int {
	if in.ContinueAsNewAfter <= 0 {
		return DefaultContinueAsNewAfter
	}
	return in.ContinueAsNewAfter
}

// openRuntime opens the run's session through the composition root. Its
// trace reads the workflow clock, and its calls are activities.
func (w *Workflow) openRuntime(r *sessionRun, st *story.Story) (*runtime.Runtime, error) {
	in := r.in
	timeout := w.CallTimeout
	if timeout == 0 {
		timeout = host.DefaultTimeout
	}
	clk := workflowClock{cur: &r.cur}
	r.sink = trace.NewMemSink(trace.WithSecrets(st.Secrets), trace.WithClock(clk), trace.WithHeader(traceHeader(in, st)))
	d := &activityDispatcher{cur: &r.cur, stories: w.Stories, ref: in.Story, sink: r.sink, timeout: timeout,
		heartbeat:    cmp.Or(in.HeartbeatTimeout, w.HeartbeatTimeout, DefaultHeartbeatTimeout),
		lostAttempts: cmp.Or(w.LostCallAttempts, DefaultLostCallAttempts)}
	rt, err := runtime.Open(st, runtime.Config{Clock: clk, IgnorePins: true, Timeout: timeout,
		Trace: runtime.Trace{Sink: r.sink},
		// Journal: the trace holds the decisions and snapshots a local
		// run's durable session writes, so the two traces match.
		Session: &runtime.Session{ID: in.SessionID, World: in.World.Map(), Root: in.Root, Dispatcher: d, Journal: true, Routing: routing(in)}})
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("open session %s: %v", in.SessionID, err), "kitsoki.open", nil)
	}
	return rt, nil
}

// ready reports whether an update may take its turn: the session has
// started and no other turn runs.
func (r *sessionRun) ready() bool { return r.started && !r.busy }

// register sets the queries and the updates the session answers.
func (r *sessionRun) register() error {
	if err := registerQueries(r.ctx, r.sess, r.sink); err != nil {
		return err
	}
	v := sessionView{ctx: r.ctx, in: &r.in, sess: r.sess, sink: r.sink, started: &r.started, last: &r.last}
	if err := registerStatus(r.ctx, v, r.ready); err != nil {
		return err
	}
	if err := r.registerAudit(); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(r.ctx, IntentUpdate, r.intent,
		workflow.UpdateHandlerOptions{Validator: r.validateIntent})
}

// intent is the intent update's handler: it takes the request as a turn
// once no other turn runs.
func (r *sessionRun) intent(uctx workflow.Context, req IntentRequest) (*TurnResult, error) {
	if err := workflow.Await(uctx, r.ready); err != nil {
		return nil, err
	}
	r.busy, r.cur = true, uctx
	defer func() { r.busy, r.cur = false, r.ctx }()
	r.audit(req.Audit)
	out, err := takeTurn(r.sess, req)
	if errors.Is(err, orchestrator.ErrNoHistory) {
		// A back queued behind a turn that emptied the history:
		// refused as the validator refuses it, no turn traced.
		return nil, temporal.NewApplicationError(err.Error(), NoHistoryError)
	}
	if err != nil {
		r.fault = err
		return nil, err
	}
	r.turns++
	r.last = turnResult(out, r.sess.TurnNumber())
	return r.last, nil
}

// validateIntent refuses an intent update before it enters the history:
// on a finished session, a back with no history, or an intent the state
// does not allow.
func (r *sessionRun) validateIntent(req IntentRequest) error {
	if done, _ := r.sess.Done(); done {
		return fmt.Errorf("the session is in its terminal state %q: it takes no more intents", r.sess.State())
	}
	if !r.started || r.busy || freeText(req) {
		return nil // checked by the turn itself, in order (free text: once routed)
	}
	if req.Back {
		if len(r.sess.History()) == 0 {
			return temporal.NewApplicationError(orchestrator.ErrNoHistory.Error(), NoHistoryError)
		}
		return nil
	}
	if rej := r.sess.Check(req.Intent, req.Slots.Map()); rej != nil {
		return temporal.NewApplicationError(rej.Error(), rej.Code, rej)
	}
	return nil
}

// begin restores the session a previous run carried, or starts it.
func (r *sessionRun) begin() error {
	if c := r.in.Carried; c != nil {
		if err := restore(r.sess, c); err != nil {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("continue session %s: %v", r.in.SessionID, err), "kitsoki.restore", nil)
		}
	} else if out, err := r.sess.Start(context.Background()); err != nil {
		return err
	} else {
		r.last = turnResult(out, r.sess.TurnNumber())
		r.audit(r.in.Audit)
	}
	r.started = true
	return nil
}

// tick takes the timeouts due on the workflow clock as their own turns,
// in the main coroutine, once no update's turn runs.
func (r *sessionRun) tick() error {
	if err := workflow.Await(r.ctx, func() bool { return !r.busy }); err != nil {
		return err
	}
	r.busy, r.cur = true, r.ctx
	defer func() { r.busy = false }()
	before := r.sess.TurnNumber()
	if _, err := r.sess.Tick(context.Background()); err != nil {
		r.fault = err
	}
	r.turns += int(r.sess.TurnNumber() - before)
	return nil
}

// stopping reports whether the main loop should decide the run's end: a
// turn failed, or no turn runs and the session is done or has taken its
// turns for this run.
func (r *sessionRun) stopping() bool {
	done, _ := r.sess.Done()
	return r.fault != nil || (!r.busy && (done || r.turns >= r.after))
}

// serve takes the due timeouts until the run ends. It returns the result
// of a finished session, or continues as new after the run's turns.
func (r *sessionRun) serve() (*SessionResult, error) {
	for {
		if err := awaitFiringTimeouts(r.ctx, r.sess, r.stopping, r.tick); err != nil {
			return nil, err
		}
		if r.fault != nil {
			return nil, r.fault
		}
		// Updates accepted before the decision finish first.
		if err := workflow.Await(r.ctx, func() bool { return workflow.AllHandlersFinished(r.ctx) }); err != nil {
			return nil, err
		}
		if r.busy {
			continue
		}
		if done, exit := r.sess.Done(); done {
			return &SessionResult{State: r.sess.State(), World: Value{orchestrator.DeepCopy(r.sess.World())}, Turn: r.sess.TurnNumber(), Exit: exit}, nil
		}
		return nil, r.continueAsNew()
	}
}

// continueAsNew is the error that hands the session to the next run: its
// state, world, turn, armed timeouts and room history.
func (r *sessionRun) continueAsNew() error {
	next := r.in
	next.World = Value{}
	next.Root = ""
	next.Audit = nil
	next.Carried = &Snapshot{State: r.sess.State(), World: Value{orchestrator.DeepCopy(r.sess.World())}, Turn: r.sess.TurnNumber(),
		Timeouts: r.sess.Timeouts(), Handover: r.sess.Handover()}
	return workflow.NewContinueAsNewError(r.ctx, SessionWorkflowName, next)
}

func registerQueries(ctx workflow.Context, sess *orchestrator.Session, sink *trace.MemSink) error {
	queries := []struct {
		name string
		fn   any
	}{
		{QueryState, func() (string, error) { return sess.State(), nil }},
		{QueryWorld, func() (map[string]any, error) { return sess.World(), nil }},
		{QueryView, func() (string, error) { return sess.View() }},
		{QueryAllowed, func() ([]string, error) { return sess.AllowedIntents(), nil }},
		{QueryTrace, func() ([]trace.Event, error) { return sink.Events(), nil }},
	}
	for _, q := range queries {
		if err := workflow.SetQueryHandler(ctx, q.name, q.fn); err != nil {
			return fmt.Errorf("query %s: %w", q.name, err)
		}
	}
	return nil
}

func turnResult(out *orchestrator.Outcome, turn int64) *TurnResult {
	r := &TurnResult{Outcome: out.Outcome, From: out.From, State: out.State, View: out.View, Says: out.Says,
		Rejection: out.Rejection, Done: out.Done, Exit: out.Exit, Turn: turn}
	if out.Err != nil {
		r.Error = out.Err.Error()
	}
	for _, e := range out.HostErrors {
		r.HostErrors = append(r.HostErrors, e.Error())
	}
	r.Handled = handledCalls(out.Handled)
	return r
}

// ErrBackground is the refusal of a story with background jobs: the job
// scheduler runs goroutines on the wall clock, which a workflow must not.
var ErrBackground = errors.New("background invokes are not supported in a Temporal session yet")

// checkWorkflowStory refuses what a workflow cannot run deterministically.
func checkWorkflowStory(st *story.Story) error {
	for _, inv := range Invokes(st) {
		if inv.Background {
			//lint:ignore ST1005 the message ends with a YAML key as the author writes it, colon included.
			return fmt.Errorf("%s:%d:%d: invoke %s: background: true: %w; run this story locally (kitsoki run without --temporal) or drop background:",
				inv.Pos.File, inv.Pos.Line, inv.Pos.Col, inv.Name, ErrBackground)
		}
	}
	return nil
}
