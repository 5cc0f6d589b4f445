package orchestrator

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const compassStory = `
app: {id: compass}
intents:
  go:
    synonyms: ["head", "walk {direction}"]
    slots:
      direction:
        type: enum
        required: true
        values: [north, south]
        synonyms:
          north: ["n", "up"]
          south: ["s", "down under"]
  look:
    synonyms: ["peek"]
    slots:
      side: {type: enum, values: [left, right]}
root: field
world:
  went: {type: string, default: ""}
states:
  field:
    view: "went {{ world.went }}"
    on:
      go: [{target: ., effects: [{set: {went: "{{ slots.direction }}"}}]}]
      look: [{target: .}]
`

func TestSlotSynonymsInTypedIntents(t *testing.T) {
	for _, tc := range []struct {
		line, went, rejection string
	}{
		{"go direction=north", "north", ""},
		{"go direction=up", "north", ""},
		{`go direction="Down Under"`, "south", ""},
		{"go direction=NORTH", "north", ""},
		{"go direction=west", "", `INVALID_SLOT_VALUE: slot "direction" of intent "go": "west" is not one of north, south`},
	} {
		t.Run(tc.line, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": compassStory})
			out := r.do(tc.line)
			if tc.rejection != "" {
				if out.Rejection == nil || out.Rejection.Error() != tc.rejection {
					t.Fatalf("rejection %v, want %s", out.Rejection, tc.rejection)
				}
				return
			}
			if out.Rejection != nil {
				t.Fatalf("rejected: %v", out.Rejection)
			}
			if got := r.sess.World()["went"]; got != tc.went {
				t.Errorf("went = %v, want %s", got, tc.went)
			}
			accepted := r.events("machine.intent_accepted")
			if got := accepted[len(accepted)-1].Payload["slots"].(map[string]any)["direction"]; got != tc.went {
				t.Errorf("the trace records slot %v, want the declared value %s", got, tc.went)
			}
		})
	}
}

func TestSlotSynonymsInTheSynonymTiers(t *testing.T) {
	on := true
	for _, tc := range []struct {
		text string
		want Route
	}{
		{"walk up", Route{Tier: TierTemplate, Intent: "go", Confidence: 0.8, Slots: map[string]any{"direction": "north"}}},
		{"walk down under", Route{Tier: TierTemplate, Intent: "go", Confidence: 0.8, Slots: map[string]any{"direction": "south"}}},
		{"walk nrth", Route{Tier: TierTemplate, Intent: "go", Confidence: 0.8, Slots: map[string]any{"direction": "north"}}},
		// A capture no value reads is a partial template (0.65): between
		// the bars, the user is asked for the slot.
		{"walk sideways", Route{Tier: TierTemplate, Confidence: 0.65, Slots: map[string]any{}, Missing: []string{"direction"},
			Rejection: &Rejection{Code: CodeMissingSlots, Candidates: []string{"go"}, MissingSlots: []string{"direction"},
				Message: "go needs direction; type it with the slot filled (e.g. go direction=…)"}}},
		{"let's head up", Route{Tier: TierSynonym, Intent: "go", Confidence: 0.9, Slots: map[string]any{"direction": "north"}}},
		// A verb (the synonym "head") and a value: the verb-value tier.
		{"head south", Route{Tier: TierVerbValue, Intent: "go", Confidence: 1, Slots: map[string]any{"direction": "south"}}},
		{"peek left", Route{Tier: TierVerbValue, Intent: "look", Confidence: 1, Slots: map[string]any{"side": "left"}}},
	} {
		t.Run(tc.text, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": compassStory}, func(c *rigConfig) { c.routing.Semantic = &on })
			got, ok := r.sess.Resolve(tc.text)
			if !ok {
				t.Fatalf("Resolve(%q) found nothing", tc.text)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Resolve(%q) (-want +got):\n%s", tc.text, d)
			}
		})
	}
	// A bare synonym that leaves a required slot unfilled is no match (the
	// router extracts the slot), whether no value or two are named.
	for _, text := range []string{"head", "head n or s"} {
		r := newRig(t, files{"app.yaml": compassStory}, func(c *rigConfig) { c.routing.Semantic = &on })
		if got, ok := r.sess.Resolve(text); ok {
			t.Errorf("Resolve(%q) = %+v, want no match", text, got)
		}
	}
	r := newRig(t, files{"app.yaml": compassStory}, func(c *rigConfig) { c.routing.Semantic = &on })
	out, err := r.sess.Say(context.Background(), "walk sideways")
	if err != nil {
		t.Fatal(err)
	}
	if out.Rejection == nil || out.Rejection.Code != CodeMissingSlots {
		t.Errorf("a capture that is no value nor synonym: rejection %v, want MISSING_SLOTS", out.Rejection)
	}
}
