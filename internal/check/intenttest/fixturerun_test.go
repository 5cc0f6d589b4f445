package intenttest

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// tableRouter answers from a table and records the temperature it was set
// to for each call.
type tableRouter struct {
	routes map[string]orchestrator.Route
	checks map[string]*orchestrator.Rejection // by intent
	temp   *float64
	temps  []float64
}

func (r *tableRouter) RouteIn(_ context.Context, _ int64, _, text string) (orchestrator.Route, error) {
	if r.temp != nil {
		r.temps = append(r.temps, *r.temp)
	}
	if rt, ok := r.routes[text]; ok {
		return rt, nil
	}
	return orchestrator.Route{Tier: orchestrator.TierRecording, Rejection: &orchestrator.Rejection{Code: orchestrator.CodeUnknownIntent}}, nil
}

func (r *tableRouter) CheckIn(_, intent string, _ map[string]any) *orchestrator.Rejection {
	return r.checks[intent]
}

func (r *tableRouter) SetRouterTemperature(t *float64) { r.temp = t }

func TestRunFixturesScores(t *testing.T) {
	r := &tableRouter{
		routes: map[string]orchestrator.Route{
			"go south": {Tier: "verb_value", Intent: "go", Slots: map[string]any{"direction": "south", "speed": "fast"}},
			"go north": {Tier: "verb_value", Intent: "go", Slots: map[string]any{"direction": "north"}},
			"go":       {Tier: "exact", Intent: "go"},
			"xyzzy":    {Tier: "router", Rejection: &orchestrator.Rejection{Code: orchestrator.CodeNoMatch}},
			"dance":    {Tier: "exact", Intent: "dance"},
		},
		checks: map[string]*orchestrator.Rejection{"go": nil},
	}
	ff := &FixtureFile{Path: "f.yaml", State: "hall", Defaults: Defaults{Runs: 2, MinPassRate: 0.5, Temperature: 0.3, HasTemperature: true},
		Fixtures: []*Fixture{
			{ID: "south", Intent: "go", Slots: map[string]any{"direction": "south", "speed": "fast"}, Inputs: []string{"go south", "go north"}},
			{ID: "strict", Intent: "go", Slots: map[string]any{"direction": "south"}, Inputs: []string{"go south", "go north"}, MinPassRate: 0.9, Runs: 1},
			{ID: "nonsense", ExpectFailure: []string{"UNKNOWN_INTENT"}, Inputs: []string{"xyzzy", "never seen"}},
			{ID: "fumble", ExpectFallthrough: true, Inputs: []string{"dance"}},
		}}
	r.checks["go"] = nil
	rep, err := RunFixtures(context.Background(), r, []*FixtureFile{ff}, FixtureOptions{Static: true})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID           string
		Runs, Passed int
		OK           bool
	}
	var got []row
	for _, f := range rep.Fixtures {
		got = append(got, row{f.ID, f.Runs, f.Passed, f.OK})
	}
	want := []row{{"south", 4, 2, true}, {"strict", 2, 1, false}, {"nonsense", 2, 2, true}, {"fumble", 2, 2, true}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fixtures (-want +got):\n%s", d)
	}
	if rep.Skipped != 1 || rep.Passed != 3 || rep.Failed != 1 {
		t.Errorf("totals %+v", rep)
	}
	if len(r.temps) == 0 || r.temps[0] != 0.3 || r.temp != nil {
		t.Errorf("temperature: %v during the run, %v after", r.temps, r.temp)
	}
	var b strings.Builder
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"FAIL   state:hall           strict                       1/2 (50.0%)  (threshold 90%)",
		`LOW   "go north": 0/1, got go direction=north (verb_value tier)`,
		`skip  "never seen"`,
		"intents: 3 passed, 1 failed (1 inputs need a model and were skipped)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	// Live, an input the recording lacks is a failed run, not skipped.
	rep, _ = RunFixtures(context.Background(), r, []*FixtureFile{{Path: "f.yaml", State: "hall",
		Fixtures: []*Fixture{{ID: "x", Intent: "go", Inputs: []string{"never seen"}}}}}, FixtureOptions{})
	if rep.Skipped != 0 || rep.Failed != 1 {
		t.Errorf("live: %+v", rep)
	}
}

func TestCodeIn(t *testing.T) {
	for _, tt := range []struct {
		code string
		any  []string
		want bool
	}{
		{"MISSING_SLOTS", []string{"clarify"}, true},
		{"CLARIFY", []string{"clarify"}, true},
		{"NO_MATCH", []string{"UNKNOWN_INTENT"}, true},
		{"INTENT_NOT_ALLOWED_IN_STATE", []string{"INTENT_NOT_ALLOWED_IN_STATE"}, true},
		{"GUARD_FAILED", []string{"clarify", "UNKNOWN_INTENT"}, false},
	} {
		if got := codeIn(tt.code, tt.any); got != tt.want {
			t.Errorf("codeIn(%s, %v) = %v", tt.code, tt.any, got)
		}
	}
}
