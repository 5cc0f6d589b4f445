package eval

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/clock"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

var t0 = time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)

// runAudit runs the audit dataset of a copy of testdata/audit, after edit
// rewrites the dataset, with the test agents.
func runAudit(t *testing.T, edit func(string) string, o Options) (*Report, *Checked) {
	t.Helper()
	dir := copyStory(t)
	ds := filepath.Join(dir, "evals", "audit.yaml")
	if edit != nil {
		setDataset(t, ds, edit)
	}
	c := mustCheck(t, ds)
	if !c.OK() {
		t.Fatalf("dataset errors: %q", c.Errors)
	}
	if o.Registry == nil && o.Replay == nil {
		o.Registry = testAgents(t, c.Story)
	}
	if o.Clock == nil {
		o.Clock = clock.NewFake(t0)
	}
	r, err := Run(context.Background(), c, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	validateReport(t, b)
	return r, c
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func candidateByProfile(t *testing.T, r *Report, profile string) *Candidate {
	t.Helper()
	for i := range r.Candidates {
		if r.Candidates[i].Profile == profile {
			return &r.Candidates[i]
		}
	}
	t.Fatalf("no candidate %s in %+v", profile, r.Candidates)
	return nil
}

// The matrix of testdata/audit (good, flaky, bad; 10 examples × 2
// repeats) gives exactly the expected rates, intervals, costs, tokens,
// paired tests, samples and decision.
func TestRunMatrix(t *testing.T) {
	r, _ := runAudit(t, nil, Options{Parallel: 4, Now: t0})

	good := candidateByProfile(t, r, "agent.good")
	if good.Model != "m-big" || good.Effort != "low" || good.Backend != "builtin.inprocess" || !good.Pass {
		t.Errorf("good = %+v", good)
	}
	if good.ExamplesRun != 20 || good.SchemaValidRate != 1 || good.ComparatorPassRate != 1 || good.ContractConformanceRate != 1 {
		t.Errorf("good rates = %+v", good)
	}
	if !approx(good.PassRateCI95.Low, 0.8388748) || good.PassRateCI95.High != 1 {
		t.Errorf("good CI = %+v, want [0.8388748, 1]", good.PassRateCI95)
	}
	if good.AvgCostUSD != 0.002 || good.P95CostUSD != 0.002 || good.AvgTokens != 120 || good.P95Tokens != 120 {
		t.Errorf("good cost/tokens = %v %v %v %v", good.AvgCostUSD, good.P95CostUSD, good.AvgTokens, good.P95Tokens)
	}
	if good.VsPinned != nil {
		t.Errorf("the pinned candidate is compared with itself: %+v", good.VsPinned)
	}

	flaky := candidateByProfile(t, r, "agent.flaky")
	if flaky.Model != "m-default" || flaky.ComparatorPasses != 18 || flaky.ComparatorPassRate != 0.9 || flaky.SchemaValidRate != 1 || !flaky.Pass {
		t.Errorf("flaky = %+v", flaky)
	}
	if !approx(flaky.PassRateCI95.Low, 0.6989664) || !approx(flaky.PassRateCI95.High, 0.9721335) {
		t.Errorf("flaky CI = %+v, want [0.6989664, 0.9721335]", flaky.PassRateCI95)
	}
	if diff := cmp.Diff(&PairedTest{Pinned: "agent.good/m-big effort=low", BothPass: 9, OnlyPinned: 1, PValue: 1}, flaky.VsPinned); diff != "" {
		t.Errorf("flaky vs pinned (-want +got):\n%s", diff)
	}
	if flaky.ExampleOutcomes["e3"] || !flaky.ExampleOutcomes["e1"] {
		t.Errorf("flaky example outcomes = %v", flaky.ExampleOutcomes)
	}

	bad := candidateByProfile(t, r, "agent.bad")
	if bad.Pass || bad.SchemaValidRate != 0 || bad.ComparatorPassRate != 0 || bad.ContractConformanceRate != 1 {
		t.Errorf("bad = %+v", bad)
	}
	if diff := cmp.Diff(map[string]int{"schema_invalid": 20}, bad.Errors); diff != "" {
		t.Errorf("bad errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"comparator pass rate 0.0000 < min_pass_rate 0.8"}, bad.BarFailures); diff != "" {
		t.Errorf("bad bar failures (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&PairedTest{Pinned: "agent.good/m-big effort=low", OnlyPinned: 10, PValue: 0.001953125, Significant: true}, bad.VsPinned); diff != "" {
		t.Errorf("bad vs pinned (-want +got):\n%s", diff)
	}

	d := r.Decision
	if d.Strategy != "cheapest_passing" || d.SelectedProfile != "agent.flaky" || d.SelectedModel != "m-default" || d.SelectedEffort != "low" {
		t.Errorf("decision = %+v", d)
	}
	if d.Evidence != "evals/reports/audit/latest.json" || d.FallbackProfile != "agent.flaky" || d.PinnedBy != "" {
		t.Errorf("decision evidence/fallback/pinned_by = %+v", d)
	}
	wantRejected := []Rejection{
		{Profile: "agent.good", Model: "m-big", Effort: "low", Reasons: []string{"passes, but costs more on average ($0.002000 vs $0.000500 for agent.flaky/m-default effort=low)"}},
		{Profile: "agent.bad", Model: "m-default", Effort: "low", Reasons: []string{"comparator pass rate 0.0000 < min_pass_rate 0.8"}},
	}
	if diff := cmp.Diff(wantRejected, d.Rejected); diff != "" {
		t.Errorf("rejected (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(d.RejectedSummary, "agent.good/m-big effort=low: passes, but costs more") {
		t.Errorf("rejected summary = %q", d.RejectedSummary)
	}

	// One sample for flaky's one failing example; bad's capped at five, in
	// example order.
	var got []string
	for _, s := range r.FailureSamples {
		got = append(got, s.Profile+":"+s.Example)
	}
	if diff := cmp.Diff([]string{"agent.flaky:e3", "agent.bad:e1", "agent.bad:e2", "agent.bad:e3", "agent.bad:e4", "agent.bad:e5"}, got); diff != "" {
		t.Errorf("failure samples (-want +got):\n%s", diff)
	}
	s := r.FailureSamples[0]
	if s.Reason != `field "decision" got reject want approve` || s.Model != "m-default" ||
		!cmp.Equal(s.Actual, map[string]any{"decision": "reject", "reason": "guess"}) {
		t.Errorf("flaky sample = %+v", s)
	}
	if r.FailureSamples[1].Reason != "agent: schema_invalid: /: required: missing property 'reason'" {
		t.Errorf("bad sample reason = %q", r.FailureSamples[1].Reason)
	}
	if r.Run == nil || r.Run.Mode != "live" || r.Run.Repeat != 2 || r.Run.Examples != 10 || r.GeneratedAt != "2026-07-01T00:00:00Z" {
		t.Errorf("run info = %+v, generated_at %s", r.Run, r.GeneratedAt)
	}
}

// --strict applies the bar to the Wilson lower bound: flaky (18/20, lower
// bound 0.699) fails the 0.8 bar, good (20/20, 0.839) passes and is picked.
func TestRunStrict(t *testing.T) {
	r, _ := runAudit(t, nil, Options{Strict: true, Now: t0})
	flaky := candidateByProfile(t, r, "agent.flaky")
	if flaky.Pass {
		t.Fatalf("flaky passes under --strict: %+v", flaky)
	}
	if diff := cmp.Diff([]string{"Wilson 95% lower bound 0.6990 < min_pass_rate 0.8"}, flaky.BarFailures); diff != "" {
		t.Errorf("bar failures (-want +got):\n%s", diff)
	}
	if !candidateByProfile(t, r, "agent.good").Pass || r.Decision.SelectedProfile != "agent.good" || !r.Run.Strict {
		t.Errorf("decision = %+v", r.Decision)
	}
}

// best_pass_rate picks the highest pass rate even when it costs more.
func TestRunBestPassRate(t *testing.T) {
	r, _ := runAudit(t, func(s string) string {
		return strings.Replace(s, "strategy: cheapest_passing", "strategy: best_pass_rate", 1)
	}, Options{Now: t0})
	d := r.Decision
	if d.SelectedProfile != "agent.good" || d.Strategy != "best_pass_rate" {
		t.Fatalf("decision = %+v", d)
	}
	want := "passes, but its pass rate 0.9000 is below agent.good/m-big effort=low's 1.0000"
	if len(d.Rejected) != 2 || d.Rejected[0].Profile != "agent.flaky" || d.Rejected[0].Reasons[0] != want {
		t.Errorf("rejected = %+v", d.Rejected)
	}
}

// No candidate passes: nothing is selected and every candidate's reasons
// are recorded. Crashes break the contract; a fallback answer is not the
// candidate's; a deadline overrun is an error of its own kind.
//
// The deadline is measured on the run's fake clock: agent.slow moves the
// clock past it and only then sees its context end, and the other agents,
// however slowly a loaded machine runs them, never reach it.
func TestRunFailuresAndFallback(t *testing.T) {
	dir := copyStory(t)
	ds := filepath.Join(dir, "evals", "audit.yaml")
	setDataset(t, ds, func(s string) string {
		s = replaceBlock(s, "matrix:", "matrix:\n  profiles: [agent.bad, agent.crash, agent.local, agent.slow]\n  repeat: 1\n")
		return replaceBlock(s, "selection:", "selection:\n  strategy: cheapest_passing\n")
	})
	c := mustCheck(t, ds)
	const deadline = 30 * time.Second
	fake := clock.NewFake(t0)
	reg := testAgents(t, c.Story)
	reg.Register("agent.slow", agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("the deadline passed before the clock moved: %w", err)
		}
		fake.Advance(deadline)
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	// One call at a time: moving the shared clock must not end another
	// call's deadline.
	r, err := Run(context.Background(), c, Options{Registry: reg, Clock: fake, Parallel: 1, CallDeadline: deadline, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	validateReport(t, b)
	d := r.Decision
	if d.SelectedProfile != "" || d.SelectedModel != "" || len(d.Rejected) != 4 {
		t.Fatalf("a failing candidate was picked: %+v", d)
	}
	if !strings.HasPrefix(d.RejectedSummary, "no candidate passed the adherence bar; agent.bad/m-default: ") {
		t.Errorf("summary = %q", d.RejectedSummary)
	}
	crash := candidateByProfile(t, r, "agent.crash")
	if crash.ContractConformanceRate != 0 || crash.SchemaValidRate != 0 || !cmp.Equal(crash.Errors, map[string]int{"plugin_crash": 10}) {
		t.Errorf("crash = %+v", crash)
	}
	local := candidateByProfile(t, r, "agent.local")
	if local.FallbackRate != 1 || local.ContractConformanceRate != 1 || local.SchemaValidRate != 0 || local.ComparatorPassRate != 0 || local.Errors != nil {
		t.Errorf("local = %+v", local)
	}
	slow := candidateByProfile(t, r, "agent.slow")
	if slow.ContractConformanceRate != 0 || !cmp.Equal(slow.Errors, map[string]int{"deadline_exceeded": 10}) || slow.P50LatencyMS != deadline.Milliseconds() {
		t.Errorf("slow = %+v", slow)
	}
	for _, s := range r.FailureSamples {
		if s.Profile == "agent.local" && s.Reason != "schema_invalid answer; the fallback agent.claude answered instead" {
			t.Errorf("local sample reason = %q", s.Reason)
		}
	}
}

// Retry rate comes from the transport's meta (nudges); latency
// percentiles and the latency bar from the host's measured durations.
func TestRunRetriesAndLatency(t *testing.T) {
	dir := copyStory(t)
	ds := filepath.Join(dir, "evals", "audit.yaml")
	setDataset(t, ds, func(s string) string {
		s = replaceBlock(s, "matrix:", "matrix:\n  profiles: [agent.retry, agent.slow]\n  repeat: 2\n")
		s = strings.Replace(s, "adherence_bar: {min_pass_rate: 0.8, max_avg_cost_usd: 0.003}", "adherence_bar: {min_pass_rate: 0.8, max_p95_latency_ms: 1000}", 1)
		return replaceBlock(s, "selection:", "selection:\n  strategy: cheapest_passing\n")
	})
	c := mustCheck(t, ds)
	fake := clock.NewFake(t0)
	reg := testAgents(t, c.Story)
	// agent.slow here takes "amount" milliseconds and answers right.
	reg.Register("agent.slow", agent.AgentFunc(func(ctx context.Context, call *agent.Call) (*agent.AskResponse, error) {
		req := call.Request
		m := amountRE.FindStringSubmatch(req.Prompt)
		n, _ := strconv.Atoi(m[1])
		fake.Advance(time.Duration(n) * time.Millisecond)
		_, d := policy(req.Prompt)
		return answer(map[string]any{"decision": d, "reason": "slow"}, nil)
	}))
	r, err := Run(context.Background(), c, Options{Registry: reg, Clock: fake, Parallel: 1, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	retry := candidateByProfile(t, r, "agent.retry")
	if retry.RetryRate != 0.4 || !retry.Pass {
		t.Errorf("retry = %+v (four of ten examples are rejects, each nudged once)", retry)
	}
	slow := candidateByProfile(t, r, "agent.slow")
	// Amounts 10 25 30 40 60 80 250 400 900 1500, twice each: the 10th of
	// 20 is 60, the 19th is 1500.
	if slow.P50LatencyMS != 60 || slow.P95LatencyMS != 1500 || slow.Pass {
		t.Errorf("slow latency = p50 %d p95 %d pass %v", slow.P50LatencyMS, slow.P95LatencyMS, slow.Pass)
	}
	if diff := cmp.Diff([]string{"p95 latency 1500ms > max_p95_latency_ms 1000"}, slow.BarFailures); diff != "" {
		t.Errorf("bar failures (-want +got):\n%s", diff)
	}
	if r.Decision.SelectedProfile != "agent.retry" {
		t.Errorf("decision = %+v", r.Decision)
	}
}

// A call site without a with.args block gets the example's args at the
// top level of with:, where its prompt reads them.
func TestRunCallSiteWithoutArgs(t *testing.T) {
	r, _ := runAudit(t, func(s string) string {
		s = strings.Replace(s, "call: audit\nagent: auditor\n", "call: triage\n", 1)
		s = replaceBlock(s, "matrix:", "matrix:\n  profiles: [agent.good]\n")
		return replaceBlock(s, "selection:", "")
	}, Options{Now: t0})
	good := r.Candidates[0]
	if good.ComparatorPassRate != 1 || good.ExamplesRun != 10 || good.Model != "" {
		t.Errorf("triage good = %+v", good)
	}
	if r.Decision.Evidence != "evals/reports/triage/latest.json" {
		t.Errorf("evidence = %q", r.Decision.Evidence)
	}
}

// What a live run refuses before making any call.
func TestRunPlanErrors(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"no profiles", "profiles: [agent.good, agent.flaky, agent.bad]", "profiles: []", "matrix.profiles is required for a live run"},
		{"unknown profile", "profiles: [agent.good, agent.flaky, agent.bad]", "profiles: [nobody]",
			`matrix.profiles: profile "nobody" is neither "claude" (the built-in claude path), an agent_plugins alias`},
		{"models for an unlisted profile", "models: {agent.good: [m-big]}", "models: {agent.other: [m]}",
			`matrix.models names profile "agent.other", which is not in matrix.profiles`},
		{"repeat", "repeat: 2", "repeat: -1", "matrix.repeat must be at least 1, got -1"},
		{"bar", "min_pass_rate: 0.8", "min_pass_rate: 0", "task.adherence_bar.min_pass_rate must be in (0, 1] for a live run, got 0"},
		{"judge", "comparator: {kind: enum, field: decision}", "comparator: judge", "the judge comparator has no deterministic result"},
		{"strategy", "strategy: cheapest_passing", "strategy: random", `unsupported selection.strategy "random" (supported: cheapest_passing, best_pass_rate)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyStory(t)
			ds := filepath.Join(dir, "evals", "audit.yaml")
			setDataset(t, ds, func(s string) string { return strings.Replace(s, tt.old, tt.new, 1) })
			c := mustCheck(t, ds)
			calls := 0
			reg := agent.NewRegistry(nil)
			reg.Configure(c.Story.Plugins)
			for _, a := range []string{"agent.good", "agent.flaky", "agent.bad"} {
				reg.Register(a, agent.AgentFunc(func(context.Context, *agent.Call) (*agent.AskResponse, error) {
					calls++
					return nil, agent.Errorf(agent.KindPluginCrash, "called")
				}))
			}
			_, err := Run(context.Background(), c, Options{Registry: reg, Parallel: 1})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if calls != 0 {
				t.Errorf("%d calls were made before the error", calls)
			}
		})
	}
	// An invalid dataset is refused outright.
	dir := copyStory(t)
	c := mustCheck(t, testkit.WriteFile(t, dir, "evals/bad.yaml", "kind: agent_eval\n"))
	if _, err := Run(context.Background(), c, Options{}); err != ErrInvalid {
		t.Fatalf("invalid dataset: err = %v", err)
	}
}

// Cancelling the context stops the run with an error, not a report.
func TestRunCancelled(t *testing.T) {
	dir := copyStory(t)
	c := mustCheck(t, filepath.Join(dir, "evals", "audit.yaml"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, c, Options{Registry: testAgents(t, c.Story), Parallel: 1})
	if err == nil || !strings.Contains(err.Error(), "eval run interrupted") {
		t.Fatalf("err = %v", err)
	}
}
