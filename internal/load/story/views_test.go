package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestViewErrors checks the typed-view load errors with their exact text.
func TestViewErrors(t *testing.T) {
	want := []string{
		`errors.yaml:10:9: states.start.view[1].heading: a view element has one kind; it already is "prose" (write "heading" as its own element)`,
		`errors.yaml:11:9: states.start.view[2].porse: unknown view element kind "porse" (did you mean "prose"?)`,
		`errors.yaml:12:31: states.start.view[3].kv.pair: unknown key "pair" (did you mean "pairs"?)`,
		`errors.yaml:14:17: states.start.view[4].choice.mode: unknown choice mode "singel" (one of single, multi, form) (did you mean "single"?)`,
		`errors.yaml:16:34: states.start.view[5].media.kind: unknown media kind "vidoe" (one of video, image, pdf, html, slideshow) (did you mean "video"?)`,
		`errors.yaml:17:9: states.start.view[6]: a view has at most one choice element; merge the items into one choice`,
		`errors.yaml:21:27: states.start.view[6].choice.items[0].value: a multi-mode value must be a literal, not a template`,
		`errors.yaml:22:9: states.start.view[7]: a view has at most one choice element; merge the items into one choice`,
		`errors.yaml:30:9: states.other.view.blocks.bdoy: block "bdoy" is not defined in views/base.pongo (did you mean "body"?)`,
		`errors.yaml:32:13: states.other.view.blocks.body[0]: a choice element cannot sit inside blocks: (a base view renders its blocks as text); write the view as a list of elements to offer a choice, or use a list: element here`,
		`errors.yaml:40:21: states.form.view[0].choice.template: blank {cost} has no fields: entry`,
		`errors.yaml:43:27: states.form.view[0].choice.fields.price.type: unknown field type "intt" (one of string, int, float, bool, enum) (did you mean "int"?)`,
		`errors.yaml:44:20: states.form.view[0].choice.fields.total: a readonly field needs expr: (its value, an expression over world and slots)`,
	}
	if diff := cmp.Diff(want, loadErr(t, "testdata/views/errors.yaml", nil)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// TestViewForms checks which form each view: shape loads into.
func TestViewForms(t *testing.T) {
	s, err := Load("testdata/views/forms.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		state              string
		text, doc, noBase  bool
		elements, segments int
		blocks             []string
	}{
		{state: "str", text: true},
		{state: "typed", doc: true, elements: 3},
		{state: "based", doc: true, segments: 5, blocks: []string{"body"}},
		{state: "nobase", doc: true, noBase: true, blocks: []string{"footer", "body"}},
	}
	for _, tc := range tests {
		t.Run(tc.state, func(t *testing.T) {
			st := s.States[tc.state]
			if got := st.View != nil; got != tc.text {
				t.Errorf("string form = %v, want %v", got, tc.text)
			}
			if got := st.ViewDoc != nil; got != tc.doc {
				t.Fatalf("typed form = %v, want %v", got, tc.doc)
			}
			if !tc.doc {
				return
			}
			d := st.ViewDoc
			if len(d.Elements) != tc.elements || len(d.Base) != tc.segments || d.NoBase != tc.noBase {
				t.Errorf("elements %d, base segments %d, no base %v; want %d, %d, %v", len(d.Elements), len(d.Base), d.NoBase, tc.elements, tc.segments, tc.noBase)
			}
			if diff := cmp.Diff(tc.blocks, d.Order); diff != "" {
				t.Errorf("blocks (-want +got):\n%s", diff)
			}
		})
	}
	if w := s.Warnings; len(w) != 1 || w[0].String() != `forms.yaml:25:16: states.nobase.view.extends: base view "chrome" not found at views/chrome.pongo; the blocks render in the order written` {
		t.Errorf("warnings = %v", w)
	}
}
