package eval

import (
	"strings"
	"testing"
)

// The Markdown table has one row per candidate, the paired-test column
// when a pinned candidate was measured, the decision and the rejections.
func TestMarkdown(t *testing.T) {
	r, _ := runAudit(t, nil, Options{Now: t0})
	md := Markdown(r)
	for _, want := range []string{
		"### Eval `audit`: call `audit`\n",
		"Generated 2026-07-01T00:00:00Z (live run, 10 examples × 2 repeats, comparator `enum`).",
		"Adherence bar: pass rate ≥ 0.8, avg cost ≤ $0.003.",
		"| candidate | pass | pass rate (95% CI) | schema valid | conformance | p50 / p95 latency | avg / p95 cost | retry | fallback | calls | vs pinned (McNemar p) |",
		"| agent.good/m-big effort=low | yes | 1.00 (0.84–1.00) | 1.00 | 1.00 | 0 / 0 ms | $0.002000 / $0.002000 | 0.00 | 0.00 | 20 | (pinned) |",
		"| agent.flaky/m-default effort=low | yes | 0.90 (0.70–0.97) | 1.00 | 1.00 | 0 / 0 ms | $0.000500 / $0.000500 | 0.00 | 0.00 | 20 | +0 / −1, p=1.0000 |",
		"| agent.bad/m-default effort=low | no | 0.00 (0.00–0.16) | 0.00 | 1.00 | 0 / 0 ms | $0.000000 / $0.000000 | 0.00 | 0.00 | 20 | +0 / −10, p=0.0020, significant |",
		"**Decision** (`cheapest_passing`): `agent.flaky/m-default effort=low`, evidence `evals/reports/audit/latest.json`.",
		"- `agent.bad/m-default effort=low`: comparator pass rate 0.0000 < min_pass_rate 0.8",
		"- `e3` on `agent.flaky/m-default`: field \"decision\" got reject want approve",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// Ties under cheapest_passing go to the lower p95 latency, then the
// higher pass rate, then matrix order; a failing candidate is never picked
// even when it is cheapest.
func TestDecideTieBreaks(t *testing.T) {
	ci := func(lo float64) *Interval { return &Interval{Low: lo, High: 1} }
	cands := []Candidate{
		{Profile: "cheap-fail", Model: "m", AvgCostUSD: 0.0001, BarFailures: []string{"comparator pass rate 0.5000 < min_pass_rate 0.9"}},
		{Profile: "slow", Model: "m", Pass: true, AvgCostUSD: 0.001, P95LatencyMS: 900, ComparatorPassRate: 1, PassRateCI95: ci(0.8)},
		{Profile: "fast", Model: "m", Pass: true, AvgCostUSD: 0.001, P95LatencyMS: 300, ComparatorPassRate: 0.95, PassRateCI95: ci(0.7)},
		{Profile: "fast2", Model: "m", Pass: true, AvgCostUSD: 0.001, P95LatencyMS: 300, ComparatorPassRate: 0.95, PassRateCI95: ci(0.7)},
	}
	d := decide(StrategyCheapestPassing, cands, false)
	if d.SelectedProfile != "fast" {
		t.Fatalf("cheapest_passing picked %s", d.SelectedProfile)
	}
	if got := d.Rejected[2].Reasons[0]; got != "passes, but fast/m ranks first under cheapest_passing on the tie-breaks" {
		t.Errorf("tie reason = %q", got)
	}
	if d := decide(StrategyBestPassRate, cands, false); d.SelectedProfile != "slow" {
		t.Errorf("best_pass_rate picked %s", d.SelectedProfile)
	}
	if d := decide(StrategyBestPassRate, cands, true); d.SelectedProfile != "slow" {
		t.Errorf("strict best_pass_rate picked %s", d.SelectedProfile)
	}
	none := decide(StrategyBestPassRate, cands[:1], false)
	if none.SelectedProfile != "" || none.RejectedSummary != "no candidate passed the adherence bar; cheap-fail/m: comparator pass rate 0.5000 < min_pass_rate 0.9" {
		t.Errorf("no passing candidate: %+v", none)
	}
}
