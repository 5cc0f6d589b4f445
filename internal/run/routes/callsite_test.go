package routes

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/load/story"
)

// The call-site walk of eval-format.md §3 decides which invoke a repeated
// id names: states in sorted name order (a nested state as parent.child),
// each state's on_enter before its arms, arms by sorted intent name, and
// effect_index the position in the effect list the invoke sits in.
func TestFindCallSiteWalkOrder(t *testing.T) {
	st, err := story.Load(filepath.Join("testdata", "walk", "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	type site struct {
		State  string
		Index  int
		Prompt string
	}
	tests := []struct {
		call string
		want site
	}{
		{"enter-first", site{"a", 0, "prompts/a-enter.md"}},    // on_enter before the y arm
		{"sorted-intents", site{"a", 1, "prompts/a-arm-x.md"}}, // arm x before arm y; index after the set:
		{"across", site{"a", 2, "prompts/a-arm-x.md"}},         // state a before state b
		{"nested", site{"a.child", 0, "prompts/child.md"}},     // a.child before b
	}
	for _, tt := range tests {
		cs, err := FindCallSite(st, tt.call)
		if err != nil {
			t.Fatalf("%s: %v", tt.call, err)
		}
		got := site{cs.StatePath, cs.EffectIndex, cs.PromptPath}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("call %s (-want +got):\n%s", tt.call, diff)
		}
		if cs.Handler != "host.agent.decide" || cs.SchemaName != "s.json" {
			t.Errorf("call %s: handler %q schema name %q", tt.call, cs.Handler, cs.SchemaName)
		}
	}
}
