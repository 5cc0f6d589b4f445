package orchestrator

import "fmt"

// Rejection codes (story-format.md §6, plus UNKNOWN_SLOT).
const (
	CodeUnknownIntent    = "UNKNOWN_INTENT"
	CodeIntentNotAllowed = "INTENT_NOT_ALLOWED_IN_STATE"
	CodeMissingSlots     = "MISSING_SLOTS"
	CodeUnknownSlot      = "UNKNOWN_SLOT" // kitsoki's addition: a slot the intent does not declare
	CodeInvalidSlotValue = "INVALID_SLOT_VALUE"
	CodeGuardFailed      = "GUARD_FAILED"
	CodeAmbiguousIntent  = "AMBIGUOUS_INTENT"
	CodeIntentUnknown    = "INTENT_UNKNOWN"
	// CodeOverlayOpen refuses a typed intent while an off_path or meta
	// mode conversation is open; CodeOverlayFailed is its agent's failure.
	CodeOverlayOpen   = "OVERLAY_OPEN"
	CodeOverlayFailed = "OVERLAY_FAILED"
)

// Outcome kinds, as turn.end records them.
const (
	OutcomeTransitioned = "transitioned"
	OutcomeRejected     = "rejected"
	OutcomeError        = "error"
)

// Outcome is the result of a turn.
type Outcome struct {
	Outcome string // transitioned, rejected or error
	From    string
	State   string // the state after the turn
	View    string
	Says    []string

	// Rejection (Outcome == rejected).
	Rejection *Rejection

	// Err is the fault that aborted the turn (Outcome == error).
	Err error

	// HostErrors are the failures of calls dispatched during the turn that
	// no on_error handled (the turn itself still completed).
	HostErrors []error

	// Handled are the failures of calls dispatched during the turn that an
	// on_error redirect handled, in dispatch order.
	Handled []HandledError

	// Done is true when the session is in a terminal state; Exit names the
	// exit when that state is an @exit: target.
	Done bool
	Exit string

	// Route is how a free-text turn was routed (nil for a typed intent).
	Route *Route

	// Job is the background job whose question or completion this turn
	// delivered ("" for a user's turn).
	Job string
	// Background are the job turns delivered just before this user turn
	// (what jobs did while the user was away), in order.
	Background []*Outcome
	// OffRamp is true when the state's agent_off_ramp answered free text
	// nothing routed: Says holds the banner (if any) and the answer; the
	// state and world are unchanged.
	OffRamp bool
}

// Rejection is the envelope of a rejected intent.
type Rejection struct {
	Code           string   `json:"code"`
	Message        string   `json:"message"`
	MissingSlots   []string `json:"missing_slots,omitempty"`
	Suggestions    []string `json:"suggestions,omitempty"`
	AllowedIntents []string `json:"allowed_intents,omitempty"`
	Candidates     []string `json:"candidates,omitempty"`
	GuardHint      string   `json:"guard_hint,omitempty"`
}

// Error renders the text form "CODE: message".
func (r *Rejection) Error() string { return fmt.Sprintf("%s: %s", r.Code, r.Message) }

// HandledError is a failed call that its invoke's on_error handled.
type HandledError struct {
	Namespace string // the invoke, e.g. host.agent.decide
	Call      string // the invoke's id:, "" when it has none
	CallID    string // the agent call's call_id, "" for other handlers
	Err       error  // the failure; an *agent.AskError for a failed agent call
	OnError   string // the invoke's on_error target
	// Background is set for a background job's failure (its on_error runs
	// when the job ends, in a turn of its own).
	Background bool
	// Redirect is what became of the redirect: RedirectEntered,
	// RedirectIgnored (the run was already in the target) or
	// RedirectCapped (too many chained redirects; the run stayed).
	Redirect string
}

// What became of an on_error redirect.
const (
	RedirectEntered = "entered"
	RedirectIgnored = "ignored"
	RedirectCapped  = "capped"
)
