package trace

import (
	"errors"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Storable reports whether v can be written in a payload: the first
// string or key holding a NUL byte or text not in Unicode NFC, or a NaN
// or infinite number, as the payload error Append would return, its
// location relative to v ("stdout", "items[2].name", "" for v itself).
// Callers check what a host call or an agent returned before it reaches
// the world and the journal, so that a value the trace format refuses
// fails that call, which the story can handle (on_error), instead of the
// run (docs/runtime.md, "Values the journal cannot hold").
func Storable(v any) error {
	err := storable(v, 0)
	if err == nil {
		return nil
	}
	var pe *payloadError
	if !errors.As(err, &pe) {
		pe = &payloadError{err: err}
	}
	return &StorableError{Err: pe.err, Path: pe.path()}
}

// StorableError is a value the journal cannot hold.
type StorableError struct {
	Err  error  // ErrNULByte, ErrNotNFC, ErrNaNOrInf, ErrTooDeep, or why it cannot be encoded
	Path string // where in the value; "" for the value itself
}

func (e *StorableError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + " at " + e.Path
}

func (e *StorableError) Unwrap() error { return e.Err }

// path is the location the error was collected at, without "payload".
func (e *payloadError) path() string {
	var b strings.Builder
	for i := len(e.rev) - 1; i >= 0; i-- {
		b.WriteString(e.rev[i])
	}
	return strings.TrimPrefix(b.String(), ".")
}

// storable runs v through the writer's own checks (a scrubber with
// nothing to mask), so what Storable accepts is what Append accepts.
func storable(v any, depth int) error {
	sc := newScrubber(nil)
	_, _, err := sc.value(v, depth)
	return err
}

// StorableText is an error message or other text of kitsoki's own made
// fit for the journal: a NUL byte written as \x00, the text put in NFC.
// Only for text kitsoki words (an error that quotes a command's output);
// data is never rewritten (see Storable).
func StorableText(s string) string {
	if checkString(s) == nil {
		return s
	}
	return norm.NFC.String(strings.ReplaceAll(s, "\x00", `\x00`))
}
