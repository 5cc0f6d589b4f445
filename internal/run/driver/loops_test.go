package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	turns     map[string]outcome // by line; absent: ExitOK, go on
	backs     []outcome          // one per :back, in order; absent: no history
	worldErr  error
	commands  map[string]bool
	skip      int // how many inputs the session already took
	skipCode  int // the code of the first skipped input (a mismatch)
	settled   outcome
	// reloads says :reload of the story is taken (the run ends for it);
	// false: the console has none, the front end's commands get it.
	reloads, reloading bool
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
		return ExitAgent, true
	}
	o := f.turns[line]
	return o.code, o.stop
}

func (f *fakeDriver) turn(_ context.Context, line string) (int, bool) { return f.take("turn", line) }
func (f *fakeDriver) say(_ context.Context, text string) (int, bool)  { return f.take("say", text) }

func (f *fakeDriver) back(context.Context) (int, bool, error) {
	f.calls = append(f.calls, "back")
	if len(f.backs) == 0 {
		return ExitOK, false, orchestrator.ErrNoHistory
	}
	o := f.backs[0]
	f.backs = f.backs[1:]
	fmt.Fprintln(&f.out, "back")
	if o.code == -1 { // an interrupt during the back update (its call failed)
		f.cancel()
		return ExitAgent, true, nil
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
		return false, ExitOK
	}
	f.skip--
	f.calls = append(f.calls, "skip "+line)
	code := f.skipCode
	f.skipCode = ExitOK
	return true, code
}

func (f *fakeDriver) settle(context.Context) (int, bool) {
	f.calls = append(f.calls, "settle")
	return f.settled.code, f.settled.stop
}

func (f *fakeDriver) current() string { return "room" }
func (f *fakeDriver) reload(context.Context) bool {
	if !f.reloads {
		return false
	}
	f.calls = append(f.calls, "reload")
	f.reloading = true
	return true
}
func (f *fakeDriver) reloadRequested() bool { return f.reloading }

func (f *fakeDriver) names() []string { return []string{":help", ":world", ":plugins"} }

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
			code: ExitIncomplete, out: "[room]\n> \n", calls: []string{"describe"}},
		{name: "blank lines are skipped", input: "\n   \n",
			code: ExitIncomplete, out: "[room]\n> > > \n", calls: []string{"describe"}},
		{name: ":q", input: ":q\nnever\n", code: ExitIncomplete, out: "[room]\n> ", calls: []string{"describe"}},
		{name: ":quit", input: ":quit\n", code: ExitIncomplete, out: "[room]\n> ", calls: []string{"describe"}},
		{name: ":exit", input: "  :exit  \n", code: ExitIncomplete, out: "[room]\n> ", calls: []string{"describe"}},
		{name: ":help and ?", input: ":help\n?\n:quit\n",
			code: ExitIncomplete, out: "[room]\n> HELP\n> HELP\n> ", calls: []string{"describe"}},
		{name: ":intents and :state describe", input: ":intents\n:state\n:quit\n",
			code: ExitIncomplete, out: "[room]\n> [room]\n> [room]\n> ", calls: []string{"describe", "describe", "describe"}},
		{name: ":world prints JSON", input: ":world\n:quit\n",
			code: ExitIncomplete, out: "[room]\n> {\n  \"n\": 1\n}\n> ", calls: []string{"describe", "world"}},
		{name: ":world that cannot be read is an error and goes on", input: ":world\n:quit\n",
			drv:  fakeDriver{worldErr: errors.New("status: unavailable")},
			code: ExitIncomplete, out: "[room]\n> > ", err: "kitsoki: status: unavailable\n", calls: []string{"describe", "world"}},
		{name: ":reload of the story ends the loop with 0 (the run starts again)", input: ":reload\nnever\n", drv: fakeDriver{reloads: true},
			code: ExitOK, out: "[room]\n> ", calls: []string{"describe", "reload"}},
		{name: ":reload with no story reload goes to the front end's commands", input: ":reload\n:quit\n",
			drv: fakeDriver{commands: map[string]bool{":reload": true}}, code: ExitIncomplete, out: "[room]\n> > ", calls: []string{"describe", "command :reload"}},
		{name: ":back with no history is refused and takes nothing", input: ":back\n:quit\n",
			code: ExitIncomplete, out: "[room]\n> > ", err: noHistory, calls: []string{"describe", "back"}},
		{name: ":back then describe", input: ":back\n:quit\n", drv: fakeDriver{backs: []outcome{{ExitOK, false}}},
			code: ExitIncomplete, out: "[room]\n> back\n[room]\n> ", calls: []string{"describe", "back", "describe"}},
		{name: ":back to a terminal state ends the run", input: ":back\nnever\n", drv: fakeDriver{backs: []outcome{{ExitOK, true}}},
			code: ExitOK, out: "[room]\n> back\n", calls: []string{"describe", "back"}},
		{name: ":back that fails the run", input: ":back\nnever\n", drv: fakeDriver{backs: []outcome{{ExitFailure, true}}},
			code: ExitFailure, out: "[room]\n> back\n", calls: []string{"describe", "back"}},
		{name: ":back rejected goes on", input: ":back\n:quit\n", drv: fakeDriver{backs: []outcome{{ExitRejected, true}}},
			code: ExitIncomplete, out: "[room]\n> back\n[room]\n> ", calls: []string{"describe", "back", "describe"}},
		{name: "interrupted during :back", input: ":back\nnever\n", drv: fakeDriver{backs: []outcome{{-1, false}}},
			code: ExitFailure, out: "[room]\n> back\n", calls: []string{"describe", "back"}},
		{name: "a driver's own command", input: ":plugins\n:quit\n", drv: fakeDriver{commands: map[string]bool{":plugins": true}},
			code: ExitIncomplete, out: "[room]\n> > ", calls: []string{"describe", "command :plugins"}},
		{name: "a colon line no command takes is refused, not taken for a turn", input: ":nope\n:wrold\n:quit\n",
			code: ExitIncomplete, out: "[room]\n> > > ",
			err:   "kitsoki: unknown command :nope; :help lists the commands\nkitsoki: unknown command :wrold (did you mean :world?); :help lists the commands\n",
			calls: []string{"describe"}},
		{name: "turns go on after rejections, faults and failed calls", input: "a\nb\nc\nd\n",
			drv:  fakeDriver{turns: map[string]outcome{"b": {ExitRejected, true}, "c": {ExitMachine, true}, "d": {ExitAgent, true}}},
			code: ExitIncomplete, out: "[room]\n> turn: a\n[room]\n> turn: b\n[room]\n> turn: c\n[room]\n> turn: d\n[room]\n> \n",
			calls: []string{"describe", "turn a", "describe", "turn b", "describe", "turn c", "describe", "turn d", "describe"}},
		{name: "a terminal state ends the run", input: "  bye  \nnever\n", drv: fakeDriver{turns: map[string]outcome{"bye": {ExitOK, true}}},
			code: ExitOK, out: "[room]\n> turn: bye\n", calls: []string{"describe", "turn bye"}},
		{name: "an I/O failure ends the run", input: "x\nnever\n", drv: fakeDriver{turns: map[string]outcome{"x": {ExitFailure, true}}},
			code: ExitFailure, out: "[room]\n> turn: x\n", calls: []string{"describe", "turn x"}},
		{name: "interrupted during a turn", input: "interrupt\nnever\n",
			code: ExitFailure, out: "[room]\n> turn: interrupt\n", calls: []string{"describe", "turn interrupt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := &tc.drv
			f.cancel = cancel
			code := promptLoop(ctx, f, NewLines(strings.NewReader(tc.input)))
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
	code := promptLoop(ctx, f, NewLines(pr))
	loopCase{code: ExitFailure, out: "[room]\n> ", calls: []string{"describe"}}.check(t, f, code)
}

// TestScriptLoop: scripted input (stdin, --intents) against a fake
// driver: comments, skipped inputs, terminal commands refused, the line
// that stops the run named, settling at the end.
func TestScriptLoop(t *testing.T) {
	tests := []loopCase{
		{name: "input ends before a terminal state", input: "a\n\n# comment\n  b  \n",
			code: ExitIncomplete, out: "turn: a\nturn: b\n", err: "kitsoki: input ended in state \"room\", which is not terminal\n",
			calls: []string{"turn a", "turn b", "settle"}},
		{name: "a terminal state ends it, nothing named", input: "a\nbye\nnever\n", drv: fakeDriver{turns: map[string]outcome{"bye": {ExitOK, true}}},
			code: ExitOK, out: "turn: a\nturn: bye\n", calls: []string{"turn a", "turn bye"}},
		{name: "a rejection stops at its line", input: "# one\na\nbad x=1\nnever\n", drv: fakeDriver{turns: map[string]outcome{"bad x=1": {ExitRejected, true}}},
			code: ExitRejected, out: "turn: a\nturn: bad x=1\n", err: "kitsoki: stopped at input line 3: bad x=1\n",
			calls: []string{"turn a", "turn bad x=1"}},
		{name: "a failed call stops", input: "x\n", drv: fakeDriver{turns: map[string]outcome{"x": {ExitAgent, true}}},
			code: ExitAgent, out: "turn: x\n", err: "kitsoki: stopped at input line 1: x\n", calls: []string{"turn x"}},
		{name: "a terminal command is refused", input: "a\n:world\n",
			code: ExitFailure, out: "turn: a\n",
			err:   "kitsoki: input line 2: \":world\" is a terminal command; scripted input takes one intent per line (run kitsoki on a terminal for :help, :intents, :world)\n",
			calls: []string{"turn a"}},
		{name: "inputs the session took are skipped", input: "a\nb\nc\n", drv: fakeDriver{skip: 2},
			code: ExitIncomplete, out: "turn: c\n", err: "kitsoki: input ended in state \"room\", which is not terminal\n",
			calls: []string{"skip a", "skip b", "turn c", "settle"}},
		{name: "a skipped input that differs stops the run", input: "a\nb\n", drv: fakeDriver{skip: 1, skipCode: ExitUsage},
			code: ExitUsage, calls: []string{"skip a"}},
		{name: "settling reaches a terminal state", input: "a\n", drv: fakeDriver{settled: outcome{ExitOK, true}},
			code: ExitOK, out: "turn: a\n", calls: []string{"turn a", "settle"}},
		{name: "settling fails", input: "", drv: fakeDriver{settled: outcome{ExitFailure, true}},
			code: ExitFailure, calls: []string{"settle"}},
		{name: "a line too long to read", input: "a\n" + strings.Repeat("x", 1<<20+1) + "\n",
			code: ExitFailure, out: "turn: a\n", err: "kitsoki: reading input: bufio.Scanner: token too long\n", calls: []string{"turn a"}},
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
			code: ExitIncomplete, out: "say: hello there\nsay: bye\n", err: "kitsoki: input ended in state \"room\", which is not terminal\n",
			calls: []string{"say hello there", "say bye", "settle"}}},
		{says: []string{"a", "b", "c"}, loopCase: loopCase{name: "a rejection names its --say", drv: fakeDriver{turns: map[string]outcome{"b": {ExitRejected, true}}},
			code: ExitRejected, out: "say: a\nsay: b\n", err: "kitsoki: stopped at --say 2: b\n", calls: []string{"say a", "say b"}}},
		{says: []string{"a", "bye", "c"}, loopCase: loopCase{name: "a terminal state ends it", drv: fakeDriver{turns: map[string]outcome{"bye": {ExitOK, true}}},
			code: ExitOK, out: "say: a\nsay: bye\n", calls: []string{"say a", "say bye"}}},
		{says: []string{" a ", "b", "c"}, loopCase: loopCase{name: "skipped says are counted", drv: fakeDriver{skip: 2, turns: map[string]outcome{"c": {ExitAgent, true}}},
			code: ExitAgent, out: "say: c\n", err: "kitsoki: stopped at --say 3: c\n", calls: []string{"skip a", "skip b", "say c"}}},
		{says: []string{"a", "b"}, loopCase: loopCase{name: "a skipped say that differs stops", drv: fakeDriver{skip: 1, skipCode: ExitUsage},
			code: ExitUsage, calls: []string{"skip a"}}},
		{says: []string{"a"}, loopCase: loopCase{name: "settling reaches a terminal state", drv: fakeDriver{settled: outcome{ExitOK, true}},
			code: ExitOK, out: "say: a\n", calls: []string{"say a", "settle"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &tc.drv
			code := sayLoop(context.Background(), f, tc.says)
			tc.check(t, f, code)
		})
	}
}
