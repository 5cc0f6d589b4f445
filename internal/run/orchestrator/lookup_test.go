package orchestrator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLookupPath: dotted paths with [N] indexes read a result's data; a
// step that is missing, of the wrong type or out of range finds nothing;
// an empty name steps nowhere.
func TestLookupPath(t *testing.T) {
	data := map[string]any{
		"submitted": map[string]any{"verdict": "ok", "items": []any{map[string]any{"id": "a"}, []any{1, 2}}},
		"":          "empty key",
		"ok":        true,
	}
	tests := []struct {
		path  string
		want  any
		found bool
	}{
		{"ok", true, true},
		{"submitted.verdict", "ok", true},
		{"submitted.items[0].id", "a", true},
		{"submitted.items[1][1]", 2, true},
		{"submitted.items", data["submitted"].(map[string]any)["items"], true},
		{"", data, true}, // an empty step reads nothing: the data itself
		{"submitted.", data["submitted"], true},
		{"[0]", nil, false},
		{"missing", nil, false},
		{"ok.deeper", nil, false},
		{"submitted.items[2]", nil, false},
		{"submitted.items[-1]", nil, false},
		{"submitted.items[x]", nil, false},
		{"submitted.items[0", nil, false},
		{"submitted.verdict[0]", nil, false},
	}
	for _, tt := range tests {
		got, found := LookupPath(data, tt.path)
		if found != tt.found || !cmp.Equal(got, tt.want) {
			t.Errorf("LookupPath(%q) = %v, %v; want %v, %v", tt.path, got, found, tt.want, tt.found)
		}
	}
}
