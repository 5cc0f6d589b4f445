package testrunner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Flow keys of Kitsoki's format: display_input, turn-level
// expect_terminal, expect_jobs as a list, expect_error.missing_slots and
// guard_hint, expect_events_exact, use_orchestrator: false.
func TestKitsokiFlowKeys(t *testing.T) {
	rep := runFixtures(t, "testdata/kitsokikeys/app.yaml", "testdata/kitsokikeys/flows/keys.yaml")
	if f := rep.Results[0]; !f.Passed {
		t.Fatalf("keys.yaml failed: %+v", f.Turns)
	}
	rep = runFixtures(t, "testdata/kitsokikeys/app.yaml", "testdata/kitsokikeys/flows/machine.yaml")
	if f := rep.Results[0]; !f.Passed {
		t.Fatalf("machine.yaml (use_orchestrator: false drops host calls) failed: %+v", f.Turns)
	}
}

func TestKitsokiFlowKeysFail(t *testing.T) {
	rep := runFixtures(t, "testdata/kitsokikeys/app.yaml", "testdata/kitsokikeys/flows/wrong.yaml")
	f := rep.Results[0]
	if f.Passed {
		t.Fatal("wrong.yaml passed")
	}
	var got []string
	for _, tr := range f.Turns {
		got = append(got, tr.Failures...)
	}
	want := []string{
		`expect_terminal: true, but the turn ended in "desk", which is not terminal`,
		`expect_jobs[0]: the host.run job job-1 ended failed, want done (boom)`,
		`expect_jobs[1]: no host.git job ended this turn (1 job(s) ended: host.run failed)`,
		`expect_error.guard_hint: got "build first", want "other"`,
		`expect_error.missing_slots: "x" is not among the missing slots []`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("failures (-want +got):\n%s", d)
	}
}

func TestKitsokiFlowKeyShapes(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"test_kind: flow\nturns:\n  - intent: a\n    expect_terminal: maybe\n", "turns[0].expect_terminal must be true or false"},
		{"test_kind: flow\nturns:\n  - intent: a\n    expect_jobs: 3\n", "turns[0].expect_jobs must be a list of {namespace, status}"},
		{"test_kind: flow\nturns:\n  - intent: a\n    expect_jobs: [{namespace: host.run, status: don}]\n", `expect_jobs[0].status "don" is not one of done, failed, cancelled, awaiting_input (did you mean "done"?)`},
		{"test_kind: flow\nturns:\n  - input: hi\n    display_input: hello\n", "display_input is the words an intent: turn records"},
		{"test_kind: flow\nturns:\n  - intent: a\n    expect_terminl: true\n", `unknown key "expect_terminl" (did you mean "expect_terminal"?)`},
		{"test_kind: flow\nturns:\n  - intent: a\n    expect_error: {code: X, missing_slot: [a]}\n", `unknown key "missing_slot" (did you mean "missing_slots"?)`},
	} {
		_, err := ParseFixtures([]byte(tt.src), "f.yaml", "app.yaml")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want it to hold %q", tt.src, err, tt.want)
		}
	}
}
