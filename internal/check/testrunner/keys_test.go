package testrunner

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

const keysApp = "testdata/keys/app.yaml"

// runKeys runs the fixtures of one file against the keys story.
func runKeys(t *testing.T, file string, opts ...FlowOption) []*FlowResult {
	t.Helper()
	return runFixtures(t, keysApp, file, opts...).Results
}

// Every key of the fixture format, written as Kitsoki's flows write them,
// passes against a story that does what the flow says.
func TestFixtureKeysPass(t *testing.T) {
	res := runKeys(t, "testdata/keys/flows/every_key.yaml", WithTrace())
	if len(res) != 1 || !res[0].Passed {
		t.Fatalf("want a pass, got:\n%s", report(res, true))
	}
	// advance_clock moved the flow's clock: turn 3's events are stamped
	// after turn 2's by the 2 s of the clock (and the 20 ms stub delay).
	evs, err := trace.Read(bytes.NewReader(res[0].Trace))
	if err != nil {
		t.Fatal(err)
	}
	first := map[int64]time.Time{}
	for _, ev := range evs {
		if _, ok := first[ev.Turn]; !ok {
			ts, err := time.Parse(time.RFC3339Nano, ev.TS)
			if err != nil {
				t.Fatal(err)
			}
			first[ev.Turn] = ts
		}
	}
	if gap := first[3].Sub(first[2]); gap < 2*time.Second+20*time.Millisecond {
		t.Errorf("turn 3 starts %v after turn 2, want at least 2.02s (advance_clock: 2s, delay: 20ms)", gap)
	}
}

// Each new assertion fails with its own message when the story does not
// do what it says.
func TestFixtureKeysFailures(t *testing.T) {
	tests := []struct{ file, want string }{
		// Dropped calls count too: the list names handlers never to call.
		{"no_calls_list.yaml", "FAIL  no_calls_list.yaml (1 host call dropped: no stubs)\n  FAIL  turn 1 → counting\n" +
			"  ✗ expect_no_host_calls: host.counter was called 1 time(s), want none: [host.counter]\n  FAIL  [session]\n" +
			"  ✗ expect_no_host_calls: host.counter was called 1 time(s), want none: [host.counter]\n"},
		{"unchanged.yaml", "FAIL  unchanged.yaml\n  FAIL  turn 1 → counting\n  ✗ expect_world_unchanged: world differs (-want +got):\n" +
			"      map[string]any{\n    - \t\"count\":      int64(0),\n    + \t\"count\":      int64(3),\n" +
			"      \t\"last_error\": string(\"\"),\n      \t\"pinged\":     bool(false),\n      \t... // 4 identical entries\n      }\n"},
		// Checked at the flow's end: pinged (false after turn 1) passes.
		{"world_final.yaml", "FAIL  world_final.yaml\n  FAIL  [session]\n" +
			"  ✗ turns[0].expect_world_final[\"count\"]: got 0 (int), want 4 (int)\n" +
			"  ✗ turns[0].expect_world_final: world differs (-want +got):\n      map[string]any{\n" +
			"    - \t\"count\":  int64(4),\n    + \t\"count\":  int64(0),\n      \t\"pinged\": bool(true),\n      }\n"},
		{"host_call_id.yaml", "FAIL  host_call_id.yaml\n  FAIL  turn 1 → counting\n" +
			"  ✗ expect_host_calls[0]: host.counter (id other_call) was not called, want at least once [host.counter]\n"},
		{"then.yaml", "FAIL  then.yaml\n  FAIL  turn 1 → done\n  ✗ then[0]: expect_state: got \"done\", want \"counting\"\n"},
		{"input_miss.yaml", "FAIL  input_miss.yaml\n  FAIL  turn 2 → counting\n" +
			"  ✗ UNKNOWN_INTENT: input \"dance\" in state \"counting\" has no entry in the recording testdata/keys/recording.yaml; add one (state, input, intent: {name, slots})\n"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			// go-cmp marks its diffs with random non-breaking spaces.
			got := strings.ReplaceAll(report(runKeys(t, filepath.Join("testdata/keys/failing", tt.file)), false), "\u00a0", " ")
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("report (-want +got):\n%s", d)
			}
		})
	}
}

// app: written as a story id must be the id of the story under test.
func TestFixtureAppStoryID(t *testing.T) {
	fxs, err := LoadFixtures(keysApp, "testdata/keys/failing/app_id.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(WithFlowGetenv(testkit.NoEnv))
	defer r.Close()
	_, err = r.Prepare(fxs[0])
	want := `testdata/keys/failing/app_id.yaml:2:6: app: "some-other-story" names a story by id, but the story under test (testdata/keys/app.yaml) has id "keys-test": write app: keys-test, or the story's path relative to the fixture`
	if err == nil || err.Error() != want {
		t.Errorf("Prepare error:\n got %v\nwant %s", err, want)
	}
	fx, err := ParseFixtures([]byte("test_kind: flow\napp: keys-test\nturns: []\n"), "flows/f.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Prepare(fx[0])
	want = `flows/f.yaml:2:6: app: "keys-test" is a story id, and a story id names the story under test, which this run does not have: write app: as the story's path relative to the fixture (app: ../app.yaml), or run kitsoki test flows with the story`
	if err == nil || err.Error() != want {
		t.Errorf("Prepare error without a story:\n got %v\nwant %s", err, want)
	}
}

// Malformed values of the keys are refused with file:line:col, the key
// path and how to write them.
func TestFixtureKeyParseErrors(t *testing.T) {
	const head = "test_kind: flow\napp: ../app.yaml\n"
	tests := []struct{ name, in, want string }{
		{"no_host_calls scalar", head + "turns:\n  - intent: look\n    expect_no_host_calls: host.x\n",
			`flows/f.yaml:5:27: turns[0].expect_no_host_calls must be true, false or a list of handler names (e.g. [host.github, iface.ci.run_tests]), got "host.x"`},
		{"no_host_calls mapping", head + "expect_no_host_calls: {a: 1}\nturns: []\n",
			`flows/f.yaml:3:23: fixture.expect_no_host_calls must be true, false or a list of handler names (e.g. [host.github, iface.ci.run_tests]), got a mapping`},
		{"no_host_calls entry", head + "expect_no_host_calls: [host.a, {b: 1}]\nturns: []\n",
			`flows/f.yaml:3:32: fixture.expect_no_host_calls[1] must be a handler name (e.g. host.github), got a mapping`},
		{"advance_clock bad", head + "turns:\n  - intent: look\n    advance_clock: soon\n",
			`flows/f.yaml:5:20: turns[0].advance_clock must be a positive duration such as "200ms", "2s", "9m" or "11d", got "soon"`},
		{"advance_clock top level", head + "advance_clock: 2s\nturns: []\n",
			`flows/f.yaml:3:16: fixture.advance_clock is not supported at the top level: write advance_clock: on the turn after which the flow's clock moves (turns[i].advance_clock: "2s")`},
		{"then not a list", head + "turns:\n  - intent: look\n    then: {expect_state: a}\n",
			`flows/f.yaml:5:11: turns[0].then must be a list of expectation blocks (- expect_state: done), got a mapping`},
		{"then unknown key", head + "turns:\n  - intent: look\n    then:\n      - intent: look\n",
			`flows/f.yaml:6:9: turns[0].then[0].intent: unknown key "intent" (valid: expect_state, expect_not_state, expect_state_in, expect_world, expect_world_full, expect_slots, expect_error, expect_view_matches, expect_no_view, expect_host_calls, expect_no_host_calls, expect_events, expect_events_exact, expect_world_final, expect_world_unchanged, expect_inbox, expect_jobs, expect_terminal)`},
		{"by_call delay", head + "host_handlers:\n  host.x:\n    by_call:\n      c: {delay: later}\nturns: []\n",
			`flows/f.yaml:6:18: host_handlers.host.x.by_call.c.delay: "later" is not a duration (write e.g. 200ms, 2s, 3d)`},
		{"world_unchanged", head + "turns:\n  - intent: look\n    expect_world_unchanged: maybe\n",
			`flows/f.yaml:5:29: turns[0].expect_world_unchanged must be true or false, got "maybe"`},
		{"world_final", head + "turns:\n  - intent: look\n    expect_world_final: [a]\n",
			`flows/f.yaml:5:25: turns[0].expect_world_final: must be a mapping, got a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFixtures([]byte(tt.in), "flows/f.yaml", "app.yaml")
			if err == nil {
				t.Fatalf("no error, want %s", tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
