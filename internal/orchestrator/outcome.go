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

	// Done is true when the session is in a terminal state; Exit names the
	// exit when that state is an @exit: target.
	Done bool
	Exit string
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
