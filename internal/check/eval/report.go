package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kitsoki/kitsoki/internal/base/outfile"
	"github.com/kitsoki/kitsoki/internal/run/routes"
)

// KindReport is the kind of an eval report.
const KindReport = routes.KindReport

// LatestName is the file name of a call's latest report.
const LatestName = "latest.json"

// Report is an eval report (eval-format.md §5). Fields Kitsoki defines come
// first, in its order; ours follow under new keys.
type Report struct {
	Kind           string          `json:"kind"`
	Eval           string          `json:"eval"`
	App            string          `json:"app"`
	Call           string          `json:"call"`
	GeneratedAt    string          `json:"generated_at"`
	DatasetHash    string          `json:"dataset_hash"`
	PromptHash     string          `json:"prompt_hash,omitempty"`
	SchemaHash     string          `json:"schema_hash,omitempty"`
	ToolboxHash    string          `json:"toolbox_hash,omitempty"`
	AdherenceBar   AdherenceBar    `json:"adherence_bar"`
	Candidates     []Candidate     `json:"candidates"`
	Decision       *Decision       `json:"decision,omitempty"`
	FailureSamples []FailureSample `json:"failure_samples,omitempty"`

	// Run describes how the report was produced (ours).
	Run *RunInfo `json:"run,omitempty"`
}

// Candidate is one profile/model/effort and what it scored.
type Candidate struct {
	Profile                 string  `json:"profile"`
	Backend                 string  `json:"backend,omitempty"`
	Provider                string  `json:"provider,omitempty"`
	Model                   string  `json:"model"`
	Effort                  string  `json:"effort,omitempty"`
	Pass                    bool    `json:"pass"`
	SchemaValidRate         float64 `json:"schema_valid_rate"`
	ComparatorPassRate      float64 `json:"comparator_pass_rate"`
	ContractConformanceRate float64 `json:"contract_conformance_rate"`
	P50LatencyMS            int64   `json:"p50_latency_ms,omitempty"`
	P95LatencyMS            int64   `json:"p95_latency_ms,omitempty"`
	AvgCostUSD              float64 `json:"avg_cost_usd,omitempty"`
	P95CostUSD              float64 `json:"p95_cost_usd,omitempty"`
	RetryRate               float64 `json:"retry_rate,omitempty"`
	FallbackRate            float64 `json:"fallback_rate,omitempty"`
	ExamplesRun             int     `json:"examples_run"`

	// Ours: the counts behind the rates, the Wilson interval, tokens,
	// error kinds, why the bar was missed, and the paired test.
	Examples           int             `json:"examples,omitempty"`
	SchemaValid        int             `json:"schema_valid,omitempty"`
	ComparatorPasses   int             `json:"comparator_passes,omitempty"`
	ContractConformant int             `json:"contract_conformant,omitempty"`
	PassRateCI95       *Interval       `json:"comparator_pass_rate_ci95,omitempty"`
	AvgTokens          float64         `json:"avg_tokens,omitempty"`
	P95Tokens          int64           `json:"p95_tokens,omitempty"`
	Errors             map[string]int  `json:"errors,omitempty"`
	BarFailures        []string        `json:"bar_failures,omitempty"`
	VsPinned           *PairedTest     `json:"paired_vs_pinned,omitempty"`
	ExampleOutcomes    map[string]bool `json:"example_outcomes,omitempty"`
}

// Label is "profile/model", with " effort=<e>" when an effort is set.
func (c *Candidate) Label() string {
	s := c.Profile + "/" + c.Model
	if c.Effort != "" {
		s += " effort=" + c.Effort
	}
	return s
}

// Interval is a confidence interval on a rate.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// PairedTest is the exact McNemar test of a candidate against the pinned
// candidate on per-example outcomes (an example passes for a candidate
// when every repeat of it passed).
type PairedTest struct {
	Pinned string `json:"pinned"`
	// BothPass, OnlyCandidate, OnlyPinned and BothFail count examples.
	BothPass      int     `json:"both_pass"`
	OnlyCandidate int     `json:"only_candidate"`
	OnlyPinned    int     `json:"only_pinned"`
	BothFail      int     `json:"both_fail"`
	PValue        float64 `json:"p_value"`
	Significant   bool    `json:"significant"`
}

// Decision is the candidate the dataset's strategy picked and why the
// others were not.
type Decision struct {
	Strategy        string `json:"strategy"`
	SelectedProfile string `json:"selected_profile,omitempty"`
	SelectedModel   string `json:"selected_model,omitempty"`
	SelectedEffort  string `json:"selected_effort,omitempty"`
	Evidence        string `json:"evidence,omitempty"`
	RejectedSummary string `json:"rejected_summary,omitempty"`
	PinnedBy        string `json:"pinned_by,omitempty"`
	PinnedAt        string `json:"pinned_at,omitempty"`
	FallbackProfile string `json:"fallback_profile,omitempty"`

	// Rejected lists every candidate not selected, with its reasons (ours).
	Rejected []Rejection `json:"rejected,omitempty"`
}

// Rejection is a candidate the decision did not pick.
type Rejection struct {
	Profile string   `json:"profile"`
	Model   string   `json:"model"`
	Effort  string   `json:"effort,omitempty"`
	Reasons []string `json:"reasons"`
}

// FailureSample is one answer that did not pass.
type FailureSample struct {
	Example string         `json:"example"`
	Profile string         `json:"profile"`
	Model   string         `json:"model"`
	Effort  string         `json:"effort,omitempty"`
	Reason  string         `json:"reason"`
	Expect  map[string]any `json:"expect,omitempty"`
	Actual  any            `json:"actual,omitempty"`
}

// RunInfo records how a report was produced (ours).
type RunInfo struct {
	// Mode is "live" (agents answered) or "replay" (a cassette did).
	Mode       string     `json:"mode"`
	Comparator Comparator `json:"comparator"`
	Strategy   string     `json:"strategy"`
	Examples   int        `json:"examples"`
	Repeat     int        `json:"repeat"`
	// Strict is set when the bar was applied to the Wilson lower bound.
	Strict         bool  `json:"strict,omitempty"`
	CallDeadlineMS int64 `json:"call_deadline_ms"`
}

// Hashes returns the report's four hashes.
func (r *Report) Hashes() Hashes {
	return Hashes{Dataset: r.DatasetHash, Prompt: r.PromptHash, Schema: r.SchemaHash, Toolbox: r.ToolboxHash}
}

// Encode renders the report as indented JSON with a trailing newline.
func (r *Report) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return buf.Bytes(), nil
}

// ReadReport reads a report file.
func ReadReport(path string) (*Report, error) {
	return routes.ReadReport(path, func(r *Report) string { return r.Kind })
}

// LatestReport finds the latest report in dir: latest.json when present,
// else the report with the greatest generated_at. It returns "" and no
// error when dir holds no report.
func LatestReport(dir string) (string, *Report, error) {
	latest := filepath.Join(dir, LatestName)
	if _, err := os.Stat(latest); err == nil {
		r, err := ReadReport(latest)
		return latest, r, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("read reports: %w", err)
	}
	var bestPath string
	var best *Report
	var bestAt time.Time
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		r, err := ReadReport(p)
		if err != nil {
			return "", nil, err
		}
		at, _ := time.Parse(time.RFC3339Nano, r.GeneratedAt)
		if best == nil || at.After(bestAt) {
			bestPath, best, bestAt = p, r, at
		}
	}
	return bestPath, best, nil
}

// Statuses of a call (eval-format.md §5).
const (
	StatusUnmeasured = "unmeasured"
	StatusStale      = "stale"
	StatusPassing    = "passing"
	StatusFailing    = "failing"
	StatusInvalid    = "invalid"
)

// Status compares a call's latest report with the call site as it is now:
// no report → unmeasured; a hash present on both sides that differs →
// stale; else passing when any candidate passed, failing otherwise.
func Status(r *Report, current Hashes) string {
	switch {
	case r == nil:
		return StatusUnmeasured
	case len(r.Hashes().Diff(current)) > 0:
		return StatusStale
	}
	for _, c := range r.Candidates {
		if c.Pass {
			return StatusPassing
		}
	}
	return StatusFailing
}

// CurrentHashes are the hashes of a checked dataset's call site now.
func (c *Checked) CurrentHashes() Hashes {
	var h Hashes
	if c.Story != nil && c.Site != nil {
		h = routes.SiteHashes(c.Story, c.Site)
	}
	h.Dataset = routes.HashBytes(c.Dataset.Raw)
	return h
}

// Latest reads the dataset's latest report ("" and nil when none).
func (c *Checked) Latest() (string, *Report, error) {
	if c.Dataset.Call == "" {
		return "", nil, nil
	}
	return LatestReport(c.Dataset.ReportsDir())
}

// Status is the dataset's status: invalid when it has errors, else the
// status of its latest report against the call site now.
func (c *Checked) Status() (string, error) {
	if !c.OK() {
		return StatusInvalid, nil
	}
	_, r, err := c.Latest()
	if err != nil {
		return StatusInvalid, err
	}
	return Status(r, c.CurrentHashes()), nil
}

// WriteReport writes r into dir as <timestamp>.json and latest.json (the
// same bytes) and returns the timestamped path. The timestamp comes from
// r.GeneratedAt; a name already taken gets a -2, -3, ... suffix.
func WriteReport(dir string, r *Report) (string, error) {
	b, err := r.Encode()
	if err != nil {
		return "", err
	}
	if err := outfile.MkdirAll(dir); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	at, err := time.Parse(time.RFC3339Nano, r.GeneratedAt)
	if err != nil {
		return "", fmt.Errorf("write report: generated_at %q: %w", r.GeneratedAt, err)
	}
	stamp := at.UTC().Format("20060102T150405Z")
	path := filepath.Join(dir, stamp+".json")
	for i := 2; ; i++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, outfile.File)
		if errors.Is(err, fs.ErrExist) {
			path = filepath.Join(dir, fmt.Sprintf("%s-%d.json", stamp, i))
			continue
		}
		if err != nil {
			return "", fmt.Errorf("write report: %w", err)
		}
		_, werr := f.Write(b)
		cerr := f.Close()
		if err := errors.Join(werr, cerr); err != nil {
			return "", fmt.Errorf("write report: %w", err)
		}
		break
	}
	if err := writeAtomic(filepath.Join(dir, LatestName), b); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return path, nil
}

// writeAtomic replaces path with b through a temporary file and a rename,
// so a reader never sees half a report.
func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".latest-*.json")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), outfile.File); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
