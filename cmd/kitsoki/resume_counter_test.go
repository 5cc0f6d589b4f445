package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// counterStory keeps a counter as a string ("3"), increments it and sets
// it to another string; its view shows it.
const counterStory = `app: {id: strcount}
root: a
world:
  n: {type: string, default: "3"}
intents: {bump: {}, reset: {}, stop: {}}
states:
  a:
    view: "n={{ world.n }}"
    on:
      bump: [{target: ., effects: [{increment: {n: 1}}]}]
      reset: [{target: ., effects: [{set: {n: "10"}}]}]
      stop: [{target: done}]
  done: {terminal: true}
`

// A session that increments a number stored as a string, stops and is
// resumed ends with the world of the same inputs run without a stop: the
// replay of the journal reads "3" as 3, as the live run did (it used to
// read it as 0, so the resumed counter went 1, 2 where the live one went
// 4, 5).
func TestResumeIncrementsAStringStoredCounterAsLive(t *testing.T) {
	app := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(app, []byte(counterStory), 0o644); err != nil {
		t.Fatal(err)
	}
	const inputs = "bump,bump,reset,bump,stop"
	tests := []struct {
		name  string
		first string // the inputs of the run that stops early
	}{
		{"after the first increment", "bump"},
		{"after a set of a string and an increment", "bump,bump,reset,bump"},
	}
	dir := t.TempDir()
	code, liveOut, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", "live", "--intents", inputs)
	if code != exitOK {
		t.Fatalf("live run: exit %d\n%s", code, errs)
	}
	if !strings.Contains(liveOut, "n=4\nn=5\nn=10\nn=11\n") {
		t.Fatalf("live run output:\n%s", liveOut)
	}
	live := journalOf(t, filepath.Join(dir, "live.jsonl"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "r-" + strings.ReplaceAll(tt.name, " ", "-")
			if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", id, "--intents", tt.first); code != exitIncomplete {
				t.Fatalf("first run: exit %d, want %d\n%s", code, exitIncomplete, errs)
			}
			code, out, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--session", id, "--resume-inputs", "replay", "--intents", inputs)
			if code != exitOK || !strings.Contains(errs, "kitsoki: resuming session "+id) {
				t.Fatalf("resume: exit %d\n%s", code, errs)
			}
			if !strings.HasSuffix(liveOut, out) {
				t.Errorf("resumed output\n%s\nis not the end of the live run's\n%s", out, liveOut)
			}
			got := journalOf(t, filepath.Join(dir, id+".jsonl"))
			if got.World["session_id"] != id {
				t.Errorf("the resumed session's session_id = %v, want %s", got.World["session_id"], id)
			}
			// The live run is another session, with its own session_id.
			if diff := cmp.Diff(live.World, got.World, ignoreSessionID); diff != "" || got.State != live.State || got.Turn != live.Turn {
				t.Errorf("resumed: state %q turn %d, live: %q %d; world (-live +resumed):\n%s", got.State, got.Turn, live.State, live.Turn, diff)
			}
		})
	}
}

// ignoreSessionID leaves world.session_id out of a comparison of two
// sessions' worlds.
var ignoreSessionID = cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "session_id" })
