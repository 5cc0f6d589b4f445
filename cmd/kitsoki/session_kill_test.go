package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/session"
)

// kitsokiChild runs this test binary as kitsoki (TestMain) in dir.
func kitsokiChild(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KITSOKI_TEST_AS_CLI=1")
	return cmd
}

// The acceptance test of durable sessions: a scripted 200-turn run whose
// every turn waits on a slow subprocess plugin is killed with SIGKILL at
// random moments, 50 times, each time followed by the same command with
// --continue until the run finishes. The final state and world equal an
// uninterrupted run's, every turn's call completed exactly once, and the
// plugin was never asked for a call the journal had seen complete.
func TestSIGKILLResumeMatchesUninterruptedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and resumes a 200-turn run 50 times (a few seconds); make test runs it")
	}
	const turns, kills = 200, 50
	intents := strings.Repeat("tick,", turns) + "stop"

	// The uninterrupted run.
	refApp, refDir := sessionDir(t)
	ref := kitsokiChild(t, filepath.Dir(refApp), "run", refApp, "--sessions-dir", refDir, "--intents", intents, "--world", "delay=25")
	if out, err := ref.CombinedOutput(); err != nil {
		t.Fatalf("the uninterrupted run: %v\n%s", err, out)
	}
	want := journalOf(t, onlySession(t, refDir).Trace)

	app, dir := sessionDir(t) // SLOW_LOG is this run's from here on
	rng := rand.New(rand.NewPCG(17, 2026))
	args := []string{"run", app, "--sessions-dir", dir, "--continue", "--intents", intents, "--world", "delay=25"}
	finished := false
	killed := 0
	for killed < kills && !finished {
		cmd := kitsokiChild(t, filepath.Dir(app), args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done: // it finished before the kill
			if err != nil {
				t.Fatalf("run %d: %v\n%s", killed+1, err, stderr.String())
			}
			finished = true
		case <-time.After(time.Duration(20+rng.IntN(150)) * time.Millisecond):
			_ = cmd.Process.Kill()
			<-done
			killed++
		}
	}
	for i := 0; !finished; i++ {
		if i == 5 {
			t.Fatalf("the run did not finish after %d kills and %d resumes", killed, i)
		}
		out, err := kitsokiChild(t, filepath.Dir(app), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("resume %d: %v\n%s", i+1, err, out)
		}
		finished = true
	}
	if killed != kills {
		t.Errorf("the run finished after %d kills, before the %d the test is for", killed, kills)
	}

	m, ok, err := session.Store{Dir: dir}.Latest(app)
	if err != nil || ok {
		t.Fatalf("an unfinished session is left: %+v %v", m, err)
	}
	all, _ := session.Store{Dir: dir}.List()
	var got *session.Journal
	for _, s := range all {
		if j := journalOf(t, s.Trace); j.Done {
			if got != nil {
				t.Fatalf("two finished sessions")
			}
			got = j
		}
	}
	if got == nil {
		t.Fatal("no finished session")
	}
	// The two runs are two sessions: each world holds its own session_id.
	if diff := cmp.Diff(want.World, got.World, ignoreSessionID); diff != "" || got.State != want.State || got.Turn != want.Turn {
		t.Errorf("interrupted run: state %q turn %d, uninterrupted: state %q turn %d; world (-uninterrupted +interrupted):\n%s",
			got.State, got.Turn, want.State, want.Turn, diff)
	}
	checkCallsAnsweredOnce(t, got.Path, turns)
}

// checkCallsAnsweredOnce reads a journal and the slow plugin's log: every
// tick turn's call completed exactly once live (a later attempt of the
// turn took its answer from the journal), and the plugin started no call
// of a turn more often than the journal issued one.
func checkCallsAnsweredOnce(t *testing.T, path string, turns int) {
	t.Helper()
	evs, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	issued := map[int64]int{}    // live dispatches
	completed := map[int64]int{} // live dispatches that returned
	live := false
	for i := range evs {
		ev := &evs[i]
		switch ev.Kind {
		case trace.KindHarnessDispatched:
			live = !(i+1 < len(evs) && evs[i+1].Kind == session.KindCallReplayed)
			if live {
				issued[ev.Turn]++
			}
		case session.KindResumed:
			live = false
		case trace.KindHarnessReturned:
			if live {
				completed[ev.Turn]++
			}
			live = false
		}
	}
	starts := map[int64]int{}
	for _, l := range slowLog(t) {
		var turn, n int64
		if _, err := fmt.Sscanf(l, "start_work_turn=%d_n=%d", &turn, &n); err == nil {
			starts[turn]++
		}
	}
	for turn := int64(1); turn <= int64(turns); turn++ {
		if completed[turn] != 1 {
			t.Errorf("turn %d: its call completed %d times live, want once", turn, completed[turn])
		}
		if starts[turn] > issued[turn] {
			t.Errorf("turn %d: the plugin started %d calls, the journal issued %d", turn, starts[turn], issued[turn])
		}
		if starts[turn] == 0 {
			t.Errorf("turn %d: the plugin never saw its call", turn)
		}
	}
}
