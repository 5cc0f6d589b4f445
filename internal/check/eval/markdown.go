package eval

import (
	"fmt"
	"strings"
)

// Markdown renders a report as a Markdown section a person can paste into
// a review: the bar, one table row per candidate, the decision, and the
// failure samples.
func Markdown(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Eval `%s`: call `%s`\n\n", r.Eval, r.Call)
	fmt.Fprintf(&b, "Generated %s", r.GeneratedAt)
	if r.Run != nil {
		fmt.Fprintf(&b, " (%s run, %d examples × %d repeats, comparator `%s`", r.Run.Mode, r.Run.Examples, r.Run.Repeat, r.Run.Comparator.Kind)
		if r.Run.Strict {
			b.WriteString(", strict")
		}
		b.WriteString(")")
	}
	b.WriteString(".\n\n")
	bar := []string{fmt.Sprintf("pass rate ≥ %g", r.AdherenceBar.MinPassRate)}
	if r.AdherenceBar.MaxP95LatencyMS > 0 {
		bar = append(bar, fmt.Sprintf("p95 latency ≤ %d ms", r.AdherenceBar.MaxP95LatencyMS))
	}
	if r.AdherenceBar.MaxAvgCostUSD > 0 {
		bar = append(bar, fmt.Sprintf("avg cost ≤ $%g", r.AdherenceBar.MaxAvgCostUSD))
	}
	fmt.Fprintf(&b, "Adherence bar: %s.\n\n", strings.Join(bar, ", "))

	paired := false
	for _, c := range r.Candidates {
		if c.VsPinned != nil {
			paired = true
		}
	}
	head := "| candidate | pass | pass rate (95% CI) | schema valid | conformance | p50 / p95 latency | avg / p95 cost | retry | fallback | calls |"
	rule := "|---|---|---|---|---|---|---|---|---|---|"
	if paired {
		head += " vs pinned (McNemar p) |"
		rule += "---|"
	}
	b.WriteString(head + "\n" + rule + "\n")
	for _, c := range r.Candidates {
		pass := "no"
		if c.Pass {
			pass = "yes"
		}
		ci := ""
		if c.PassRateCI95 != nil {
			ci = fmt.Sprintf(" (%.2f–%.2f)", c.PassRateCI95.Low, c.PassRateCI95.High)
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f%s | %.2f | %.2f | %d / %d ms | $%.6f / $%.6f | %.2f | %.2f | %d |",
			mdEscape(c.Label()), pass, c.ComparatorPassRate, ci, c.SchemaValidRate, c.ContractConformanceRate,
			c.P50LatencyMS, c.P95LatencyMS, c.AvgCostUSD, c.P95CostUSD, c.RetryRate, c.FallbackRate, c.ExamplesRun)
		if paired {
			switch t := c.VsPinned; {
			case t == nil:
				b.WriteString(" (pinned) |")
			default:
				sig := ""
				if t.Significant {
					sig = ", significant"
				}
				fmt.Fprintf(&b, " +%d / −%d, p=%.4f%s |", t.OnlyCandidate, t.OnlyPinned, t.PValue, sig)
			}
		}
		b.WriteString("\n")
	}
	if d := r.Decision; d != nil {
		b.WriteString("\n")
		if d.SelectedProfile != "" {
			sel := d.SelectedProfile + "/" + d.SelectedModel
			if d.SelectedEffort != "" {
				sel += " effort=" + d.SelectedEffort
			}
			fmt.Fprintf(&b, "**Decision** (`%s`): `%s`", d.Strategy, sel)
			if d.Evidence != "" {
				fmt.Fprintf(&b, ", evidence `%s`", d.Evidence)
			}
			b.WriteString(".\n")
		} else {
			fmt.Fprintf(&b, "**Decision** (`%s`): none; no candidate passed the bar.\n", d.Strategy)
		}
		for _, rj := range d.Rejected {
			label := rj.Profile + "/" + rj.Model
			if rj.Effort != "" {
				label += " effort=" + rj.Effort
			}
			fmt.Fprintf(&b, "- `%s`: %s\n", label, mdEscape(strings.Join(rj.Reasons, "; ")))
		}
	}
	if len(r.FailureSamples) > 0 {
		b.WriteString("\n<details><summary>Failure samples</summary>\n\n")
		for _, s := range r.FailureSamples {
			fmt.Fprintf(&b, "- `%s` on `%s/%s`: %s\n", s.Example, s.Profile, s.Model, mdEscape(oneLine(s.Reason, 300)))
		}
		b.WriteString("\n</details>\n")
	}
	return b.String()
}

// mdEscape keeps text from breaking a table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
