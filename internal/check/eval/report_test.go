package eval

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/run/routes"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

var (
	reportSchemaOnce sync.Once
	reportSchema     *schema.Schema
	reportSchemaErr  error
)

// validateReport checks report bytes against schemas/eval-report.schema.json.
func validateReport(t *testing.T, b []byte) {
	t.Helper()
	reportSchemaOnce.Do(func() {
		var c *schema.Compiler
		c, reportSchemaErr = schema.NewCompiler(filepath.Join("..", "..", "..", "schemas"))
		if reportSchemaErr == nil {
			reportSchema, reportSchemaErr = c.Compile("eval-report.schema.json")
		}
	})
	if reportSchemaErr != nil {
		t.Fatalf("report schema: %v", reportSchemaErr)
	}
	if _, err := reportSchema.ValidateJSON(b); err != nil {
		t.Fatalf("report does not match schemas/eval-report.schema.json: %v\n%s", err, b)
	}
}

// validateReportFile validates a written report file.
func validateReportFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	validateReport(t, b)
}

// The status rules of eval-format.md §5.
func TestStatus(t *testing.T) {
	cur := Hashes{Dataset: "sha256:d", Prompt: "sha256:p", Schema: "sha256:s", Toolbox: "sha256:t"}
	pass := []Candidate{{Profile: "a", Pass: false}, {Profile: "b", Pass: true}}
	fail := []Candidate{{Profile: "a"}, {Profile: "b"}}
	tests := []struct {
		name string
		r    *Report
		want string
	}{
		{"no report", nil, StatusUnmeasured},
		{"fresh and passing", &Report{DatasetHash: "sha256:d", PromptHash: "sha256:p", SchemaHash: "sha256:s", ToolboxHash: "sha256:t", Candidates: pass}, StatusPassing},
		{"fresh and failing", &Report{DatasetHash: "sha256:d", Candidates: fail}, StatusFailing},
		{"no candidates", &Report{DatasetHash: "sha256:d"}, StatusFailing},
		{"dataset changed", &Report{DatasetHash: "sha256:old", Candidates: pass}, StatusStale},
		{"prompt changed", &Report{DatasetHash: "sha256:d", PromptHash: "sha256:old", Candidates: pass}, StatusStale},
		{"schema changed", &Report{DatasetHash: "sha256:d", SchemaHash: "sha256:old", Candidates: pass}, StatusStale},
		{"toolbox changed", &Report{DatasetHash: "sha256:d", ToolboxHash: "sha256:old", Candidates: pass}, StatusStale},
		{"stale wins over failing", &Report{DatasetHash: "sha256:old", Candidates: fail}, StatusStale},
		{"hash absent from the report is not compared", &Report{DatasetHash: "sha256:d", Candidates: pass}, StatusPassing},
	}
	for _, tt := range tests {
		if got := Status(tt.r, cur); got != tt.want {
			t.Errorf("%s: Status = %s, want %s", tt.name, got, tt.want)
		}
	}
	// A hash missing on the current side (an inline prompt) is not compared.
	if got := Status(&Report{DatasetHash: "sha256:d", PromptHash: "sha256:p", Candidates: pass}, Hashes{Dataset: "sha256:d"}); got != StatusPassing {
		t.Errorf("current side without prompt hash: %s", got)
	}
}

// A dataset's status: invalid with errors, else from its latest report.
func TestCheckedStatus(t *testing.T) {
	dir := copyStory(t)
	ds := filepath.Join(dir, "evals", "audit.yaml")
	c := mustCheck(t, ds)
	if s, err := c.Status(); err != nil || s != StatusUnmeasured {
		t.Fatalf("status = %s, %v; want unmeasured", s, err)
	}
	h := c.CurrentHashes()
	r := &Report{Kind: KindReport, Eval: "audit", App: "../app.yaml", Call: "audit", GeneratedAt: "2026-07-01T00:00:00Z",
		DatasetHash: h.Dataset, PromptHash: h.Prompt, SchemaHash: h.Schema, ToolboxHash: h.Toolbox,
		AdherenceBar: AdherenceBar{MinPassRate: 0.8}, Candidates: []Candidate{{Profile: "agent.good", Model: "m", Pass: true}}}
	written, err := WriteReport(c.Dataset.ReportsDir(), r)
	if err != nil {
		t.Fatal(err)
	}
	validateReportFile(t, written)
	if s, _ := c.Status(); s != StatusPassing {
		t.Fatalf("status = %s, want passing", s)
	}
	testkit.WriteFile(t, dir, "prompts/audit.md", "changed prompt {{ args.claim }}\n")
	if s, _ := mustCheck(t, ds).Status(); s != StatusStale {
		t.Fatalf("after a prompt edit: status = %s, want stale", s)
	}
	bad := testkit.WriteFile(t, dir, "evals/bad.yaml", "kind: agent_eval\n")
	if s, _ := mustCheck(t, bad).Status(); s != StatusInvalid {
		t.Fatalf("invalid dataset: status = %s", s)
	}
}

// latest.json wins; without it the greatest generated_at; none → "".
func TestLatestReport(t *testing.T) {
	dir := t.TempDir()
	if p, r, err := LatestReport(filepath.Join(dir, "none")); p != "" || r != nil || err != nil {
		t.Fatalf("empty dir: %q %v %v", p, r, err)
	}
	mk := func(name, at string) {
		testkit.WriteFile(t, dir, name, `{"kind":"agent_eval_report","eval":"e","app":"a","call":"`+name+`","generated_at":"`+at+`","dataset_hash":"sha256:x","adherence_bar":{"min_pass_rate":1},"candidates":[]}`)
	}
	mk("a.json", "2026-07-01T00:00:00Z")
	mk("b.json", "2026-07-03T00:00:00Z")
	mk("c.json", "2026-07-02T00:00:00Z")
	p, r, err := LatestReport(dir)
	if err != nil || filepath.Base(p) != "b.json" || r.Call != "b.json" {
		t.Fatalf("greatest generated_at: %q %+v %v", p, r, err)
	}
	mk("latest.json", "2020-01-01T00:00:00Z")
	if p, _, _ := LatestReport(dir); filepath.Base(p) != "latest.json" {
		t.Fatalf("latest.json not preferred: %q", p)
	}
	testkit.WriteFile(t, dir, "other/x.json", `{"kind":"something"}`)
	if _, err := ReadReport(filepath.Join(dir, "other", "x.json")); err == nil || !strings.Contains(err.Error(), "kind must be agent_eval_report") {
		t.Fatalf("wrong kind: %v", err)
	}
}

// WriteReport writes <timestamp>.json and an identical latest.json, never
// overwriting an earlier report, and omits what §5 says to omit.
func TestWriteReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reports", "audit")
	r := &Report{Kind: KindReport, Eval: "audit", App: "../app.yaml", Call: "audit", GeneratedAt: "2026-07-01T12:30:45Z",
		DatasetHash: routes.HashBytes([]byte("d")), AdherenceBar: AdherenceBar{MinPassRate: 0.95},
		Candidates: []Candidate{{Profile: "p", Model: "m", Pass: true, SchemaValidRate: 1, ComparatorPassRate: 1, ContractConformanceRate: 1, ExamplesRun: 3}}}
	p1, err := WriteReport(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := WriteReport(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(p1) != "20260701T123045Z.json" || filepath.Base(p2) != "20260701T123045Z-2.json" {
		t.Fatalf("paths %s %s", p1, p2)
	}
	b1, _ := os.ReadFile(p1)
	bl, _ := os.ReadFile(filepath.Join(dir, LatestName))
	if string(b1) != string(bl) {
		t.Fatal("latest.json differs from the report")
	}
	validateReport(t, b1)
	want := `{
  "kind": "agent_eval_report",
  "eval": "audit",
  "app": "../app.yaml",
  "call": "audit",
  "generated_at": "2026-07-01T12:30:45Z",
  "dataset_hash": "sha256:18ac3e7343f016890c510e93f935261169d9e3f565436429830faf0934f4f8e4",
  "adherence_bar": {
    "min_pass_rate": 0.95
  },
  "candidates": [
    {
      "profile": "p",
      "model": "m",
      "pass": true,
      "schema_valid_rate": 1,
      "comparator_pass_rate": 1,
      "contract_conformance_rate": 1,
      "examples_run": 3
    }
  ]
}
`
	if diff := cmp.Diff(want, string(b1)); diff != "" {
		t.Errorf("report bytes (-want +got):\n%s", diff)
	}
	back, err := ReadReport(p1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
