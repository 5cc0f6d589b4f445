// Package evalview writes an eval report as one self-contained HTML page:
// the candidate × example matrix (pass/fail cells, the failing answer on
// hover), each candidate's pass rate with its Wilson 95% interval, cost,
// latency and tokens, the bar and the decision. Nothing is fetched.
package evalview

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

	"github.com/kitsoki/kitsoki/internal/base/bidi"
	"github.com/kitsoki/kitsoki/internal/check/eval"
)

//go:embed matrix.html
var matrixHTML string

// Cell is one candidate on one example.
type Cell struct {
	Example string
	Known   bool // the report has this example's outcome for the candidate
	Pass    bool
	// Hover is what the cell shows on hover: the failure samples' reasons
	// and answers, or that every repeat passed.
	Hover string
}

// Row is one candidate.
type Row struct {
	Label      string
	Backend    string
	Pass       bool
	Selected   bool
	Cells      []Cell
	PassRate   float64
	Low, High  float64
	Passes, N  int
	AvgCost    float64
	HasCost    bool
	P50, P95   int64
	AvgTokens  float64
	BarFailure string
}

// Page is what the template gets.
type Page struct {
	R        *eval.Report
	Examples []string
	Rows     []Row
	Bar      string
	Decision string
}

// Build lays a report out as a matrix. Examples are the union of the
// candidates' example_outcomes, sorted (a report does not keep the
// dataset's order).
func Build(r *eval.Report) *Page {
	p := &Page{R: r}
	seen := map[string]bool{}
	for _, c := range r.Candidates {
		for ex := range c.ExampleOutcomes {
			seen[ex] = true
		}
	}
	for ex := range seen {
		p.Examples = append(p.Examples, ex)
	}
	sort.Strings(p.Examples)
	for i := range r.Candidates {
		c := &r.Candidates[i]
		row := Row{Label: c.Label(), Backend: c.Backend, Pass: c.Pass, PassRate: c.ComparatorPassRate,
			Passes: c.ComparatorPasses, N: c.ExamplesRun, AvgCost: c.AvgCostUSD, HasCost: c.AvgCostUSD > 0,
			P50: c.P50LatencyMS, P95: c.P95LatencyMS, AvgTokens: c.AvgTokens, BarFailure: strings.Join(c.BarFailures, "; ")}
		ci := eval.Wilson(c.ComparatorPasses, c.ExamplesRun)
		if c.PassRateCI95 != nil {
			ci = *c.PassRateCI95
		}
		row.Low, row.High = ci.Low, ci.High
		if d := r.Decision; d != nil && d.SelectedProfile == c.Profile && d.SelectedModel == c.Model && d.SelectedEffort == c.Effort {
			row.Selected = true
		}
		for _, ex := range p.Examples {
			pass, known := c.ExampleOutcomes[ex]
			cell := Cell{Example: ex, Known: known, Pass: pass}
			switch {
			case !known:
				cell.Hover = "not run for this candidate"
			case pass:
				cell.Hover = "passed on every repeat"
			default:
				cell.Hover = failureText(r, c, ex)
			}
			row.Cells = append(row.Cells, cell)
		}
		p.Rows = append(p.Rows, row)
	}
	bar := []string{fmt.Sprintf("pass rate ≥ %g", r.AdherenceBar.MinPassRate)}
	if r.AdherenceBar.MaxP95LatencyMS > 0 {
		bar = append(bar, fmt.Sprintf("p95 latency ≤ %d ms", r.AdherenceBar.MaxP95LatencyMS))
	}
	if r.AdherenceBar.MaxAvgCostUSD > 0 {
		bar = append(bar, fmt.Sprintf("avg cost ≤ $%g", r.AdherenceBar.MaxAvgCostUSD))
	}
	p.Bar = strings.Join(bar, ", ")
	if d := r.Decision; d != nil {
		p.Decision = d.Strategy
		if d.SelectedProfile != "" {
			p.Decision += ": " + d.SelectedProfile + "/" + d.SelectedModel
		}
		if d.RejectedSummary != "" {
			p.Decision += " (" + d.RejectedSummary + ")"
		}
	}
	return p
}

// failureText is a failing cell's hover: each failure sample of this
// candidate on this example, its reason and the answer it gave.
func failureText(r *eval.Report, c *eval.Candidate, ex string) string {
	var parts []string
	for _, s := range r.FailureSamples {
		if s.Example != ex || s.Profile != c.Profile || s.Model != c.Model || s.Effort != c.Effort {
			continue
		}
		var ans strings.Builder
		enc := json.NewEncoder(&ans)
		enc.SetEscapeHTML(false) // the template escapes for HTML
		_ = enc.Encode(s.Actual)
		parts = append(parts, s.Reason+"\nanswer: "+strings.TrimSuffix(ans.String(), "\n"))
	}
	if len(parts) == 0 {
		return "failed on at least one repeat (the report keeps no sample of this answer)"
	}
	return strings.Join(parts, "\n\n")
}

// HTML writes the page.
func HTML(w io.Writer, r *eval.Report) error {
	t, err := template.New("matrix").Funcs(template.FuncMap{
		"pct":  func(f float64) string { return fmt.Sprintf("%.1f%%", f*100) },
		"usd":  func(f float64) string { return fmt.Sprintf("$%.6f", f) },
		"num1": func(f float64) string { return fmt.Sprintf("%.1f", f) },
	}).Parse(matrixHTML)
	if err != nil {
		return fmt.Errorf("evalview: template: %w", err)
	}
	var buf strings.Builder
	if err := t.Execute(&buf, Build(r)); err != nil {
		return err
	}
	// Bidi overrides and isolates in answers and reasons are shown as marks.
	_, err = io.WriteString(w, bidi.Reveal(buf.String()))
	return err
}
