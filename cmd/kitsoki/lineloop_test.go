package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// outcome is what a fake turn returns.
type outcome struct {
	code int
	stop bool
}

// fakeDriver is a lineDriver that records what the loop asks of it and
// answers from its tables; what it prints names the call, so the tests
// see the order of the loop's and the driver's output.
type fakeDriver struct {
	out, errw bytes.Buffer
	calls     []string
	turns     map[string]outcome // by line; absent: exitOK, go on
	backs     []outcome          // one per :back, in order; absent: no history
	worldErr  error
	commands  map[string]bool
	skip      int // how many inputs the session already took
	skipCode  int // the code of the first skipped input (a mismatch)
	settled   outcome
	// cancel, when set, is called by a turn or back of the line
	// "interrupt" (as SIGINT ends the run's context mid-turn).
	cancel context.CancelFunc
}

func (f *fakeDriver) writers() (io.Writer, io.Writer) { return &f.out, &f.errw }

func (f *fakeDriver) describe(context.Context) {
	f.calls = append(f.calls, "describe")
	fmt.Fprintln(&f.out, "[room]")
}

func (f *fakeDriver) take(kind, line string) (int, bool) {
	f.calls = append(f.calls, kind+" "+line)
	fmt.Fprintf(&f.out, "%s: %s\n", kind, line)
	if line == "interrupt" && f.cancel != nil {
		f.cancel()
		return exitAgent, true
	}
	o := f.turns[line]
	return o.code, o.stop
}

func (f *fakeDriver) turn(_ context.Context, line string) (int, bool) { return f.take("turn", line) }
func (f *fakeDriver) say(_ context.Context, text string) (int, bool)  { return f.take("say", text) }

func (f *fakeDriver) back(context.Context) (int, bool, error) {
	f.calls = append(f.calls, "back")
	if len(f.backs) == 0 {
		return exitOK, false, orchestrator.ErrNoHistory
	}
	o := f.backs[0]
	f.backs = f.backs[1:]
	fmt.Fprintln(&f.out, "back")
	if o.code == -1 { // an interrupt during the back update (its call failed)
		f.cancel()
		return exitAgent, true, nil
	}
	return o.code, o.stop, nil
}

func (f *fakeDriver) readWorld(context.Context) (map[string]any, error) {
	f.calls = append(f.calls, "world")
	if f.worldErr != nil {
		return nil, f.worldErr
	}
	return map[string]any{"n": 1}, nil
}

func (f *fakeDriver) help() string { return "HELP" }

func (f *fakeDriver) command(_ context.Context, line string) bool {
	if !f.commands[line] {
		return false
	}
	f.calls = append(f.calls, "command "+line)
	return true
}

func (f *fakeDriver) skipInput(_ context.Context, line string) (bool, int) {
	if f.skip == 0 {
		return false, exitOK
	}
	f.skip--
	f.calls = append(f.calls, "skip "+line)
	code := f.skipCode
	f.skipCode = exitOK
	return true, code
}

func (f *fakeDriver) settle(context.Context) (int, bool) {
	f.calls = append(f.calls, "settle")
	return f.settled.code, f.settled.stop
}

func (f *fakeDriver) current() string       { return "room" }
func (f *fakeDriver) reloadRequested() bool { return false }

type loopCase struct {
	name     string
	input    string
	drv      fakeDriver
	code     int
	out, err string
	calls    []string
}

func (tc loopCase) check(t *testing.T, f *fakeDriver, code int) {
	t.Helper()
	if code != tc.code {
		t.Errorf("exit %d, want %d", code, tc.code)
	}
	if d := cmp.Diff(tc.out, f.out.String()); d != "" {
		t.Errorf("stdout (-want +got):\n%s", d)
	}
	if d := cmp.Diff(tc.err, f.errw.String()); d != "" {
		t.Errorf("stderr (-want +got):\n%s", d)
	}
	if d := cmp.Diff(tc.calls, f.calls); d != "" {
		t.Errorf("driver calls (-want +got):\n%s", d)
	}
}

// TestPromptLoop: the prompt's commands, the end of the input, turns that
// go on (rejections, faults, failed calls) and those that end it, against
// a fake driver.
func TestPromptLoop(t *testing.T) {
	noHistory := "kitsoki: " + orchestrator.ErrNoHistory.Error() + "\n"
	tests := []loopCase{
		{name: "EOF (Ctrl-D) leaves incomplete with a newline", input: "",
			code: exitIncomplete, out: "[room]\n> \n", calls: []string{"describe"}},
		{name: "blank lines are skipped", input: "\n   \n",
			code: exitIncomplete, out: "[room]\n> > > \n", calls: []string{"describe"}},
		{name: ":q", input: ":q\nnever\n", code: exitIncomplete, out: "[room]\n> ", calls: []string{"describe"}},
		{name: ":quit", input: ":quit\n", code: exitIncomplete, out: "[room]\n> ", calls: []string{"describe"}},
		{name: ":exit", input: "  :exit  \n", code: exitIncomplete, out: "[room]\n> ", calls: []string{"describe"}},
		{name: ":help and ?", input: ":help\n?\n:quit\n",
			code: exitIncomplete, out: "[room]\n> HELP\n> HELP\n> ", calls: []string{"describe"}},
		{name: ":intents and :state describe", input: ":intents\n:state\n:quit\n",
			code: exitIncomplete, out: "[room]\n> [room]\n> [room]\n> ", calls: []string{"describe", "describe", "describe"}},
		{name: ":world prints JSON", input: ":world\n:quit\n",
			code: exitIncomplete, out: "[room]\n> {\n  \"n\": 1\n}\n> ", calls: []string{"describe", "world"}},
		{name: ":world that cannot be read is an error and goes on", input: ":world\n:quit\n",
			drv:  fakeDriver{worldErr: errors.New("status: unavailable")},
			code: exitIncomplete, out: "[room]\n> > ", err: "kitsoki: status: unavailable\n", calls: []string{"describe", "world"}},
		{name: ":back with no history is refused and takes nothing", input: ":back\n:quit\n",
			code: exitIncomplete, out: "[room]\n> > ", err: noHistory, calls: []string{"describe", "back"}},
		{name: ":back then describe", input: ":back\n:quit\n", drv: fakeDriver{backs: []outcome{{exitOK, false}}},
			code: exitIncomplete, out: "[room]\n> back\n[room]\n> ", calls: []string{"describe", "back", "describe"}},
		{name: ":back to a terminal state ends the run", input: ":back\nnever\n", drv: fakeDriver{backs: []outcome{{exitOK, true}}},
			code: exitOK, out: "[room]\n> back\n", calls: []string{"describe", "back"}},
		{name: ":back that fails the run", input: ":back\nnever\n", drv: fakeDriver{backs: []outcome{{exitFailure, true}}},
			code: exitFailure, out: "[room]\n> back\n", calls: []string{"describe", "back"}},
		{name: ":back rejected goes on", input: ":back\n:quit\n", drv: fakeDriver{backs: []outcome{{exitRejected, true}}},
			code: exitIncomplete, out: "[room]\n> back\n[room]\n> ", calls: []string{"describe", "back", "describe"}},
		{name: "interrupted during :back", input: ":back\nnever\n", drv: fakeDriver{backs: []outcome{{-1, false}}},
			code: exitFailure, out: "[room]\n> back\n", calls: []string{"describe", "back"}},
		{name: "a driver's own command", input: ":plugins\n:quit\n", drv: fakeDriver{commands: map[string]bool{":plugins": true}},
			code: exitIncomplete, out: "[room]\n> > ", calls: []string{"describe", "command :plugins"}},
		{name: "a colon line the driver does not take is a turn", input: ":nope\n:quit\n",
			code: exitIncomplete, out: "[room]\n> turn: :nope\n[room]\n> ", calls: []string{"describe", "turn :nope", "describe"}},
		{name: "turns go on after rejections, faults and failed calls", input: "a\nb\nc\nd\n",
			drv:  fakeDriver{turns: map[string]outcome{"b": {exitRejected, true}, "c": {exitMachine, true}, "d": {exitAgent, true}}},
			code: exitIncomplete, out: "[room]\n> turn: a\n[room]\n> turn: b\n[room]\n> turn: c\n[room]\n> turn: d\n[room]\n> \n",
			calls: []string{"describe", "turn a", "describe", "turn b", "describe", "turn c", "describe", "turn d", "describe"}},
		{name: "a terminal state ends the run", input: "  bye  \nnever\n", drv: fakeDriver{turns: map[string]outcome{"bye": {exitOK, true}}},
			code: exitOK, out: "[room]\n> turn: bye\n", calls: []string{"describe", "turn bye"}},
		{name: "an I/O failure ends the run", input: "x\nnever\n", drv: fakeDriver{turns: map[string]outcome{"x": {exitFailure, true}}},
			code: exitFailure, out: "[room]\n> turn: x\n", calls: []string{"describe", "turn x"}},
		{name: "interrupted during a turn", input: "interrupt\nnever\n",
			code: exitFailure, out: "[room]\n> turn: interrupt\n", calls: []string{"describe", "turn interrupt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := &tc.drv
			f.cancel = cancel
			code := promptLoop(ctx, f, newLines(strings.NewReader(tc.input)))
			tc.check(t, f, code)
		})
	}
}

// TestPromptLoopInterruptedWaiting: an interrupt while the prompt waits
// for a line ends the run with exit 1 and nothing more printed.
func TestPromptLoopInterruptedWaiting(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &fakeDriver{}
	code := promptLoop(ctx, f, newLines(pr))
	loopCase{code: exitFailure, out: "[room]\n> ", calls: []string{"describe"}}.check(t, f, code)
}

// TestScriptLoop: scripted input (stdin, --intents) against a fake
// driver: comments, skipped inputs, terminal commands refused, the line
// that stops the run named, settling at the end.
func TestScriptLoop(t *testing.T) {
	tests := []loopCase{
		{name: "input ends before a terminal state", input: "a\n\n# comment\n  b  \n",
			code: exitIncomplete, out: "turn: a\nturn: b\n", err: "kitsoki: input ended in state \"room\", which is not terminal\n",
			calls: []string{"turn a", "turn b", "settle"}},
		{name: "a terminal state ends it, nothing named", input: "a\nbye\nnever\n", drv: fakeDriver{turns: map[string]outcome{"bye": {exitOK, true}}},
			code: exitOK, out: "turn: a\nturn: bye\n", calls: []string{"turn a", "turn bye"}},
		{name: "a rejection stops at its line", input: "# one\na\nbad x=1\nnever\n", drv: fakeDriver{turns: map[string]outcome{"bad x=1": {exitRejected, true}}},
			code: exitRejected, out: "turn: a\nturn: bad x=1\n", err: "kitsoki: stopped at input line 3: bad x=1\n",
			calls: []string{"turn a", "turn bad x=1"}},
		{name: "a failed call stops", input: "x\n", drv: fakeDriver{turns: map[string]outcome{"x": {exitAgent, true}}},
			code: exitAgent, out: "turn: x\n", err: "kitsoki: stopped at input line 1: x\n", calls: []string{"turn x"}},
		{name: "a terminal command is refused", input: "a\n:world\n",
			code: exitFailure, out: "turn: a\n",
			err:   "kitsoki: input line 2: \":world\" is a terminal command; scripted input takes one intent per line (run kitsoki on a terminal for :help, :intents, :world)\n",
			calls: []string{"turn a"}},
		{name: "inputs the session took are skipped", input: "a\nb\nc\n", drv: fakeDriver{skip: 2},
			code: exitIncomplete, out: "turn: c\n", err: "kitsoki: input ended in state \"room\", which is not terminal\n",
			calls: []string{"skip a", "skip b", "turn c", "settle"}},
		{name: "a skipped input that differs stops the run", input: "a\nb\n", drv: fakeDriver{skip: 1, skipCode: exitUsage},
			code: exitUsage, calls: []string{"skip a"}},
		{name: "settling reaches a terminal state", input: "a\n", drv: fakeDriver{settled: outcome{exitOK, true}},
			code: exitOK, out: "turn: a\n", calls: []string{"turn a", "settle"}},
		{name: "settling fails", input: "", drv: fakeDriver{settled: outcome{exitFailure, true}},
			code: exitFailure, calls: []string{"settle"}},
		{name: "a line too long to read", input: "a\n" + strings.Repeat("x", 1<<20+1) + "\n",
			code: exitFailure, out: "turn: a\n", err: "kitsoki: reading input: bufio.Scanner: token too long\n", calls: []string{"turn a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &tc.drv
			code := scriptLoop(context.Background(), f, strings.NewReader(tc.input))
			tc.check(t, f, code)
		})
	}
}

// TestSayLoop: --say texts against a fake driver: each taken as free
// text, the one that stops the run named by its place among the flags
// (skipped ones counted), settling at the end.
func TestSayLoop(t *testing.T) {
	tests := []struct {
		loopCase
		says []string
	}{
		{says: []string{"hello there", "bye"}, loopCase: loopCase{name: "input ends",
			code: exitIncomplete, out: "say: hello there\nsay: bye\n", err: "kitsoki: input ended in state \"room\", which is not terminal\n",
			calls: []string{"say hello there", "say bye", "settle"}}},
		{says: []string{"a", "b", "c"}, loopCase: loopCase{name: "a rejection names its --say", drv: fakeDriver{turns: map[string]outcome{"b": {exitRejected, true}}},
			code: exitRejected, out: "say: a\nsay: b\n", err: "kitsoki: stopped at --say 2: b\n", calls: []string{"say a", "say b"}}},
		{says: []string{"a", "bye", "c"}, loopCase: loopCase{name: "a terminal state ends it", drv: fakeDriver{turns: map[string]outcome{"bye": {exitOK, true}}},
			code: exitOK, out: "say: a\nsay: bye\n", calls: []string{"say a", "say bye"}}},
		{says: []string{" a ", "b", "c"}, loopCase: loopCase{name: "skipped says are counted", drv: fakeDriver{skip: 2, turns: map[string]outcome{"c": {exitAgent, true}}},
			code: exitAgent, out: "say: c\n", err: "kitsoki: stopped at --say 3: c\n", calls: []string{"skip a", "skip b", "say c"}}},
		{says: []string{"a", "b"}, loopCase: loopCase{name: "a skipped say that differs stops", drv: fakeDriver{skip: 1, skipCode: exitUsage},
			code: exitUsage, calls: []string{"skip a"}}},
		{says: []string{"a"}, loopCase: loopCase{name: "settling reaches a terminal state", drv: fakeDriver{settled: outcome{exitOK, true}},
			code: exitOK, out: "say: a\n", calls: []string{"say a", "settle"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &tc.drv
			code := sayLoop(context.Background(), f, tc.says)
			tc.check(t, f, code)
		})
	}
}

// TestScriptedRunsSettleJobs: every scripted front end (stdin, --intents,
// --say) lets the background jobs finish when its input ends and reports
// what they did: the build's completion reaches the terminal state.
func TestScriptedRunsSettleJobs(t *testing.T) {
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"stdin", "build\n", nil},
		{"--intents", "", []string{"--intents", "build"}},
		{"--say", "", []string{"--say", "start a build"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run", "testdata/bgsay/app.yaml", "--sessions-dir", dir, "--trace", filepath.Join(dir, "t.jsonl")}, tc.args...)
			code, out, errs := runCLI(t, tc.stdin, args...)
			if code != exitOK {
				t.Errorf("exit %d, want 0\nstderr:\n%s", code, errs)
			}
			if d := cmp.Diff("[background job job-1]\nBuild done.\n", out); d != "" {
				t.Errorf("stdout (-want +got):\n%s", d)
			}
		})
	}
}

// TestResumeSayNamesEveryFlag: a resumed --say run skips the texts the
// journal took one by one: one that differs stops the run (exit 2) with
// the scripted resume's message, and the --say that stops a run is named
// by its place among all the --say flags.
func TestResumeSayNamesEveryFlag(t *testing.T) {
	app := filepath.Join(t.TempDir(), "app.yaml")
	src := `app: {id: sayresume}
root: idle
world:
  n: {type: int, default: 0}
intents:
  tick: {}
  check: {}
states:
  idle:
    on:
      tick: [{target: idle, effects: [{increment: {n: 1}}]}]
      check: [{when: "world.n > 10", target: done}]
  done: {terminal: true}
`
	if err := os.WriteFile(app, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--say", "tick", "--say", "tick"); code != exitIncomplete {
		t.Fatalf("first run: exit %d\n%s", code, errs)
	}
	id := onlySession(t, dir).ID
	for _, tc := range []struct {
		says []string
		code int
		last string // stderr's last line
	}{
		{[]string{"tick", "check"}, exitUsage, "kitsoki: resuming session " + id + `: input 2 is "check", but the session's turn 2 took "tick"; give the same inputs as the run that started it (the journal's are skipped), run them as new turns with --resume-inputs=new, or start a new session`},
		{[]string{" tick ", "tick", "check"}, exitRejected, "kitsoki: stopped at --say 3: check"},
	} {
		args := []string{"run", app, "--sessions-dir", dir, "--continue"}
		for _, s := range tc.says {
			args = append(args, "--say", s)
		}
		code, _, errs := runCLI(t, "", args...)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		if code != tc.code || lines[len(lines)-1] != tc.last {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit %d, last line:\n%s", tc.says, code, errs, tc.code, tc.last)
		}
	}
}

// TestPromptHelp: :help at a local prompt lists the plugin commands; on
// the cluster it does not, and :quit says the session goes on there.
func TestPromptHelp(t *testing.T) {
	common := `Type an intent and its slots: intent key=value key2="two words"
:intents   what this state accepts     :world   the world as JSON
:state     where the story is          :back    return to the previous room
`
	for _, tc := range []struct {
		name string
		d    lineDriver
		want string
	}{
		{"local", &runner{}, common + ":quit      leave\n" +
			":plugins   agent plugins with tools      :enable <alias> / :disable <alias>\n" +
			":reload    re-read the story and go on in it · :reload plugins   re-read only the plugins"},
		{"cluster", &remoteDriver{}, common + ":quit      leave (the session goes on on the cluster)"},
	} {
		if d := cmp.Diff(tc.want, tc.d.help()); d != "" {
			t.Errorf("%s :help (-want +got):\n%s", tc.name, d)
		}
	}
}
