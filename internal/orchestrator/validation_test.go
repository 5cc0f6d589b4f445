package orchestrator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const intentsStory = `
app: {id: intents}
intents:
  order:
    slots:
      size: {type: enum, values: [small, large], required: true}
      qty: {type: int, required: true}
      note: {type: string, default: "none"}
  cancel: {}
  elsewhere: {}
root: open
states:
  open:
    intents:
      cancel:
        slots: {reason: {type: string, required: true}}
    on:
      order:
        - target: "."
          effects: [{set: {last: "{{ slots.note }}"}}]
      cancel: [{target: closed}]
  closed:
    terminal: true
    on:
      elsewhere: [{target: open}]
`

func TestIntentValidation(t *testing.T) {
	tests := []struct {
		line string
		want *Rejection
	}{
		{"ordr size=small qty=1", &Rejection{Code: CodeUnknownIntent, Message: `unknown intent "ordr" (did you mean "order"?)`,
			Suggestions: []string{"order"}, AllowedIntents: []string{"cancel", "order"}}},
		{"elsewhere", &Rejection{Code: CodeIntentNotAllowed, Message: `intent "elsewhere" is not allowed in state "open" (allowed: cancel, order)`,
			AllowedIntents: []string{"cancel", "order"}}},
		{"order", &Rejection{Code: CodeMissingSlots, Message: `intent "order" is missing required slots: qty, size`, MissingSlots: []string{"qty", "size"}}},
		{"order size=medium qty=2", &Rejection{Code: CodeInvalidSlotValue, Message: `slot "size" of intent "order": "medium" is not one of small, large`}},
		{"cancel", &Rejection{Code: CodeMissingSlots, Message: `intent "cancel" is missing required slots: reason`, MissingSlots: []string{"reason"}}}, // state-local shadow
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": intentsStory})
			out := r.do(tt.line)
			if out.Outcome != OutcomeRejected {
				t.Fatalf("outcome = %s, want rejected", out.Outcome)
			}
			if diff := cmp.Diff(tt.want, out.Rejection); diff != "" {
				t.Errorf("rejection (-want +got):\n%s", diff)
			}
			if r.sess.State() != "open" || len(r.events("world.update")) != 0 {
				t.Errorf("a rejected intent changed something: state %s, world.updates %d", r.sess.State(), len(r.events("world.update")))
			}
			vf := r.events("machine.validation_failed")
			if len(vf) != 1 || vf[0].Payload["code"] != tt.want.Code || vf[0].Payload["message"] != tt.want.Message {
				t.Errorf("machine.validation_failed = %v", vf)
			}
		})
	}
}

func TestSlotDefaultIsFilled(t *testing.T) {
	r := newRig(t, files{"app.yaml": intentsStory})
	out := r.do("order size=small qty=2")
	if out.Outcome != OutcomeTransitioned {
		t.Fatalf("outcome %s %+v", out.Outcome, out.Rejection)
	}
	if got := r.sess.World()["last"]; got != "none" {
		t.Errorf("default slot not filled: last = %v", got)
	}
	acc := r.events("machine.intent_accepted")
	if got := jsonOf(t, acc[0].Payload); got != `{"intent":"order","slots":{"note":"none","qty":2,"size":"small"}}` {
		t.Errorf("intent_accepted = %s", got)
	}
}

func TestParseInput(t *testing.T) {
	r := newRig(t, files{"app.yaml": intentsStory})
	intent, slots, err := r.sess.ParseInput(`order size=small qty=3 note="two words" extra='x y'`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"size": "small", "qty": int64(3), "note": "two words", "extra": "x y"}
	if intent != "order" || !cmp.Equal(want, slots) {
		t.Errorf("got %s %v", intent, slots)
	}
	for _, bad := range []string{"", "k=v", "order qty", `order note="open`} {
		if _, _, err := r.sess.ParseInput(bad); err == nil {
			t.Errorf("ParseInput(%q) succeeded", bad)
		}
	}
}
