package story

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadContextual(t *testing.T) {
	s, err := Load("testdata/contextual/ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := &ContextualRouting{Enabled: true, PendingPlanPath: []string{"note", "plan"}, AcceptIntent: "go_ahead",
		RefineIntent: "work", RefineSlot: "request", RoomChat: "work", RoomSlot: "request", Pos: Pos{File: "ok.yaml", Line: 11, Col: 7}}
	if diff := cmp.Diff(want, s.States["bench"].Contextual); diff != "" {
		t.Errorf("contextual_routing (-want +got):\n%s", diff)
	}
	if !s.UsesMenu {
		t.Error("UsesMenu = false: the view calls available() and intent_status()")
	}
	if plan := s.States["bench"].Contextual; !plan.PlanPending(map[string]any{"note": map[string]any{"plan": map[string]any{"goal": "x"}}}) ||
		plan.PlanPending(map[string]any{"note": map[string]any{"plan": map[string]any{}}}) || plan.PlanPending(map[string]any{"note": "plan"}) {
		t.Error("PlanPending: want true only for a non-empty map at note.plan")
	}
}

func TestLoadContextualErrors(t *testing.T) {
	got := loadErr(t, "testdata/contextual/bad.yaml", nil)
	want := []string{
		`bad.yaml:13:18: states.bench.contextual_routing.room_chat: room_chat "look": must declare exactly one required string slot to receive the utterance, it declares 0 ()`,
		`bad.yaml:14:26: states.bench.contextual_routing.pending_plan_path: world key "notes" is not declared in world: (did you mean "note"?)`,
		`bad.yaml:15:27: states.bench.contextual_routing.plan_accept_intent: plan_accept_intent "acept_plan" has no on: arms in state "bench" or its ancestors; add on.acept_plan, or name an intent the state handles`,
		`bad.yaml:17:7: states.bench.contextual_routing.lanes: unknown key "lanes"`,
		`bad.yaml:19:36: states.bench.on.work[0].when: a guard cannot read the computed menu (menu, available(), blocked(), blocked_reason(), intent_status()): it exists only while a view renders; use it in view:, a view element's when:, say: or an arm's view:, and test world keys here`,
		`bad.yaml:20:53: states.bench.on.look[0].effects[0].set.flag: a value template cannot read the computed menu (menu, available(), blocked(), blocked_reason(), intent_status()): it exists only while a view renders; use it in view:, a view element's when:, say: or an arm's view:, and test world keys here`,
		`bad.yaml:22:37: states.other.contextual_routing.room_chat: room_chat "look": must declare exactly one required string slot to receive the utterance, it declares 0 ()`,
		`bad.yaml:26:5: states.idle.contextual_routing: contextual_routing routes nothing: set pending_plan_path (the plan guard) or a lane (room_chat, help_chat, meta_chat)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
