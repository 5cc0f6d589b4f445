package tui

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// Prompt is the input line's prompt.
const Prompt = "> "

// builtinCommands are the `:` commands the UI handles itself.
func builtinCommands() []string { return []string{":help", ":intents", ":state", ":annotate", ":quit"} }

// Model is the UI's Bubble Tea model.
type Model struct {
	cfg    Config
	mask   func(string) string
	clk    clock.Clock
	ctx    context.Context // the run's: a turn's context derives from it
	events chan tea.Msg
	done   <-chan struct{} // closed when the UI has ended
	turns  *turns

	th     theme
	input  textinput.Model
	spin   spinner.Model
	width  int
	height int
	hist   *history

	log     transcript
	scroll  int        // transcript lines scrolled back from its end (PgUp)
	menu    *menu      // the Esc menu, when open
	world   *worldView // the world viewer, when open
	editing *worldEdit // a world value being edited in the input line
	routes  *routeSlot // the route of the turn in flight

	status Status
	picker *picker

	busy      bool
	cancel    context.CancelFunc
	turnStart time.Time
	calls     []callInfo // the calls in flight, innermost last
	question  *question
	ctrlC     bool   // the last key was Ctrl-C
	hint      string // a notice or completion candidates under the input
	queued    string // a line entered while a turn ran; it runs next
	code      int
	quitting  bool // the live area is cleared as the UI ends
}

type callInfo struct {
	CallStarted
	start time.Time
}

// resultMsg is a turn's (or Start's) result.
type resultMsg struct {
	res       Result
	cancelled bool
}

func newModel(cfg Config, events chan tea.Msg, done <-chan struct{}, tr *turns) *Model {
	ti := textinput.New()
	ti.Prompt = Prompt
	ti.Focus()
	ti.CharLimit = 0
	ti.ShowSuggestions = true
	ti.Width = 80 - len(Prompt) - 1
	sp := spinner.New(spinner.WithSpinner(spinner.Dot))
	m := &Model{cfg: cfg, mask: cfg.Mask, clk: cfg.Clock, ctx: context.Background(), events: events, done: done, turns: tr,
		th: newTheme(), input: ti, spin: sp, width: 80, height: 24, hist: loadHistory(cfg.History, cfg.Mask), routes: &routeSlot{}}
	m.input.CompletionStyle = m.th.hint
	if m.mask == nil {
		m.mask = func(s string) string { return s }
	}
	if m.clk == nil {
		m.clk = clock.System{}
	}
	return m
}

// Init enters the story.
func (m *Model) Init() tea.Cmd {
	d := m.cfg.Driver
	return tea.Batch(textinput.Blink, m.waitEvent(), m.run(func(ctx context.Context) Result { return d.Start(ctx) }))
}

// waitEvent delivers the next outside event; nothing once the UI has
// ended (its goroutine does not outlive the UI).
func (m *Model) waitEvent() tea.Cmd {
	ch, done := m.events, m.done
	return func() tea.Msg {
		select {
		case msg := <-ch:
			return msg
		case <-done:
			return nil
		}
	}
}

// run starts f as the turn in flight. The command does not call f when
// the UI has ended before Bubble Tea started it.
func (m *Model) run(f func(ctx context.Context) Result) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	m.busy, m.cancel, m.turnStart, m.calls = true, cancel, m.clk.Now(), nil
	tr := m.turns
	return tea.Batch(m.spin.Tick, func() tea.Msg {
		defer cancel()
		if !tr.begin() {
			return nil
		}
		defer tr.done()
		res := f(ctx)
		return resultMsg{res: res, cancelled: ctx.Err() != nil}
	})
}

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 8)
		m.input.Width = max(m.width-len(Prompt)-1, 10)
		return m, nil
	case resultMsg:
		return m, m.finish(msg)
	case CallStarted:
		m.calls = append(m.calls, callInfo{CallStarted: msg, start: m.clk.Now()})
		return m, m.waitEvent()
	case CallEnded:
		if len(m.calls) > 0 {
			m.calls = m.calls[:len(m.calls)-1]
		}
		return m, m.waitEvent()
	case Output:
		return m, tea.Batch(m.println(m.styleLine(msg.Line)), m.waitEvent())
	case question:
		m.question = &msg
		m.hint = ""
		return m, m.waitEvent()
	case spinner.TickMsg:
		if !m.busy {
			return m, nil
		}
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

// finish shows a turn's result and ends the UI when the session ended.
func (m *Model) finish(msg resultMsg) tea.Cmd {
	m.busy, m.cancel, m.calls, m.question = false, nil, nil, nil
	var out []string
	if r := m.routes.take(); r != nil {
		out = append(out, m.th.hint.Render(m.mask(routeLine(*r))))
	}
	for _, l := range msg.res.Lines {
		out = append(out, m.styleLine(l))
	}
	if msg.cancelled && !msg.res.Done {
		out = append(out, m.th.notice.Render("(cancelled)"))
		if m.ctrlC { // cancelled by Ctrl-C, not from the menu
			m.hint = "(Ctrl-C again quits; :quit leaves)"
		}
	}
	clear := false
	if !msg.res.Fatal {
		prev := m.status
		m.status = m.cfg.Driver.Status()
		clear = entersTransient(prev, m.status)
		if prev.Room != m.status.Room || prev.Theme != m.status.Theme {
			m.th = themeFor(m.status.Theme)
		}
		m.picker = newPicker(m.status.View)
		if msg.res.View {
			if v := m.renderView(); v != "" {
				out = append(out, v)
			}
		}
	}
	if clear {
		m.log.clear()
	}
	print := m.println(strings.Join(out, "\n"))
	queued := m.queued
	m.queued = ""
	switch {
	case msg.res.Fatal:
		m.code, m.quitting = msg.res.Code, true
		return tea.Sequence(print, tea.Quit)
	case msg.res.Done:
		m.code, m.quitting = ExitOK, true
		return tea.Sequence(print, tea.Quit)
	case queued != "" && !msg.cancelled:
		m.hint = ""
		return tea.Sequence(print, m.submit(queued))
	case queued != "":
		m.input.SetValue(queued) // a cancelled turn hands the queued line back
		m.input.CursorEnd()
	}
	return print
}

// entersTransient reports whether a turn entered a room (a top-level state
// other than the one it started in) whose transcript is transient: the
// room starts on a clear screen, its earlier output scrolled away.
func entersTransient(prev, next Status) bool {
	return prev.Room != "" && next.Room != prev.Room && next.Transcript == TranscriptTransient
}

// println adds text to the transcript (nothing for an empty text) and
// follows the transcript's end. It returns no command: the next frame
// shows it.
func (m *Model) println(text string) tea.Cmd {
	if text == "" {
		return nil
	}
	m.log.add(text)
	m.scroll = 0
	return nil
}

func (m *Model) styleLine(l Line) string {
	t := m.mask(l.Text)
	if l.Err {
		return m.th.err.Render(t)
	}
	return t
}

// key handles a key press.
func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyCtrlC {
		return m.ctrlCPressed()
	}
	m.ctrlC = false
	switch {
	case m.menu != nil:
		return m.menuKey(k)
	case m.world != nil && m.editing == nil:
		return m.worldKey(k)
	}
	switch k.Type {
	case tea.KeyEsc:
		if e := m.editing; e != nil {
			m.editing, m.hint = nil, "world."+strings.Join(e.path, ".")+" left as it was"
			m.input.SetValue(e.saved)
			m.input.CursorEnd()
			return nil
		}
		m.menu, m.hint = m.newMenu(), ""
		return nil
	case tea.KeyPgUp, tea.KeyPgDown:
		page := max(m.height/2, 1)
		if k.Type == tea.KeyPgUp {
			m.scroll += page
		} else {
			m.scroll = max(m.scroll-page, 0)
		}
		return nil
	case tea.KeyCtrlD:
		if m.input.Value() == "" {
			return m.quit()
		}
	case tea.KeyEnter:
		return m.enter()
	case tea.KeyTab:
		m.tab()
		return nil
	case tea.KeyUp, tea.KeyDown:
		if m.picker != nil && !m.busy && m.question == nil {
			m.picker.move(k.Type == tea.KeyDown)
			return nil
		}
		m.browse(k.Type == tea.KeyUp)
		return nil
	case tea.KeyCtrlP, tea.KeyCtrlN:
		m.browse(k.Type == tea.KeyCtrlP)
		return nil
	case tea.KeySpace:
		if m.picker != nil && !m.busy && m.question == nil && m.input.Value() == "" && m.picker.toggle() {
			return nil
		}
	}
	m.hint = ""
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	m.refreshGhost()
	return cmd
}

// ctrlCPressed: the first Ctrl-C cancels what is in progress (the call in
// flight, else the typed line); a second one in a row quits.
func (m *Model) ctrlCPressed() tea.Cmd {
	if m.ctrlC {
		return m.quit()
	}
	m.ctrlC = true
	switch {
	case m.busy:
		m.cancel()
		m.hint = "cancelling the call… (Ctrl-C again quits)"
	case m.input.Value() != "":
		m.input.Reset()
		m.hint = "(Ctrl-C again quits; :quit leaves)"
	default:
		m.hint = "(Ctrl-C again quits; :quit leaves)"
	}
	return nil
}

// quit ends the UI with Config.QuitCode (the session is left where it
// is); a turn in flight is cancelled.
func (m *Model) quit() tea.Cmd {
	if m.cancel != nil {
		m.cancel()
	}
	m.code, m.quitting = m.cfg.QuitCode, true
	if m.code == 0 {
		m.code = ExitQuit
	}
	return tea.Quit
}

// enter submits the input line: an answer to an agent's question, a
// picker choice, a `:` command or a turn.
func (m *Model) enter() tea.Cmd {
	raw := m.input.Value()
	line := strings.TrimSpace(raw)
	m.hint = ""
	if m.editing != nil {
		return m.finishEdit(line)
	}
	if q := m.question; q != nil {
		m.question = nil
		m.input.Reset()
		q.reply <- line
		return m.println(m.th.notice.Render("answer> ") + m.mask(line))
	}
	if m.busy {
		switch {
		case line == "":
		case isQuit(line):
			return tea.Sequence(m.println(m.th.prompt.Render(Prompt)+line), m.quit())
		case m.queued == "":
			m.queued = line
			m.input.Reset()
			m.hint = "queued: " + line + " (runs when this turn ends; Ctrl-C cancels the call)"
		default:
			m.hint = "a line is already queued; Ctrl-C cancels the call"
		}
		return nil
	}
	if line == "" && m.picker != nil {
		var edit bool
		var err error
		line, edit, err = m.picker.line()
		if err != nil {
			m.hint = err.Error()
			return nil
		}
		if edit {
			m.input.SetValue(line)
			m.input.CursorEnd()
			return nil
		}
	}
	if line == "" {
		return nil
	}
	m.input.Reset()
	return m.submit(line)
}

func isQuit(line string) bool { return line == ":q" || line == ":quit" || line == ":exit" }

// submit runs a line: a `:` command or a turn.
func (m *Model) submit(line string) tea.Cmd {
	m.hist.add(line)
	echo := m.println(m.th.prompt.Render(Prompt) + m.mask(line))
	if isQuit(line) {
		return tea.Sequence(echo, m.quit())
	}
	switch line {
	case ":help", "?":
		return tea.Sequence(echo, m.println(m.help()))
	case ":intents", ":state":
		return tea.Sequence(echo, m.println(m.describe()))
	case ":world":
		if rd, ok := m.cfg.Driver.(WorldReader); ok {
			m.world = &worldView{world: rd.World(), open: map[string]bool{}}
			return echo
		}
	}
	if word, note, _ := strings.Cut(line, " "); word == ":annotate" {
		turn, err := annotateLine(m.status.View, strings.TrimSpace(note))
		if err != nil {
			return tea.Sequence(echo, m.println(m.th.err.Render(err.Error())))
		}
		line = turn
	}
	if strings.HasPrefix(line, ":") {
		word, _, _ := strings.Cut(line, " ")
		if !slices.Contains(m.cfg.Commands, word) {
			return tea.Sequence(echo, m.println(m.th.err.Render(unknownCommand(word, m.commands()))))
		}
	}
	d := m.cfg.Driver
	return tea.Sequence(echo, m.run(func(ctx context.Context) Result { return d.Do(ctx, line) }))
}

// annotateLine is the turn an annotation of the view's media sends: the
// intent of the first media element with annotate_intent:, the note in
// its feedback slot.
func annotateLine(view []orchestrator.ViewElement, note string) (string, error) {
	for _, el := range view {
		if el.Kind == "media" && el.Media != nil && el.Media.AnnotateIntent != "" {
			if note == "" {
				return "", fmt.Errorf(":annotate needs a note: :annotate <what to change>")
			}
			return el.Media.AnnotateIntent + " " + el.Media.AnnotateSlot + "=" + quoteValue(note), nil
		}
	}
	return "", fmt.Errorf(":annotate: the view shows no media element that takes annotations (annotate_intent:)")
}

func (m *Model) commands() []string {
	return append(builtinCommands(), m.cfg.Commands...)
}

// has reports whether the driver offers a `:` command.
func (m *Model) has(cmd string) bool { return slices.Contains(m.cfg.Commands, cmd) }

// unknownCommand is the text every front end gives an unknown `:` word.
func unknownCommand(word string, cmds []string) string { return driver.UnknownCommand(word, cmds) }

// browse steps through the history (older when up).
func (m *Model) browse(older bool) {
	if v, ok := m.hist.step(older, m.input.Value()); ok {
		m.input.SetValue(v)
		m.input.CursorEnd()
	}
}

func (m *Model) help() string {
	h := `Type an intent and its slots (intent key=value key2="two words"), or say what you want.
:intents   what this state accepts     :world   the world: view, open, edit
:state     where the story is          :quit    leave (also Ctrl-D on an empty line)
Enter      sends the line; on an empty line, takes the picked choice (a form fills the line)
Tab        takes the faint suggestion: the intent, slot key or value, or a line of the history
Up/Down    the history (also Ctrl-P/Ctrl-N), or the items of a choice picker
Space      ticks an item of a multi choice, on an empty line
Esc        the menu: intents, world, reload, help, quit
PgUp/PgDn  scroll the transcript
Ctrl-C     cancels the running call; a second one in a row quits`
	if m.has(":back") {
		h += "\n:back      return to the previous room"
	}
	if m.cfg.Help != "" {
		h += "\n" + m.cfg.Help
	}
	return h
}

// footer is the room's status line under the input: its footer:
// rendered, or the render error.
func (m *Model) footer() string {
	if m.status.FooterErr != nil {
		return m.th.err.Render("footer: " + m.mask(m.status.FooterErr.Error()))
	}
	if m.status.Footer == "" {
		return ""
	}
	return m.th.hint.Render(m.mask(strings.TrimRight(m.status.Footer, "\n")))
}

// spinnerLine: the spinner, the agent at work and the elapsed time.
func (m *Model) spinnerLine() string {
	what, since := "working", m.turnStart
	if n := len(m.calls); n > 0 {
		c := m.calls[n-1]
		since = c.start
		agent := c.Agent
		if agent == "" {
			agent = "agent"
		}
		what = agent + " " + c.Verb
		if c.Purpose == "route" {
			what = "routing with " + agent
		}
	}
	el := m.clk.Now().Sub(since).Truncate(time.Second)
	return fmt.Sprintf("%s %s · %s  (Ctrl-C cancels)", m.spin.View(), what, el)
}

// describe is the state line and the intents it accepts.
func (m *Model) describe() string {
	var b strings.Builder
	b.WriteString(m.th.state.Render("[" + m.status.State + "]"))
	if m.status.Description != "" {
		b.WriteString(" " + m.mask(m.status.Description))
	}
	if len(m.status.Relevant) > 0 {
		b.WriteString(m.th.hint.Render("  " + m.mask(strings.Join(m.status.Relevant, " "))))
	}
	for _, in := range m.status.Intents {
		b.WriteString("\n  " + m.th.intent.Render(in.Name))
		var slots []string
		for _, sl := range in.Slots {
			s := sl.Name + "=<" + orDefault(sl.Type, "string") + ">"
			if len(sl.Values) > 0 {
				s = sl.Name + "=" + strings.Join(sl.Values, "|")
			}
			if !sl.Required {
				s = "[" + s + "]"
			}
			slots = append(slots, s)
		}
		if len(slots) > 0 {
			b.WriteString(" " + strings.Join(slots, " "))
		}
		if in.Description != "" {
			b.WriteString(m.th.hint.Render("  — " + m.mask(in.Description)))
		}
	}
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Code is the exit code the UI ended with.
func (m *Model) Code() int { return m.code }

// routeLine says how a free-text turn was routed: the tier, the intent
// and slots it gave, and the confidence.
func routeLine(r Route) string {
	if r.Intent == "" {
		return fmt.Sprintf("↳ %s: no intent (confidence %.2f)", r.Tier, r.Confidence)
	}
	s := "↳ " + r.Tier + " → " + r.Intent
	for _, k := range slices.Sorted(maps.Keys(r.Slots)) {
		s += " " + k + "=" + quoteValue(r.Slots[k])
	}
	return s + fmt.Sprintf(" (confidence %.2f)", r.Confidence)
}
