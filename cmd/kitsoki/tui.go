package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kitsoki/kitsoki/internal/base/secret"
	"github.com/kitsoki/kitsoki/internal/hosts/host"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
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

// run shows the UI until the session ends; it enters the story with start
// and drives r. The trace's path is printed when the UI ends.
func (tw *tuiWiring) run(ctx context.Context, r *runner, st *story.Story, storyPath, tracePath string, stderr io.Writer,
	start func(context.Context) (*orchestrator.Outcome, error)) int {
	buf := &lineBuf{}
	r.out, r.errw = redacting(buf.writer(false), st.Secrets), redacting(buf.writer(true), st.Secrets)
	r.tuiView = true
	hist, err := tui.HistoryFile(storyPath)
	if err != nil {
		fmt.Fprintln(stderr, "kitsoki: no input history:", err)
		hist = ""
	}
	d := &tuiDriver{r: r, buf: buf, start: start}
	ui := tui.New(tui.Config{Driver: d, Mask: secret.New(st.Secrets).Text, History: hist, Help: pluginHelp,
		Commands: promptCommands(), Title: st.App.Title})
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
	if r.reloading {
		return exitOK
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

// tuiDriver drives the session for the UI through the runner, so a turn
// prints exactly what the line protocol prints (the view aside, which the
// UI renders from the typed view).
type tuiDriver struct {
	r     *runner
	buf   *lineBuf
	start func(context.Context) (*orchestrator.Outcome, error)
	// pending are the world edits made in the viewer since the last
	// turn: the next turn applies them (Session.OverrideWorld).
	pending map[string]any
}

// World is the world, with the edits the next turn applies.
func (d *tuiDriver) World() map[string]any {
	w := orchestrator.DeepCopy(d.r.sess.World()).(map[string]any)
	for k, v := range d.pending {
		w[k] = orchestrator.DeepCopy(v)
	}
	return w
}

// SetWorld sets a world key from the viewer. The value is checked as an
// initial value is, and written (and traced, as a world.update) at the
// start of the next turn, before its guards run: a session's world
// changes only inside a turn, so the journal replays the edit where it
// took effect.
func (d *tuiDriver) SetWorld(key string, value any) (string, error) {
	next := maps.Clone(d.pending)
	if next == nil {
		next = map[string]any{}
	}
	next[key] = value
	if err := d.r.sess.OverrideWorld(next); err != nil {
		return "", err
	}
	d.pending = next
	return "world." + key + " is set when the next turn starts (before its guards run)", nil
}

func (d *tuiDriver) Start(ctx context.Context) tui.Result {
	out, err := d.start(ctx)
	if err != nil {
		fmt.Fprintln(d.r.errw, "kitsoki:", err)
		return tui.Result{Lines: d.buf.take(), Fatal: true, Code: exitFailure}
	}
	d.r.viewShown = false
	code, stop := d.r.afterReplay(d.r.report(out))
	return d.result(ctx, code, stop)
}

func (d *tuiDriver) Do(ctx context.Context, line string) tui.Result {
	d.r.viewShown = false
	if !strings.HasPrefix(line, ":") {
		d.pending = nil // this turn applies them
	}
	switch {
	case line == ":world":
		b, _ := json.MarshalIndent(d.r.sess.World(), "", "  ")
		fmt.Fprintln(d.r.out, string(b))
		return tui.Result{Lines: d.buf.take()}
	case line == ":back":
		code, stop, err := d.r.back(ctx)
		if err != nil {
			fmt.Fprintln(d.r.errw, "kitsoki:", err)
			return tui.Result{Lines: d.buf.take()}
		}
		return d.result(ctx, code, stop)
	case strings.HasPrefix(line, ":"):
		d.r.command(ctx, line)
		// A reload ends this UI; the run starts again with a new one.
		return tui.Result{Lines: d.buf.take(), Done: d.r.reloading}
	}
	code, stop := d.r.turn(ctx, line)
	return d.result(ctx, code, stop)
}

// result: a terminal state ends the UI (exit 0); an I/O or trace failure
// ends it with exit 1; a rejection, fault or failed call is shown and the
// UI goes on, as at the line protocol's prompt.
func (d *tuiDriver) result(ctx context.Context, code int, stop bool) tui.Result {
	res := tui.Result{Lines: d.buf.take(), View: d.r.viewShown}
	switch {
	case stop && code == exitOK:
		res.Done = true
	case stop && code == exitFailure && ctx.Err() == nil:
		res.Fatal, res.Code = true, exitFailure
	}
	return res
}

func (d *tuiDriver) Status() tui.Status {
	sess := d.r.sess
	st := tui.Status{State: sess.State()}
	if s := sess.Story().States[sess.State()]; s != nil {
		st.Description = s.Description
		st.Relevant = relevant(s, sess.World())
	}
	if room := sess.Room(); room != nil {
		st.Room, st.Theme = room.Name, room.Theme
		st.Transcript = room.Transcript
		if st.Transcript == "" {
			// As in Kitsoki: a conversational room starts clear, others keep
			// what came before.
			st.Transcript = tui.TranscriptPersistent
			if room.Mode == story.ModeConversational {
				st.Transcript = tui.TranscriptTransient
			}
		}
		st.Footer, st.FooterErr = sess.Footer()
	}
	for _, name := range sess.MenuIntents() {
		def := sess.IntentDef(name)
		if def != nil && def.Hidden {
			continue
		}
		in := tui.Intent{Name: name}
		if def != nil {
			in.Description = menuHint(def)
			for _, sn := range def.SlotOrder {
				sl := def.Slots[sn]
				ts := tui.Slot{Name: sn, Type: sl.Type, Required: sl.Required}
				for _, v := range sl.Values {
					ts.Values = append(ts.Values, fmt.Sprint(v))
				}
				sort.Strings(ts.Values)
				in.Slots = append(in.Slots, ts)
			}
		}
		st.Intents = append(st.Intents, in)
	}
	st.View, st.ViewErr = sess.ViewDoc()
	return st
}

// lineBuf collects what a turn prints on its two streams, in order.
type lineBuf struct {
	mu    sync.Mutex
	lines []tui.Line
	part  [2][]byte
}

func (b *lineBuf) writer(err bool) io.Writer { return lineBufWriter{b: b, err: err} }

type lineBufWriter struct {
	b   *lineBuf
	err bool
}

func (w lineBufWriter) Write(p []byte) (int, error) {
	b := w.b
	b.mu.Lock()
	defer b.mu.Unlock()
	i := 0
	if w.err {
		i = 1
	}
	b.part[i] = append(b.part[i], p...)
	for {
		j := strings.IndexByte(string(b.part[i]), '\n')
		if j < 0 {
			break
		}
		b.lines = append(b.lines, tui.Line{Err: w.err, Text: string(b.part[i][:j])})
		b.part[i] = b.part[i][j+1:]
	}
	return len(p), nil
}

// take returns the lines printed since the last take.
func (b *lineBuf) take() []tui.Line {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, p := range b.part {
		if len(p) > 0 {
			b.lines = append(b.lines, tui.Line{Err: i == 1, Text: string(p)})
			b.part[i] = nil
		}
	}
	out := b.lines
	b.lines = nil
	return out
}

// relevant is the location indicator of state s: its relevant_world: keys
// with their values, then its relevant_slots: names.
func relevant(s *story.State, world map[string]any) []string {
	out := make([]string, 0, len(s.RelevantWorld)+len(s.RelevantSlots))
	for _, k := range s.RelevantWorld {
		v := fmt.Sprint(world[k])
		if b, err := json.Marshal(world[k]); err == nil && world[k] != nil {
			if _, isStr := world[k].(string); !isStr {
				v = string(b)
			}
		}
		out = append(out, k+"="+v)
	}
	for _, sl := range s.RelevantSlots {
		out = append(out, "<"+sl+">")
	}
	return out
}
