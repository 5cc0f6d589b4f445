package orchestrator

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The room is the top-level state a nested state is in: its footer: renders
// with the world as it is now, and its menu: orders (and trims) the
// intents a surface lists without narrowing what the room takes.
func TestRoomFooterAndMenu(t *testing.T) {
	src, err := os.ReadFile("../../check/kitsokiformat/testdata/rooms/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, files{"app.yaml": string(src)})
	if got, err := r.sess.Footer(); err != nil || got != "oil 3 · base of the tower" {
		t.Errorf("footer at base = %q, %v", got, err)
	}
	r.do("climb")
	r.do("refill")
	if got := r.sess.Room().Name; got != "lamp_room" {
		t.Errorf("room = %q", got)
	}
	if got, err := r.sess.Footer(); err != nil || got != "oil 4 · shine 0" {
		t.Errorf("footer in the lamp room = %q, %v", got, err)
	}
	if d := cmp.Diff([]string{"light", "refill", "descend"}, r.sess.MenuIntents()); d != "" {
		t.Errorf("menu intents (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"descend", "light", "polish", "refill"}, r.sess.AllowedIntents()); d != "" {
		t.Errorf("allowed intents (-want +got):\n%s", d)
	}
	var order []string
	for _, e := range r.sess.Menu() {
		if !e.Hidden {
			order = append(order, e.Intent)
		}
	}
	if d := cmp.Diff([]string{"light", "refill", "descend"}, order); d != "" {
		t.Errorf("menu entries (-want +got):\n%s", d)
	}
}

// An intent's priority: puts it first in the menu; a slot's prompt: is
// the question a MISSING_SLOTS rejection asks; its format_hint: and
// examples: tell the router what the slot holds.
func TestIntentAndSlotHints(t *testing.T) {
	const src = `
app: {id: hints}
intents:
  look: {}
  order:
    priority: 50
    slots:
      dish: {type: string, required: true, description: "the dish", prompt: "What would you like?", format_hint: "a dish from the board", examples: [soup, pie]}
root: inn
states:
  inn:
    on:
      look: [{target: .}]
      order: [{target: .}]
`
	r := newRig(t, files{"app.yaml": src})
	if d := cmp.Diff([]string{"order", "look"}, r.sess.MenuIntents()); d != "" {
		t.Errorf("menu intents (-want +got):\n%s", d)
	}
	if m := r.sess.Menu(); len(m) != 2 || m[0].Intent != "order" {
		t.Errorf("menu = %+v", m)
	}
	out := r.do("order")
	if out.Rejection == nil || out.Rejection.Message != `intent "order" is missing required slots: dish (dish: What would you like?)` {
		t.Errorf("rejection = %+v", out.Rejection)
	}
	if p := r.sess.RouterPrompt("something to eat"); !strings.Contains(p, "slot dish (string, required): the dish (format: a dish from the board) e.g. soup, pie") {
		t.Errorf("router prompt:\n%s", p)
	}
}
