package testrunner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// Report is the result of a `kitsoki test flows` run. Its exported fields
// are the --json document: {"Results":[...],"Passed":n,"Failed":n}.
type Report struct {
	Results []*FlowResult
	Passed  int
	Failed  int
}

// OK reports whether no flow failed.
func (r *Report) OK() bool { return r.Failed == 0 }

// SetupErrors lists the setup errors of the fixtures that could not run,
// in run order.
func (r *Report) SetupErrors() []string {
	var out []string
	for _, res := range r.Results {
		if res.SetupError != "" {
			out = append(out, res.SetupError)
		}
	}
	return out
}

// RunFixtures runs fixtures in order, each prepared as it is run. A
// fixture that cannot be prepared (a setup error) does not run: its result
// fails with SetupError, and the other fixtures still run. each, when not
// nil, sees every result as soon as it is known. With failFast the run
// stops after the first failing flow. The error is for the run as a whole;
// today nothing returns one.
func (r *Runner) RunFixtures(ctx context.Context, fixtures []*Fixture, failFast bool, each func(*FlowResult)) (*Report, error) {
	rep := &Report{Results: []*FlowResult{}}
	for _, fx := range fixtures {
		if !r.runOne(ctx, rep, fx, failFast, each) {
			break
		}
	}
	return rep, nil
}

// RunFiles is RunFixtures over fixture files (FixtureFiles), each file
// parsed when its turn comes and dropped once its flows ran, so a run
// holds one file's fixtures at a time, not every file's. A file that does
// not parse is reported as a fixture that could not run, named by its
// file, and the other files still run. appPath is the story of the
// fixtures that name no app:.
func (r *Runner) RunFiles(ctx context.Context, appPath string, files []string, failFast bool, each func(*FlowResult)) (*Report, error) {
	rep := &Report{Results: []*FlowResult{}}
	for _, file := range files {
		fxs, err := ParseFixtureFile(file, appPath)
		if err != nil {
			if !rep.setupFailed(&FlowResult{File: file, Name: filepath.Base(file), SetupError: err.Error()}, failFast, each) {
				break
			}
			continue
		}
		for _, fx := range fxs {
			if !r.runOne(ctx, rep, fx, failFast, each) {
				return rep, nil
			}
		}
	}
	return rep, nil
}

// runOne prepares and runs one fixture into rep (the flow is dropped once
// it ran, so a run holds one flow's cassette and session at a time); it
// reports whether the run goes on.
func (r *Runner) runOne(ctx context.Context, rep *Report, fx *Fixture, failFast bool, each func(*FlowResult)) bool {
	f, err := r.Prepare(fx)
	if err != nil {
		return rep.setupFailed(&FlowResult{File: fx.File, Name: fx.Name, SetupError: err.Error()}, failFast, each)
	}
	res := f.Run(ctx)
	if f.Story != nil {
		maskFlowResult(secret.New(f.Story.Secrets), res)
	}
	rep.Results = append(rep.Results, res)
	switch {
	case res.Skipped:
	case res.Passed:
		rep.Passed++
	default:
		rep.Failed++
	}
	if each != nil {
		each(res)
	}
	if r.cfg.summary {
		res.Turns, res.Warnings, res.HostErrors = nil, nil, nil
	}
	return !failFast || res.Skipped || res.Passed
}

// setupFailed records a fixture that could not run; it reports whether
// the run goes on.
func (rep *Report) setupFailed(res *FlowResult, failFast bool, each func(*FlowResult)) bool {
	rep.Results = append(rep.Results, res)
	rep.Failed++
	if each != nil {
		each(res)
	}
	return !failFast
}

// WriteResult prints one flow as the report does:
//
//	PASS|FAIL|SKIP  <file basename>
//	  ok    turn N → <state>        (every turn with verbose, else failing ones)
//	  FAIL  turn N → <state>
//	  ✗ <message>
//
// The session checks show as "[session]"; a fixture that could not run
// shows "  ✗ setup: <error>".
func WriteResult(w io.Writer, res *FlowResult, verbose bool) {
	status := "PASS"
	switch {
	case res.Skipped:
		status = "SKIP"
	case !res.Passed:
		status = "FAIL"
	}
	fmt.Fprintf(w, "%s  %s%s\n", status, res.Name, droppedNote(res.DroppedHostCalls))
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	if verbose {
		for _, e := range res.HostErrors {
			fmt.Fprintf(w, "  host error: %s\n", e)
		}
	}
	if res.SetupError != "" {
		fmt.Fprintf(w, "  ✗ setup: %s\n", strings.ReplaceAll(res.SetupError, "\n", "\n    "))
		return
	}
	if res.Skipped {
		if verbose {
			fmt.Fprintf(w, "  skipped: %s\n", res.SkipReason)
		}
		return
	}
	for _, t := range res.Turns {
		if t.Passed && !verbose {
			continue
		}
		mark := "ok  "
		if !t.Passed {
			mark = "FAIL"
		}
		if t.TurnIndex == SessionIndex {
			fmt.Fprintf(w, "  %s  [session]\n", mark)
		} else {
			fmt.Fprintf(w, "  %s  turn %d → %s\n", mark, t.TurnIndex+1, t.NewState)
		}
		for _, f := range t.Failures {
			fmt.Fprintf(w, "  ✗ %s\n", strings.ReplaceAll(f, "\n", "\n    "))
		}
	}
}

// WriteSummary prints the closing lines: a blank line, "Summary:
// <passed>/<total> flows pass" (skipped flows not counted), then PASS or
// FAIL.
func (r *Report) WriteSummary(w io.Writer) {
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\nSummary: %d/%d flows pass\n%s\n", r.Passed, r.Passed+r.Failed, verdict)
}

// WriteJSON writes the report as JSON to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return outfile.WriteFile(path, append(b, '\n'))
}

// droppedNote is the report's note on host calls a fixture without stubs
// dropped: " (3 host calls dropped: no stubs)", "" when none were.
func droppedNote(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return " (1 host call dropped: no stubs)"
	}
	return fmt.Sprintf(" (%d host calls dropped: no stubs)", n)
}

// maskFlowResult masks the story's secrets in what a flow's report shows:
// failure messages and views (as text). Its events and trace come from a
// sink that masked them already.
func maskFlowResult(m *secret.Masker, res *FlowResult) {
	if m.Empty() || res == nil {
		return
	}
	for i := range res.Turns {
		t := &res.Turns[i]
		t.View = m.Text(t.View)
		for j, f := range t.Failures {
			t.Failures[j] = m.Text(f)
		}
	}
}
