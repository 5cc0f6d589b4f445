package orchestrator

import (
	"context"
	"errors"
	"fmt"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

// storableDispatcher makes every result the session takes from its
// dispatcher fit for the journal before it reaches the world or the trace.
// The trace format refuses a NUL byte, text not in Unicode NFC and
// NaN/Inf in any value (docs/tracing/trace-format.md). A command printing
// a NUL byte once ended the run, past on_error, and every resume met the
// same byte again; now the call fails as a domain error the story handles
// (on_error; world.last_error says where the byte was and what to do), its
// data dropped, and the session goes on. An error text of a call is
// kitsoki's own wording and is made storable instead (a NUL byte written
// \x00): the error is kept.
type storableDispatcher struct{ next Dispatcher }

func (d storableDispatcher) Dispatch(ctx context.Context, call *host.Call) (*host.Result, error) {
	res, err := d.next.Dispatch(ctx, call)
	if err != nil || res == nil {
		return res, storableErr(err)
	}
	if serr := trace.Storable(res.Data); serr != nil {
		return &host.Result{Err: unstorable(call.Namespace, serr), CallID: res.CallID}, nil
	}
	if res.Err != nil {
		if e := storableErr(res.Err); e != res.Err {
			out := *res
			out.Err = e
			return &out, nil
		}
	}
	return res, nil
}

// UnstorableError is a call whose result the journal cannot hold.
type UnstorableError struct {
	Namespace string
	Err       *trace.StorableError
}

func (e *UnstorableError) Error() string {
	where := ""
	if e.Err.Path != "" {
		where = " at " + e.Err.Path
	}
	fix := "change the call so that it returns JSON-shaped data"
	switch {
	case errors.Is(e.Err, trace.ErrNULByte):
		fix = "a NUL byte (U+0000) cannot be stored: strip or encode it where it is made (for a command: | tr -d '\\0', or base64)"
	case errors.Is(e.Err, trace.ErrNotNFC):
		fix = "text must be in Unicode NFC: normalise it where it is made (for a command: | uconv -x NFC)"
	case errors.Is(e.Err, trace.ErrNaNOrInf):
		fix = "NaN and infinite numbers have no JSON form: return null or a string instead"
	}
	return fmt.Sprintf("%s: its result cannot be kept in the journal: %v%s; %s", e.Namespace, e.Err.Err, where, fix)
}

func (e *UnstorableError) Unwrap() error { return e.Err }

func unstorable(ns string, err error) error {
	var se *trace.StorableError
	if errors.As(err, &se) {
		return &UnstorableError{Namespace: ns, Err: se}
	}
	return err
}

// storableErr keeps err when its text is fit for the journal, else wraps
// it with that text made fit (errors.Is and errors.As still see err).
func storableErr(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if fit := trace.StorableText(text); fit != text {
		return &storableTextError{err: err, text: fit}
	}
	return err
}

type storableTextError struct {
	err  error
	text string
}

func (e *storableTextError) Error() string { return e.text }
func (e *storableTextError) Unwrap() error { return e.err }
