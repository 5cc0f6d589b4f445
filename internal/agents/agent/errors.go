package agent

import (
	"errors"
	"fmt"

	"github.com/kitsoki/kitsoki/plugin"
)

// ErrorKind classifies an agent failure. The six kinds are the contract's.
type ErrorKind string

// The error kinds of the agent contract.
const (
	KindSchemaInvalid              ErrorKind = "schema_invalid"
	KindPluginCrash                ErrorKind = "plugin_crash"
	KindDeadlineExceeded           ErrorKind = "deadline_exceeded"
	KindTransportError             ErrorKind = "transport_error"
	KindSubEventNamespaceViolation ErrorKind = "sub_event_namespace_violation"
	KindSubEventCallIDMismatch     ErrorKind = "sub_event_call_id_mismatch"
)

// AskError is the error an agent call fails with. Its text form
// ("agent: <kind>: <detail>") is what the trace and the invoke result carry.
type AskError struct {
	Kind   ErrorKind
	Detail string
	Err    error // underlying cause, optional
	// CostUSD is what the failed call cost, when the transport knows
	// (tokens billed before it failed); the host charges it to the
	// call's spending caps.
	CostUSD float64
	// Transcript is the agent-action transcript the transport captured
	// before the call failed, when it has one; the host writes it beside
	// the trace and points agent.call.error at it.
	Transcript *plugin.Transcript
}

// Error renders the error as wire-protocols.md §3 specifies.
func (e *AskError) Error() string {
	switch {
	case e.Detail != "":
		return "agent: " + string(e.Kind) + ": " + e.Detail
	case e.Err != nil:
		return "agent: " + string(e.Kind) + ": " + e.Err.Error()
	default:
		return "agent: " + string(e.Kind)
	}
}

// Unwrap returns the underlying cause.
func (e *AskError) Unwrap() error { return e.Err }

// Errorf builds an AskError whose detail is the formatted message. A %w verb
// in format also records the wrapped error as the cause.
func Errorf(kind ErrorKind, format string, args ...any) *AskError {
	err := fmt.Errorf(format, args...)
	return &AskError{Kind: kind, Detail: err.Error(), Err: errors.Unwrap(err)}
}

// AsAskError reports whether err is (or wraps) an AskError and returns it.
func AsAskError(err error) (*AskError, bool) {
	var ae *AskError
	if errors.As(err, &ae) {
		return ae, true
	}
	return nil, false
}

// QuoteLimit is how many bytes of raw data an error detail quotes.
const QuoteLimit = 256

// Clip cuts raw bytes quoted in an error detail to QuoteLimit bytes plus
// "..." so a misbehaving peer cannot flood traces and logs.
func Clip(b []byte) string {
	if len(b) <= QuoteLimit {
		return string(b)
	}
	return string(b[:QuoteLimit]) + "..."
}

// NotInstalled is the cause of an agent failure whose program is not
// installed: not on PATH, or not at the path the story declares. Its text
// is the lookup's error, so wrapping it changes no message; a caller that
// finds it (errors.As) can say what to install and how.
type NotInstalled struct {
	Program string // the program looked for, as declared
	Install string // how to install it (a command), "" when there is no one way
	Docs    string // the page of kitsoki's docs about it (docs/agents/claude.md), or ""
	Err     error  // the lookup's error
}

func (e *NotInstalled) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s is not installed", e.Program)
	}
	return e.Err.Error()
}

// Unwrap returns the lookup's error.
func (e *NotInstalled) Unwrap() error { return e.Err }
