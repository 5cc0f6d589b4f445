package eval

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kitsoki/kitsoki/internal/run/routes"
	"go.yaml.in/yaml/v3"

	"github.com/kitsoki/kitsoki/internal/base/yamlnode"

	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// KindDataset is the kind: of an eval dataset file.
const KindDataset = "agent_eval"

// Dataset is one eval file (eval-format.md §2), as written. Offline, only
// Kind, App, Call, Comparator and Examples are checked; Task, Matrix and
// Selection drive live runs.
type Dataset struct {
	Kind       string     `yaml:"kind"`
	App        string     `yaml:"app"`
	Call       string     `yaml:"call"`
	Agent      string     `yaml:"agent"`
	Task       Task       `yaml:"task"`
	Matrix     Matrix     `yaml:"matrix"`
	Comparator Comparator `yaml:"comparator"`
	Examples   []Example  `yaml:"examples"`
	Selection  Selection  `yaml:"selection"`

	// Path is the file the dataset was read from, as given.
	Path string `yaml:"-"`
	// Raw is the file's bytes; the dataset hash is taken over them.
	Raw []byte `yaml:"-"`
}

// Task describes the bounded decision being measured.
type Task struct {
	Goal         string       `yaml:"goal"`
	Boundedness  Boundedness  `yaml:"boundedness"`
	AdherenceBar AdherenceBar `yaml:"adherence_bar"`
}

// Boundedness records how bounded the task is (carried, not interpreted).
type Boundedness struct {
	MaxTurns        int    `yaml:"max_turns"`
	ToolPolicy      string `yaml:"tool_policy"`
	PreparedContext bool   `yaml:"prepared_context"`
}

// AdherenceBar is what a candidate must reach to pass. Zero latency and
// cost limits mean "no limit".
type AdherenceBar struct {
	MinPassRate     float64 `yaml:"min_pass_rate" json:"min_pass_rate"`
	MaxP95LatencyMS int64   `yaml:"max_p95_latency_ms" json:"max_p95_latency_ms,omitempty"`
	MaxAvgCostUSD   float64 `yaml:"max_avg_cost_usd" json:"max_avg_cost_usd,omitempty"`
}

// Matrix is the set of candidates a live run measures: every profile, with
// each of its models (none listed: the profile's default model) and each
// effort level (none listed: the default effort), repeat times per example.
type Matrix struct {
	Profiles []string            `yaml:"profiles"`
	Models   map[string][]string `yaml:"models"`
	Effort   []string            `yaml:"effort"`
	Repeat   int                 `yaml:"repeat"`
}

// Comparator says how an answer is scored against an example's expect.
// In YAML it is either a kind ("enum") or a mapping {kind, field}.
type Comparator struct {
	Kind  string `yaml:"kind" json:"kind"`
	Field string `yaml:"field" json:"field,omitempty"`
}

// UnmarshalYAML accepts the scalar and the mapping form.
func (c *Comparator) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&c.Kind)
	}
	// Node.Decode does not inherit the file decoder's KnownFields: check
	// the keys here so a misspelled one is an error too.
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Value != "kind" && k.Value != "field" {
				return fmt.Errorf("line %d: field %s not found in type eval.Comparator (comparator keys: kind, field)", k.Line, k.Value)
			}
		}
	}
	type plain Comparator
	return n.Decode((*plain)(c))
}

// Example is one question and its expected answer. Args are the call's
// prompt args; Actual is carried, not used.
type Example struct {
	Name   string         `yaml:"name"`
	Args   map[string]any `yaml:"args"`
	Expect map[string]any `yaml:"expect"`
	Actual map[string]any `yaml:"actual"`
}

// Selection is the dataset's selection policy and its current pin.
type Selection struct {
	Strategy string `yaml:"strategy"`
	Pinned   *Pin   `yaml:"pinned"`
}

// Pin is a profile/model/effort choice backed by an evidence report
// (routes.Pin: the same fields make up an invoke's selection: block).
type Pin = routes.Pin

// Name is the dataset's eval name: its file name without the extension.
func (d *Dataset) Name() string {
	base := filepath.Base(d.Path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// Dir is the directory of the dataset file; the app path and the reports
// directory are relative to it.
func (d *Dataset) Dir() string { return filepath.Dir(d.Path) }

// AppPath is the story file the dataset points at.
func (d *Dataset) AppPath() string {
	if filepath.IsAbs(d.App) {
		return d.App
	}
	return filepath.Join(d.Dir(), filepath.FromSlash(d.App))
}

// ReportsDir is where the dataset's reports live: reports/<call>/ next to
// the dataset.
func (d *Dataset) ReportsDir() string {
	return filepath.Join(d.Dir(), "reports", d.Call)
}

// ReadDataset reads and parses a dataset file. A file that cannot be read
// is an error; a file that is not valid YAML for the dataset shape returns
// the error too, so callers can report it as a validation failure.
func ReadDataset(path string) (*Dataset, error) {
	raw, err := workspace.ReadFile(path, path)
	if err != nil {
		return nil, fmt.Errorf("read dataset: %w", err)
	}
	return ParseDataset(path, raw)
}

// ParseDataset parses dataset bytes read from path.
func ParseDataset(path string, raw []byte) (*Dataset, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err == nil {
		if err := yamlnode.CheckExpansion(&doc, 0); err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
	}
	d := &Dataset{}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true) // a misspelled key is an error, not a silently missing setting
	if err := dec.Decode(d); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	d.Path, d.Raw = path, raw
	return d, nil
}

// Comparator kinds (eval-format.md §4).
const (
	CompareExact        = "exact"
	CompareFieldSubset  = "field_subset"
	CompareEnum         = "enum"
	CompareArtifactDiff = "artifact_diff"
	CompareJudge        = "judge"
)

// supportedComparators lists the kinds Compare knows.
var supportedComparators = map[string]bool{
	CompareExact: true, CompareFieldSubset: true, CompareEnum: true, CompareArtifactDiff: true, CompareJudge: true,
}

// judgeWarning is the warning a judge comparator always gets.
const judgeWarning = "judge comparator requires passing evidence for the judge call site before promotion"

// checkShape runs the checks that need nothing but the dataset itself, in
// the order eval-format.md §2 lists them.
func (d *Dataset) checkShape() (errs, warns []string) {
	if d.Kind != KindDataset {
		errs = append(errs, "kind must be agent_eval")
	}
	if d.App == "" {
		errs = append(errs, "app is required")
	}
	if d.Call == "" {
		errs = append(errs, "call is required")
	}
	switch {
	case d.Comparator.Kind == "":
		errs = append(errs, "comparator is required")
	case !supportedComparators[d.Comparator.Kind]:
		errs = append(errs, fmt.Sprintf("unsupported comparator %q", d.Comparator.Kind))
	case d.Comparator.Kind == CompareJudge:
		warns = append(warns, judgeWarning)
	}
	if len(d.Examples) == 0 {
		errs = append(errs, "at least one example is required")
	}
	seen := map[string]bool{}
	for i, ex := range d.Examples {
		if ex.Name == "" {
			errs = append(errs, fmt.Sprintf("examples[%d].name is required", i))
		} else if seen[ex.Name] {
			errs = append(errs, fmt.Sprintf("duplicate example name %q", ex.Name))
		}
		seen[ex.Name] = true
		if ex.Expect == nil {
			errs = append(errs, fmt.Sprintf("example %q expect is required", ex.Name))
		}
	}
	return errs, warns
}
