package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// nested is a story with a compound state (templated initial, relative
// targets, a view its children inherit) and a parallel state with two
// regions that talk through emit:.
const nested = `
app: {id: nested}
world:
  lit: {type: bool, default: false}
  log: {type: string, default: ""}
  done_a: {type: bool, default: false}
intents:
  enter_bar: {}
  enter_clock: {}
  north: {}
  toggle: {}
  look: {}
  tick: {}
  rain: {}
  storm: {}
  finish: {}
  leave: {}
root: foyer
states:
  foyer:
    view: "foyer"
    on:
      enter_bar: [{target: bar}]
      enter_clock: [{target: clock}]
      toggle: [{target: ".", effects: [{set: {lit: true}}]}]
  bar:
    type: compound
    initial: "{% if world.lit %}lit{% else %}dark{% endif %}"
    view: "the bar"
    on_enter: [{set: {log: "{{ world.log }}>bar"}}]
    on:
      north: [{target: ../foyer}]
      look: [{target: ., effects: [{set: {log: "looked"}}]}]
    states:
      dark:
        on_enter: [{set: {log: "{{ world.log }}>dark"}}]
        on:
          toggle: [{target: lit, effects: [{set: {lit: true}}]}]
      lit:
        view: "lit bar"
        on_enter: [{set: {log: "{{ world.log }}>lit"}}]
        on:
          toggle: [{target: ../dark, effects: [{set: {lit: false}}]}]
  clock:
    type: parallel
    view: "clock"
    on:
      leave: [{target: foyer}]
    states:
      weather:
        type: compound
        initial: dry
        states:
          dry:
            view: "dry"
            on:
              rain: [{target: ../wet, effects: [{emit: storm}]}]
          wet: {view: "wet", terminal: true}
      calendar:
        type: compound
        initial: day1
        on:
          storm: [{target: clock.calendar.flooded, effects: [{set: {log: "flooded"}}]}]
        states:
          day1:
            view: "day 1"
            on:
              tick: [{target: day2}]
              finish: [{target: flooded}]
          day2: {view: "day 2"}
          flooded: {view: "flooded", terminal: true}
`

func TestCompoundState(t *testing.T) {
	r := newRig(t, files{"app.yaml": nested})
	r.do("enter_bar")
	if r.sess.State() != "bar.dark" {
		t.Fatalf("state = %s, want bar.dark (initial template with lit false)", r.sess.State())
	}
	if got := r.sess.World()["log"]; got != ">bar>dark" {
		t.Errorf("on_enter order: log = %q, want \">bar>dark\" (parent first)", got)
	}
	if v, _ := r.sess.View(); v != "the bar" {
		t.Errorf("view of bar.dark = %q, want the parent's \"the bar\"", v)
	}
	r.do("toggle") // bare sibling name
	if r.sess.State() != "bar.lit" {
		t.Fatalf("state = %s, want bar.lit", r.sess.State())
	}
	if v, _ := r.sess.View(); v != "lit bar" {
		t.Errorf("view of bar.lit = %q, want its own", v)
	}
	r.do("look") // the parent's arm, "." stays in the leaf
	if r.sess.State() != "bar.lit" || r.sess.World()["log"] != "looked" {
		t.Fatalf("state %s log %v", r.sess.State(), r.sess.World()["log"])
	}
	r.do("north") // ../foyer from bar: exits lit, then bar
	if r.sess.State() != "foyer" {
		t.Fatalf("state = %s, want foyer", r.sess.State())
	}
	var exited []string
	for _, ev := range r.events("machine.state_exited") {
		if ev.Turn == 4 {
			exited = append(exited, ev.Payload["state"].(string))
		}
	}
	if diff := cmp.Diff([]string{"bar.lit", "bar"}, exited); diff != "" {
		t.Errorf("exit order (-want +got):\n%s", diff)
	}
	r.do("enter_bar") // lit is true now: the template picks lit
	if r.sess.State() != "bar.lit" {
		t.Errorf("state = %s, want bar.lit", r.sess.State())
	}
	out := r.do("tick")
	if out.Rejection == nil || out.Rejection.Code != CodeIntentNotAllowed ||
		!strings.Contains(out.Rejection.Message, "allowed: look, north, toggle") {
		t.Errorf("tick in bar.lit: %+v, want INTENT_NOT_ALLOWED listing the leaf's and the parent's intents", out.Rejection)
	}
}

func TestParallelState(t *testing.T) {
	r := newRig(t, files{"app.yaml": nested})
	steps := []struct {
		line, state, view string
		done              bool
	}{
		{"enter_clock", "clock#clock.calendar.day1|clock.weather.dry", "clock\n\nday 1\n\ndry", false},
		{"tick", "clock#clock.calendar.day2|clock.weather.dry", "clock\n\nday 2\n\ndry", false},
		// rain moves weather; its emit: storm reaches calendar's parent arm.
		{"rain", "clock#clock.calendar.flooded|clock.weather.wet", "clock\n\nflooded\n\nwet", true},
		{"leave", "foyer", "foyer", false},
	}
	for _, st := range steps {
		out := r.do(st.line)
		if out.Outcome != OutcomeTransitioned {
			t.Fatalf("%s: outcome %s (%+v %v)", st.line, out.Outcome, out.Rejection, out.Err)
		}
		if r.sess.State() != st.state {
			t.Fatalf("%s: state = %s, want %s", st.line, r.sess.State(), st.state)
		}
		if v, _ := r.sess.View(); v != st.view {
			t.Errorf("%s: view = %q, want %q", st.line, v, st.view)
		}
		if out.Done != st.done {
			t.Errorf("%s: done = %v, want %v (done when every region rests in a terminal leaf)", st.line, out.Done, st.done)
		}
	}
	if got := r.sess.World()["log"]; got != "flooded" {
		t.Errorf("log = %v, want flooded (the storm arm's effects ran)", got)
	}
	var entered []string
	for _, ev := range r.events("machine.state_entered") {
		if ev.Turn == 1 {
			entered = append(entered, ev.Payload["state"].(string))
		}
	}
	want := []string{"clock", "clock.weather", "clock.weather.dry", "clock.calendar", "clock.calendar.day1"}
	if diff := cmp.Diff(want, entered); diff != "" {
		t.Errorf("entry order (-want +got):\n%s", diff)
	}
	var exited []string
	for _, ev := range r.events("machine.state_exited") {
		if ev.Turn == 4 {
			exited = append(exited, ev.Payload["state"].(string))
		}
	}
	want = []string{"clock.weather.wet", "clock.weather", "clock.calendar.flooded", "clock.calendar", "clock"}
	if diff := cmp.Diff(want, exited); diff != "" {
		t.Errorf("exit order (-want +got):\n%s", diff)
	}
}

func TestRootInParallelConfiguration(t *testing.T) {
	tests := []struct {
		root, err string
	}{
		{"clock#clock.calendar.day2|clock.weather.dry", ""},
		{"clock#clock.weather.dry", `state path "clock#clock.weather.dry": name one leaf for each of the 2 regions of clock`},
		{"clock#clock.weather.dry|clock.weather.wet", `state path "clock#clock.weather.dry|clock.weather.wet": "clock.weather.wet" is not a state of its own region of clock`},
		{"bar#bar.dark|bar.lit", `state path "bar#bar.dark|bar.lit": "bar" is not a parallel state`},
	}
	for _, tc := range tests {
		t.Run(tc.root, func(t *testing.T) {
			st := loadNested(t)
			_, err := New(st, nil, nil, WithRoot(tc.root))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err {
				t.Errorf("New: %q, want %q", got, tc.err)
			}
		})
	}
}

func loadNested(t *testing.T) *story.Story {
	t.Helper()
	st, err := story.Load(writeStory(t, files{"app.yaml": nested}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A nested state takes its enclosing room's default_intent: free text no
// earlier tier resolves goes there, from the leaf.
func TestNestedDefaultIntent(t *testing.T) {
	const st = `
app: {id: rooms}
world:
  said: {type: string, default: ""}
intents:
  discuss: {slots: {message: {type: string, required: true}}}
  next: {}
root: room
states:
  room:
    type: compound
    initial: first
    mode: conversational
    default_intent: discuss
    on:
      discuss: [{target: ., effects: [{set: {said: "{{ slots.message }}"}}]}]
    states:
      first:
        on: {next: [{target: second}]}
      second: {}
`
	r := newRig(t, files{"app.yaml": st})
	r.do("next")
	out, err := r.sess.Say(context.Background(), "what about the roof")
	if err != nil {
		t.Fatal(err)
	}
	if out.Route == nil || out.Route.Tier != TierDefaultIntent || r.sess.State() != "room.second" || r.sess.World()["said"] != "what about the roof" {
		t.Fatalf("route %+v, state %s, said %v", out.Route, r.sess.State(), r.sess.World()["said"])
	}
}

// initial: as a value template (ternaries, as in targets) picks the child
// on entry; a render that names no child fails the turn, saying where.
func TestTemplatedInitial(t *testing.T) {
	const src = `
app: {id: initial}
world:
  pick: {type: string, default: ""}
intents: {in: {}}
root: out
states:
  out:
    on: {in: [{target: room}]}
  room:
    type: compound
    initial: "{{ world.pick == '' ? 'a' : world.pick }}"
    states:
      a: {}
      b: {}
`
	tests := []struct {
		pick, state, err string
	}{
		{"", "room.a", ""},
		{"b", "room.b", ""},
		{"c", "out", `initial of state room (app.yaml:12:14): the template rendered "c", which is not a child (children: a, b)`},
	}
	for _, tc := range tests {
		t.Run(tc.pick, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": src}, func(c *rigConfig) { c.world = map[string]any{"pick": tc.pick} })
			out := r.do("in")
			got := ""
			if out.Err != nil {
				got = out.Err.Error()
			}
			if got != tc.err {
				t.Errorf("error = %q, want %q", got, tc.err)
			}
			if tc.err == "" && r.sess.State() != tc.state {
				t.Errorf("state = %s, want %s", r.sess.State(), tc.state)
			}
		})
	}
}

// An arm's own emit: reaches the sibling regions, and an event a region
// emits while handling one is delivered in turn; an emit outside a
// parallel state does nothing.
func TestArmEmitChain(t *testing.T) {
	const src = `
app: {id: chain}
world:
  hits: {type: int, default: 0}
intents: {go: {}, ping: {}, pong: {}, solo: {}}
root: p
states:
  p:
    type: parallel
    on:
      solo: [{target: alone}]
    states:
      a:
        type: compound
        initial: x
        states:
          x:
            on: {go: [{target: y, emit: [ping]}]}
          y:
            on: {pong: [{target: z, effects: [{increment: {hits: 1}}]}]}
          z: {}
      b:
        type: compound
        initial: u
        states:
          u:
            on: {ping: [{target: v, emit: pong}]}
          v: {}
  alone:
    on: {go: [{target: ., emit: ping}]}
`
	r := newRig(t, files{"app.yaml": src})
	r.do("go")
	if r.sess.State() != "p#p.a.z|p.b.v" || fmt.Sprint(r.sess.World()["hits"]) != "1" {
		t.Fatalf("state %s hits %v; want p#p.a.z|p.b.v and 1", r.sess.State(), r.sess.World()["hits"])
	}
	r.do("solo")
	if out := r.do("go"); out.Outcome != OutcomeTransitioned || r.sess.State() != "alone" {
		t.Fatalf("emit outside a parallel state: %s in %s", out.Outcome, r.sess.State())
	}
}
