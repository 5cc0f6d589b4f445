package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/run/driver"
)

// botStory counts ticks, keeps notes, and has a turn (hold) that waits for
// a file to appear under world.gate: the test holds a session's writer
// lock with it for as long as it likes.
const botStory = `app: {id: botloop}
hosts: [host.run]
root: idle
world:
  n: {type: int, default: 0}
  notes: {type: string, default: ""}
  gate: {type: string, default: ""}
intents:
  tick: {description: "Count one."}
  note:
    description: "Keep a note."
    slots:
      text: {type: string, required: true}
  hold: {description: "Wait for the gate, then count ten."}
  stop: {description: "Stop counting."}
states:
  idle:
    description: "Counting."
    view: "n={{ world.n }} notes={{ world.notes }}"
    on:
      tick: [{target: idle, effects: [{increment: {n: 1}}]}]
      note: [{target: idle, effects: [{set: {notes: "{{ world.notes }}{{ slots.text }};"}}]}]
      hold:
        - target: idle
          effects:
            - invoke: host.run
              with: {cmd: sh, args: ["-c", "touch \"$0/started\"; while [ ! -e \"$0/release\" ]; do sleep 0.02; done", "{{ world.gate }}"]}
            - increment: {n: 10}
      stop: [{target: done}]
  done: {terminal: true}
`

// botCLI runs the kitsoki binary (this test binary as kitsoki, TestMain)
// in dir with the sessions directory sessions.
type botCLI struct {
	t              *testing.T
	dir, sessions  string
	stdout, stderr bytes.Buffer
}

func (b *botCLI) cmd(args ...string) *exec.Cmd {
	b.t.Helper()
	c := kitsokiChild(b.t, b.dir, append(args, "--sessions-dir", b.sessions)...)
	b.stdout.Reset()
	b.stderr.Reset()
	c.Stdout, c.Stderr = &b.stdout, &b.stderr
	return c
}

// frame runs a session command with --json and returns its exit code and
// frame.
func (b *botCLI) frame(args ...string) (int, *driver.Frame) {
	b.t.Helper()
	c := b.cmd(append(args, "--json")...)
	return b.decode(c, c.Run())
}

func (b *botCLI) decode(c *exec.Cmd, err error) (int, *driver.Frame) {
	b.t.Helper()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		b.t.Fatalf("%s: %v", c, err)
	}
	var f driver.Frame
	if err := json.Unmarshal(b.stdout.Bytes(), &f); err != nil {
		b.t.Fatalf("%s: exit %d, stdout is no frame: %v\nstdout:\n%s\nstderr:\n%s", c, code, err, b.stdout.String(), b.stderr.String())
	}
	return code, &f
}

// The acceptance test of the session API for bots (issue 32): a session
// created by key, then 20 continues, each its own kitsoki process, mixing
// typed intents, raw lines and free text; while one continue holds the
// session (its turn waits), a second one at the same time gets exit 75
// and a busy frame and takes nothing, and the bot retries it. The final
// world equals a single-process run of the same inputs.
func TestBotLoopAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 23 kitsoki processes")
	}
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	gate := filepath.Join(dir, "gate")
	if err := os.WriteFile(app, []byte(botStory), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(gate, 0o755); err != nil {
		t.Fatal(err)
	}
	b := &botCLI{t: t, dir: dir, sessions: filepath.Join(dir, "sessions")}
	const key = "bot:C024BE91L/1700000000.000100"

	code, f := b.frame("session", "create", app, "--key", key, "--world", "gate="+gate)
	if code != 0 || f.Frame != driver.FrameVersion || f.Outcome != "started" || f.State != "idle" || f.Session.Key != key || f.Status.Name != "ok" {
		t.Fatalf("create: exit %d, frame %+v\nstderr:\n%s", code, f, b.stderr.String())
	}
	wantNote := driver.IntentInfo{Name: "note", Description: "Keep a note.", Slots: []driver.SlotInfo{{Name: "text", Type: "string", Required: true}}}
	if !containsIntent(f.AllowedIntents, wantNote) {
		t.Errorf("create: allowed intents %+v lack %+v", f.AllowedIntents, wantNote)
	}

	// The bot's 20 events: the flag says how each is given.
	type event struct{ flag, value string }
	var events []event
	for i := range 20 {
		switch {
		case i == 9:
			events = append(events, event{"--intent", "hold"})
		case i%5 == 2:
			events = append(events, event{"--intent", "note text=n" + string(rune('a'+i))})
		case i%3 == 1:
			events = append(events, event{"--text", "tick"})
		default:
			events = append(events, event{"--raw", "tick"})
		}
	}
	for i, ev := range events {
		if ev.value != "hold" {
			code, f := b.frame("session", "continue", key, ev.flag, ev.value)
			if code != 0 || f.Outcome != "transitioned" || f.Session.Turn != int64(i+1) {
				t.Fatalf("continue %d (%s %s): exit %d, outcome %q, turn %d\nstderr:\n%s", i+1, ev.flag, ev.value, code, f.Outcome, f.Session.Turn, b.stderr.String())
			}
			continue
		}
		held := b.cmd("session", "continue", key, ev.flag, ev.value, "--json")
		if err := held.Start(); err != nil {
			t.Fatal(err)
		}
		awaitFile(t, filepath.Join(gate, "started"))
		// The session is held: a second writer is busy, and takes nothing.
		other := &botCLI{t: t, dir: dir, sessions: b.sessions}
		code, busy := other.frame("session", "continue", key, "--raw", "tick")
		if code != driver.ExitBusy || busy.Status != (driver.FrameStatus{Code: 75, Name: "busy"}) || !strings.Contains(busy.Error, "is busy") || busy.Session.Key != key {
			t.Errorf("a second continue while one holds the session: exit %d, frame %+v\nstderr:\n%s", code, busy, other.stderr.String())
		}
		if err := os.WriteFile(filepath.Join(gate, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		code, f := b.decode(held, held.Wait())
		if code != 0 || f.Session.Turn != int64(i+1) || f.World["n"] == nil {
			t.Fatalf("the held continue: exit %d, frame %+v\nstderr:\n%s", code, f, b.stderr.String())
		}
	}

	code, got := b.frame("session", "inspect", key)
	if code != 0 || got.Session.Turn != 20 || got.Outcome != "status" {
		t.Fatalf("inspect: exit %d, frame %+v\nstderr:\n%s", code, got, b.stderr.String())
	}

	// The same 20 inputs in one process.
	single := &botCLI{t: t, dir: dir, sessions: filepath.Join(dir, "single")}
	var lines []string
	for _, ev := range events {
		lines = append(lines, ev.value)
	}
	run := single.cmd("run", app, "--world", "gate="+gate, "--session", "single")
	run.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if err := run.Run(); err == nil || run.ProcessState.ExitCode() != exitIncomplete {
		t.Fatalf("single-process run: %v\nstderr:\n%s", err, single.stderr.String())
	}
	code, want := single.frame("session", "inspect", "single")
	if code != 0 {
		t.Fatalf("inspect the single-process run: exit %d\n%s", code, single.stderr.String())
	}
	// The worlds are equal but for the session's own id (world.session_id).
	if got.World["session_id"] != got.Session.ID || want.World["session_id"] != "single" {
		t.Errorf("world.session_id: bot loop %v (session %s), single process %v", got.World["session_id"], got.Session.ID, want.World["session_id"])
	}
	delete(got.World, "session_id")
	delete(want.World, "session_id")
	if d := cmp.Diff(want.World, got.World); d != "" {
		t.Errorf("world (-single process +bot loop):\n%s", d)
	}
	ticks := 0
	for _, ev := range events {
		if ev.value == "tick" {
			ticks++
		}
	}
	if got.World["n"] != float64(ticks+10) {
		t.Errorf("n = %v, want %d (%d ticks and a hold)", got.World["n"], ticks+10, ticks)
	}
}

func containsIntent(all []driver.IntentInfo, want driver.IntentInfo) bool {
	for _, in := range all {
		if cmp.Equal(in, want) {
			return true
		}
	}
	return false
}

// awaitFile waits for path to exist (a child process creates it).
func awaitFile(t *testing.T, path string) {
	t.Helper()
	for range 1500 {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
}

// TestSessionInspectNamesALostJob: a one-shot continue whose turn starts
// a background job waits for it (the job runs in its process), and an
// inspect from another process meanwhile reports it running. The waiting
// process is killed, or stopped with SIGTERM (exit 1, saying so): the job
// never ends, and inspect names it lost, in the frame and in its text.
func TestSessionInspectNamesALostJob(t *testing.T) {
	app, err := filepath.Abs("../../internal/run/driver/testdata/bgjob/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []os.Signal{os.Kill, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			b := &botCLI{t: t, dir: dir, sessions: filepath.Join(dir, "sessions")}
			if code, f := b.frame("session", "create", app, "--key", "bot:1"); code != 0 {
				t.Fatalf("create: exit %d %+v\n%s", code, f, b.stderr.String())
			}
			waiting := &botCLI{t: t, dir: dir, sessions: b.sessions}
			cont := waiting.cmd("session", "continue", "bot:1", "--intent", "go")
			if err := cont.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cont.Wait() }()
			id := runningJob(t, b, exited, waiting)
			if err := cont.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := <-exited
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || (sig == syscall.SIGTERM && ee.ExitCode() != 1) {
				t.Fatalf("the continue, sent %v: %v\n%s", sig, err, waiting.stderr.String())
			}
			if want := "kitsoki: interrupted while waiting for the session's background jobs: they stop with this process, and session inspect names them lost"; sig == syscall.SIGTERM && !strings.Contains(waiting.stderr.String(), want) {
				t.Errorf("stderr %q, want %q", waiting.stderr.String(), want)
			}
			code, f := b.frame("session", "inspect", "bot:1")
			want := []driver.FrameJob{{ID: id, Handler: "host.run", Status: "lost"}}
			if diff := cmp.Diff(want, f.Jobs); code != 0 || diff != "" {
				t.Errorf("inspect --json: exit %d, jobs (-want +got):\n%s", code, diff)
			}
			c := b.cmd("session", "inspect", "bot:1")
			if err := c.Run(); err != nil {
				t.Fatal(err, b.stderr.String())
			}
			if line := "job " + id + " (host.run): lost\n"; !strings.Contains(b.stdout.String(), line) {
				t.Errorf("inspect's text lacks %q:\n%s", line, b.stdout.String())
			}
		})
	}
}

// runningJob inspects session bot:1 until its job runs (the continue
// writes the job's start into the journal, then waits for it) and returns
// the job's id; the continue ending first fails the test.
func runningJob(t *testing.T, b *botCLI, exited <-chan error, waiting *botCLI) string {
	t.Helper()
	for {
		select {
		case err := <-exited:
			t.Fatalf("the continue ended while its job runs: %v\n%s", err, waiting.stderr.String())
		default:
		}
		code, f := b.frame("session", "inspect", "bot:1")
		if code != 0 {
			t.Fatalf("inspect while the continue waits: exit %d\n%s", code, b.stderr.String())
		}
		if len(f.Jobs) == 1 && f.Jobs[0].Status == "running" {
			return f.Jobs[0].ID
		}
	}
}

// TestOneShotSessionCommandsWaitForTheirJobs: session create and session
// continue wait for the background jobs their turns started, so each
// answers the session as its jobs left it and none is left to be lost.
func TestOneShotSessionCommandsWaitForTheirJobs(t *testing.T) {
	dir := t.TempDir()
	app, err := filepath.Abs("../../internal/run/driver/testdata/bgquick/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := &botCLI{t: t, dir: dir, sessions: filepath.Join(dir, "sessions")}
	if code, f := b.frame("session", "create", app, "--key", "bot:q"); code != 0 || f.State != "idle" || len(f.Jobs) != 0 || f.Outcome != "started" {
		t.Fatalf("create: exit %d, state %q, jobs %+v, outcome %q; want idle after turn 0's job\n%s", code, f.State, f.Jobs, f.Outcome, b.stderr.String())
	}
	if code, f := b.frame("session", "continue", "bot:q", "--intent", "build"); code != 0 || f.State != "done" || len(f.Jobs) != 0 || !strings.Contains(string(f.Events), `"Build done."`) {
		t.Fatalf("continue: exit %d, state %q, jobs %+v; want done after the build's job\n%s", code, f.State, f.Jobs, b.stderr.String())
	}
	if code, f := b.frame("session", "inspect", "bot:q"); code != 0 || f.State != "done" || len(f.Jobs) != 0 {
		t.Errorf("inspect: exit %d, state %q, jobs %+v", code, f.State, f.Jobs)
	}
	// Without --json the job turn's say is printed, as kitsoki run prints it.
	if code, _ := b.frame("session", "create", app, "--key", "bot:r"); code != 0 {
		t.Fatalf("create bot:r: exit %d\n%s", code, b.stderr.String())
	}
	if err := b.cmd("session", "continue", "bot:r", "--intent", "build").Run(); err != nil || !strings.Contains(b.stdout.String(), "Build done.") {
		t.Errorf("continue without --json: %v, stdout %q, stderr %q", err, b.stdout.String(), b.stderr.String())
	}
}
