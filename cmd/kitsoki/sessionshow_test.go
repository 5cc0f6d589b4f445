package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/run/cluster"
)

// stamps are the RFC 3339 times of a session show; the tests write T.
var stamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// sizes are the journal's size in bytes; the tests write N.
var sizes = regexp.MustCompile(`\(\d+ bytes\)`)

// kitsoki session show prints a readable page by default: the index
// entry, where the journal stopped and the world, one variable a line;
// --json prints the same session as one JSON object.
func TestSessionShowText(t *testing.T) {
	app := loopStory(t, "")
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick,tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	code, out, errs := runCLI(t, "", "session", "show", m.ID, "--sessions-dir", dir)
	if code != exitOK {
		t.Fatalf("show: exit %d\n%s", code, errs)
	}
	want := strings.Join([]string{
		"session   " + m.ID,
		"story     loop (" + m.Story + ")",
		"state     idle, turn 2",
		"finished  no",
		"created   T",
		"updated   T",
		"cost      $0.0000",
		"trace     " + m.Trace + " (N bytes)",
		"journal   stopped at idle, turn 2, finished no",
		"world",
		`  last_error = ""`,
		"  n = 2",
		"  session_cost_usd = 0",
		`  session_id = "` + m.ID + `"`,
		"  turn_cost_usd = 0",
		`  write_mode_scope = ""`,
		"",
	}, "\n")
	if diff := cmp.Diff(want, sizes.ReplaceAllString(stamps.ReplaceAllString(out, "T"), "(N bytes)")); diff != "" {
		t.Errorf("session show (-want +got):\n%s", diff)
	}

	// A fork says where it came from.
	code, out, errs = runCLI(t, "", "session", "fork", m.ID, "--at-turn", "1", "--sessions-dir", dir)
	if code != exitOK {
		t.Fatalf("fork: exit %d\n%s", code, errs)
	}
	fork := strings.TrimSpace(out)
	_, out, _ = runCLI(t, "", "session", "show", fork, "--sessions-dir", dir)
	if !strings.Contains(out, "\nforked    from "+m.ID+" at turn 1\n") || !strings.Contains(out, "\n  n = 1\n") {
		t.Errorf("show the fork:\n%s", out)
	}

	// --json keeps the JSON object: session, journal.
	code, out, _ = runCLI(t, "", "session", "show", m.ID, "--sessions-dir", dir, "--json")
	var shown struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
		Journal struct {
			State string         `json:"state"`
			Turn  int64          `json:"turn"`
			World map[string]any `json:"world"`
		} `json:"journal"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != exitOK || err != nil || shown.Session.ID != m.ID ||
		shown.Journal.State != "idle" || shown.Journal.Turn != 2 || shown.Journal.World["n"] != float64(2) {
		t.Errorf("session show --json: exit %d %v\n%s", code, err, out)
	}
}

// A turn a crash left unfinished is named with its input and the calls it
// had dispatched.
func TestSessionShowTextUnfinishedTurn(t *testing.T) {
	app, dir := sessionDir(t)
	if code, _, errs := runCLI(t, "", "run", app, "--sessions-dir", dir, "--intents", "tick,tick"); code != exitIncomplete {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	m := onlySession(t, dir)
	cutAfter(t, m.Trace, 2, trace.KindHarnessDispatched)
	code, out, errs := runCLI(t, "", "session", "show", m.ID, "--sessions-dir", dir)
	if code != exitOK || !strings.Contains(out, "\njournal     stopped at counting, turn 1, finished no\nunfinished  turn 2 \"tick\", 1 call(s): host.slow.work\n") {
		t.Errorf("show: exit %d\n%s%s", code, out, errs)
	}
}

// The text form of a session on a cluster: its workflow, where it
// stands, the intents it takes now and its world.
func TestClusterShowText(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	si := &cluster.SessionInfo{ID: "re-1", RunID: "r1", Status: "running", AppID: "hello",
		Story: cluster.StoryRef{Path: "stories/hello/app.yaml", Bundle: "sha256:ab"}, TaskQueue: "kitsoki",
		Started: at, Updated: at.Add(time.Minute), State: "greeted", Turn: 1,
		Allowed: []string{"again", "bye"}, World: cluster.Value{V: map[string]any{"name": "Ada", "n": int64(1)}}}
	var b bytes.Buffer
	if err := clusterShowText(si, "default").write(&b); err != nil {
		t.Fatal(err)
	}
	want := `session     re-1
run id      r1
status      running
app         hello
story       stories/hello/app.yaml (bundle sha256:ab)
namespace   default
task queue  kitsoki
started     2026-12-02T06:00:00Z
updated     2026-12-02T06:01:00Z
state       greeted, turn 1
finished    no
allowed     again, bye
world
  n = 1
  name = "Ada"
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A failed session whose state could not be read shows why, and no
	// world.
	b.Reset()
	failed := &cluster.SessionInfo{ID: "f-1", Status: "failed", Error: "no worker answered", Started: at, Updated: at}
	_ = clusterShowText(failed, "default").write(&b)
	if got := b.String(); !strings.Contains(got, "\nerror      no worker answered\n") || strings.Contains(got, "world") {
		t.Errorf("failed session:\n%s", got)
	}
}
