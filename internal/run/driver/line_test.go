package driver

import "testing"

// TestLineOf: an intent and typed slots written as a line that parses
// back to them.
func TestLineOf(t *testing.T) {
	for _, tc := range []struct {
		slots map[string]any
		line  string
		ok    bool
	}{
		{map[string]any{"name": "Ada", "style": "formal"}, "greet name=Ada style=formal", true},
		{map[string]any{"name": "Ada Lovelace"}, `greet name="Ada Lovelace"`, true},
		{map[string]any{"name": `say "hi"`}, `greet name='say "hi"'`, true},
		{map[string]any{"n": int64(3), "tags": []any{"a", "b"}}, `greet n=3 tags='["a","b"]'`, true},
		{map[string]any{"name": ""}, `greet name=""`, true},
		{map[string]any{"name": `it's "x"`}, "", false},
		{map[string]any{"name": "two\nlines"}, "", false},
	} {
		line, ok := LineOf("greet", tc.slots)
		if line != tc.line || ok != tc.ok {
			t.Errorf("LineOf(%v) = %q %v, want %q %v", tc.slots, line, ok, tc.line, tc.ok)
		}
	}
}
