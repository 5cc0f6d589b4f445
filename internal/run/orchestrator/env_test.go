package orchestrator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEnvFollowsTheTurn: the event and run maps of the expression scope
// are built once per turn and reused, and rebuilt whenever what they show
// changes: the intent, the slots map, the turn, the session id.
func TestEnvFollowsTheTurn(t *testing.T) {
	s := &Session{id: "a", world: map[string]any{"w": 1}}
	slots := map[string]any{"k": "v"}
	tc := &turnCtx{n: 1, intent: "go", slots: slots}
	want := func(id string, n int64, intent string, slots map[string]any) map[string]any {
		return map[string]any{"world": s.world, "slots": slots,
			"event": map[string]any{"intent": intent, "slots": slots}, "run": map[string]any{"id": id, "turn": n}}
	}
	check := func(step string, w map[string]any) map[string]any {
		t.Helper()
		env := s.env(tc)
		if diff := cmp.Diff(w, map[string]any(env)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step, diff)
		}
		return env
	}
	first := check("first", want("a", 1, "go", slots))
	again := check("same turn", want("a", 1, "go", slots))
	if !sameMap(first["event"].(map[string]any), again["event"].(map[string]any)) || !sameMap(first["run"].(map[string]any), again["run"].(map[string]any)) {
		t.Error("the event and run maps were built again for an unchanged turn")
	}
	again["result"] = "bind's own key" // each env is a map of its own
	check("a caller's key stays in its env", want("a", 1, "go", slots))

	slots["k2"] = "v2" // the same slots map, written to
	check("slots written in place", want("a", 1, "go", slots))
	tc.intent = "other"
	check("intent", want("a", 1, "other", slots))
	emitted := map[string]any{"k": "emitted"}
	tc.slots = emitted
	check("slots", want("a", 1, "other", emitted))
	tc.slots = nil
	check("no slots", want("a", 1, "other", nil))
	tc.n = 2
	check("turn", want("a", 2, "other", nil))
	s.id = "b"
	check("session id", want("b", 2, "other", nil))
}
