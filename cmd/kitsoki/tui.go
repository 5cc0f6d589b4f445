package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
	"github.com/kitsoki/kitsoki/internal/view/tui"
)

// tuiWiring connects a run to the terminal UI (internal/view/tui): the run's
// stdout and stderr (says, logs, host.transport.post) go to the
// transcript while the UI is up, the operator's questions to its input,
// and agent calls to its spinner. nil when the run does not use the UI.
type tuiWiring struct {
	in       io.Reader
	term     io.Writer
	ui       atomic.Pointer[tui.UI]
	out, err *switchWriter
}

// newTUIWiring returns the wiring when `kitsoki run` should show the
// terminal UI: no --intents, --say or --no-tui, and stdin and stdout are
// terminals.
func newTUIWiring(in io.Reader, out io.Writer, o *runOpts) *tuiWiring {
	if o.noTUI || o.intents != "" || len(o.say) > 0 || !isTerminal(in) || !isTerminalWriter(out) {
		return nil
	}
	return &tuiWiring{in: in, term: out}
}

func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// stdout and stderr wrap the command's writers so that they reach the
// transcript while the UI is up.
func (tw *tuiWiring) stdout(w io.Writer) io.Writer {
	if tw == nil {
		return w
	}
	tw.out = &switchWriter{w: w}
	return tw.out
}

func (tw *tuiWiring) stderr(w io.Writer) io.Writer {
	if tw == nil {
		return w
	}
	tw.err = &switchWriter{w: w}
	return tw.err
}

// dispatched follows the session's calls for the spinner: an agent call
// shows its agent_plugins alias (agent.claude on the built-in path) and
// verb, any other call its handler.
func (tw *tuiWiring) dispatched(c *host.Call) func() {
	ui := tw.ui.Load()
	if ui == nil {
		return func() {}
	}
	ev := tui.CallStarted{Agent: c.Namespace, Purpose: c.Purpose}
	if verb, ok := strings.CutPrefix(c.Namespace, host.AgentNamespace); ok {
		ev.Agent, ev.Verb = orchestrator.DefaultRouter, verb
		if c.Invoke != nil && c.Invoke.Agent != "" {
			ev.Agent = c.Invoke.Agent
		}
	}
	ui.Notify(ev)
	return func() { ui.Notify(tui.CallEnded{}) }
}

// observer hands the UI each free-text turn's route as the trace records
// it (turn.routed), before the turn's result; next is the run's other
// observer (OpenTelemetry), or nil.
func (tw *tuiWiring) observer(next trace.Observer) trace.Observer {
	return trace.ObserverFunc(func(ev *trace.Event, p trace.Payload) {
		if next != nil {
			next.Observe(ev, p)
		}
		ui := tw.ui.Load()
		if ui == nil || ev.Kind != trace.KindTurnRouted {
			return
		}
		var r trace.TurnRouted
		switch x := p.(type) {
		case trace.TurnRouted:
			r = x
		case *trace.TurnRouted:
			r = *x
		default:
			if trace.Decode(ev, &r) != nil {
				return
			}
		}
		ui.Routed(tui.Route{Tier: r.Tier, Intent: r.Intent, Slots: r.Slots, Confidence: r.Confidence})
	})
}

// ask is the operator: an agent's question is asked in the UI.
func (tw *tuiWiring) ask(ctx context.Context, question string) (string, error) {
	ui := tw.ui.Load()
	if ui == nil {
		return "", fmt.Errorf("the terminal UI is not running to ask: %s", question)
	}
	a, err := ui.Ask(ctx, question)
	return strings.TrimSpace(a), err
}

// run shows the UI until the session ends; it enters the story (or
// resumes the session) and drives con. The trace's path is printed when
// the UI ends.
func (tw *tuiWiring) run(ctx context.Context, con *driver.Console, st *story.Story, storyPath, tracePath string, stderr io.Writer) int {
	d := &tui.ConsoleDriver{Console: con}
	con.Out, con.Err = redacting(d.Writer(false), st.Secrets), redacting(d.Writer(true), st.Secrets)
	con.TUIView = true
	hist, err := tui.HistoryFile(storyPath)
	if err != nil {
		fmt.Fprintln(stderr, "kitsoki: no input history:", err)
		hist = ""
	}
	help := ""
	if con.Extra != nil {
		help = con.Extra.Help()
	}
	ui := tui.New(tui.Config{Driver: d, Mask: secret.New(st.Secrets).Text, History: hist, Help: help,
		Commands: con.Names(), QuitCode: exitIncomplete, Title: st.App.Title})
	tw.ui.Store(ui)
	tw.out.set(ui.Writer(false))
	tw.err.set(ui.Writer(true))
	code, err := ui.Run(ctx, tw.in, tw.term)
	tw.out.set(nil)
	tw.err.set(nil)
	tw.ui.Store(nil)
	switch {
	case errors.Is(err, tui.ErrInterrupted):
		fmt.Fprintf(stderr, "kitsoki: interrupted; trace %s\n", tracePath)
		return exitFailure
	case err != nil:
		fmt.Fprintln(stderr, "kitsoki: terminal UI:", err)
		return exitFailure
	}
	if con.Reloading {
		return exitOK // the run starts again on the story as it is now
	}
	fmt.Fprintf(stderr, "kitsoki: session ended; trace %s\n", tracePath)
	return code
}

// switchWriter writes to its writer, or to the UI's while one is set.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
	ui io.Writer
}

func (s *switchWriter) set(ui io.Writer) {
	s.mu.Lock()
	s.ui = ui
	s.mu.Unlock()
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	w := s.w
	if s.ui != nil {
		w = s.ui
	}
	s.mu.Unlock()
	return w.Write(p)
}
