package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/view/tui"
)

// tuiPatience bounds every wait of the terminal UI tests: far above what
// a step needs on a loaded machine, so a lost event fails the test saying
// what was awaited instead of hanging the package until its timeout.
const tuiPatience = 30 * time.Second

// screen collects what a program writes to its terminal, escape sequences
// removed.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]`)

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// serve reads the terminal's output until it closes, answering the
// cursor position requests a real terminal answers (termenv asks for one
// when it looks for the background color, and waits 5s for the answer).
func (s *screen) serve(tty io.ReadWriter) {
	b := make([]byte, 4096)
	for {
		n, err := tty.Read(b)
		if n > 0 {
			_, _ = s.Write(b[:n])
			if bytes.Contains(b[:n], []byte("\x1b[6n")) {
				_, _ = tty.Write([]byte("\x1b[1;1R"))
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ansi.ReplaceAllString(s.buf.String(), "")
}

// waitFor waits, at most a bound far above what the step needs, until
// the screen shows every want.
func (s *screen) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(tuiPatience)
	for {
		txt := s.text()
		missing := ""
		for _, w := range want {
			if !strings.Contains(txt, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q; it shows:\n%s", missing, txt)
		}
		time.Sleep(20 * time.Millisecond) // polls the screen: the program signals nothing else
	}
}

// await waits for ch to close, at most tuiPatience, failing with what was
// awaited and what the terminal shows.
func (s *screen) await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(tuiPatience):
		t.Fatalf("%s within %s; the terminal shows:\n%s", what, tuiPatience, s.text())
	}
}

// openRelease opens the fifo the agent waits on for writing, which
// blocks until the agent opens it; if it does not within tuiPatience the
// test opens the reading end itself, so the open returns, and fails.
func openRelease(t *testing.T, scr *screen, fifo string) *os.File {
	t.Helper()
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o.f
	case <-time.After(tuiPatience):
		if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			defer r.Close()
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}
		t.Fatalf("the agent did not open %s within %s; the terminal shows:\n%s", fifo, tuiPatience, scr.text())
		return nil
	}
}

// TestTUIOnAPseudoTerminal runs `kitsoki run` on a real pseudo-terminal:
// free text is routed by a subprocess agent whose forecast call waits
// until the test releases it, so the spinner is on the screen during the
// call; the typed view shows after it; :quit exits 0 and says where the
// trace is.
func TestTUIOnAPseudoTerminal(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"app.yaml", "slow.sh", "forecast.schema.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "tui", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(dir, "release.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	tracePath := filepath.Join(dir, "run.jsonl")
	cmd := exec.Command(os.Args[0], "run", "--trace", tracePath, "app.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KITSOKI_TEST_AS_CLI=1", "XDG_STATE_HOME="+state, "TERM=xterm-256color")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	scr := &screen{}
	copied := make(chan struct{})
	go func() { scr.serve(tty); close(copied) }()
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	scr.waitFor(t, "[desk] The weather desk.", "forecast city=<string>")
	if _, err := tty.Write([]byte("show me the forecast for Tokyo\r")); err != nil {
		t.Fatal(err)
	}
	scr.waitFor(t, "agent.slow decide ·", "(Ctrl-C cancels)")
	if strings.Contains(scr.text(), "sunny") {
		t.Fatal("the view showed before the agent answered")
	}
	release := openRelease(t, scr, fifo) // the agent is waiting on it
	if _, err := release.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	release.Close()
	scr.waitFor(t, "Forecast", "Tokyo", "sunny", "[shown] A forecast is on the screen.")
	if _, err := tty.Write([]byte(":quit\r")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		// :quit before a terminal state leaves the session unfinished:
		// exit 6, as the plain prompt's :quit and Ctrl-D exit (issue 30:
		// one command set, one exit code for both).
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) || ee.ExitCode() != exitIncomplete {
			t.Fatalf("kitsoki run ended with %v, want exit %d; the terminal shows:\n%s", waitErr, exitIncomplete, scr.text())
		}
	case <-time.After(tuiPatience):
		t.Fatalf(":quit did not end the run within %s; the terminal shows:\n%s", tuiPatience, scr.text())
	}
	scr.await(t, copied, "the terminal did not close after kitsoki exited")
	scr.waitFor(t, "kitsoki: session ended; trace "+tracePath)

	evs, err := trace.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	var tiers []string
	for i := range evs {
		if evs[i].Kind == trace.KindTurnRouted {
			var p trace.TurnRouted
			if err := trace.Decode(&evs[i], &p); err != nil {
				t.Fatal(err)
			}
			tiers = append(tiers, p.Tier+":"+p.Intent)
		}
	}
	if got := strings.Join(tiers, ","); got != "router:forecast" {
		t.Errorf("routed turns %q, want router:forecast", got)
	}
	t.Setenv("XDG_STATE_HOME", state)
	histFile, err := tui.HistoryFile(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	hist, err := os.ReadFile(histFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(hist); got != "show me the forecast for Tokyo\n:quit\n" {
		t.Errorf("history %q", got)
	}
}

// TestNoTUIKeepsTheLinePrompt: with --no-tui a terminal gets the plain
// prompt, whose :quit exits 6 as before.
func TestNoTUIKeepsTheLinePrompt(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--no-tui", "--trace", filepath.Join(dir, "t.jsonl"), "../../stories/hello/app.yaml")
	cmd.Env = append(os.Environ(), "KITSOKI_TEST_AS_CLI=1", "XDG_STATE_HOME="+dir, "TERM=xterm-256color")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	scr := &screen{}
	go scr.serve(tty)
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	scr.waitFor(t, "[lobby] Nobody is being greeted.", "> ")
	if _, err := tty.Write([]byte(":quit\r")); err != nil {
		t.Fatal(err)
	}
	scr.await(t, exited, ":quit did not end the run")
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) || ee.ExitCode() != exitIncomplete {
		t.Fatalf("exit %v, want %d; the terminal shows:\n%s", waitErr, exitIncomplete, scr.text())
	}
	if strings.Contains(scr.text(), "session ended") {
		t.Errorf("the line prompt printed the UI's closing line:\n%s", scr.text())
	}
}

// The UI's driver prints what the line protocol prints (the view aside),
// reports the state for the live area, and ends the UI at a terminal
// state.
func TestTUIDriver(t *testing.T) {
	st, err := story.Load(hello)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(st, runtime.Config{Agents: runtime.Agents{Live: true}, Session: &runtime.Session{ID: "s"},
		Trace: runtime.Trace{Path: filepath.Join(t.TempDir(), "t.jsonl")}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	d := &tui.ConsoleDriver{Console: &driver.Console{D: localDriver(rt), Extra: (*pluginRuntime)(nil), TUIView: true}}
	d.Console.Out, d.Console.Err = d.Writer(false), d.Writer(true)
	ctx := t.Context()

	if res := d.Start(ctx); !res.View || res.Done || res.Fatal || len(res.Lines) != 0 {
		t.Errorf("Start = %+v", res)
	}
	status := d.Status()
	if status.State != "lobby" || status.Description != "Nobody is being greeted." {
		t.Errorf("status %q %q", status.State, status.Description)
	}
	wantIntents := []tui.Intent{
		{Name: "bye", Description: "Leave."},
		{Name: "greet", Description: "Greet: Ask the greeter to greet someone.", Slots: []tui.Slot{
			{Name: "name", Type: "string", Required: true}, {Name: "style", Type: "enum", Values: []string{"casual", "formal"}}}},
	}
	if d := cmp.Diff(wantIntents, status.Intents); d != "" {
		t.Errorf("intents (-want +got):\n%s", d)
	}
	if len(status.View) != 1 || status.View[0].Text != "Greeted so far: 0. Try: greet name=Ada style=formal" {
		t.Errorf("view %+v", status.View)
	}

	steps := []struct {
		line  string
		want  []tui.Line
		view  bool
		done  bool
		state string
	}{
		{"bye", []tui.Line{{Err: true, Text: "GUARD_FAILED: no transition matched for intent \"bye\" in state \"lobby\""}, {Err: true, Text: "hint: Greet somebody before you leave."}}, false, false, "lobby"},
		{"greet name=Ada style=formal", []tui.Line{{Text: "Good day, Ada. It is a pleasure to make your acquaintance."}}, true, false, "greeted"},
		{":world", nil, false, false, "greeted"},
		{":reload plugins", []tui.Line{{Err: true, Text: "kitsoki: no plugin contributes agent tools in this run"}}, false, false, "greeted"},
		{":reload", []tui.Line{{Err: true, Text: "kitsoki: this run cannot reload its story"}}, false, false, "greeted"},
		{"bye", nil, true, true, "farewell"},
	}
	for _, s := range steps {
		res := d.Do(ctx, s.line)
		if s.line == ":world" {
			if len(res.Lines) == 0 || res.Lines[0].Text != "{" {
				t.Errorf(":world printed %+v", res.Lines)
			}
			continue
		}
		if diff := cmp.Diff(s.want, res.Lines); diff != "" {
			t.Errorf("%s: lines (-want +got):\n%s", s.line, diff)
		}
		if res.View != s.view || res.Done != s.done || res.Fatal {
			t.Errorf("%s: %+v", s.line, res)
		}
		if got := d.Status().State; got != s.state {
			t.Errorf("%s: state %q, want %q", s.line, got, s.state)
		}
	}
}
