package cluster

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/kitsoki/kitsoki/internal/base/version"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// QueryStatus and AttachUpdate are what a client driving a session reads
// (kitsoki run --temporal, kitsoki session show --temporal).
const (
	// QueryStatus answers the session's SessionStatus as it stands (Started
	// false while turn 0 runs).
	QueryStatus = "status"
	// AttachUpdate waits until the session has started and no turn is
	// running, then answers its SessionStatus: a client that starts or
	// reattaches to a session reads where it is with it. It changes
	// nothing in the session.
	AttachUpdate = "attach"
	// QueryTraceJSONL answers this run's trace as the JSONL a local run's
	// trace file holds: the session.header line, then every event.
	QueryTraceJSONL = "trace_jsonl"
)

// SessionStatus is where a session stands.
type SessionStatus struct {
	SessionID string   `json:"session_id"`
	Story     StoryRef `json:"story"`
	Started   bool     `json:"started"`
	State     string   `json:"state"`
	// Routing is how the session routes free text, as it was started
	// (SessionInput.Routing; nil: the story's routing).
	Routing *orchestrator.RoutingConfig `json:"routing,omitempty"`
	// Overlay is the open off_path or meta mode ("" on the path).
	Overlay string   `json:"overlay,omitempty"`
	Turn    int64    `json:"turn"`
	Done    bool     `json:"done,omitempty"`
	Exit    string   `json:"exit,omitempty"`
	World   Value    `json:"world"`
	Allowed []string `json:"allowed_intents"`
	View    string   `json:"view,omitempty"`
	// ViewError is why the view did not render ("" when it did).
	ViewError string `json:"view_error,omitempty"`
	// Updated is the time of the workflow task the answer was read at,
	// on the workflow clock.
	Updated time.Time `json:"updated"`
	// LastTurn is when the session's last turn ended, on the workflow
	// clock: what retention (session prune) measures; reading the
	// session (an attach, a query) does not move it.
	LastTurn time.Time `json:"last_turn,omitzero"`
	// Last is the outcome of the session's last turn in this run of the
	// workflow (turn 0's after a start; nil after a continue-as-new until
	// a turn is taken).
	Last *TurnResult `json:"last,omitempty"`
}

// HandledCall is a failed call that its invoke's on_error handled, as a
// turn's result carries it (orchestrator.HandledError across the wire).
type HandledCall struct {
	Namespace string    `json:"namespace"`
	Call      string    `json:"call,omitempty"`
	CallID    string    `json:"call_id,omitempty"`
	Err       CallError `json:"err"`
	OnError   string    `json:"on_error"`
	Redirect  string    `json:"redirect,omitempty"`
}

// HandledError rebuilds the orchestrator's value (the error an
// *agent.AskError when the call failed with one).
func (h HandledCall) HandledError() orchestrator.HandledError {
	return orchestrator.HandledError{Namespace: h.Namespace, Call: h.Call, CallID: h.CallID, Err: h.Err.Error(),
		OnError: h.OnError, Redirect: h.Redirect}
}

func handledCalls(hs []orchestrator.HandledError) []HandledCall {
	var out []HandledCall
	for _, h := range hs {
		hc := HandledCall{Namespace: h.Namespace, Call: h.Call, CallID: h.CallID, OnError: h.OnError, Redirect: h.Redirect}
		if h.Err != nil {
			hc.Err = *callError(h.Err, nil)
		}
		out = append(out, hc)
	}
	return out
}

// Orchestrator rebuilds the orchestrator's outcome of the turn, for printing
// as a local run prints one.
func (r *TurnResult) Orchestrator() *orchestrator.Outcome {
	out := &orchestrator.Outcome{Outcome: r.Outcome, From: r.From, State: r.State, View: r.View, Says: r.Says,
		Rejection: r.Rejection, Done: r.Done, Exit: r.Exit}
	if r.Error != "" {
		out.Err = errors.New(r.Error)
	}
	for _, e := range r.HostErrors {
		out.HostErrors = append(out.HostErrors, errors.New(e))
	}
	for _, h := range r.Handled {
		out.Handled = append(out.Handled, h.HandledError())
	}
	return out
}

// NewTurnResult is the result the intent update returns for a turn's
// outcome (turn is the session's turn number after it).
func NewTurnResult(out *orchestrator.Outcome, turn int64) *TurnResult { return turnResult(out, turn) }

// sessionView is what the status query and the attach update read of a
// running workflow.
type sessionView struct {
	ctx     workflow.Context
	in      *SessionInput
	sess    *orchestrator.Session
	sink    *trace.MemSink
	started *bool
	last    **TurnResult
}

func (v sessionView) status() *SessionStatus {
	s := &SessionStatus{SessionID: v.in.SessionID, Story: v.in.Story, Started: *v.started, State: v.sess.State(), Overlay: v.sess.Overlay(), Routing: v.in.Routing,
		Turn: v.sess.TurnNumber(), World: Value{orchestrator.DeepCopy(v.sess.World())}, Allowed: v.sess.AllowedIntents(), Last: *v.last,
		Updated: workflow.Now(v.ctx).UTC(), LastTurn: v.lastTurnAt()}
	s.Done, s.Exit = v.sess.Done()
	if *v.started {
		view, err := v.sess.View()
		s.View = view
		if err != nil {
			s.ViewError = err.Error()
		}
	}
	return s
}

// registerStatus registers the status query and the attach update; ready
// says when the session has started and no turn is running.
func registerStatus(ctx workflow.Context, v sessionView, ready func() bool) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (*SessionStatus, error) { return v.status(), nil }); err != nil {
		return fmt.Errorf("query %s: %w", QueryStatus, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryTraceJSONL, func() (string, error) { return string(v.sink.Bytes()), nil }); err != nil {
		return fmt.Errorf("query %s: %w", QueryTraceJSONL, err)
	}
	if err := registerCarry(ctx, v, ready); err != nil {
		return err
	}
	return workflow.SetUpdateHandler(ctx, AttachUpdate, func(uctx workflow.Context) (*SessionStatus, error) {
		if err := workflow.Await(uctx, ready); err != nil {
			return nil, err
		}
		return v.status(), nil
	})
}

// traceHeader is the session.header of the session's trace: the story
// path is StoryRef.Path (relative to the stories directory); the version
// is the worker's.
func traceHeader(in SessionInput, st *story.Story) trace.HeaderInfo {
	h := trace.HeaderInfo{AppID: st.App.ID, StoryPath: in.Story.Path, StoryHash: in.Story.Hash,
		KitsokiVersion: version.String(), SessionID: in.SessionID}
	if in.Fork != nil {
		h.ForkedFrom, h.ForkedAtTurn = in.Fork.SessionID, in.Fork.Turn
	}
	return h
}
