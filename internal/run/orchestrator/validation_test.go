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
  ping: {}
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
      ping: [{target: "."}]
      free: [{target: "."}]
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
		{"ordr size=small qty=1", &Rejection{Code: CodeIntentNotAllowed, Message: `intent "ordr" is not allowed in state "open": it is not a declared intent (allowed: cancel, free, order, ping) (did you mean "order"?)`,
			Suggestions: []string{"order"}, AllowedIntents: []string{"cancel", "free", "order", "ping"}}},
		{"elsewhere", &Rejection{Code: CodeIntentNotAllowed, Message: `intent "elsewhere" is not allowed in state "open" (allowed: cancel, free, order, ping)`,
			AllowedIntents: []string{"cancel", "free", "order", "ping"}}},
		{"order", &Rejection{Code: CodeMissingSlots, Message: `intent "order" is missing required slots: qty, size`, MissingSlots: []string{"qty", "size"}}},
		{"order size=medium qty=2", &Rejection{Code: CodeInvalidSlotValue, Message: `slot "size" of intent "order": "medium" is not one of small, large`}},
		{"cancel", &Rejection{Code: CodeMissingSlots, Message: `intent "cancel" is missing required slots: reason`, MissingSlots: []string{"reason"}}},              // state-local shadow
		{"order flavour=mint qty=1", &Rejection{Code: CodeMissingSlots, Message: `intent "order" is missing required slots: size`, MissingSlots: []string{"size"}}}, // an undeclared slot far from every declared one is no typo
		{"order size=small qty=1 sise=large", &Rejection{Code: CodeUnknownSlot, Message: `unknown slot "sise" for intent order; did you mean "size"?`, Suggestions: []string{"size"}}},
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
			if r.sess.State() != "open" || len(r.turnEvents(1, "world.update")) != 0 {
				t.Errorf("a rejected intent changed something: state %s, world.updates %d", r.sess.State(), len(r.turnEvents(1, "world.update")))
			}
			vf := r.events("machine.validation_failed")
			if len(vf) != 1 || vf[0].Payload["code"] != tt.want.Code || vf[0].Payload["message"] != tt.want.Message {
				t.Errorf("machine.validation_failed = %v", vf)
			}
		})
	}
}

// The example: a typo of a declared slot is refused with the closest
// declared name, on the REPL's path (ParseInput then Turn) as in a flow.
func TestUnknownSlotSuggestsDeclared(t *testing.T) {
	r := newRig(t, files{"app.yaml": `
app: {id: greet}
intents:
  greet:
    slots:
      name: {type: string, required: true}
      color: {type: string}
root: hello
states:
  hello:
    on:
      greet: [{target: "."}]
`})
	out := r.do("greet name=Ada colour=red")
	if out.Outcome != OutcomeRejected {
		t.Fatalf("outcome = %s, want rejected", out.Outcome)
	}
	if got, want := out.Rejection.Error(), `UNKNOWN_SLOT: unknown slot "colour" for intent greet; did you mean "color"?`; got != want {
		t.Errorf("rejection = %q, want %q", got, want)
	}
	if diff := cmp.Diff([]string{"color"}, out.Rejection.Suggestions); diff != "" {
		t.Errorf("suggestions (-want +got):\n%s", diff)
	}
	if out := r.do("greet name=Ada color=red"); out.Outcome != OutcomeTransitioned {
		t.Errorf("declared slots: outcome = %s %+v", out.Outcome, out.Rejection)
	}
}

// An intent with arms but no intents: entry takes any slot: nothing declares
// what it accepts.
func TestUndeclaredIntentTakesAnySlot(t *testing.T) {
	r := newRig(t, files{"app.yaml": intentsStory})
	if out := r.do("free anything=1"); out.Outcome != OutcomeTransitioned {
		t.Errorf("outcome = %s %+v, want transitioned", out.Outcome, out.Rejection)
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

// A slot the intent does not declare and that is no near miss of a declared
// one is accepted (Kitsoki's flows send such slots) and reaches the arm's
// effects; the story's declared slots still validate.
func TestUndeclaredSlotAccepted(t *testing.T) {
	for _, line := range []string{"ping who=me", "cancel reason=late extra=1", "order size=small qty=1 colour=red"} {
		t.Run(line, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": intentsStory})
			if out := r.do(line); out.Outcome != OutcomeTransitioned {
				t.Fatalf("outcome = %s %+v, want transitioned", out.Outcome, out.Rejection)
			}
			acc := r.events("machine.intent_accepted")
			if len(acc) != 1 {
				t.Fatalf("machine.intent_accepted = %v", acc)
			}
		})
	}
}
