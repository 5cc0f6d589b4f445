package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// proposals: load into Story.Proposals, every key checked, and the loader
// says the kinds are declarations (as in Kitsoki, not run).
func TestProposals(t *testing.T) {
	s, err := Load("testdata/proposals/ok.yaml", WithStubbedHosts())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := s.Proposals["commit"]
	if p == nil {
		t.Fatal("no proposal")
	}
	got := []any{p.Schema, p.DraftPrompt, p.RefinePrompt, p.Execute.Invoke, p.Execute.OnSuccess, p.Execute.Background, len(p.Execute.OnComplete),
		p.Views["drafting"], p.AutoAcceptIf, p.RequireConfirm}
	want := []any{map[string]string{"message": "string", "files": "list"}, "prompts/draft.md", "prompts/refine.md", "host.run", "done", true, 1,
		"Proposed: {{ draft.message }}", "len($proposal.current.files) < 3", true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("proposal (-want +got):\n%s", d)
	}
	if s.Prompts["prompts/draft.md"] == nil || s.Prompts["prompts/refine.md"] == nil {
		t.Error("the step prompts were not compiled")
	}
	if d := cmp.Diff([]string{`ok.yaml:4:1: proposals: proposals: are declarations: as in Kitsoki they are checked and not run; write the draft, review and execute rooms under states: (the kinds document them)`}, lines(s.Warnings)); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
	gotErrs := loadErr(t, "testdata/proposals/bad.yaml", nil)
	wantErrs := []string{
		`bad.yaml:4:23: proposals.commit.schema.message: unknown field type "strng": use one of string, int, float, bool, list, object, text, enum (did you mean "string"?)`,
		`bad.yaml:5:21: proposals.commit.draft.prompt: cannot read prompt file "prompts/missing.md": no such file or directory`,
		`bad.yaml:7:7: proposals.commit.execute.background: background: true runs the execute's invoke as a job, and execute: has no invoke:`,
		`bad.yaml:8:19: proposals.commit.execute.on_success: unknown state "nowhere"`,
		`bad.yaml:9:13: proposals.commit.views.reviewin: unknown proposal phase "reviewin": views: are keyed by drafting, reviewing, executing, reviewing_result, done, failed, cancelled (did you mean "reviewing"?)`,
		`bad.yaml:10:30: proposals.commit.policy.auto_accept_if: invalid expression: unexpected token EOF (1:15)`,
		`bad.yaml:12:33: proposals.plain.execute.on_complete: on_complete: runs when a background execute ends; set background: true or drop on_complete:`,
	}
	if d := cmp.Diff(wantErrs, gotErrs); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}
