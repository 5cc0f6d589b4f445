package testrunner

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

func runJobs(t *testing.T, file string) []*FlowResult {
	t.Helper()
	return runFixtures(t, "testdata/jobs/app.yaml", file).Results
}

// Background jobs in flows: a clarification answered through a slot
// template, completions ordered by the flow's clock, expect_jobs and
// expect_inbox.
func TestFlowBackgroundJobsPass(t *testing.T) {
	for _, f := range []string{"pass.yaml", "order.yaml"} {
		if res := runJobs(t, "testdata/jobs/flows/"+f); len(res) != 1 || !res[0].Passed {
			t.Errorf("%s:\n%s", f, report(res, true))
		}
	}
}

func TestFlowBackgroundJobsFailures(t *testing.T) {
	tests := []struct {
		file, want string
		verbose    bool
	}{
		{"fail.yaml", "FAIL  fail.yaml\n  FAIL  turn 1 → working\n" +
			"  ✗ expect_inbox.needs_attention: got 0 unread action_required notification(s), want 1\n" +
			"  ✗ expect_inbox.severities: got [info], want [success] (the unread notifications' severities, sorted)\n" +
			"  ✗ expect_jobs.total: got 1 job(s) (job-1 host.work running), want 2\n" +
			"  ✗ expect_jobs.done: got 0 done job(s) (job-1 host.work running), want 1\n", false},
		// A stub that asks for a clarification must run as a background job:
		// the call fails (an unhandled host error, shown under --v; as in
		// Kitsoki it is not one of expect_no_errors' validation errors).
		{"foreground.yaml", "PASS  foreground.yaml\n" +
			"  host error: turn 1: host.sync: host_handlers.host.sync: request_clarification: only a background job can do this (mark the invoke background: true)\n" +
			"  ok    turn 1 → idle\n  ok    [session]\n", true},
	}
	for _, tt := range tests {
		got := report(runJobs(t, "testdata/jobs/flows/"+tt.file), tt.verbose)
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.file, d)
		}
	}
}

func TestFlowJobKeyParseErrors(t *testing.T) {
	const head = "test_kind: flow\napp: ../app.yaml\nturns:\n  - intent: look\n"
	tests := []struct{ name, in, want string }{
		{"inbox unknown key", head + "    expect_inbox: {unred: 1}\n",
			`flows/f.yaml:5:20: turns[0].expect_inbox.unred: unknown key "unred" (did you mean "unread"?) (valid: unread, needs_attention, severities)`},
		{"inbox count", head + "    expect_inbox: {unread: many}\n",
			`flows/f.yaml:5:28: turns[0].expect_inbox.unread must be a whole number >= 0, got "many"`},
		{"inbox severity", head + "    expect_inbox: {severities: [info, loud]}\n",
			`flows/f.yaml:5:39: turns[0].expect_inbox.severities[1]: severity "loud" is not one of info, success, warn, error, action_required`},
		{"jobs unknown key", head + "    expect_jobs: {finished: 1}\n",
			`flows/f.yaml:5:19: turns[0].expect_jobs.finished: unknown key "finished" (valid: total, running, awaiting_input, done, failed, cancelled)`},
		{"jobs count", head + "    expect_jobs: {done: -1}\n",
			`flows/f.yaml:5:25: turns[0].expect_jobs.done must be a whole number >= 0, got "-1"`},
		{"fixture level", "test_kind: flow\napp: ../app.yaml\nexpect_inbox: {unread: 1}\nturns: []\n",
			"expect_inbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFixtures([]byte(tt.in), "flows/f.yaml", "")
			if err == nil {
				t.Fatal("parsed")
			}
			if tt.name == "fixture level" {
				if !strings.Contains(err.Error(), `unknown key "expect_inbox"`) {
					t.Errorf("error: %v", err)
				}
				return
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

// stories/build-watch, the background-job story, passes its flows.
func TestBuildWatchFlows(t *testing.T) {
	fxs, err := LoadFixtures("../../../stories/build-watch/app.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(WithFlowGetenv(testkit.NoEnv))
	t.Cleanup(func() { r.Close() })
	rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fxs) != 4 || !rep.OK() || rep.Passed != len(fxs) {
		t.Errorf("passed %d of %d:\n%s", rep.Passed, len(fxs), report(rep.Results, true))
	}
}

// advance_clock moves the flow's clock timer by timer: a job started by an
// earlier completion inside the span runs on the rest of the span, and one
// whose delay does not fit waits for the next advance.
func TestFlowAdvanceClockChainsJobs(t *testing.T) {
	for _, f := range []string{"chain.yaml", "short.yaml"} {
		rep := runFixtures(t, "testdata/jobchain/app.yaml", "testdata/jobchain/flows/"+f)
		if res := rep.Results; len(res) != 1 || !res[0].Passed {
			t.Errorf("%s:\n%s", f, report(res, true))
		}
	}
}
