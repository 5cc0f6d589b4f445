package kitsoki

import (
	"context"
	"fmt"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/plugin"
)

// The wire types of an agent call and of the trace, defined once in
// package plugin.
type (
	// AskRequest is one agent call: prompt, schema, with: arguments, the
	// world snapshot, deadline and call_id.
	AskRequest = plugin.AskRequest
	// AskResponse is an agent's answer: the submission kitsoki validates
	// against the call's schema, meta copied to the trace, sub-events.
	AskResponse = plugin.AskResponse
	// Event is one trace line.
	Event = plugin.Event
)

// AgentFunc is an in-process agent: it answers the agent calls routed to
// the alias it is registered under (WithAgent). It may be called
// concurrently, and gets its own copy of the request's with: and world. A returned *AgentError fails the call with its kind; any
// other error fails it as plugin_crash with the error's text.
type AgentFunc func(ctx context.Context, req *AskRequest) (*AskResponse, error)

// HandlerFunc is a host handler: it answers the invokes of the name it is
// registered under (WithHandler). The map is what the invoke's bind: reads.
// A returned error is the call's failure: the world's last_error gets its
// text, the invoke's on_error (if any) handles it, and the invoke's bind:
// is not applied (the map, when not nil, is world.host_error.data).
type HandlerFunc func(ctx context.Context, call Call) (map[string]any, error)

// Call is one invoke dispatched to a HandlerFunc.
type Call struct {
	Name      string         // the invoke name, e.g. host.tickets.create
	ID        string         // the invoke's id:, "" when it has none
	Args      map[string]any // a copy of the with: arguments as rendered (with "call" set to ID)
	SessionID string
	Turn      int64
	State     string         // the state path the call was made in
	World     map[string]any // a copy of the world at dispatch
}

// ErrorKind classifies an agent failure; the six kinds are the agent
// contract's.
type ErrorKind string

// The error kinds of the agent contract.
const (
	KindSchemaInvalid              ErrorKind = ErrorKind(agent.KindSchemaInvalid)
	KindPluginCrash                ErrorKind = ErrorKind(agent.KindPluginCrash)
	KindDeadlineExceeded           ErrorKind = ErrorKind(agent.KindDeadlineExceeded)
	KindTransportError             ErrorKind = ErrorKind(agent.KindTransportError)
	KindSubEventNamespaceViolation ErrorKind = ErrorKind(agent.KindSubEventNamespaceViolation)
	KindSubEventCallIDMismatch     ErrorKind = ErrorKind(agent.KindSubEventCallIDMismatch)
)

// AgentError is an agent call's failure. Its text, "agent: <kind>:
// <detail>", is what the trace, world.last_error and `kitsoki run` show.
// An AgentFunc returns one to fail a call with a chosen kind; failed calls
// in an Outcome carry one.
type AgentError struct {
	Kind   ErrorKind
	Detail string
}

// Error renders "agent: <kind>: <detail>" ("agent: <kind>" without detail).
func (e *AgentError) Error() string {
	if e.Detail == "" {
		return "agent: " + string(e.Kind)
	}
	return "agent: " + string(e.Kind) + ": " + e.Detail
}

// Rejection codes: why an intent was refused.
const (
	CodeUnknownIntent    = orchestrator.CodeUnknownIntent
	CodeIntentNotAllowed = orchestrator.CodeIntentNotAllowed
	CodeMissingSlots     = orchestrator.CodeMissingSlots
	CodeUnknownSlot      = orchestrator.CodeUnknownSlot
	CodeInvalidSlotValue = orchestrator.CodeInvalidSlotValue
	CodeGuardFailed      = orchestrator.CodeGuardFailed
	// CodeNoMatch: free text no tier routed confidently (rephrase).
	CodeNoMatch = orchestrator.CodeNoMatch
	// CodeRouterFailed: the router agent's call failed.
	CodeRouterFailed = orchestrator.CodeRouterFailed
)

// Rejection is a refused intent: nothing changed. Its text, "CODE:
// message", is the line `kitsoki run` prints (exit code 3); the CLI prints
// GuardHint after it as "hint: ...".
type Rejection struct {
	Code           string
	Message        string
	MissingSlots   []string // MISSING_SLOTS: the required slots not given
	Suggestions    []string // near names of an undeclared intent (INTENT_NOT_ALLOWED_IN_STATE)
	AllowedIntents []string // the intents the state accepts
	GuardHint      string   // GUARD_FAILED: the arm's guard_hint
}

// Error renders "CODE: message".
func (r *Rejection) Error() string { return r.Code + ": " + r.Message }

// FaultError is a turn that aborted on an expression or effect fault (a
// guard that does not evaluate, a bind type mismatch, an emit loop); the
// trace records it as machine.error. `kitsoki run` prints "error: " and
// this text and exits 5.
type FaultError struct{ Err error }

// Error returns the fault's message.
func (e *FaultError) Error() string { return e.Err.Error() }

// Unwrap returns the fault.
func (e *FaultError) Unwrap() error { return e.Err }

// CallError is a call dispatched during a turn that failed with no
// on_error to handle it (the turn itself completed). Its text, "<invoke>:
// <failure>", is the line `kitsoki run` prints after "error: " (exit code
// 4). Err is an *AgentError for a failed agent call.
type CallError struct {
	Invoke string
	Err    error
}

// Error renders "<invoke>: <failure>".
func (e *CallError) Error() string { return e.Invoke + ": " + e.Err.Error() }

// Unwrap returns the failure.
func (e *CallError) Unwrap() error { return e.Err }

// ReplayMissError reports calls a cassette had no episode for during a
// turn, even those an on_error handled: a replay that left the recording is
// not the run it claims to be (`kitsoki run --cassette` exits 4). Each miss
// lists the episodes and the nearest one.
type ReplayMissError struct {
	Cassette string   // the cassette's path
	Misses   []string // "cassette miss: no episode matched ...", one per call
}

// Error renders one line per miss: "cassette <path>: <miss>".
func (e *ReplayMissError) Error() string {
	lines := make([]string, len(e.Misses))
	for i, m := range e.Misses {
		lines[i] = "cassette " + e.Cassette + ": " + m
	}
	return strings.Join(lines, "\n")
}

// Outcome is what a turn (or Start) did.
type Outcome struct {
	From  string   // the state before the turn
	State string   // the state after it
	View  string   // the state's view after it ("" when it has none)
	Says  []string // the say: effects' texts, in order
	// Handled are the calls that failed and whose on_error handled them.
	Handled []HandledError
	// Warnings are a cassette replay's warnings: an episode answered a
	// request other than the one it was recorded for.
	Warnings []string
	// Done is true in a terminal state; Exit names the exit of an @exit:
	// target.
	Done bool
	Exit string
	// Route is how a free-text turn (Say) was routed; nil for a typed
	// intent.
	Route *Route
	// Job is the background job whose question or completion this outcome
	// delivered ("" for a turn the caller took).
	Job string
	// Background are the background-job turns delivered just before this
	// turn (what jobs did since the last one), in order.
	Background []*Outcome
}

// Route is how free text was resolved, as the trace's turn.routed says.
type Route struct {
	// Tier is the tier that resolved it: exact, synonym, template,
	// default_intent or router.
	Tier string
	// Intent is the intent it resolved to; "" when nothing was confident
	// enough (the turn's error is then a NO_MATCH or ROUTER_FAILED
	// *Rejection).
	Intent     string
	Slots      map[string]any
	Confidence float64
}

// HandledError is a failed call that its invoke's on_error handled.
type HandledError struct {
	Invoke  string // e.g. host.agent.decide
	ID      string // the invoke's id:, "" when it has none
	CallID  string // the agent call's call_id, "" for other handlers
	Err     error  // an *AgentError for a failed agent call
	OnError string // the on_error target
}

// BusyError is a durable session another process holds (its writer lock:
// a turn in progress, a kitsoki run of it): Open, Resume or the turn was
// not taken, nothing changed; try again when it is free. `kitsoki session
// continue` exits 75 then.
type BusyError struct{ ID string }

func (e *BusyError) Error() string {
	return fmt.Sprintf("session %s is busy: another process holds its writer lock (a turn in progress, or a kitsoki run of it); try again when it is done", e.ID)
}
