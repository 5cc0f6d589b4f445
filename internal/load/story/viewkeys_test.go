package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The view element keys kitsoki reads from Kitsoki's format, wrongly
// written, are errors at the key.
func TestViewKeyErrors(t *testing.T) {
	got := loadErr(t, "testdata/viewkeys/bad.yaml", nil)
	want := []string{
		`bad.yaml:9:30: states.a.view[0].list.items[1]: a list item is its label or {label, hint, when}, got an empty string`,
		`bad.yaml:9:35: states.a.view[0].list.when: when: must sit beside list: (at the element's level), not inside its body, where it would guard nothing; dedent it to line up with list:`,
		`bad.yaml:10:29: states.a.view[1].kv.when: when: must sit beside kv: (at the element's level), not inside its body, where it would guard nothing; dedent it to line up with kv:`,
		`bad.yaml:11:45: states.a.view[2].media.annotate_intent: annotate_intent: "fix" has no slot "feedback" for the annotation's text (annotate_feedback_slot: names it; the default is feedback)`,
		`bad.yaml:12:45: states.a.view[3].media.annotate_intent: annotate_intent: "nope" is not an intent state "a" takes (it has no on: arms for it)`,
		`bad.yaml:13:28: states.a.view[4].media.annotate_feedback_slot: annotate_feedback_slot: names the slot of annotate_intent:, which the element does not set`,
		`bad.yaml:15:25: states.a.on.fix[0].view: view: is empty; give the transition's view (a text, a list of elements, or extends/blocks) or remove the key`,
		`bad.yaml:18:27: states.b.view.template_file: template_file "missing.pongo": no such file (looked for views/missing.pongo): file does not exist`,
		`bad.yaml:20:12: states.c.view.template_file: template_file: is a whole view on its own; drop extends:/blocks: or template_file:`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
}
