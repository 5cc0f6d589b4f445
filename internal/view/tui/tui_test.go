package tui

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// patience bounds every wait of these tests: far above what a step needs
// even on a loaded machine, so that a lost event fails the test with what
// was awaited instead of hanging the package until its timeout.
const patience = 30 * time.Second

// fakeDriver is a session for the UI: Do records the line and answers
// with reply, or with slow when the line is "slow" (it reports a call to
// the UI and waits for release or the turn's context). entered, when set,
// gets each line Do is called with.
type fakeDriver struct {
	ui      *UI
	mu      sync.Mutex
	starts  int
	lines   []string
	status  Status
	release chan struct{}
	entered chan string
	reply   func(ctx context.Context, line string) Result
}

func (d *fakeDriver) Start(context.Context) Result {
	d.mu.Lock()
	d.starts++
	d.mu.Unlock()
	return Result{Lines: []Line{{Text: "welcome"}}, View: true}
}

func (d *fakeDriver) Do(ctx context.Context, line string) Result {
	d.mu.Lock()
	d.lines = append(d.lines, line)
	d.mu.Unlock()
	if d.entered != nil {
		select {
		case d.entered <- line:
		case <-ctx.Done():
		}
	}
	if line == "slow" {
		d.ui.Notify(CallStarted{Agent: "agent.slow", Verb: "decide"})
		defer d.ui.Notify(CallEnded{})
		select {
		case <-d.release:
			return Result{Lines: []Line{{Text: "the slow agent answered"}}, View: true}
		case <-ctx.Done():
			return Result{Lines: []Line{{Err: true, Text: "agent error: deadline or cancel"}}}
		}
	}
	if d.reply != nil {
		return d.reply(ctx, line)
	}
	return Result{Lines: []Line{{Text: "did " + line}}, View: true}
}

func (d *fakeDriver) Status() Status { return d.status }

func (d *fakeDriver) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.lines...)
}

func (d *fakeDriver) started() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.starts
}

var lobby = Status{
	State: "lobby", Description: "Nobody is being greeted.",
	Intents: []Intent{
		{Name: "bye", Description: "Leave."},
		{Name: "greet", Description: "Greet someone.", Slots: []Slot{
			{Name: "name", Type: "string", Required: true},
			{Name: "style", Type: "enum", Values: []string{"casual", "formal"}},
		}},
		{Name: "grow"},
	},
	View: []orchestrator.ViewElement{{Kind: "template", Text: "Greeted so far: 0", Body: "Greeted so far: 0"}},
}

// newTest runs the UI's model in a test program. When the test ends the
// program is quit and awaited, then the UI is ended as Run ends it: the
// turn in flight is cancelled and awaited, and no goroutine of the UI is
// left waiting for events.
func newTest(t *testing.T, d *fakeDriver, cfg Config) (*UI, *teatest.TestModel) {
	t.Helper()
	cfg.Driver = d
	u := New(cfg)
	d.ui = u
	ctx, cancel := context.WithCancel(context.Background())
	u.model.ctx = ctx
	tm := teatest.NewTestModel(t, u.Model(), teatest.WithInitialTermSize(100, 30))
	t.Cleanup(func() {
		_ = tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(patience), teatest.WithTimeoutFn(func(tb testing.TB) {
			tb.Errorf("the UI's program had not ended %s after Quit", patience)
		}))
		ended := make(chan struct{})
		go func() { u.end(cancel); close(ended) }()
		select {
		case <-ended:
		case <-time.After(patience):
			t.Errorf("the UI's turn in flight had not returned %s after it was cancelled", patience)
		}
	})
	return u, tm
}

// waitOut waits until the output the program wrote since the last
// waitOut shows every want, and fails saying which one it never showed.
func waitOut(t *testing.T, tm *teatest.TestModel, want ...string) {
	t.Helper()
	var got bytes.Buffer
	deadline := time.Now().Add(patience)
	for {
		if _, err := got.ReadFrom(tm.Output()); err != nil {
			t.Fatalf("reading the UI's output: %v", err)
		}
		missing := ""
		for _, w := range want {
			if !bytes.Contains(got.Bytes(), []byte(w)) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the UI did not show %q within %s; it showed:\n%s", missing, patience, got.String())
		}
		time.Sleep(10 * time.Millisecond) // polls the output: the program signals nothing else
	}
}

func enter(tm *teatest.TestModel, s string) {
	tm.Type(s)
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
}

// finalCode waits for the program to end and returns the UI's exit code.
func finalCode(t *testing.T, tm *teatest.TestModel) int {
	t.Helper()
	return tm.FinalModel(t, waitEnd(t)...).(*Model).Code()
}

func waitEnd(t *testing.T) []teatest.FinalOpt {
	return []teatest.FinalOpt{teatest.WithFinalTimeout(patience), teatest.WithTimeoutFn(func(testing.TB) {
		t.Fatalf("the UI had not ended %s after it was told to", patience)
	})}
}

func TestStartShowsStateIntentsAndView(t *testing.T) {
	d := &fakeDriver{status: lobby}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "welcome", "Greeted so far: 0", "[lobby] Nobody is being greeted.",
		"greet name=<string> [style=casual|formal]", "— Greet someone.")
	enter(tm, ":quit")
	if code := finalCode(t, tm); code != ExitQuit {
		t.Errorf("exit code %d, want %d", code, ExitQuit)
	}
}

func TestTurnShowsResultAndView(t *testing.T) {
	d := &fakeDriver{status: lobby}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "[lobby]")
	enter(tm, "greet name=Ada")
	waitOut(t, tm, "> greet name=Ada", "did greet name=Ada")
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlD})
	if code := finalCode(t, tm); code != ExitQuit {
		t.Errorf("Ctrl-D: exit code %d, want %d", code, ExitQuit)
	}
	if diff := cmp.Diff([]string{"greet name=Ada"}, d.got()); diff != "" {
		t.Errorf("lines the driver got (-want +got):\n%s", diff)
	}
}

func TestSpinnerDuringSlowCallThenResult(t *testing.T) {
	d := &fakeDriver{status: lobby, release: make(chan struct{})}
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	_, tm := newTest(t, d, Config{Clock: clk})
	waitOut(t, tm, "[lobby]")
	enter(tm, "slow")
	waitOut(t, tm, "agent.slow decide · 0s  (Ctrl-C cancels)")
	clk.Advance(75 * time.Second) // the spinner's ticks redraw the line
	waitOut(t, tm, "agent.slow decide · 1m15s  (Ctrl-C cancels)")
	close(d.release)
	waitOut(t, tm, "the slow agent answered")
	enter(tm, ":quit")
	if code := finalCode(t, tm); code != ExitQuit {
		t.Errorf("exit code %d, want %d", code, ExitQuit)
	}
}

func TestRouterCallSpinnerSaysRouting(t *testing.T) {
	d := &fakeDriver{status: lobby}
	u, tm := newTest(t, d, Config{})
	waitOut(t, tm, "[lobby]")
	block := make(chan struct{})
	d.reply = func(ctx context.Context, line string) Result {
		u.Notify(CallStarted{Agent: "agent.router", Verb: "decide", Purpose: "route"})
		<-block
		u.Notify(CallEnded{})
		return Result{Lines: []Line{{Text: "routed"}}}
	}
	enter(tm, "say hello to Ada")
	waitOut(t, tm, "routing with agent.router ·")
	close(block)
	waitOut(t, tm, "routed")
	enter(tm, ":quit")
	finalCode(t, tm)
}

func TestCtrlCCancelsTheCallThenQuits(t *testing.T) {
	d := &fakeDriver{status: lobby, release: make(chan struct{})}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "[lobby]")
	enter(tm, "slow")
	waitOut(t, tm, "agent.slow decide")
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	waitOut(t, tm, "agent error: deadline or cancel", "(cancelled)", "(Ctrl-C again quits")
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	if code := finalCode(t, tm); code != ExitQuit {
		t.Errorf("exit code %d, want %d", code, ExitQuit)
	}
}

func TestCtrlCOnceKeepsTheSessionGoing(t *testing.T) {
	d := &fakeDriver{status: lobby}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "[lobby]")
	tm.Type("half typed")
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	waitOut(t, tm, "(Ctrl-C again quits; :quit leaves)")
	enter(tm, "bye") // another key in between: the next Ctrl-C is a first one again
	waitOut(t, tm, "did bye")
	enter(tm, ":quit")
	finalCode(t, tm)
	if diff := cmp.Diff([]string{"bye"}, d.got()); diff != "" {
		t.Errorf("lines the driver got (-want +got):\n%s", diff)
	}
}

func TestDoneAndFatalEndTheUI(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  Result
		code int
	}{
		{"terminal state", Result{Lines: []Line{{Text: "farewell"}}, View: true, Done: true}, 0},
		{"trace failure", Result{Lines: []Line{{Err: true, Text: "kitsoki: trace: disk full"}}, Fatal: true, Code: 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDriver{status: lobby, reply: func(context.Context, string) Result { return tc.res }}
			_, tm := newTest(t, d, Config{})
			waitOut(t, tm, "[lobby]")
			enter(tm, "bye")
			final := tm.FinalModel(t, waitEnd(t)...).(*Model)
			if code := final.Code(); code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			// The last lines are in the transcript Run prints when the
			// alternate screen is gone.
			if out, want := final.log.text(100), tc.res.Lines[0].Text; !strings.Contains(out, want) {
				t.Errorf("transcript lacks %q:\n%s", want, out)
			}
		})
	}
}

func readAll(t *testing.T, tm *teatest.TestModel) string {
	t.Helper()
	var b bytes.Buffer
	_, _ = b.ReadFrom(tm.FinalOutput(t, waitEnd(t)...))
	return b.String()
}

func TestCommands(t *testing.T) {
	d := &fakeDriver{status: lobby}
	_, tm := newTest(t, d, Config{Commands: []string{":world"}, Help: ":world   the world"})
	waitOut(t, tm, "[lobby]")
	enter(tm, ":wrold")
	waitOut(t, tm, "unknown command :wrold (did you mean :world?); :help lists the commands")
	enter(tm, ":help")
	waitOut(t, tm, "Tab        takes the faint suggestion", ":world   the world")
	enter(tm, ":world")
	waitOut(t, tm, "did :world")
	enter(tm, ":quit")
	finalCode(t, tm)
	if diff := cmp.Diff([]string{":world"}, d.got()); diff != "" {
		t.Errorf("lines the driver got (-want +got):\n%s", diff)
	}
}

func TestAgentQuestionIsAnsweredAtTheInput(t *testing.T) {
	d := &fakeDriver{status: lobby}
	u, tm := newTest(t, d, Config{})
	d.reply = func(ctx context.Context, line string) Result {
		a, err := u.Ask(ctx, "Which city?")
		if err != nil {
			return Result{Lines: []Line{{Err: true, Text: err.Error()}}}
		}
		return Result{Lines: []Line{{Text: "answer was " + a}}}
	}
	waitOut(t, tm, "[lobby]")
	enter(tm, "forecast")
	waitOut(t, tm, "[agent asks] Which city?")
	enter(tm, "Tokyo")
	waitOut(t, tm, "answer> Tokyo", "answer was Tokyo")
	enter(tm, ":quit")
	finalCode(t, tm)
}

func TestOutputAndMasking(t *testing.T) {
	d := &fakeDriver{status: lobby, reply: func(context.Context, string) Result {
		return Result{Lines: []Line{{Text: "token is s3cr3t-value-xyz"}}}
	}}
	mask := func(s string) string { return strings.ReplaceAll(s, "s3cr3t-value-xyz", "REDACTED") }
	u, tm := newTest(t, d, Config{Mask: mask})
	waitOut(t, tm, "[lobby]")
	u.Notify(Output{Line: Line{Err: true, Text: "level=WARN msg=plugin says s3cr3t-value-xyz"}})
	waitOut(t, tm, "level=WARN msg=plugin says REDACTED")
	enter(tm, "show")
	waitOut(t, tm, "token is REDACTED")
	enter(tm, ":quit")
	if out := readAll(t, tm); strings.Contains(out, "s3cr3t") {
		t.Errorf("a secret was shown:\n%s", out)
	}
}

func TestTypedViewsRender(t *testing.T) {
	st := lobby
	st.View = []orchestrator.ViewElement{
		{Kind: "heading", Body: "Forecast"},
		{Kind: "kv", Pairs: []orchestrator.ViewPair{{Key: "city", Value: "Tokyo"}, {Key: "temperature", Value: "21C"}}},
		{Kind: "list", Items: []orchestrator.ViewItem{{Label: "sunny", Hint: "morning"}, {Label: "rain"}}},
		{Kind: "code", Body: "print('hi')"},
		{Kind: "media", Media: &orchestrator.ViewMedia{Handle: "map.png", Kind: "image", Caption: "the map"}},
	}
	d := &fakeDriver{status: st}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "Forecast", "city         Tokyo", "temperature  21C", "• sunny  morning", "• rain",
		"│ print('hi') │", "[image] the map (map.png)")
	enter(tm, ":quit")
	finalCode(t, tm)
}

func TestChoicePicker(t *testing.T) {
	st := lobby
	st.View = []orchestrator.ViewElement{{Kind: "choice", Text: "Pick a size\n1. Small (order)\n2. Large (order)",
		Choice: &orchestrator.ViewChoice{Mode: "single", Prompt: "Pick a size"},
		Items: []orchestrator.ViewItem{
			{Label: "Small", Intent: "order", Slots: map[string]any{"size": "small"}},
			{Label: "Large", Intent: "order", Slots: map[string]any{"size": "large", "note": "two words"}},
		}}}
	d := &fakeDriver{status: st}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "❯ Small")
	tm.Send(tea.KeyMsg{Type: tea.KeyDown})
	waitOut(t, tm, "❯ Large")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	waitOut(t, tm, `did order note="two words" size=large`)
	enter(tm, ":quit")
	finalCode(t, tm)
}

// model drives the model's Update directly, without a program.
func model(t *testing.T, st Status, cfg Config) *Model {
	t.Helper()
	cfg.Driver = &fakeDriver{status: st}
	m := New(cfg).Model()
	m.status = st
	return m
}

func typeKeys(m *Model, s string) {
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)})
}

func TestTabCompletion(t *testing.T) {
	for _, tc := range []struct {
		typed, want, hint string
	}{
		{"gre", "greet ", ""},
		{"g", "gr", "greet  grow"},
		{"b", "bye", ""},
		{"greet ", "greet name=", "name=  style="}, // the required slot first
		{"greet na", "greet name=", ""},
		{"greet name=Ada ", "greet name=Ada style=", ""},
		{"greet name=Ada style=f", "greet name=Ada style=formal ", ""},
		{"greet name=Ada style=", "greet name=Ada style=", "style=casual  style=formal"},
		{":q", ":quit", ""},
		{"fly ", "fly ", "no completion: fly is not an intent of this state"},
		{"x", "x", "no completion for x"},
		{"greet name=", "greet name=", "no completion for the value of name"},
	} {
		t.Run(tc.typed, func(t *testing.T) {
			m := model(t, lobby, Config{})
			typeKeys(m, tc.typed)
			m.Update(tea.KeyMsg{Type: tea.KeyTab})
			if got := m.input.Value(); got != tc.want {
				t.Errorf("input %q, want %q", got, tc.want)
			}
			if m.hint != tc.hint {
				t.Errorf("hint %q, want %q", m.hint, tc.hint)
			}
		})
	}
}

func TestHistoryPersistsPerStoryMasked(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	storyDir := t.TempDir()
	path, err := HistoryFile(filepath.Join(storyDir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, filepath.Join(state, "kitsoki", "history")+string(filepath.Separator)) {
		t.Errorf("history file %s is not under the state dir %s", path, state)
	}
	other, _ := HistoryFile(filepath.Join(t.TempDir(), "app.yaml"))
	if other == path {
		t.Errorf("two stories share the history file %s", path)
	}
	mask := func(s string) string { return strings.ReplaceAll(s, "hunter2-long-secret", "REDACTED") }
	m := model(t, lobby, Config{History: path, Mask: mask})
	for _, l := range []string{"greet name=Ada", "login password=hunter2-long-secret", "bye"} {
		typeKeys(m, l)
		m.Update(tea.KeyMsg{Type: tea.KeyEnter})
		m.busy = false // the fake turn is not run here
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("greet name=Ada\nlogin password=REDACTED\nbye\n", string(b)); diff != "" {
		t.Errorf("history file (-want +got):\n%s", diff)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v, want 0600", fi.Mode().Perm())
	}

	// A new run of the same story recalls the lines, newest first.
	m2 := model(t, lobby, Config{History: path})
	typeKeys(m2, "draft")
	var seen []string
	for range 4 {
		m2.Update(tea.KeyMsg{Type: tea.KeyUp})
		seen = append(seen, m2.input.Value())
	}
	m2.Update(tea.KeyMsg{Type: tea.KeyDown})
	m2.Update(tea.KeyMsg{Type: tea.KeyDown})
	m2.Update(tea.KeyMsg{Type: tea.KeyDown})
	seen = append(seen, m2.input.Value())
	want := []string{"bye", "login password=REDACTED", "greet name=Ada", "greet name=Ada", "draft"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("recalled lines (-want +got):\n%s", diff)
	}
}

func TestHistoryKeepsTheLastLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h")
	var b strings.Builder
	for i := range MaxHistory + 5 {
		b.WriteString(strings.Repeat("x", i%7+1) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	h := loadHistory(path, nil)
	if len(h.lines) != MaxHistory {
		t.Fatalf("%d lines kept, want %d", len(h.lines), MaxHistory)
	}
	got, _ := os.ReadFile(path)
	if n := strings.Count(string(got), "\n"); n != MaxHistory {
		t.Errorf("history file has %d lines after trimming, want %d", n, MaxHistory)
	}
}

// runUI runs u on a pipe the test types into; the pipe is closed when
// the test ends, which ends the program's reading from it.
func runUI(t *testing.T, ctx context.Context, u *UI) (io.Writer, <-chan runResult) {
	t.Helper()
	in, w := io.Pipe()
	t.Cleanup(func() { _ = w.Close() })
	done := make(chan runResult, 1)
	go func() {
		code, err := u.Run(ctx, in, io.Discard)
		done <- runResult{code, err}
	}()
	return w, done
}

type runResult struct {
	code int
	err  error
}

func awaitRun(t *testing.T, done <-chan runResult, what string) runResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(patience):
		t.Fatalf("Run had not returned %s after %s", patience, what)
		return runResult{}
	}
}

// Run ends with ExitQuit (6) on :quit typed on its input, and with
// ErrInterrupted when the run's context ends; either way only after the
// turn in flight has returned.
func TestRunQuitAndInterrupt(t *testing.T) {
	t.Run("quit", func(t *testing.T) {
		d := &fakeDriver{status: lobby}
		u := New(Config{Driver: d})
		d.ui = u
		w, done := runUI(t, context.Background(), u)
		if _, err := w.Write([]byte(":quit\r")); err != nil {
			t.Fatal(err)
		}
		if r := awaitRun(t, done, ":quit"); r.code != ExitQuit || r.err != nil {
			t.Errorf("Run = %d, %v; want %d, nil", r.code, r.err, ExitQuit)
		}
	})
	t.Run("quit with a QuitCode", func(t *testing.T) {
		d := &fakeDriver{status: lobby}
		u := New(Config{Driver: d, QuitCode: 6})
		d.ui = u
		w, done := runUI(t, context.Background(), u)
		if _, err := w.Write([]byte(":quit\r")); err != nil {
			t.Fatal(err)
		}
		if r := awaitRun(t, done, ":quit"); r.code != 6 || r.err != nil {
			t.Errorf("Run = %d, %v; want 6 (Config.QuitCode), nil", r.code, r.err)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		d := &fakeDriver{status: lobby, release: make(chan struct{}), entered: make(chan string, 1)}
		u := New(Config{Driver: d})
		d.ui = u
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w, done := runUI(t, ctx, u)
		if _, err := w.Write([]byte("slow\r")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-d.entered: // the slow turn is in flight
		case <-time.After(patience):
			t.Fatalf("the line typed was not run within %s", patience)
		}
		cancel()
		if r := awaitRun(t, done, "its context ended"); r.code != ExitInterrupted || !errors.Is(r.err, ErrInterrupted) {
			t.Errorf("Run = %d, %v; want %d, %v", r.code, r.err, ExitInterrupted, ErrInterrupted)
		}
	})
}

// A program that ends drops the commands it has not started, Init's
// among them when :quit (or the run's end) comes before it (as happened
// under load): the UI's end must not wait for a turn whose command never
// ran, and a command run after the end must not call the driver.
func TestEndDoesNotWaitForATurnThatNeverStarted(t *testing.T) {
	d := &fakeDriver{status: lobby}
	u := New(Config{Driver: d})
	d.ui = u
	initCmd := u.Model().Init() // issued, then dropped by the ending program
	ended := make(chan struct{})
	go func() { u.end(func() {}); close(ended) }()
	select {
	case <-ended:
	case <-time.After(patience):
		t.Fatalf("the UI's end waited %s for a turn whose command never ran", patience)
	}
	runCmd(initCmd) // late: after the end
	if n := d.started(); n != 0 {
		t.Errorf("the driver's Start ran %d time(s) after the UI ended", n)
	}
}

// runCmd runs a command and the commands of a batch it returns.
func runCmd(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	if b, ok := cmd().(tea.BatchMsg); ok {
		for _, c := range b {
			runCmd(c)
		}
	}
}

// A line entered while a turn runs is queued and runs when it ends; a
// cancelled turn hands it back to the input instead.
func TestLineEnteredDuringATurnIsQueued(t *testing.T) {
	d := &fakeDriver{status: lobby, release: make(chan struct{})}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "[lobby]")
	enter(tm, "slow")
	waitOut(t, tm, "agent.slow decide")
	enter(tm, "bye")
	waitOut(t, tm, "queued: bye (runs when this turn ends; Ctrl-C cancels the call)")
	enter(tm, "again")
	waitOut(t, tm, "a line is already queued; Ctrl-C cancels the call")
	close(d.release)
	waitOut(t, tm, "the slow agent answered", "did bye")
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlU}) // "again" stayed in the input
	enter(tm, ":quit")
	finalCode(t, tm)
	if diff := cmp.Diff([]string{"slow", "bye"}, d.got()); diff != "" {
		t.Errorf("lines the driver got (-want +got):\n%s", diff)
	}
}

func TestMultiChoicePicker(t *testing.T) {
	st := lobby
	st.View = []orchestrator.ViewElement{{Kind: "choice", Text: "Toppings",
		Choice: &orchestrator.ViewChoice{Mode: "multi", Prompt: "Toppings", Intent: "order", Slot: "toppings", Min: 1, Max: 2},
		Items:  []orchestrator.ViewItem{{Label: "Cheese", Value: "cheese"}, {Label: "Olives", Value: "olives"}, {Label: "Basil", Value: "basil"}}}}
	d := &fakeDriver{status: st}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "❯ [ ] Cheese")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter}) // nothing ticked: refused with a hint
	waitOut(t, tm, "tick at least 1 item(s) with Space, then Enter")
	tm.Send(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
	tm.Send(tea.KeyMsg{Type: tea.KeyDown})
	tm.Send(tea.KeyMsg{Type: tea.KeyDown})
	tm.Send(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
	waitOut(t, tm, "[x] Basil")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	waitOut(t, tm, `did order toppings='["cheese","basil"]'`)
	enter(tm, ":quit")
	finalCode(t, tm)
}

func TestMultiChoiceMax(t *testing.T) {
	st := lobby
	st.View = []orchestrator.ViewElement{{Kind: "choice",
		Choice: &orchestrator.ViewChoice{Mode: "multi", Intent: "order", Slot: "t", Max: 1},
		Items:  []orchestrator.ViewItem{{Label: "A", Value: "a"}, {Label: "B", Value: "b"}}}}
	m := model(t, st, Config{})
	m.picker = newPicker(st.View)
	m.Update(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
	m.Update(tea.KeyMsg{Type: tea.KeyDown})
	m.Update(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if m.hint != "tick at most 1 item(s) (2 ticked)" {
		t.Errorf("hint %q", m.hint)
	}
	// Space with a typed line is a space, not a tick.
	typeKeys(m, "x")
	m.Update(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
	if m.input.Value() != "x " {
		t.Errorf("input %q, want %q", m.input.Value(), "x ")
	}
}

func TestFormChoiceFillsTheLine(t *testing.T) {
	st := lobby
	st.View = []orchestrator.ViewElement{{Kind: "choice",
		Choice: &orchestrator.ViewChoice{Mode: "form", Prompt: "Ship it", Intent: "ship", Fields: []orchestrator.ViewField{
			{Name: "env", Type: "enum", Default: "staging"}, {Name: "note", Type: "string", Hint: "why"}, {Name: "id", Readonly: true, Value: 7}}}}}
	m := model(t, st, Config{})
	m.picker = newPicker(st.View)
	if v := m.picker.view(func(s string) string { return s }, m.th); !strings.Contains(v, "env (enum) default staging") || !strings.Contains(v, "id = 7") {
		t.Errorf("form view:\n%s", v)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if got := m.input.Value(); got != "ship env=staging note=" {
		t.Errorf("input %q, want %q", got, "ship env=staging note=")
	}
}
