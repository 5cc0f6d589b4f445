package eval

import (
	"fmt"
	"sort"
	"strings"
)

// decide picks a candidate by strategy among those that passed the bar
// (never one that failed), and records why every other candidate was not
// picked.
//
//   - cheapest_passing: the lowest average cost; ties go to the lower p95
//     latency, then the higher pass rate, then matrix order.
//   - best_pass_rate: the highest comparator pass rate (with strict, the
//     highest Wilson lower bound); ties go to the lower average cost, then
//     the lower p95 latency, then matrix order.
func decide(strategy string, cands []Candidate, strict bool) *Decision {
	d := &Decision{Strategy: strategy}
	var passing []int
	for i := range cands {
		if cands[i].Pass {
			passing = append(passing, i)
		}
	}
	rate := func(c *Candidate) float64 {
		if strict && c.PassRateCI95 != nil {
			return c.PassRateCI95.Low
		}
		return c.ComparatorPassRate
	}
	less := func(a, b int) bool {
		ca, cb := &cands[a], &cands[b]
		switch strategy {
		case StrategyBestPassRate:
			if ra, rb := rate(ca), rate(cb); ra != rb {
				return ra > rb
			}
			if ca.AvgCostUSD != cb.AvgCostUSD {
				return ca.AvgCostUSD < cb.AvgCostUSD
			}
			if ca.P95LatencyMS != cb.P95LatencyMS {
				return ca.P95LatencyMS < cb.P95LatencyMS
			}
		default:
			if ca.AvgCostUSD != cb.AvgCostUSD {
				return ca.AvgCostUSD < cb.AvgCostUSD
			}
			if ca.P95LatencyMS != cb.P95LatencyMS {
				return ca.P95LatencyMS < cb.P95LatencyMS
			}
			if ra, rb := rate(ca), rate(cb); ra != rb {
				return ra > rb
			}
		}
		return a < b
	}
	sort.SliceStable(passing, func(i, j int) bool { return less(passing[i], passing[j]) })

	selected := -1
	if len(passing) > 0 {
		selected = passing[0]
		s := &cands[selected]
		d.SelectedProfile, d.SelectedModel, d.SelectedEffort = s.Profile, s.Model, s.Effort
	}
	var summary []string
	for i := range cands {
		if i == selected {
			continue
		}
		c := &cands[i]
		var reasons []string
		if c.Pass {
			reasons = []string{preferReason(strategy, &cands[selected], c, strict)}
		} else {
			reasons = append(reasons, c.BarFailures...)
			if len(reasons) == 0 {
				reasons = []string{"did not pass the adherence bar"}
			}
		}
		d.Rejected = append(d.Rejected, Rejection{Profile: c.Profile, Model: c.Model, Effort: c.Effort, Reasons: reasons})
		summary = append(summary, c.Label()+": "+strings.Join(reasons, ", "))
	}
	switch {
	case selected < 0 && len(cands) > 0:
		d.RejectedSummary = "no candidate passed the adherence bar; " + strings.Join(summary, "; ")
	case len(summary) > 0:
		d.RejectedSummary = strings.Join(summary, "; ")
	}
	return d
}

// preferReason says why a passing candidate lost to the selected one.
func preferReason(strategy string, sel, c *Candidate, strict bool) string {
	if strategy == StrategyBestPassRate {
		sr, cr := sel.ComparatorPassRate, c.ComparatorPassRate
		what := "pass rate"
		if strict && sel.PassRateCI95 != nil && c.PassRateCI95 != nil {
			sr, cr, what = sel.PassRateCI95.Low, c.PassRateCI95.Low, "Wilson lower bound"
		}
		if cr < sr {
			return fmt.Sprintf("passes, but its %s %.4f is below %s's %.4f", what, cr, sel.Label(), sr)
		}
	} else if c.AvgCostUSD > sel.AvgCostUSD {
		return fmt.Sprintf("passes, but costs more on average ($%.6f vs $%.6f for %s)", c.AvgCostUSD, sel.AvgCostUSD, sel.Label())
	}
	return fmt.Sprintf("passes, but %s ranks first under %s on the tie-breaks", sel.Label(), strategy)
}
