package intenttest

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// A fixture's slots: beside intent: joins intent.slots; a slot given in
// both is an error (write it once).
func TestFixtureSlotsBesideIntent(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml": "app: {id: walk}\nintents:\n  go:\n    slots:\n      direction: {type: enum, values: [north, south]}\n      steps: {type: int}\n" +
			"root: hall\nstates:\n  hall:\n    on:\n      go: [{target: .}]\n",
		"intents/go.yaml": "test_kind: intents\napp: walk\nstate: hall\nfixtures:\n" +
			"  - id: both\n    intent: {name: go, slots: {direction: north}}\n    slots: {steps: 3}\n    inputs: [\"walk three steps north\"]\n" +
			"  - id: beside\n    intent: {name: go}\n    slots: {direction: south}\n    inputs: [\"go south\"]\n",
	})
	st, err := story.Load(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ffs, err := LoadFixtures(filepath.Join(dir, "intents", "go.yaml"), st)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, f := range ffs[0].Fixtures {
		got[f.ID] = f.Slots
	}
	want := map[string]map[string]any{
		"both":   {"direction": "north", "steps": 3},
		"beside": {"direction": "south"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("slots (-want +got):\n%s", d)
	}
}
