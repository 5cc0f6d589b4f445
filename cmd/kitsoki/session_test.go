package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/driver"
	"github.com/kitsoki/kitsoki/internal/run/runtime"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// sessionDir copies testdata/sessions/app.yaml into a fresh directory,
// builds the slow host plugin into its bin/slow, and points SLOW_LOG at
// dir/slow.log. It returns the story and a sessions directory.
func sessionDir(t *testing.T) (app, sessions string) {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile("testdata/sessions/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	app = filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(app, b, 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "slow"), "./testdata/sessions/slowplugin")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the slow plugin: %v\n%s", err, out)
	}
	t.Setenv("SLOW_LOG", filepath.Join(dir, "slow.log"))
	return app, filepath.Join(dir, "sessions")
}

// loopStory writes a story without plugins: tick counts, stop ends.
func loopStory(t *testing.T, extra string) string {
	t.Helper()
	src := `app: {id: loop}
root: idle
world:
  n: {type: int, default: 0}
intents:
  tick: {}
  stop: {}
states:
  idle:
    on:
      tick:
        - when: "world.n >= 2"
          target: busy
          effects: [{increment: {n: 1}}]
        - target: idle
          effects: [{increment: {n: 1}}]
      stop: {target: done}
  busy:
    on:
      tick:
        - target: busy
          effects: [{increment: {n: 1}}]
      stop: {target: done}
  done: {terminal: true}
` + extra
	p := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func onlySession(t *testing.T, dir string) session.Meta {
	t.Helper()
	all, err := session.Store{Dir: dir}.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("%d sessions in %s, want 1: %v", len(all), dir, session.SortedIDs(all))
	}
	return all[0]
}

func journalOf(t *testing.T, path string) *session.Journal {
	t.Helper()
	j, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A scripted run stopped before the end is finished by the same command
// with --continue: the inputs the journal holds are skipped, and the run
// carries on from the journal's state and world.
func TestResumeScriptedSkipsJournalInputs(t *testing.T) {
	app := loopStory(t, "")
	dir := t.TempDir()
	code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick,tick,tick")
	if code != exitIncomplete {
		t.Fatalf("first run: exit %d, want %d\n%s", code, exitIncomplete, errs)
	}
	m := onlySession(t, dir)
	if m.State != "busy" || m.Turn != 3 || m.Finished {
		t.Fatalf("after the first run: %+v", m)
	}
	code, _, errs = runCLI(t, "", "run", app, "--sessions-dir", dir, "--continue", "--intents", "tick,tick,tick,tick,stop")
	if code != exitOK {
		t.Fatalf("resume: exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, "kitsoki: resuming session "+m.ID+" after turn 3 in state \"busy\"") {
		t.Errorf("stderr does not say where the run resumed:\n%s", errs)
	}
	j := journalOf(t, m.Trace)
	if j.State != "done" || !j.Done || j.Turn != 5 || j.World["n"] != int64(4) {
		t.Errorf("journal after resume: state %q done %v turn %d n %v, want done true 5 4", j.State, j.Done, j.Turn, j.World["n"])
	}
	// a finished session is not resumed again
	code, _, errs = runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", m.ID, "--intents", "tick")
	want := "session " + m.ID + " finished in state \"done\" at turn 5; fork it to go on: kitsoki session fork " + m.ID + " --at-turn N\n"
	if code != exitFailure || errs != want {
		t.Errorf("resuming a finished session: exit %d, stderr\n%s\nwant exit 1 and\n%s", code, errs, want)
	}
}

// A resumed scripted run given other inputs than the journal took stops
// and names the first that differs (exit 2).
func TestResumeScriptedRefusesOtherInputs(t *testing.T) {
	app := loopStory(t, "")
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick,tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--continue", "--intents", "tick,stop,tick")
	want := "kitsoki: resuming session " + m.ID + `: input 2 is "stop", but the session's turn 2 took "tick"; give the same inputs as the run that started it (the journal's are skipped), run them as new turns with --resume-inputs=new, or start a new session`
	if code != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, errs, want)
	}
}

// --continue with nothing to continue starts a new session, so the same
// command works for the first run and every rerun.
func TestContinueWithoutSessionStartsOne(t *testing.T) {
	app := loopStory(t, "")
	dir := t.TempDir()
	code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--continue", "--intents", "tick")
	if code != exitIncomplete || !strings.Contains(errs, "no unfinished session of "+app+" in "+dir+"; starting a new one") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	onlySession(t, dir)
}

// The REPL of a resumed session starts where the journal stopped: the
// session is restored before the input loop, which just continues.
func TestResumeREPLContinues(t *testing.T) {
	app := loopStory(t, "")
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick,tick,tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	st, err := story.Load(app)
	if err != nil {
		t.Fatal(err)
	}
	j := journalOf(t, m.Trace)
	rt, err := runtime.Open(st, runtime.Config{Session: &runtime.Session{ID: m.ID, Journal: true, Resume: &runtime.Resume{Journal: j}},
		Trace: runtime.Trace{Path: m.Trace}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var out, errb bytes.Buffer
	start, err := session.Resume(context.Background(), rt.Session(), rt.Sink(), j)
	if err != nil || start != nil {
		t.Fatalf("resume: %v %v", start, err)
	}
	con := &driver.Console{D: localDriver(rt), Out: &out, Err: &errb}
	code := con.Prompt(context.Background(), driver.NewLines(strings.NewReader(":world\ntick\nstop\n")))
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.HasPrefix(out.String(), "\n[busy] ") || !strings.Contains(out.String(), `"n": 3`) {
		t.Errorf("the REPL did not start in the journal's state and world:\n%s", out.String())
	}
	if got := rt.Session().World()["n"]; got != int64(4) {
		t.Errorf("n = %v after one more tick, want 4", got)
	}
}

// turnsOf lists the kinds of one turn's events in a journal.
func kindsOf(t *testing.T, path string, turn int64) []string {
	t.Helper()
	evs, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Turn == turn {
			out = append(out, ev.Kind)
		}
	}
	return out
}

// cutAfter truncates a journal after the first line of kind in turn (as a
// crash right after writing it leaves it).
func cutAfter(t *testing.T, path string, turn int64, kind string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	for i, l := range lines[1:] {
		ev, err := trace.DecodeLine([]byte(strings.TrimSuffix(l, "\n")))
		if err == nil && ev.Turn == turn && ev.Kind == kind {
			if err := os.WriteFile(path, []byte(strings.Join(lines[:i+2], "")), 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no %s in turn %d of %s", kind, turn, path)
}

func slowLog(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(os.Getenv("SLOW_LOG"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

// A call that started and has no end in the journal (the process died
// during it) is issued again; one that returned is answered from the
// journal and never issued again.
func TestResumeReissuesInFlightCall(t *testing.T) {
	app, dir := sessionDir(t)
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick,tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	// Turn 2 as a crash during its call leaves it; the plugin's log
	// keeps both answers it gave.
	cutAfter(t, m.Trace, 2, trace.KindHarnessDispatched)
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--continue", "--intents", "tick,tick,stop"); code != exitOK {
		t.Fatalf("resume: exit %d\n%s", code, errs)
	}
	want := []string{
		"start_work_turn=1_n=1", "answer_work_turn=1_n=1",
		"start_work_turn=2_n=2", "answer_work_turn=2_n=2",
		"start_work_turn=2_n=2", "answer_work_turn=2_n=2", // issued again: it had no end
	}
	if diff := cmp.Diff(want, slowLog(t)); diff != "" {
		t.Errorf("plugin log (-want +got):\n%s", diff)
	}
	j := journalOf(t, m.Trace)
	if j.World["n"] != int64(2) || j.World["v"] != int64(4) || j.State != "done" {
		t.Errorf("world %v state %q", j.World, j.State)
	}

	// Now a crash after the call returned but before the turn ended: the
	// resume answers it from the journal.
	app2, dir2 := sessionDir(t)
	if code, _, errs := runCLI(t, "", "run", app2, "--sessions-dir", dir2, "--intents", "tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m2 := onlySession(t, dir2)
	cutAfter(t, m2.Trace, 1, trace.KindHarnessReturned)
	if code, _, errs := runCLI(t, "", "run", app2, "--sessions-dir", dir2, "--continue", "--intents", "tick,stop"); code != exitOK {
		t.Fatalf("resume: exit %d\n%s", code, errs)
	}
	if diff := cmp.Diff([]string{"start_work_turn=1_n=1", "answer_work_turn=1_n=1"}, slowLog(t)); diff != "" {
		t.Errorf("a returned call was issued again (-want +got):\n%s", diff)
	}
	kinds := strings.Join(kindsOf(t, m2.Trace, 1), " ")
	if !strings.Contains(kinds, "harness.returned kitsoki.resumed turn.input") || !strings.Contains(kinds, "harness.dispatched kitsoki.call.replayed") {
		t.Errorf("turn 1 should hold the cut attempt, the resume marker and the redo with its answer from the journal:\n%s", kinds)
	}
	j2 := journalOf(t, m2.Trace)
	if j2.World["v"] != int64(2) || j2.World["sum"] != int64(1) {
		t.Errorf("world after the redo: %v", j2.World)
	}
}

// An external_side_effect call in flight at the crash stops the resume,
// naming the call; --resume-side-effects=retry issues it again, skip goes
// on without it.
func TestResumeStopsAtExternalSideEffect(t *testing.T) {
	app, dir := sessionDir(t)
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick,pay"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	cutAfter(t, m.Trace, 2, trace.KindHarnessDispatched)
	before := len(slowLog(t))
	code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--continue", "--intents", "tick,pay,stop")
	want := "resume stopped: turn 2 in paying: host.slow.charge (call charge) was in flight when the session stopped and is marked external_side_effect: true, so it may have taken effect already; pass --resume-side-effects=retry to issue it again or --resume-side-effects=skip to go on without it\n"
	if code != exitFailure || errs != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and:\n%s", code, errs, want)
	}
	if len(slowLog(t)) != before {
		t.Fatalf("the stopped resume called the plugin")
	}
	code, _, errs = runCLI(t, "", "run", app, "--sessions-dir", dir, "--continue", "--resume-side-effects=skip", "--intents", "tick,pay,stop")
	if code != exitOK {
		t.Fatalf("skip: exit %d\n%s", code, errs)
	}
	if len(slowLog(t)) != before {
		t.Errorf("--resume-side-effects=skip issued the call")
	}
	if !strings.Contains(strings.Join(kindsOf(t, m.Trace, 2), " "), "kitsoki.call.skipped") {
		t.Errorf("the skipped call is not in the journal")
	}

	app2, dir2 := sessionDir(t)
	if code, _, errs := runCLI(t, "", "run", app2, "--sessions-dir", dir2, "--intents", "tick,pay"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m2 := onlySession(t, dir2)
	cutAfter(t, m2.Trace, 2, trace.KindHarnessDispatched)
	before = len(slowLog(t))
	if code, _, errs := runCLI(t, "", "run", app2, "--sessions-dir", dir2, "--continue", "--resume-side-effects=retry", "--intents", "tick,pay,stop"); code != exitOK {
		t.Fatalf("retry: exit %d\n%s", code, errs)
	}
	if got := slowLog(t)[before:]; !cmp.Equal(got, []string{"start_charge_turn=2_n=1", "answer_charge_turn=2_n=1"}) {
		t.Errorf("retry: plugin log after the resume = %v", got)
	}
	code, _, errs = runCLI(t, "", "run", app2, "--sessions-dir", dir2, "--continue", "--resume-side-effects=later", "--intents", "tick")
	if code != exitFailure || !strings.Contains(errs, `--resume-side-effects "later": want retry or skip (or stop, the default)`) {
		t.Errorf("a bad --resume-side-effects: exit %d\n%s", code, errs)
	}
}

// A story changed since the session started is replayed against the
// journal; the first turn that decides differently stops the resume with
// the turn, the state and both decisions, and --fork starts a new session
// from the last turn that matched.
func TestResumeDetectsChangedStory(t *testing.T) {
	app := loopStory(t, "")
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick,tick,tick,tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	// A comment changes the hash, not a decision: the resume goes on.
	b, _ := os.ReadFile(app)
	if err := os.WriteFile(app, append(b, "# a comment\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", m.ID, "--resume-inputs", "replay", "--intents", "tick,tick,tick,tick,tick")
	if code != exitIncomplete || !strings.Contains(errs, "the story changed since session "+m.ID+" started; its 4 finished turn(s) replay with the same decisions") {
		t.Fatalf("an unchanged decision: exit %d\n%s", code, errs)
	}
	// Now turn 3 (n is 2 there) goes elsewhere: the guard moves.
	changed := strings.Replace(string(b), `world.n >= 2`, `world.n >= 3`, 1)
	if err := os.WriteFile(app, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", m.ID, "--resume-inputs", "replay", "--intents", "tick,tick,tick,tick,tick,tick")
	want := "session " + m.ID + ": the story changed and decides differently: turn 3 in idle: the journal took arm 0 → busy, the story now takes arm 1 → idle; pass --fork to start a new session from turn 2, the last that matched\n"
	if code != exitFailure || errs != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and:\n%s", code, errs, want)
	}
	code, _, errs = runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", m.ID, "--resume-inputs", "replay", "--fork", "--intents", "tick,tick,tick,tick")
	if code != exitIncomplete || !strings.Contains(errs, "forked session ") || !strings.Contains(errs, " from turn 2 of "+m.ID) {
		t.Fatalf("--fork: exit %d\n%s", code, errs)
	}
	all, _ := session.Store{Dir: dir}.List()
	if len(all) != 2 {
		t.Fatalf("%d sessions, want the old one and its fork", len(all))
	}
	fork := all[0]
	if fork.ID == m.ID {
		fork = all[1]
	}
	j := journalOf(t, fork.Trace)
	// the fork took turns 3 and 4 under the new story: n 2 → 3 (idle) → 4 (busy)
	if fork.ForkedFrom != m.ID || j.Turn != 4 || j.World["n"] != int64(4) || j.State != "busy" {
		t.Errorf("fork %+v: turn %d n %v state %q", fork, j.Turn, j.World["n"], j.State)
	}
	if old := journalOf(t, m.Trace); old.Turn != 5 || old.World["n"] != int64(5) {
		t.Errorf("the old session changed: turn %d n %v", old.Turn, old.World["n"])
	}
}

// kitsoki session fork --at-turn N starts a new session from turn N; the
// old one stays as it was. list, show and delete see both.
func TestSessionForkAtTurn(t *testing.T) {
	app := loopStory(t, "")
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick,tick,tick,tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	before, _ := os.ReadFile(m.Trace)
	code, out, errs := runCLI(t, "", "session", "fork", m.ID, "--at-turn", "1", "--sessions-dir", dir)
	if code != exitOK {
		t.Fatalf("fork: exit %d\n%s", code, errs)
	}
	id := strings.TrimSpace(out)
	after, _ := os.ReadFile(m.Trace)
	if !bytes.Equal(before, after) {
		t.Errorf("forking changed the old journal")
	}
	f, err := session.Store{Dir: dir}.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	j := journalOf(t, f.Trace)
	if j.Turn != 1 || j.World["n"] != int64(1) || j.State != "idle" || j.Header.ForkedFrom != m.ID || j.Header.ForkedAtTurn != 1 {
		t.Errorf("fork at turn 1: turn %d n %v state %q header %+v", j.Turn, j.World["n"], j.State, j.Header)
	}
	// the fork runs on from turn 1: its inputs are new turns, three ticks
	// reach busy with n = 4
	code, _, errs = runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", id, "--intents", "tick,tick,tick,stop")
	if code != exitOK {
		t.Fatalf("resume the fork: exit %d\n%s", code, errs)
	}
	if j := journalOf(t, f.Trace); j.World["n"] != int64(4) || j.State != "done" {
		t.Errorf("fork after its run: n %v state %q", j.World["n"], j.State)
	}

	code, out, _ = runCLI(t, "", "session", "list", "--sessions-dir", dir)
	if code != exitOK || !strings.HasPrefix(out, "ID\tSTORY\tSTATE\tTURN\tLAST ACTIVITY\tFINISHED\tCOST\n") ||
		!strings.Contains(out, id+"\tloop\tdone\t5\t") || !strings.Contains(out, m.ID+"\tloop\tbusy\t4\t") {
		t.Errorf("session list: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "", "session", "show", id, "--sessions-dir", dir, "--json")
	var shown struct {
		Session session.Meta   `json:"session"`
		Journal map[string]any `json:"journal"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != exitOK || err != nil || shown.Session.ForkedFrom != m.ID || shown.Journal["state"] != "done" {
		t.Errorf("session show: exit %d %v\n%s", code, err, out)
	}
	code, _, errs = runCLI(t, "", "session", "fork", m.ID, "--at-turn", "9", "--sessions-dir", dir)
	if code != exitFailure || !strings.Contains(errs, "fork: turn 9 did not finish in "+m.Trace+" (the last finished turn is 4): fork at turn 4 or earlier") {
		t.Errorf("fork past the end: exit %d\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "", "session", "fork", m.ID, "--sessions-dir", dir); code != exitUsage || !strings.Contains(errs, "give --at-turn N") {
		t.Errorf("fork without --at-turn: exit %d\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "", "session", "delete", m.ID, "--sessions-dir", dir); code != exitOK {
		t.Fatalf("delete: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(m.Trace); !os.IsNotExist(err) {
		t.Errorf("the deleted session's journal is still there")
	}
	code, _, errs = runCLI(t, "", "session", "show", m.ID, "--sessions-dir", dir)
	if code != exitFailure || !strings.Contains(errs, "session "+m.ID+": no such session in "+dir) {
		t.Errorf("show a deleted session: exit %d\n%s", code, errs)
	}
}

// A fork resumed with inputs runs them all as new turns after the fork's
// last turn, and says so; --resume-inputs=replay takes them as the run
// from turn 1 and names each it skips. (Before, the first two inputs were
// skipped silently because the fork's journal held two turns.)
func TestForkResumedWithNewInputsRunsThem(t *testing.T) {
	app := loopStory(t, "")
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick,tick,tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	code, out, errs := runCLI(t, "", "session", "fork", m.ID, "--at-turn", "2", "--sessions-dir", dir)
	if code != exitOK {
		t.Fatalf("fork: exit %d\n%s", code, errs)
	}
	fork := strings.TrimSpace(out)
	// turns 3 and 4 tick (n 2 → 4, busy), turn 5 stops
	code, _, errs = runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", fork, "--intents", "tick,tick,stop")
	if code != exitOK {
		t.Fatalf("resume the fork: exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		"kitsoki: resuming session " + fork + ": the inputs given are new turns after the journal's turn 2 (--resume-inputs=replay would take them as the run from turn 1)\n",
		"kitsoki: resuming session " + fork + `: taking input 1 "tick" as turn 3` + "\n",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	f, err := session.Store{Dir: dir}.Get(fork)
	if err != nil {
		t.Fatal(err)
	}
	if j := journalOf(t, f.Trace); j.Turn != 5 || j.World["n"] != int64(4) || j.State != "done" {
		t.Errorf("fork after its run: turn %d n %v state %q; want 5 4 done (every new input run)", j.Turn, j.World["n"], j.State)
	}

	// --resume-inputs=replay: the inputs are the run from turn 1.
	code, out, _ = runCLI(t, "", "session", "fork", m.ID, "--at-turn", "2", "--sessions-dir", dir)
	if code != exitOK {
		t.Fatal("second fork")
	}
	fork2 := strings.TrimSpace(out)
	code, _, errs = runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", fork2, "--resume-inputs", "replay", "--intents", "tick,tick,stop")
	if code != exitOK {
		t.Fatalf("replayed resume: exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		"kitsoki: resuming session " + fork2 + ": the inputs given replay the run from turn 1: inputs 1 to 2 are the journal's turns and are skipped, each checked against it (--resume-inputs=new would run them as new turns)\n",
		"kitsoki: resuming session " + fork2 + `: skipping input 1 "tick": the journal's turn 1 took it` + "\n",
		"kitsoki: resuming session " + fork2 + `: skipping input 2 "tick": the journal's turn 2 took it` + "\n",
		"kitsoki: resuming session " + fork2 + `: taking input 3 "stop" as turn 3` + "\n",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", fork2, "--resume-inputs", "later", "--intents", "tick"); code != exitUsage || !strings.Contains(errs, `--resume-inputs "later": want new`) {
		t.Errorf("a bad --resume-inputs: exit %d\n%s", code, errs)
	}
}

// --durability machine fsyncs at every turn's end (and at the header and
// close); process never fsyncs the journal after its header.
func TestDurabilityFsyncs(t *testing.T) {
	app := loopStory(t, "")
	for _, tt := range []struct {
		level string
		want  int
	}{
		// header, turn 0 and the 3 ticks' ends (the close has nothing left)
		{"machine", 5},
		{"process", 1},
	} {
		t.Run(tt.level, func(t *testing.T) {
			n := 0
			g := &globals{syncHook: func() { n++ }}
			cmd := newRunCmd(g)
			cmd.SetArgs([]string{app, "--sessions-dir", t.TempDir(), "--durability", tt.level, "--intents", "tick,tick,tick"})
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			var ee *exitError
			if !errorsAs(err, &ee) || ee.code != exitIncomplete {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			if n != tt.want {
				t.Errorf("%d fsyncs, want %d", n, tt.want)
			}
		})
	}
	code, _, errs := runCLI(t, "", "run", app, "--durability", "disk", "--intents", "tick")
	if code != exitFailure || !strings.Contains(errs, `--durability "disk": want machine (fsync at each turn's end) or process (no fsync)`) {
		t.Errorf("a bad --durability: exit %d\n%s", code, errs)
	}
}

// The header of a session's journal names the app, the story, its hash,
// kitsoki's version and the session; trace to-cassette takes the app id
// from it; trace status prints a line per session.
func TestSessionHeaderAndTraceStatus(t *testing.T) {
	app := loopStory(t, "")
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", "s-1", "--intents", "tick,tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	f, err := os.Open(m.Trace)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := trace.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	st, _ := story.Load(app)
	want := trace.HeaderInfo{AppID: "loop", StoryPath: app, StoryHash: st.ContentHash, KitsokiVersion: "dev", SessionID: "s-1"}
	if diff := cmp.Diff(want, h.HeaderInfo); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	// The run ended (its input ran out) without a terminal state: exited,
	// not running.
	code, out, errs := runCLI(t, "", "trace", "status", "--sessions-dir", dir)
	if code != exitOK || !strings.HasPrefix(out, "s-1\tstate=idle\tturn=2\texited\tcost=$0.0000\tidle=") || !strings.HasSuffix(out, "\tlast_error=\"\"\n") {
		t.Errorf("trace status: exit %d\n%s%s", code, out, errs)
	}
	// A process killed after its index entry was written leaves a journal
	// that grew past it, and nobody holding it: interrupted.
	stale := m
	stale.TraceBytes = 10
	if err := (session.Store{Dir: dir}).Put(stale); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "", "trace", "status", "--sessions-dir", dir); code != exitOK || !strings.HasPrefix(out, "s-1\tstate=idle\tturn=2\tinterrupted\t") {
		t.Errorf("trace status of a killed run: exit %d\n%s%s", code, out, errs)
	}
	// While a writer holds the journal, it is running.
	lock, err := trace.Create(m.Trace, trace.WithTailCheck())
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, "", "trace", "status", m.Trace); code != exitOK || !strings.HasPrefix(out, "s-1\tstate=idle\tturn=2\trunning\t") {
		t.Errorf("trace status of a held journal: exit %d\n%s", code, out)
	}
	lock.Close()
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"kind":"session.header","schema_version":1,"written_at":"2025-01-01T00:00:00Z"}`+"\n{\"turn\":0"), 0o600)
	code, out, _ = runCLI(t, "", "trace", "status", m.Trace, bad)
	if code != exitFailure || !strings.Contains(out, "s-1\tstate=idle") || !strings.Contains(out, "bad\tunreadable: session journal "+bad+": trace corrupted: missing trailing newline at EOF") {
		t.Errorf("trace status of files: exit %d\n%s", code, out)
	}
}

func errorsAs(err error, target **exitError) bool { return errors.As(err, target) }

// kitsoki trace to-cassette takes the app id from a journal's header: the
// cassette's call ids are the ones --app-id would give.
func TestToCassetteTakesAppIDFromHeader(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", hello, "--sessions-dir", dir, "--intents", "greet name=Ada,bye"); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	code, fromHeader, errs := runCLI(t, "", "trace", "to-cassette", m.Trace)
	if code != exitOK {
		t.Fatalf("to-cassette: exit %d\n%s", code, errs)
	}
	_, withFlag, _ := runCLI(t, "", "trace", "to-cassette", m.Trace, "--app-id", "hello")
	_, other, _ := runCLI(t, "", "trace", "to-cassette", m.Trace, "--app-id", "other")
	if fromHeader != withFlag || fromHeader == other {
		t.Errorf("the header's app id was not used:\nfrom header:\n%s\n--app-id hello:\n%s", fromHeader, withFlag)
	}
}

// Nothing a resume needs is a secret: the plugin's ${SLOW_LOG} is masked
// in the journal and read from the environment again when the resumed run
// loads the story (the plugin logs to the same file).
func TestResumeReadsSecretsFromTheEnvironment(t *testing.T) {
	app, dir := sessionDir(t)
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	cutAfter(t, m.Trace, 1, trace.KindHarnessDispatched)
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--continue", "--intents", "tick,stop"); code != exitOK {
		t.Fatalf("resume: exit %d\n%s", code, errs)
	}
	b, err := os.ReadFile(m.Trace)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), os.Getenv("SLOW_LOG")) {
		t.Errorf("the journal holds the ${SLOW_LOG} value")
	}
	if got := slowLog(t); len(got) != 4 || got[2] != "start_work_turn=1_n=1" {
		t.Errorf("the resumed plugin did not log to $SLOW_LOG: %v", got)
	}
}

// A session's index entry is not trusted to name the journal: one edited
// to point outside the sessions directory is refused (nothing is read or
// appended there) unless the command names that journal with --trace;
// delete leaves such a journal where it is.
func TestSessionIndexTraceIsConfined(t *testing.T) {
	app := loopStory(t, "")
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	victim := filepath.Join(t.TempDir(), "victim.jsonl")
	b, err := os.ReadFile(m.Trace)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, b, 0o600); err != nil {
		t.Fatal(err)
	}
	m.Trace = victim
	if err := (session.Store{Dir: dir}).Put(m); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", m.ID, "--intents", "tick")
	want := "session " + m.ID + ": its index entry names the journal " + victim + ", outside the sessions directory " + dir + "; kitsoki uses a journal outside it only when the command names it: resume with --trace " + victim + " (or move the journal into the directory)"
	if code != exitFailure || !strings.Contains(errs, want) {
		t.Errorf("resume through an edited index: exit %d\n%s\nwant exit 1 and %q", code, errs, want)
	}
	if after, _ := os.ReadFile(victim); !bytes.Equal(after, b) {
		t.Errorf("the file outside the sessions directory was written")
	}
	for _, args := range [][]string{{"session", "fork", m.ID, "--at-turn", "1"}, {"session", "inspect", m.ID},
		{"session", "trace", m.ID}, {"session", "continue", m.ID, "--intent", "tick"}} {
		if code, _, errs := runCLI(t, "", append(args, "--sessions-dir", dir)...); code != exitFailure || !strings.Contains(errs, "outside the sessions directory") {
			t.Errorf("%v: exit %d\n%s", args, code, errs)
		}
	}
	code, out, _ := runCLI(t, "", "session", "show", m.ID, "--sessions-dir", dir, "--json")
	if code != exitOK || !strings.Contains(out, `"journal_error": "session `+m.ID+": its index entry names the journal") {
		t.Errorf("show: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "", "session", "show", m.ID, "--sessions-dir", dir)
	if code != exitOK || !strings.Contains(out, "\njournal   could not be read: session "+m.ID+": its index entry names the journal") || strings.Contains(out, "\nworld") {
		t.Errorf("show (text): exit %d\n%s", code, out)
	}
	// Naming the journal on the command line is the user's own choice.
	code, _, errs = runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", m.ID, "--trace", victim, "--intents", "tick")
	if code != exitIncomplete {
		t.Errorf("resume with --trace naming the journal: exit %d\n%s", code, errs)
	}
	code, _, errs = runCLI(t, "", "session", "delete", m.ID, "--sessions-dir", dir)
	if code != exitOK || !strings.Contains(errs, "its journal "+victim+" is outside the sessions directory "+dir+" and was left in place") {
		t.Errorf("delete: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("delete removed a file outside the sessions directory: %v", err)
	}
}

// A run killed after it wrote its journal's header and before turn 0
// wrote a line resumes with the same --world: there is no start to
// compare it with, so turn 0 runs anew from the flags.
func TestResumeKilledBeforeTurnZero(t *testing.T) {
	app := loopStory(t, "")
	dir := filepath.Join(t.TempDir(), "sessions")
	// It stops short of a terminal state (exit 6): the session stays open.
	first := kitsokiChild(t, filepath.Dir(app), "run", app, "--sessions-dir", dir, "--intents", "tick", "--world", "n=5")
	if out, err := first.CombinedOutput(); first.ProcessState == nil || first.ProcessState.ExitCode() != 6 {
		t.Fatalf("the first run: %v, want exit 6\n%s", err, out)
	}
	// What a kill before turn 0 leaves: the entry as made, the header only.
	m := onlySession(t, dir)
	b, err := os.ReadFile(m.Trace)
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := bytes.Cut(b, []byte("\n"))
	if err := os.WriteFile(m.Trace, append(header, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	m.State, m.Turn = "", 0
	if err := (session.Store{Dir: dir}).Put(m); err != nil {
		t.Fatal(err)
	}

	again := kitsokiChild(t, filepath.Dir(app), "run", app, "--sessions-dir", dir, "--continue", "--intents", "tick,stop", "--world", "n=5")
	if out, err := again.CombinedOutput(); err != nil {
		t.Fatalf("the resume: %v\n%s", err, out)
	}
	j := journalOf(t, onlySession(t, dir).Trace)
	if !j.Done || j.State != "done" || fmt.Sprint(j.World["n"]) != "6" {
		t.Errorf("resumed session: done %v state %q n %v, want done in done with n 6", j.Done, j.State, j.World["n"])
	}
}
