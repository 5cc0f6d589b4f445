package orchestrator

import (
	"testing"
)

const stemStory = `
app: {id: stems}
routing: {enabled: true}
intents:
  commit: {synonyms: ["commit"]}
  stage: {synonyms: ["stage"]}
  ford: {examples: ["ford the river"]}
root: repo
states:
  repo:
    on:
      commit: [{target: .}]
      stage: [{target: .}]
      ford: [{target: .}]
`

// The bare tier and the cache signature compare Porter2 stems, as
// Kitsoki's matcher does: "staged" meets the synonym "stage", "fording
// rivers" the example "ford the river"; "commit the staged fix" ties
// commit and stage on stems and the leading verb breaks the tie.
func TestStemmedSynonyms(t *testing.T) {
	r := newRig(t, files{"app.yaml": stemStory})
	for _, tt := range []struct{ text, want string }{
		{"staged", "stage"},
		{"staging everything", "stage"},
		{"fording rivers", "ford"},
		{"commit the staged fix", "commit"},
		{"stage the committed fix", "stage"},
	} {
		got, ok := r.sess.Resolve(tt.text)
		if !ok || got.Intent != tt.want || got.Tier != TierSynonym {
			t.Errorf("Resolve(%q) = %+v, %v; want %s by the synonym tier", tt.text, got, ok, tt.want)
		}
	}
	for _, tt := range []struct{ text, want string }{
		// Porter2 keeps "lbs" (no vowel before the s); Kitsoki's doc table
		// shows "lb", which the stemmer does not give.
		{"buy 6 oxen and 200 lbs of food", "200 6 buy food lbs oxen"},
		{"purchase 6 oxen + 200 lbs food", "200 6 food lbs oxen purchas"},
		{"Hanging the cloaks", "cloak hang"},
	} {
		if got := r.sess.Signature(tt.text); got != tt.want {
			t.Errorf("Signature(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
