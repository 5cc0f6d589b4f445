package trace

import (
	"encoding/json"
	"errors"
	"math"
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

func storable(v any, depth int) error {
	if depth > maxDepth {
		return ErrTooDeep
	}
	switch x := v.(type) {
	case nil, bool, int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8, json.Number:
		return nil
	case string:
		return checkString(x)
	case float64:
		return finite(x)
	case float32:
		return finite(float64(x))
	case map[string]any:
		for k, el := range x {
			if _, err := checkKey(k); err != nil {
				return withSeg(err, "{key}")
			}
			if err := storable(el, depth+1); err != nil {
				return withSeg(err, "."+k)
			}
		}
	case []any:
		for i, el := range x {
			if err := storable(el, depth+1); err != nil {
				return withSeg(err, indexSeg(i))
			}
		}
	case []string:
		for i, el := range x {
			if err := checkString(el); err != nil {
				return withSeg(err, indexSeg(i))
			}
		}
	case map[string]string:
		for k, el := range x {
			if _, err := checkKey(k); err != nil {
				return withSeg(err, "{key}")
			}
			if err := checkString(el); err != nil {
				return withSeg(err, "."+k)
			}
		}
	default:
		// Anything else is written through its JSON form: check that.
		e := newPayloadEncoder(nil)
		_, err := e.value(nil, v, depth, "")
		return err
	}
	return nil
}

func finite(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ErrNaNOrInf
	}
	return nil
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
