package intenttest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// FixtureRouter is what fixtures run through: a session's routing, its
// validation in a state, and the router's temperature.
type FixtureRouter interface {
	Router
	CheckIn(state, intent string, slots map[string]any) *orchestrator.Rejection
	SetRouterTemperature(t *float64)
}

// FixtureOptions configure a fixtures run.
type FixtureOptions struct {
	// Runs overrides every fixture's runs (0: the fixture's, else the
	// file's defaults, else 1).
	Runs int
	// Static is a run without a model: the recording (or nothing) answers
	// in place of the router, and an input only a model could answer is
	// skipped, as Kitsoki's static harness skips a recording miss.
	Static bool
}

// InputResult is one input's runs.
type InputResult struct {
	Input   string
	Runs    int
	Passed  int
	Skipped bool   // static: nothing but a model could answer it
	Got     string // what the last run gave, for the report
}

// FixtureResult is one fixture's inputs and verdict.
type FixtureResult struct {
	File        string
	State       string
	ID          string
	MinPassRate float64
	Inputs      []InputResult
	Runs        int // runs of the answered inputs
	Passed      int
	PassRate    float64
	OK          bool
}

// FixtureReport is a fixtures run.
type FixtureReport struct {
	Fixtures       []FixtureResult
	Passed, Failed int
	Skipped        int // inputs skipped for want of a model
}

// RunFixtures routes every input of every fixture its runs times, in the
// fixture's state, and scores it. A fixture passes when its answered
// inputs' runs meet its min_pass_rate; one whose every input was skipped
// passes with nothing scored (Kitsoki's static harness does the same) and
// says so.
func RunFixtures(ctx context.Context, r FixtureRouter, files []*FixtureFile, o FixtureOptions) (*FixtureReport, error) {
	rep := &FixtureReport{}
	n := int64(0)
	for _, ff := range files {
		var temp *float64
		if ff.Defaults.HasTemperature {
			t := ff.Defaults.Temperature
			temp = &t
		}
		r.SetRouterTemperature(temp)
		for _, fx := range ff.Fixtures {
			fr := FixtureResult{File: ff.Path, State: ff.State, ID: fx.ID, MinPassRate: firstRate(fx.MinPassRate, ff.Defaults.MinPassRate, DefaultMinPassRate)}
			runs := firstInt(o.Runs, fx.Runs, ff.Defaults.Runs, DefaultRuns)
			for _, input := range fx.Inputs {
				ir := InputResult{Input: input}
				for i := 0; i < runs && !ir.Skipped; i++ {
					n++
					pass, skip, got, err := runOne(ctx, r, n, ff.State, input, fx, o.Static)
					if err != nil {
						return nil, fmt.Errorf("%s: fixture %s: input %q: %w", ff.Path, fx.ID, input, err)
					}
					ir.Got = got
					if skip {
						ir.Skipped = true
						break
					}
					ir.Runs++
					if pass {
						ir.Passed++
					}
				}
				if ir.Skipped {
					rep.Skipped++
				}
				fr.Runs += ir.Runs
				fr.Passed += ir.Passed
				fr.Inputs = append(fr.Inputs, ir)
			}
			fr.PassRate = 1
			if fr.Runs > 0 {
				fr.PassRate = float64(fr.Passed) / float64(fr.Runs)
			}
			fr.OK = fr.PassRate >= fr.MinPassRate
			if fr.OK {
				rep.Passed++
			} else {
				rep.Failed++
			}
			rep.Fixtures = append(rep.Fixtures, fr)
		}
	}
	r.SetRouterTemperature(nil)
	return rep, nil
}

func firstInt(vs ...int) int {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

func firstRate(vs ...float64) float64 {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

// runOne routes input once and scores it against the fixture: pass,
// skipped (static, and only a model could answer), and what it gave.
func runOne(ctx context.Context, r FixtureRouter, n int64, state, input string, fx *Fixture, static bool) (pass, skip bool, got string, err error) {
	route, err := r.RouteIn(ctx, n, state, input)
	if err != nil {
		return false, false, "", err
	}
	if static && unanswered(route) {
		return false, true, "needs a model", nil
	}
	var rej *orchestrator.Rejection
	switch {
	case route.Rejection != nil:
		rej = route.Rejection
	case route.Intent != "":
		rej = r.CheckIn(state, route.Intent, route.Slots)
	}
	got = describe(route, rej)
	switch {
	case fx.ExpectFailure != nil:
		return rej != nil && codeIn(rej.Code, fx.ExpectFailure), false, got, nil
	case rej != nil:
		return false, false, got, nil
	case fx.ExpectFallthrough:
		return route.Intent != "", false, got, nil
	case fx.Intent != "":
		return route.Intent == fx.Intent && slotsMatch(fx.Slots, route.Slots), false, got, nil
	}
	return route.Intent != "", false, got, nil
}

// unanswered reports whether no tier answered and only a model could: the
// static run's recording had no entry.
func unanswered(r orchestrator.Route) bool {
	return r.Tier == orchestrator.TierRecording && r.Rejection != nil && r.Rejection.Code == orchestrator.CodeUnknownIntent
}

// codeIn reports whether a rejection code is one of the expected ones.
// clarify is kitsoki asking for more (MISSING_SLOTS, or CLARIFY to confirm
// a guess); UNKNOWN_INTENT is also routing to nothing (NO_MATCH).
func codeIn(code string, anyOf []string) bool {
	for _, want := range anyOf {
		switch {
		case want == code:
			return true
		case want == "clarify" && (code == orchestrator.CodeMissingSlots || code == orchestrator.CodeClarify):
			return true
		case want == orchestrator.CodeUnknownIntent && code == orchestrator.CodeNoMatch:
			return true
		}
	}
	return false
}

func slotsMatch(want, got map[string]any) bool {
	for k, v := range want {
		g, ok := got[k]
		if !ok || fmt.Sprint(g) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

func describe(r orchestrator.Route, rej *orchestrator.Rejection) string {
	if rej != nil {
		return fmt.Sprintf("%s (%s tier)", rej.Code, r.Tier)
	}
	var slots []string
	for _, k := range slices.Sorted(maps.Keys(r.Slots)) {
		slots = append(slots, fmt.Sprintf("%s=%v", k, r.Slots[k]))
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s (%s tier)", r.Intent, strings.Join(slots, " "), r.Tier))
}

// Write prints the report as Kitsoki's does: a PASS or FAIL line per
// fixture (state, id, passed/runs, rate, threshold), a line per input that
// failed or was skipped, then the totals.
func (rep *FixtureReport) Write(w io.Writer) error {
	var b strings.Builder
	for _, fr := range rep.Fixtures {
		status := "PASS"
		if !fr.OK {
			status = "FAIL"
		}
		fmt.Fprintf(&b, "%-6s state:%-14s %-28s %d/%d (%.1f%%)  (threshold %.0f%%)\n", status, fr.State, fr.ID, fr.Passed, fr.Runs, 100*fr.PassRate, 100*fr.MinPassRate)
		for _, ir := range fr.Inputs {
			switch {
			case ir.Skipped:
				fmt.Fprintf(&b, "         skip  %q: no recording entry; only a model can answer it (--harness live)\n", ir.Input)
			case ir.Passed < ir.Runs:
				fmt.Fprintf(&b, "         LOW   %q: %d/%d, got %s\n", ir.Input, ir.Passed, ir.Runs, ir.Got)
			}
		}
	}
	fmt.Fprintf(&b, "intents: %d passed, %d failed", rep.Passed, rep.Failed)
	if rep.Skipped > 0 {
		fmt.Fprintf(&b, " (%d inputs need a model and were skipped)", rep.Skipped)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
