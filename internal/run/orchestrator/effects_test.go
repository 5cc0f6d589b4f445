package orchestrator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const effectsStory = `
app: {id: effects}
world:
  count: {type: int, default: 5}
  ratio: {type: float}
  on: {type: bool, default: false}
  name: {type: string, default: "x"}
  junk: {type: string, default: "abc"}
  a: {type: int, default: 1}
  b: {type: int, default: 0}
intents: {run: {slots: {v: {type: string}}}, skip: {}}
root: s
states:
  s:
    view: "count={{ world.count }} name={{ world.name }}"
    on:
      run:
        - target: "."
          effects:
            - set: {count: "{{ slots.v }}", ratio: "2.5", on: "true", name: "{{ world.count }}"}
            - increment: {junk: 2, a: 3}
            - say: "hello {{ world.name }}"
            - say: "second"
            - set: {b: "{{ world.a }}"}
              increment: {a: 100}
      skip:
        - target: "."
          effects:
            - when: "world.count > 100"
              set: {name: "big"}
            - when: "world.count <= 100"
              set: {name: "small"}
`

func TestEffects(t *testing.T) {
	r := newRig(t, files{"app.yaml": effectsStory})
	out := r.do("run v=42")
	if out.Outcome != OutcomeTransitioned {
		t.Fatalf("outcome %s %v", out.Outcome, out.Err)
	}
	w := r.sess.World()
	want := map[string]any{
		"count": int64(42), // string → int by the declaration
		"ratio": 2.5,
		"on":    true,
		"junk":  int64(2),
		"a":     int64(4),
		"b":     int64(4), // set wins over increment on the same item
	}
	for k, v := range want {
		if !cmp.Equal(v, w[k]) {
			t.Errorf("world[%s] = %#v, want %#v", k, w[k], v)
		}
	}
	// A single {{ }} keeps its type: name gets the int count from before the block.
	if got := jsonOf(t, w["name"]); got != "5" {
		t.Errorf("world[name] = %s, want 5", got)
	}
	if diff := cmp.Diff([]string{"hello 5", "second"}, out.Says); diff != "" {
		t.Errorf("says (-want +got):\n%s", diff)
	}
	if out.View != "count=42 name=5" {
		t.Errorf("view = %q", out.View)
	}
	var updates []string
	for _, ev := range r.events("world.update") {
		updates = append(updates, jsonOf(t, ev.Payload))
	}
	wantUpdates := []string{
		`{"set":{"session_id":"s1"}}`, // turn 0 projects the session's id
		`{"set":{"count":42}}`, `{"set":{"name":5}}`, `{"set":{"on":true}}`, `{"set":{"ratio":2.5}}`,
		`{"increment":{"a":3}}`, `{"increment":{"junk":2}}`,
		`{"set":{"b":4}}`,
	}
	if diff := cmp.Diff(wantUpdates, updates); diff != "" {
		t.Errorf("world.update payloads (-want +got):\n%s", diff)
	}
	end := r.events("turn.end")
	if got := jsonOf(t, end[0].Payload); got != `{"outcome":"transitioned","to":"s","view":"count=42 name=5"}` {
		t.Errorf("turn.end = %s", got)
	}
}

func TestEffectWhen(t *testing.T) {
	r := newRig(t, files{"app.yaml": effectsStory})
	r.do("skip")
	if got := r.sess.World()["name"]; got != "small" {
		t.Errorf("name = %v, want small", got)
	}
	if n := len(r.turnEvents(1, "world.update")); n != 1 {
		t.Errorf("world.update events = %d, want 1 (the false when is skipped)", n)
	}
}
