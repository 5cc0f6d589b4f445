package testrunner

import (
	"context"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// Flows drive timeouts with advance_clock:, alone on a turn or after an
// intent, and see parallel configurations as Kitsoki prints them.
func TestFlowStates(t *testing.T) {
	for _, file := range []string{"clock_only.yaml", "after_intent.yaml", "parallel_done.yaml"} {
		t.Run(file, func(t *testing.T) {
			fxs, err := LoadFixtures("testdata/states/app.yaml", "testdata/states/flows/"+file)
			if err != nil {
				t.Fatal(err)
			}
			r := NewRunner(WithFlowGetenv(testkit.NoEnv))
			t.Cleanup(func() { r.Close() })
			rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1 || !rep.Results[0].Passed {
				t.Fatalf("want a pass, got:\n%s", report(rep.Results, true))
			}
		})
	}
}

// A turn with neither intent nor advance_clock is refused, naming both.
func TestFlowTurnNeedsIntentOrClock(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml":       "app: {id: x}\nroot: a\nstates: {a: {}}\n",
		"flows/bad.yaml": "test_kind: flow\napp: ../app.yaml\nturns:\n  - expect_state: a\n",
	})
	_, err := LoadFixtures(dir+"/app.yaml", dir+"/flows/bad.yaml")
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:4:5: turns[0]: intent: {name, slots} is required (or advance_clock: alone, for a turn that only moves the clock)") {
		t.Fatalf("err = %v", err)
	}
}
