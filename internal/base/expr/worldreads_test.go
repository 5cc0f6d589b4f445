package expr

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A guard knows the world keys it reads by name, and where each is.
func TestGuardWorldReads(t *testing.T) {
	tests := []struct {
		src  string
		want []WorldRead
	}{
		{"world.a == 'b'", []WorldRead{{"a", 1, 7}}},
		{"world.verdict?.decision == 'approve' && world.amount <= world.auto_limit",
			[]WorldRead{{"verdict", 1, 7}, {"amount", 1, 47}, {"auto_limit", 1, 63}}},
		{`world["my key"] != nil`, []WorldRead{{"my key", 1, 7}}},
		{`get(world, "k") == 1 && len(world.tags) > 0`, []WorldRead{{"k", 1, 12}, {"tags", 1, 35}}},
		{"world.n > 1 ||\n  world.m < 2", []WorldRead{{"n", 1, 7}, {"m", 2, 9}}},
		{"world.a == world.a", []WorldRead{{"a", 1, 7}, {"a", 1, 18}}},
		{"slots.world == 1 && world[slots.k] == 2 && args.x.world == 3", nil}, // not keys of world by name
		{"world.héllo == 'é' && world.b", []WorldRead{{"héllo", 1, 7}, {"b", 1, 29}}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			g, err := CompileGuard(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, g.WorldReads()); diff != "" {
				t.Errorf("WorldReads (-want +got):\n%s", diff)
			}
		})
	}
}
