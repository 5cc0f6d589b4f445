package testrunner

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
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

// mode: is the execution mode the flow's session runs in: staged stops an
// emit_intent chain at a decision gate, one_shot runs it through. An
// input: turn is routed as typed text (input.yaml).
func TestFlowExecMode(t *testing.T) {
	for _, f := range []string{"staged.yaml", "one_shot.yaml", "input.yaml"} {
		rep := runFixtures(t, "testdata/execmode/app.yaml", "testdata/execmode/flows/"+f)
		if r := rep.Results[0]; !r.Passed {
			t.Errorf("%s:\n%s", f, report(rep.Results, true))
		}
	}
	// The staged flow fails run one-shot: the gate does not stop the chain.
	dir := testkit.Tree(t, map[string]string{"f.yaml": "test_kind: flow\napp: " + mustAbs(t, "testdata/execmode/app.yaml") +
		"\nturns:\n  - intent: {name: go}\n    expect_state: review\n"})
	rep := runFixtures(t, "testdata/execmode/app.yaml", filepath.Join(dir, "f.yaml"))
	if got := report(rep.Results, false); !strings.Contains(got, `expect_state: got "done", want "review"`) {
		t.Errorf("without mode: staged:\n%s", got)
	}
}

// expect_events_exact: the turn's events of the kinds listed are exactly
// the list, in order, each matched on from, to and effect (the payload)
// like an expect_events entry.
func TestFlowEventsExact(t *testing.T) {
	app := mustAbs(t, shopApp)
	head := "test_kind: flow\napp: " + app + "\nturns:\n  - intent: {name: add, slots: {note: gift}}\n    expect_events_exact:\n"
	tests := []struct{ name, events, want string }{
		{"pass", "      - {kind: machine.transition, from: cart, to: cart}\n      - {kind: world.update, effect: {increment: {items: 1}}}\n" +
			"      - {kind: world.update, effect: {set: {note: gift}}}\n", "PASS  f.yaml\n"},
		{"one too few", "      - {kind: machine.transition, from: cart, to: cart}\n      - {kind: world.update, effect: {increment: {items: 1}}}\n",
			"FAIL  f.yaml\n  FAIL  turn 1 → cart\n  ✗ expect_events_exact: the turn has 3 event(s) of the listed kinds [machine.transition world.update world.update], want 2\n"},
		{"out of order", "      - {kind: machine.transition, from: cart, to: cart}\n      - {kind: world.update, effect: {set: {note: gift}}}\n" +
			"      - {kind: world.update, effect: {increment: {items: 1}}}\n", "expect_events_exact[1]: no world.update event"},
		{"wrong to", "      - {kind: machine.transition, from: cart, to: paying}\n", "expect_events_exact[0]: no machine.transition event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testkit.Tree(t, map[string]string{"f.yaml": head + tt.events})
			got := report(runFile(t, filepath.Join(dir, "f.yaml")), false)
			if !strings.Contains(got, tt.want) || (tt.name == "pass") != strings.HasPrefix(got, "PASS") {
				t.Errorf("report:\n%s\nwant it to hold %q", got, tt.want)
			}
		})
	}
}

// A stub's by_op and by_call entries answer with error: or infra_error:
// in place of its data: the call fails, its on_error runs and last_error
// holds the message.
func TestFlowStubErrorsByOpAndCall(t *testing.T) {
	app := mustAbs(t, shopApp)
	for _, tt := range []struct{ name, stub, lastErr string }{
		{"by_op error", "by_op: {charge: {error: declined}}", "declined"},
		{"by_op infra_error", "by_op: {charge: {infra_error: bank is down}}", "bank is down"},
		{"by_call error", "by_call: {charge: {error: card expired}}", "card expired"},
		{"by_call infra_error", "by_call: {charge: {infra_error: timeout}}", "timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := testkit.Tree(t, map[string]string{"f.yaml": "test_kind: flow\napp: " + app + "\nhost_handlers:\n  host.pay:\n    data: {receipt: ok}\n    " + tt.stub +
				"\nturns:\n  - intent: {name: add}\n  - intent: {name: pay}\n    expect_state: cart\n    expect_world: {receipt: \"\", last_error: \"" + tt.lastErr + "\"}\n"})
			res := runFile(t, filepath.Join(dir, "f.yaml"))
			if !res[0].Passed {
				t.Fatalf("report:\n%s", report(res, true))
			}
		})
	}
}
