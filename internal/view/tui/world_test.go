package tui

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An edit in the world viewer sets a value inside maps and lists; a path
// whose parent is gone is refused, and JSON numbers become the world's
// int64 when whole.
func TestWorldEditPaths(t *testing.T) {
	world := func() any {
		return map[string]any{"order": map[string]any{"items": []any{"tea", "cake"}, "total": int64(3)}}
	}
	for _, tc := range []struct {
		name string
		path []string
		to   any
		want any
		ok   bool
	}{
		{"a map key", []string{"order", "total"}, int64(4), map[string]any{"order": map[string]any{"items": []any{"tea", "cake"}, "total": int64(4)}}, true},
		{"a list item", []string{"order", "items", "1"}, "scone", map[string]any{"order": map[string]any{"items": []any{"tea", "scone"}, "total": int64(3)}}, true},
		{"past the list", []string{"order", "items", "2"}, "x", nil, false},
		{"inside a scalar", []string{"order", "total", "x"}, "x", nil, false},
	} {
		got, ok := setPath(world(), tc.path, tc.to)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if ok {
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, d)
			}
		}
	}
	got := normalizeJSON(map[string]any{"n": 2.0, "f": 2.5, "l": []any{1.0}})
	if d := cmp.Diff(map[string]any{"n": int64(2), "f": 2.5, "l": []any{int64(1)}}, got); d != "" {
		t.Errorf("normalizeJSON (-want +got):\n%s", d)
	}
}
