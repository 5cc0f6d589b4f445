package orchestrator

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const menuStory = `
app: {id: menu}
world:
  ticket: {type: string, default: ""}
  room: {type: string, default: "hall"}
intents:
  pick: {title: "Pick a ticket", slots: {id: {type: string, required: true}}}
  drive: {}
  look: {}
  peek: {hidden: true}
  leave: {}
root: desk
states:
  desk:
    view:
      - template: |
          {% for e in menu.primary %}+ {{ e.display }}{% if e.destination_hint %} → {{ e.destination_hint }}{% endif %}
          {% endfor %}{% for e in menu.blocked %}✗ {{ e.display }} — {{ e.reason }}
          {% endfor %}
      - choice:
          mode: single
          items:
            - {label: "drive", intent: drive, when: "available('drive')"}
            - {label: "✗ drive — {{ blocked_reason('drive') }}", intent: drive, when: "!available('drive')"}
      - prose: "look is {{ intent_status('look') }}, nope is {{ intent_status('nope') }}"
    on:
      pick: [{target: desk, effects: [{set: {ticket: "{{ slots.id }}"}}]}]
      drive:
        - when: "world.ticket == 'T-0'"
          target: desk
        - when: "world.ticket != ''"
          guard_hint: "Pick a ticket first."
          target: road
      look: [{target: .}]
      peek: [{target: .}]
      leave: [{target: "{{ world.room }}"}]
  hall:
    terminal: true
  road:
    view: "on the road"
    terminal: true
`

func TestMenu(t *testing.T) {
	src := menuStory
	r := newRig(t, files{"app.yaml": src})
	want := []expr.MenuEntry{
		{Intent: "pick", Display: "Pick a ticket", Primary: true, DestinationHint: "desk"},
		{Intent: "drive", Display: "drive", Reason: "Pick a ticket first."},
		{Intent: "look", Display: "look", Primary: true, DestinationHint: "desk"},
		{Intent: "peek", Display: "peek", Primary: true, DestinationHint: "desk", Hidden: true},
		{Intent: "leave", Display: "leave", Primary: true, DestinationHint: "hall"},
	}
	// Both of drive's arms fail: blocked, with the hint of the one that has one.
	if diff := cmp.Diff(want, r.sess.Menu()); diff != "" {
		t.Errorf("menu (-want +got):\n%s", diff)
	}
	view, err := r.sess.View()
	if err != nil {
		t.Fatal(err)
	}
	wantView := "+ Pick a ticket → desk\n+ look → desk\n+ leave → hall\n✗ drive — Pick a ticket first.\n\n\n\n" +
		"1. ✗ drive — Pick a ticket first. (drive)\n\nlook is available, nope is unknown"
	if diff := cmp.Diff(wantView, view); diff != "" {
		t.Errorf("view (-want +got):\n%s", diff)
	}
	r.do("pick id=T-1")
	if st := r.sess.Menu()[1]; !st.Primary || st.DestinationHint != "road" || st.Reason != "" {
		t.Errorf("drive after a pick = %+v, want primary toward road", st)
	}
	els, err := r.sess.ViewDoc()
	if err != nil {
		t.Fatal(err)
	}
	if got := els[1].Items; len(got) != 1 || got[0].Label != "drive" {
		t.Errorf("choice items after a pick = %+v, want the one available drive", got)
	}
}

const contextualStory = `
app: {id: ctx}
world:
  note: {type: map, default: {}}
  last: {type: string, default: ""}
intents:
  work: {slots: {request: {type: string, required: true}}}
  accept_plan: {}
  look: {}
root: bench
states:
  bench:
    default_intent: work
    contextual_routing:
      enabled: true
      room_chat: work
      pending_plan_path: note.plan
    on:
      work: [{target: bench, effects: [{set: {last: "work: {{ slots.request }}"}}]}]
      accept_plan: [{target: applying}]
      look: [{target: .}]
  applying:
    terminal: true
`

func TestContextualRouting(t *testing.T) {
	plan := map[string]any{"plan": map[string]any{"goal": "migrate"}}
	tests := []struct {
		name       string
		note       map[string]any
		text       string
		wantState  string
		wantLast   string
		wantRouted trace.TurnRouted
	}{
		{"affirmation with a plan pending", plan, "OK, go ahead!", "applying", "",
			trace.TurnRouted{Tier: TierContextual, Reason: ReasonPlanAffirmation, Input: "OK, go ahead!", Intent: "accept_plan", Confidence: 1}},
		{"adjustment with a plan pending", plan, "dry-run first", "bench", "work: dry-run first",
			trace.TurnRouted{Tier: TierContextual, Reason: ReasonPlanRefine, Input: "dry-run first", Intent: "work", Confidence: 1, Slots: map[string]any{"request": "dry-run first"}}},
		{"no plan: an affirmation is room work", map[string]any{"plan": map[string]any{}}, "yes", "bench", "work: yes",
			trace.TurnRouted{Tier: TierContextual, Reason: ReasonRoomRequest, Input: "yes", Intent: "work", Confidence: 1, Slots: map[string]any{"request": "yes"}}},
		{"a typed intent still wins", plan, "look", "bench", "",
			trace.TurnRouted{Tier: TierExact, Input: "look", Intent: "look", Confidence: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, files{"app.yaml": contextualStory}, withWorld(map[string]any{"note": tt.note}))
			out, err := r.sess.Say(context.Background(), tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if out.State != tt.wantState || r.sess.World()["last"] != tt.wantLast {
				t.Errorf("state %q, last %q; want %q, %q (%+v)", out.State, r.sess.World()["last"], tt.wantState, tt.wantLast, out.Rejection)
			}
			evs := r.events(trace.KindTurnRouted)
			if len(evs) != 1 {
				t.Fatalf("%d turn.routed events", len(evs))
			}
			var routed trace.TurnRouted
			if err := trace.Decode(&evs[0], &routed); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantRouted, routed); diff != "" {
				t.Errorf("turn.routed (-want +got):\n%s", diff)
			}
		})
	}
}

func withWorld(w map[string]any) rigOpt { return func(c *rigConfig) { c.world = w } }

func TestIsAffirmation(t *testing.T) {
	for text, want := range map[string]bool{
		"ok": true, "Yes, go ahead.": true, "apply it": true, "looks good to me": true, "LGTM": true, "go for it": true,
		"the plan": false, "no": false, "ok but skip closed issues": false, "dry-run first": false, "": false,
	} {
		if got := isAffirmation(story.Words(text)); got != want {
			t.Errorf("isAffirmation(%q) = %v, want %v", text, got, want)
		}
	}
}
