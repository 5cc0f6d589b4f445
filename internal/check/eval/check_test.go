package eval

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/run/routes"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// Every validation message of eval-format.md §2, one dataset each, checked
// against testdata/audit.
func TestCheckMessages(t *testing.T) {
	const ex = "examples:\n  - {name: a, args: {claim: x, amount: 1}, expect: {decision: approve, reason: ok}}\n"
	tests := []struct {
		name     string
		dataset  string
		errors   []string
		prefixes []string // errors checked by prefix (they quote OS or loader text)
		warnings []string
	}{
		{name: "valid", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: audit\ncomparator: enum\n" + ex},
		{name: "kind", dataset: "kind: eval\napp: ../app.yaml\ncall: audit\ncomparator: enum\n" + ex,
			errors: []string{"kind must be agent_eval"}},
		{name: "app missing stops before loading", dataset: "kind: agent_eval\ncall: nowhere\ncomparator: enum\n" + ex,
			errors: []string{"app is required"}},
		{name: "call", dataset: "kind: agent_eval\napp: ../app.yaml\ncomparator: enum\n" + ex,
			errors: []string{"call is required"}},
		{name: "comparator missing", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: audit\n" + ex,
			errors: []string{"comparator is required"}},
		{name: "comparator unsupported", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: audit\ncomparator: {kind: fuzzy}\n" + ex,
			errors: []string{`unsupported comparator "fuzzy"`}},
		{name: "no examples", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: audit\ncomparator: enum\nexamples: []\n",
			errors: []string{"at least one example is required"}},
		{name: "example name", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: audit\ncomparator: enum\nexamples:\n  - {expect: {decision: approve, reason: ok}}\n",
			errors: []string{"examples[0].name is required"}},
		{name: "duplicate name", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: audit\ncomparator: enum\nexamples:\n  - {name: a, expect: {decision: approve, reason: ok}}\n  - {name: a, expect: {decision: reject, reason: ok}}\n",
			errors: []string{`duplicate example name "a"`}},
		{name: "expect missing", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: audit\ncomparator: enum\nexamples:\n  - {name: a, args: {claim: x}}\n",
			errors: []string{`example "a" expect is required`}},
		{name: "load app", dataset: "kind: agent_eval\napp: ../missing.yaml\ncall: audit\ncomparator: enum\n" + ex,
			prefixes: []string{"load app: "}},
		{name: "call site", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: nosuch\ncomparator: enum\n" + ex,
			errors: []string{`call site "nosuch" not found; add id: nosuch to the target host.agent.* invoke`}},
		{name: "agent mismatch", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: audit\nagent: clerk\ncomparator: enum\n" + ex,
			errors: []string{`dataset agent "clerk" does not match call-site agent "auditor"`}},
		{name: "agent unset on the call site is not compared", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: triage\nagent: clerk\ncomparator: enum\n" + ex},
		{name: "expect schema", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: audit\ncomparator: enum\nexamples:\n  - {name: a, expect: {decision: maybe, reason: ok}}\n  - {name: b, expect: {decision: approve}}\n",
			errors: []string{
				`example "a" expect schema invalid: agent: schema_invalid: /decision: enum: value must be one of 'approve', 'reject'`,
				`example "b" expect schema invalid: agent: schema_invalid: /: required: missing property 'reason'`,
			}},
		{name: "judge warns", dataset: "kind: agent_eval\napp: ../app.yaml\ncall: audit\ncomparator: judge\n" + ex,
			warnings: []string{"judge comparator requires passing evidence for the judge call site before promotion"}},
		{name: "all collected", dataset: "kind: x\napp: ../app.yaml\ncomparator: {kind: nope}\nexamples:\n  - {args: {}}\n  - {name: b}\n  - {name: b, expect: {decision: approve, reason: ok}}\n",
			errors: []string{"kind must be agent_eval", "call is required", `unsupported comparator "nope"`,
				"examples[0].name is required", `example "" expect is required`, `example "b" expect is required`, `duplicate example name "b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyStory(t)
			p := testkit.WriteFile(t, dir, "evals/x.yaml", tt.dataset)
			c := mustCheck(t, p)
			got := c.Errors
			if len(tt.prefixes) > 0 {
				if len(got) != len(tt.prefixes) {
					t.Fatalf("errors = %q, want %d with prefixes %q", got, len(tt.prefixes), tt.prefixes)
				}
				for i, pre := range tt.prefixes {
					if !strings.HasPrefix(got[i], pre) {
						t.Errorf("error %q lacks prefix %q", got[i], pre)
					}
				}
			} else if diff := cmp.Diff(tt.errors, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warnings, c.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if c.OK() != (len(tt.errors)+len(tt.prefixes) == 0) {
				t.Errorf("OK() = %v with errors %q", c.OK(), got)
			}
		})
	}
}

// A schema path that is a template is not a file: the schema cannot be
// read and the dataset says so.
func TestCheckReadSchema(t *testing.T) {
	dir := copyStory(t)
	setDataset(t, filepath.Join(dir, "app.yaml"), func(s string) string {
		return strings.Replace(s, "schema: schemas/verdict.json\n          args:", "schema: \"{{ world.claim }}.json\"\n          args:", 1)
	})
	p := testkit.WriteFile(t, dir, "evals/x.yaml", "kind: agent_eval\napp: ../app.yaml\ncall: audit\ncomparator: enum\nexamples:\n  - {name: a, expect: {decision: approve, reason: ok}}\n")
	c := mustCheck(t, p)
	if len(c.Errors) != 1 || !strings.HasPrefix(c.Errors[0], "read schema: ") || !strings.Contains(c.Errors[0], "{{ world.claim }}.json") {
		t.Fatalf("errors = %q, want one read schema error naming the path", c.Errors)
	}
}

// YAML that does not parse is a validation error, not a crash; a missing
// file is an error.
func TestCheckUnparseableAndMissing(t *testing.T) {
	dir := t.TempDir()
	p := testkit.WriteFile(t, dir, "bad.yaml", "kind: [unclosed\n")
	c := mustCheck(t, p)
	if len(c.Errors) != 1 || !strings.HasPrefix(c.Errors[0], "parse "+p+": ") {
		t.Fatalf("errors = %q", c.Errors)
	}
	if _, err := Check(filepath.Join(dir, "nope.yaml")); err == nil || !strings.HasPrefix(err.Error(), "read dataset: ") {
		t.Fatalf("missing file: err = %v", err)
	}
}

// The comparator accepts the scalar and the mapping form.
func TestComparatorForms(t *testing.T) {
	for src, want := range map[string]Comparator{
		"comparator: enum\n":                                {Kind: "enum"},
		"comparator: {kind: enum, field: decision}\n":       {Kind: "enum", Field: "decision"},
		"comparator:\n  kind: field_subset\n":               {Kind: "field_subset"},
		"comparator: {kind: artifact_diff, field: patch}\n": {Kind: "artifact_diff", Field: "patch"},
	} {
		d, err := ParseDataset("x.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if d.Comparator != want {
			t.Errorf("%q: got %+v want %+v", src, d.Comparator, want)
		}
	}
}

// Call-site resolution (§3): the fields of both test call sites, with the
// with: block read as written.
func TestFindCallSite(t *testing.T) {
	c := mustCheck(t, filepath.Join("testdata", "audit", "evals", "audit.yaml"))
	if !c.OK() {
		t.Fatalf("errors: %q", c.Errors)
	}
	got := *c.Site
	got.Invoke, got.With = nil, nil
	want := CallSite{Call: "audit", Handler: "host.agent.decide", Agent: "auditor", PromptPath: "prompts/audit.md",
		SchemaPath: "schemas/verdict.json", SchemaName: "verdict.json", EffectIndex: 0, StatePath: "reviewing", Plugin: "agent.good"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit site (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"claim": "{{ world.claim }}", "amount": "{{ world.amount }}"}, c.Site.With["args"]); diff != "" {
		t.Errorf("with.args as written (-want +got):\n%s", diff)
	}

	tr, err := routes.FindCallSite(c.Story, "triage")
	if err != nil {
		t.Fatal(err)
	}
	if tr.StatePath != "reviewing" || tr.EffectIndex != 0 || tr.Agent != "" || tr.PromptPath != "prompts/triage.md" {
		t.Errorf("triage site = %+v", tr)
	}
}
