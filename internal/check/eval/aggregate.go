package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/secret"
)

// MaxSamplesPerCandidate caps the failure samples a report keeps for one
// candidate.
const MaxSamplesPerCandidate = 5

// report turns the results (in job order) into the report.
func (p *plan) report(results []*callResult, o *Options) *Report {
	d := p.c.Dataset
	h := p.c.CurrentHashes()
	r := &Report{
		Kind: KindReport, Eval: d.Name(), App: d.App, Call: d.Call,
		GeneratedAt: o.Now.UTC().Format(time.RFC3339),
		DatasetHash: h.Dataset, PromptHash: h.Prompt, SchemaHash: h.Schema, ToolboxHash: h.Toolbox,
		AdherenceBar: d.Task.AdherenceBar,
		Candidates:   []Candidate{},
		Run: &RunInfo{Mode: "live", Comparator: d.Comparator, Strategy: p.strat, Examples: len(d.Examples),
			Repeat: p.repeat, Strict: o.Strict, CallDeadlineMS: o.CallDeadline.Milliseconds()},
	}
	if o.Replay != nil {
		r.Run.Mode = "replay"
	}
	byCand := make([][]*callResult, len(p.cands))
	for _, res := range results {
		byCand[res.cand] = append(byCand[res.cand], res)
	}
	outcomes := make([]map[string]bool, len(p.cands))
	for i, c := range p.cands {
		cand, samples, exOut := p.aggregate(c, byCand[i], o.Strict)
		outcomes[i] = exOut
		r.Candidates = append(r.Candidates, cand)
		r.FailureSamples = append(r.FailureSamples, samples...)
	}
	p.pairedTests(r.Candidates, outcomes)
	r.Decision = decide(p.strat, r.Candidates, o.Strict)
	r.Decision.Evidence = p.evidencePath(o.ReportsDir)
	if pin := d.Selection.Pinned; pin != nil {
		r.Decision.FallbackProfile = pin.FallbackProfile
	}
	if o.PinnedBy != "" && r.Decision.SelectedProfile != "" {
		r.Decision.PinnedBy, r.Decision.PinnedAt = o.PinnedBy, r.GeneratedAt
	}
	return r
}

// evidencePath is where latest.json will be, relative to the story
// directory (the form a selection: evidence takes).
func (p *plan) evidencePath(dir string) string {
	if dir == "" {
		dir = p.c.Dataset.ReportsDir()
	}
	latest := filepath.Join(dir, LatestName)
	absLatest, err1 := filepath.Abs(latest)
	rel, err2 := filepath.Rel(p.c.Story.Dir, absLatest)
	if err1 != nil || err2 != nil {
		return filepath.ToSlash(latest)
	}
	return filepath.ToSlash(rel)
}

// aggregate computes one candidate's statistics from its results, checks
// the adherence bar, and picks its failure samples. It also returns the
// per-example outcomes: an example passes when every repeat passed.
func (p *plan) aggregate(c *candidate, rs []*callResult, strict bool) (Candidate, []FailureSample, map[string]bool) {
	d := p.c.Dataset
	out := c.Candidate
	n := len(rs)
	out.ExamplesRun = n
	out.Examples = len(d.Examples)
	var lat []int64
	var costs, tokens []float64
	var tok []int64
	retries, fallbacks := 0, 0
	exOut := map[string]bool{}
	for _, ex := range d.Examples {
		exOut[ex.Name] = true
	}
	var fails []*callResult
	for _, r := range rs {
		if r.valid {
			out.SchemaValid++
		}
		if r.outcome.Pass {
			out.ComparatorPasses++
		} else {
			exOut[d.Examples[r.ex].Name] = false
			fails = append(fails, r)
		}
		if r.conformant {
			out.ContractConformant++
		}
		if r.retried {
			retries++
		}
		if r.fallback {
			fallbacks++
		}
		if r.errKind != "" {
			if out.Errors == nil {
				out.Errors = map[string]int{}
			}
			out.Errors[r.errKind]++
		}
		lat = append(lat, r.latencyMS)
		if r.hasCost {
			costs = append(costs, r.cost)
		}
		if r.hasTokens {
			tok = append(tok, r.tokens)
			tokens = append(tokens, float64(r.tokens))
		}
	}
	if n > 0 {
		out.SchemaValidRate = float64(out.SchemaValid) / float64(n)
		out.ComparatorPassRate = float64(out.ComparatorPasses) / float64(n)
		out.ContractConformanceRate = float64(out.ContractConformant) / float64(n)
		out.RetryRate = float64(retries) / float64(n)
		out.FallbackRate = float64(fallbacks) / float64(n)
	}
	ci := Wilson(out.ComparatorPasses, n)
	out.PassRateCI95 = &ci
	out.P50LatencyMS = percentileInt(lat, 50)
	out.P95LatencyMS = percentileInt(lat, 95)
	out.AvgCostUSD = round12(mean(sortedFloats(costs)))
	out.P95CostUSD = percentileFloat(costs, 95)
	out.AvgTokens = round12(mean(sortedFloats(tokens)))
	out.P95Tokens = percentileInt(tok, 95)
	out.BarFailures = barFailures(&out, p.c.Dataset.Task.AdherenceBar, strict)
	out.Pass = len(out.BarFailures) == 0
	out.ExampleOutcomes = exOut
	return out, p.samples(c, fails), exOut
}

// barFailures lists why a candidate misses the adherence bar (none: it
// passes). The pass-rate bar applies to the point estimate, or with strict
// to the Wilson interval's lower bound.
func barFailures(c *Candidate, bar AdherenceBar, strict bool) []string {
	var out []string
	if strict {
		if lo := c.PassRateCI95.Low; lo < bar.MinPassRate {
			out = append(out, fmt.Sprintf("Wilson 95%% lower bound %.4f < min_pass_rate %g", lo, bar.MinPassRate))
		}
	} else if c.ComparatorPassRate < bar.MinPassRate {
		out = append(out, fmt.Sprintf("comparator pass rate %.4f < min_pass_rate %g", c.ComparatorPassRate, bar.MinPassRate))
	}
	if bar.MaxP95LatencyMS > 0 && c.P95LatencyMS > bar.MaxP95LatencyMS {
		out = append(out, fmt.Sprintf("p95 latency %dms > max_p95_latency_ms %d", c.P95LatencyMS, bar.MaxP95LatencyMS))
	}
	if bar.MaxAvgCostUSD > 0 && c.AvgCostUSD > bar.MaxAvgCostUSD {
		out = append(out, fmt.Sprintf("avg cost $%.6f > max_avg_cost_usd %g", c.AvgCostUSD, bar.MaxAvgCostUSD))
	}
	return out
}

// samples picks a candidate's failure samples: distinct (example, reason,
// answer) triples in example order, then by reason and answer, so the
// choice does not depend on which repeat happened to fail.
func (p *plan) samples(c *candidate, fails []*callResult) []FailureSample {
	d := p.c.Dataset
	mask := secret.New(p.c.Story.Secrets)
	type keyed struct {
		ex     int
		reason string
		actual string
		s      FailureSample
	}
	seen := map[string]bool{}
	var ks []keyed
	for _, r := range fails {
		ex := d.Examples[r.ex]
		actualJSON := ""
		if r.submission != nil {
			b, _ := json.Marshal(r.submission)
			actualJSON = string(b)
		}
		k := fmt.Sprintf("%d\x00%s\x00%s", r.ex, r.outcome.Reason, actualJSON)
		if seen[k] {
			continue
		}
		seen[k] = true
		// A report is committed evidence: the story's secrets are masked
		// in what the agent said (internal/base/secret's rule).
		expect, _ := mask.Value(ex.Expect).(map[string]any)
		ks = append(ks, keyed{ex: r.ex, reason: r.outcome.Reason, actual: actualJSON, s: FailureSample{
			Example: ex.Name, Profile: c.Profile, Model: c.Model, Effort: c.Effort,
			Reason: mask.Text(r.outcome.Reason), Expect: expect, Actual: mask.Value(r.submission),
		}})
	}
	sort.SliceStable(ks, func(i, j int) bool {
		if ks[i].ex != ks[j].ex {
			return ks[i].ex < ks[j].ex
		}
		if ks[i].reason != ks[j].reason {
			return ks[i].reason < ks[j].reason
		}
		return ks[i].actual < ks[j].actual
	})
	var out []FailureSample
	for i := 0; i < len(ks) && i < MaxSamplesPerCandidate; i++ {
		out = append(out, ks[i].s)
	}
	return out
}

// pairedTests compares every candidate with the dataset's pinned
// candidate, when the matrix measured it, by exact McNemar on per-example
// outcomes.
func (p *plan) pairedTests(cands []Candidate, outcomes []map[string]bool) {
	pin := p.c.Dataset.Selection.Pinned
	if pin == nil {
		return
	}
	pi := matchCandidate(cands, pin)
	if pi < 0 {
		return
	}
	for i := range cands {
		if i == pi {
			continue
		}
		cands[i].VsPinned = pairedTest(cands[pi].Label(), outcomes[pi], outcomes[i])
	}
}

// pairedTest counts concordant and discordant examples and runs the exact
// McNemar test on the discordant ones.
func pairedTest(pinnedLabel string, pinned, cand map[string]bool) *PairedTest {
	t := &PairedTest{Pinned: pinnedLabel}
	for _, ex := range sortedKeys(pinned) {
		pp, cp := pinned[ex], cand[ex]
		switch {
		case pp && cp:
			t.BothPass++
		case cp:
			t.OnlyCandidate++
		case pp:
			t.OnlyPinned++
		default:
			t.BothFail++
		}
	}
	t.PValue = McNemarExact(t.OnlyCandidate, t.OnlyPinned)
	t.Significant = t.PValue < 0.05
	return t
}

// matchCandidate finds the candidate a pin names: same profile, and same
// model and effort where the pin sets them. -1 when none matches.
func matchCandidate(cands []Candidate, pin *Pin) int {
	return slices.IndexFunc(cands, func(c Candidate) bool { return pin.Matches(c.Profile, c.Model, c.Effort) })
}

// round12 rounds to 12 decimal places: averages of costs such as 0.002
// come out as 0.002, not 0.002000000000000001.
func round12(v float64) float64 { return math.Round(v*1e12) / 1e12 }

func sortedFloats(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s
}
