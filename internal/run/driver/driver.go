// Package driver is a session as every front end drives it: the terminal
// UI, the plain prompt, scripted input and --say of `kitsoki run`, the
// `kitsoki session` commands, the MCP session tools and the Go API's
// Session. One interface, Driver, has two implementations: Local, a
// session in this process (new, or resumed from its journal under the
// session's writer lock), and remote.Driver (internal/run/driver/remote),
// a session that is a workflow on a Temporal cluster, in a package of its
// own so that the Go API does not link the Temporal SDK. Console is the
// one line front end (prompt, script, --say and the `:` commands) over
// any Driver; Sessions is the session API (create, continue, inspect,
// list, fork, delete, prune) over a sessions directory, and Frame its JSON
// answer.
package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/kitsoki/kitsoki/internal/base/jobs"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// Driver is one session. Its methods are called from one goroutine at a
// time.
type Driver interface {
	// ID is the session id.
	ID() string
	// Story is the story the session runs, as this process loaded it.
	Story() *story.Story
	// Begin enters the story (turn 0 of a new session) or brings a
	// resumed or reattached one to where it stopped, before any input is
	// read: its outcome is what to show first.
	Begin(ctx context.Context) (*orchestrator.Outcome, error)
	// Take takes one input. An input that does not parse is an
	// *InputError and takes no turn; any other error means the turn could
	// not run (I/O, the trace, the cluster).
	Take(ctx context.Context, in Input) (*orchestrator.Outcome, error)
	// Back returns to the previous room; orchestrator.ErrNoHistory says
	// there was none (nothing was taken).
	Back(ctx context.Context) (*orchestrator.Outcome, error)
	// Settle lets background jobs finish (or park on a question) and
	// returns what they did, one outcome per job turn.
	Settle(ctx context.Context) ([]*orchestrator.Outcome, error)
	// Status is where the session stands now.
	Status(ctx context.Context) (*Status, error)
	// Skip reports whether a scripted input is one the session took
	// already (it was resumed or reattached, and the run gives the inputs
	// of the run that started it again). An input that differs from the
	// session's own is an error with ExitUsage.
	Skip(ctx context.Context, line string) (bool, error)
	// Close ends this process's hold on the session: a local one is
	// saved to its index and its writer lock released; a cluster one
	// goes on on the cluster.
	Close() error
}

// Kind says how an Input is read.
type Kind int

const (
	// KindRaw is a line as `kitsoki run` reads one: a typed intent when it
	// reads as one ("order drink=espresso"), else free text.
	KindRaw Kind = iota
	// KindLine is a typed intent line, parsed with the intent's slot
	// types; it is never routed as free text.
	KindLine
	// KindIntent is an intent with its slots, already typed.
	KindIntent
	// KindText is free text, routed to one of the state's intents.
	KindText
)

// Input is one input of a turn. Build it with Raw, Line, Intent or Text.
type Input struct {
	Kind   Kind
	Intent string         // KindIntent
	Slots  map[string]any // KindIntent
	// Text is the line (KindRaw, KindLine) or the free text (KindText).
	Text string
}

// Raw is a line read as `kitsoki run` reads one.
func Raw(line string) Input { return Input{Kind: KindRaw, Text: line} }

// Line is a typed intent line.
func Line(line string) Input { return Input{Kind: KindLine, Text: line} }

// Intent is an intent with typed slots.
func Intent(name string, slots map[string]any) Input {
	return Input{Kind: KindIntent, Intent: name, Slots: slots}
}

// Text is free text.
func Text(text string) Input { return Input{Kind: KindText, Text: text} }

// Recordable is in as a session can record it: its text put in Unicode
// NFC (a terminal may send decomposed accents; they read the same), and an
// *InputError for a NUL byte in its text or a slot value, which no journal
// can hold, so that the input is refused before a turn starts instead of
// failing the turn's first event.
func (in Input) Recordable() (Input, error) {
	if strings.IndexByte(in.Text, 0) >= 0 || strings.IndexByte(in.Intent, 0) >= 0 {
		return in, &InputError{Err: errors.New(`the input holds a NUL byte (\x00), which a session cannot record: remove it`)}
	}
	if se, ok := errors.AsType[*trace.StorableError](trace.Storable(map[string]any(in.Slots))); ok && errors.Is(se, trace.ErrNULByte) {
		return in, &InputError{Err: fmt.Errorf(`slot %s holds a NUL byte (\x00), which a session cannot record: remove it`, se.Path)}
	}
	in.Text = norm.NFC.String(in.Text)
	return in, nil
}

// InputError is an input line that does not parse ("slots are written
// key=value"): no turn was taken.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Status is where a session stands: its state, what the state accepts,
// the world, the view and the background jobs not yet finished.
type Status struct {
	ID          string
	State       string
	Description string
	Turn        int64
	// Intents are the allowed intents, sorted, with their declarations;
	// hidden ones are marked.
	Intents []IntentInfo
	World   map[string]any
	View    string
	// ViewDoc is the typed view; ViewErr its rendering error.
	ViewDoc []orchestrator.ViewElement
	ViewErr error
	Done    bool
	Exit    string
	// Jobs are the background jobs that have not ended.
	Jobs []jobs.Info
	// Room is the room the session is in, for a front end that shows it.
	Room Room
}

// Visible is Intents without the hidden ones: what the prompt shows.
func (s *Status) Visible() []IntentInfo {
	var out []IntentInfo
	for _, in := range s.Intents {
		if !in.Hidden {
			out = append(out, in)
		}
	}
	return out
}

// IntentInfo is an allowed intent with its slots in declaration order.
type IntentInfo struct {
	Name        string     `json:"name"`
	Title       string     `json:"title,omitempty"`
	Description string     `json:"description,omitempty"`
	Hidden      bool       `json:"hidden,omitempty"`
	Slots       []SlotInfo `json:"slots"`
}

// Hint is what a menu shows after the intent's name (MenuHint).
func (in IntentInfo) Hint() string { return MenuHint(in.Title, in.Description) }

// SlotInfo is one slot of an intent.
type SlotInfo struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Required bool     `json:"required,omitempty"`
	Values   []string `json:"values,omitempty"` // an enum's values, sorted
	// Default is the declared default as text; Description the slot's.
	Default     string `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
	// Declared are an enum's values in the story's order, for a front end
	// that offers them as a picker (the web page); frames carry Values.
	Declared []string `json:"-"`
}

// Intents describes the allowed intents with def, the story's (or the
// session's) lookup of a declaration.
func Intents(allowed []string, def func(string) *story.Intent) []IntentInfo {
	out := make([]IntentInfo, 0, len(allowed))
	for _, name := range allowed {
		in := IntentInfo{Name: name, Slots: []SlotInfo{}}
		if d := def(name); d != nil {
			in.Title, in.Description, in.Hidden = d.Title, d.Description, d.Hidden
			for _, sn := range d.SlotOrder {
				sl := d.Slots[sn]
				si := SlotInfo{Name: sn, Type: orDefault(sl.Type, "string"), Required: sl.Required, Description: sl.Description}
				if sl.HasDefault && sl.Default != nil {
					si.Default = fmt.Sprint(sl.Default)
				}
				for _, v := range sl.Values {
					si.Declared = append(si.Declared, fmt.Sprint(v))
				}
				si.Values = slices.Sorted(slices.Values(si.Declared))
				in.Slots = append(in.Slots, si)
			}
		}
		out = append(out, in)
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Exit codes of every front end (`kitsoki run --help` and docs/runtime.md
// document them; cmd/kitsoki exits with them).
const (
	ExitOK         = 0 // a terminal state or an exit was reached; a session command did what it was asked
	ExitFailure    = 1 // I/O and trace failures, values a command refuses
	ExitUsage      = 2 // the command line is wrong (unknown flag, bad value, wrong arguments)
	ExitLoad       = 2 // the story did not load
	ExitRejected   = 3 // an intent was rejected (guard failed, unknown intent, bad slots)
	ExitAgent      = 4 // an agent or host call failed and no on_error handled it
	ExitMachine    = 5 // a turn aborted on an expression or effect fault
	ExitIncomplete = 6 // input ended (or the person left) before a terminal state
	// ExitBusy is a session another process holds (its writer lock):
	// nothing was done; try again later. 75 is EX_TEMPFAIL, as Kitsoki's
	// `session continue` answers.
	ExitBusy = 75
)

// ExitError is an error with the exit code a front end exits with.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the code the command exits with.
func (e *ExitError) ExitCode() int { return e.Code }

// Exit wraps err with an exit code.
func Exit(code int, err error) error { return &ExitError{Code: code, Err: err} }

// CodeOf is the exit code of err: its ExitError's, ExitBusy for a busy
// session, ExitAgent for a spending cap reached, else ExitFailure (ExitOK
// for nil).
func CodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	if ee, ok := errors.AsType[*ExitError](err); ok {
		return ee.Code
	}
	if isBusy(err) {
		return ExitBusy
	}
	return failCode(err)
}

// Attached is a session on a Temporal cluster this process reattached to
// (remote.Sessions.Attach): its driver, its key ("" for a session named
// by its id) and its trace, read from the cluster. Close ends this
// process's hold; the session goes on on the cluster.
type Attached interface {
	Driver
	Key() string
	Trace(ctx context.Context) ([]byte, error)
}
