package intenttest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/check/eval"
	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// fakeRouter answers each utterance from a table.
type fakeRouter map[string]orchestrator.Route

func (f fakeRouter) RouteIn(_ context.Context, _ int64, _, text string) (orchestrator.Route, error) {
	return f[text], nil
}

func TestRunScoresCases(t *testing.T) {
	ds := &Dataset{Path: "d.yaml", Cases: []Case{
		{State: "s", Say: "a", Intent: "go", Slots: map[string]any{"n": 3}},
		{State: "s", Say: "b", Intent: "go", Slots: map[string]any{"n": 3}},
		{State: "s", Say: "c", Intent: "go"},
		{State: "s", Say: "d", Intent: None},
		{State: "s", Say: "e", Intent: "stop"},
		{State: "s", Say: "f", Intent: None},
	}}
	r := fakeRouter{
		"a": {Tier: "router", Intent: "go", Slots: map[string]any{"n": int64(3), "extra": "x"}},
		"b": {Tier: "router", Intent: "go", Slots: map[string]any{"n": int64(4)}},
		"c": {Tier: "exact", Intent: "stop"},
		"d": {Tier: "router", Rejection: &orchestrator.Rejection{Message: "no"}},
		"e": {Tier: "router", Err: errors.New("boom")},
		// A failed call routes nowhere, but that is no correct "none".
		"f": {Tier: "router", Err: errors.New("no router")},
	}
	rep, err := Run(context.Background(), r, ds)
	if err != nil {
		t.Fatal(err)
	}
	var why []string
	for _, res := range rep.Results {
		why = append(why, res.Why)
	}
	if d := cmp.Diff([]string{"", `slot n = "4", want "3"`, "routed to stop (exact tier), want go", "", "the router failed: boom", "the router failed: no router"}, why); d != "" {
		t.Errorf("reasons (-want +got):\n%s", d)
	}
	want := []IntentStats{
		{Intent: "go", N: 3, Correct: 1, Accuracy: 1.0 / 3, Interval: eval.Wilson(1, 3)},
		{Intent: "none", N: 2, Correct: 1, Accuracy: 0.5, Interval: eval.Wilson(1, 2)},
		{Intent: "stop", N: 1, Correct: 0, Accuracy: 0, Interval: eval.Wilson(0, 1)},
	}
	if d := cmp.Diff(want, rep.Intents); d != "" {
		t.Errorf("per intent (-want +got):\n%s", d)
	}
	if rep.N != 6 || rep.Correct != 2 || rep.Accuracy != 2.0/6 || rep.Interval != eval.Wilson(2, 6) {
		t.Errorf("overall %d/%d %v %v", rep.Correct, rep.N, rep.Accuracy, rep.Interval)
	}
}
