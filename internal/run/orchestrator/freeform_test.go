package orchestrator

import (
	"context"
	"testing"
)

// The story's free-form fallback (here the landing/work default): from a
// strict menu room, a request sent as the work intent or typed as free
// text no earlier tier claims goes to landing; a command typed by name
// still resolves exactly.
func TestFreeFormFallback(t *testing.T) {
	const src = `
app: {id: hub}
world:
  request: {type: string, default: ""}
intents:
  work: {slots: {request: {type: string, required: true}}}
  browse: {}
  finish: {}
root: landing
states:
  landing:
    default_intent: work
    on:
      work: [{target: ., effects: [{set: {request: "{{ slots.request }}"}}]}]
      browse: [{target: menu}]
  menu:
    on:
      finish: [{target: done}]
  done: {terminal: true}
`
	tests := []struct {
		name, say, state, request, tier string
	}{
		{"free text", "migrate the tickets to github", "landing", "migrate the tickets to github", TierFallback},
		{"command by name", "finish", "done", "", TierExact},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": src}, withRoot("menu"))
			out, err := r.sess.Say(context.Background(), tt.say)
			if err != nil {
				t.Fatal(err)
			}
			if out.Route == nil || out.Route.Tier != tt.tier || r.sess.State() != tt.state || r.sess.World()["request"] != tt.request {
				t.Fatalf("route %+v, state %s, request %v", out.Route, r.sess.State(), r.sess.World()["request"])
			}
		})
	}
	t.Run("intent", func(t *testing.T) {
		r := newRig(t, files{"app.yaml": src}, withRoot("menu"))
		r.do("work request=fix")
		if r.sess.State() != "landing" || r.sess.World()["request"] != "fix" {
			t.Fatalf("state %s, request %v", r.sess.State(), r.sess.World()["request"])
		}
	})
}
