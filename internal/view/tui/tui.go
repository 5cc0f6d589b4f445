// Package tui is the terminal UI of `kitsoki run`: line editing with
// history, the transcript, the current state and its intents, typed views,
// choice pickers, a spinner while an agent works, Tab completion and the
// `:` commands. It drives a session through the small Driver interface;
// cmd/kitsoki chooses it when stdin and stdout are terminals.
package tui

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// Driver is the session the UI drives. The UI calls it from one goroutine
// at a time: Status only while no Start or Do runs.
type Driver interface {
	// Start enters the story (turn 0) and reports what it printed.
	Start(ctx context.Context) Result
	// Do takes one input line: a typed intent, free text, or a `:`
	// command the UI does not handle itself (":world", plugin commands).
	Do(ctx context.Context, line string) Result
	// Status is where the story is now.
	Status() Status
}

// Result is what a turn (or a command) printed and whether the UI ends.
type Result struct {
	Lines []Line
	// View is true when the turn entered or stayed in a state whose view
	// is to be shown (a transition; not after a rejection).
	View bool
	// Done ends the UI: a terminal state was reached (exit 0).
	Done bool
	// Fatal ends the UI with Code: the run cannot go on (an I/O or
	// trace failure).
	Fatal bool
	Code  int
}

// Line is one printed line; Err marks what the line protocol prints on
// stderr (rejections, errors, handled failures).
type Line struct {
	Err  bool
	Text string
}

// Status is the current state, what it accepts and its view.
type Status struct {
	State       string
	Description string
	Intents     []Intent // the allowed, visible intents, sorted
	View        []orchestrator.ViewElement
	ViewErr     error
	// Room is the top-level state the session is in; Footer its status
	// line (footer:, rendered) shown under the input; Theme its colours
	// (theme:, "" for the default); Transcript how the transcript treats
	// what was printed before the room is entered: TranscriptTransient
	// starts the room on a clear screen.
	Room string
	// Relevant are the state's relevant_world: values and relevant_slots:
	// names, "key=value" or "slot", shown beside the state.
	Relevant   []string
	Footer     string
	FooterErr  error
	Theme      string
	Transcript string
}

// Transcript modes of a room (Status.Transcript).
const (
	TranscriptPersistent = "persistent"
	TranscriptTransient  = "transient"
)

// Intent is an allowed intent with its slots in declaration order.
type Intent struct {
	Name, Description string
	Slots             []Slot
}

// Slot is one slot of an intent.
type Slot struct {
	Name, Type string
	Required   bool
	Values     []string // an enum's values
}

// Config sets up a UI.
type Config struct {
	Driver Driver
	// Mask masks secret values in everything the UI shows and in the
	// history it writes; nil shows text as it is.
	Mask func(string) string
	// History is the file input lines are kept in across runs; "" keeps
	// no history.
	History string
	// Clock times agent calls for the spinner; nil is the system clock.
	Clock clock.Clock
	// Help is extra help text for `:help` (the driver's own commands).
	Help string
	// Commands are the driver's `:` commands, for completion; a `:` line
	// that is none of them nor the UI's own is refused in place.
	Commands []string
	// Title is the story's title, shown in the banner ("" shows kitsoki).
	Title string
	// QuitCode is Run's code when the person leaves (:quit, Ctrl-D on an
	// empty line, a second Ctrl-C) before a terminal state; zero is
	// ExitQuit (6), the code of kitsoki run's plain prompt then.
	QuitCode int
}

// The UI's exit codes (Run's first result), besides Config.QuitCode.
const (
	ExitOK          = 0 // a terminal state was reached
	ExitInterrupted = 1 // the run's context ended (SIGINT, SIGTERM)
	// ExitQuit: :quit, Ctrl-D or a second Ctrl-C before a terminal
	// state, the code of the plain prompt's input ending (kitsoki run's 6).
	ExitQuit = 6
)

// ErrInterrupted is Run's error when the run's context ended the UI.
var ErrInterrupted = errors.New("interrupted")

// UI runs the model in a Bubble Tea program and lets other goroutines
// (the trace observer, the operator, log writers) reach it.
type UI struct {
	model   *Model
	events  chan tea.Msg
	done    chan struct{} // closed when the program ends: Notify drops events
	endOnce sync.Once
	turns   turns
	routes  routeSlot
}

// New builds a UI; Run starts it.
func New(cfg Config) *UI {
	u := &UI{events: make(chan tea.Msg, 256), done: make(chan struct{})}
	u.model = newModel(cfg, u.events, u.done, &u.turns)
	u.model.routes = &u.routes
	return u
}

// Route is how a free-text turn was routed: the tier that resolved it
// (the trace's turn.routed), the intent ("" when none was) and slots, and
// the confidence.
type Route struct {
	Tier, Intent string
	Slots        map[string]any
	Confidence   float64
}

// Routed tells the UI how the turn in flight was routed; the UI shows it
// with the turn's result. Safe from any goroutine; call it before the
// turn's Do returns (the trace's observer does, as turn.routed is
// written).
func (u *UI) Routed(r Route) { u.routes.put(r) }

// routeSlot holds the route of the turn in flight until its result is
// shown.
type routeSlot struct {
	mu sync.Mutex
	r  *Route
}

func (s *routeSlot) put(r Route) {
	s.mu.Lock()
	s.r = &r
	s.mu.Unlock()
}

// take returns the pending route and clears it (nil when there is none).
func (s *routeSlot) take() *Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.r
	s.r = nil
	return r
}

// turns accounts for the turns in flight so that Run can wait for them.
// A turn is a Bubble Tea command, and a program that ends drops the
// commands it has not started yet (the one Init returns among them when
// :quit, Ctrl-D or the run's end comes first), or starts them after Run
// returned: so a turn is counted when its command starts, not when it is
// issued, and once the UI has ended a command starts no turn at all.
type turns struct {
	mu    sync.Mutex
	ended bool
	wg    sync.WaitGroup
}

// begin counts a turn that starts now; false once the UI has ended (the
// driver is not called then). A true begin is followed by a done.
func (t *turns) begin() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return false
	}
	t.wg.Add(1)
	return true
}

func (t *turns) done() { t.wg.Done() }

// end lets no turn start from now on and waits for those that started.
func (t *turns) end() {
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()
	t.wg.Wait()
}

// Model is the UI's Bubble Tea model (tests drive it directly).
func (u *UI) Model() *Model { return u.model }

// Run shows the UI on in/out until the session ends, and returns the exit
// code. parent ending ends the UI too (ExitInterrupted, ErrInterrupted).
// Run returns only after the turn in flight (cancelled when the UI ends)
// has returned, and no driver call starts after it returned.
func (u *UI) Run(parent context.Context, in io.Reader, out io.Writer) (int, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	u.model.ctx = ctx
	p := tea.NewProgram(u.model, tea.WithInput(in), tea.WithOutput(out), tea.WithContext(ctx), tea.WithoutSignalHandler(), tea.WithAltScreen())
	final, err := p.Run()
	u.end(cancel)
	// The alternate screen is gone: the transcript stays on the normal
	// screen, as the terminal's scrollback would have kept it.
	if t := u.model.log.text(u.model.width); t != "" {
		_, _ = io.WriteString(out, t+"\n")
	}
	if errors.Is(err, tea.ErrProgramKilled) && parent.Err() != nil {
		return ExitInterrupted, ErrInterrupted
	}
	if err != nil {
		return 1, err
	}
	if m, ok := final.(*Model); ok {
		return m.code, nil
	}
	return u.model.code, nil
}

// end follows the program's end: from now on events are dropped (so the
// turn in flight cannot block on them) and no turn starts; cancel cancels
// the turn in flight, which end then waits for.
func (u *UI) end(cancel context.CancelFunc) {
	u.endOnce.Do(func() { close(u.done) })
	cancel()
	u.turns.end()
}

// CallStarted is an agent call that began: the spinner shows its agent.
type CallStarted struct {
	Agent, Verb, Purpose string
}

// CallEnded is an agent call that answered or failed.
type CallEnded struct{}

// Output is a line printed outside a turn's result (logs, posts).
type Output struct{ Line Line }

// question is an agent's question to the operator.
type question struct {
	text  string
	reply chan string
}

// Notify hands the UI an event (CallStarted, CallEnded, Output); safe from
// any goroutine. It blocks only while the UI's queue is full.
func (u *UI) Notify(msg tea.Msg) {
	select {
	case u.events <- msg:
	case <-u.done:
	}
}

// Ask shows an agent's question and returns the line the operator types,
// or ctx's error when the call ends first.
func (u *UI) Ask(ctx context.Context, text string) (string, error) {
	q := question{text: text, reply: make(chan string, 1)}
	select {
	case u.events <- q:
	case <-ctx.Done():
		return "", ctx.Err()
	case <-u.done:
		return "", errors.New("the terminal UI has ended")
	}
	select {
	case a := <-q.reply:
		return a, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-u.done:
		return "", errors.New("the terminal UI has ended")
	}
}

// Writer returns a writer whose lines appear in the transcript (err marks
// them as the line protocol's stderr).
func (u *UI) Writer(err bool) io.Writer { return &lineWriter{u: u, err: err} }

type lineWriter struct {
	u   *UI
	err bool
	mu  sync.Mutex
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		w.u.Notify(Output{Line: Line{Err: w.err, Text: line}})
	}
	return len(p), nil
}
