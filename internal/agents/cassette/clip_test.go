package cassette

import "testing"

func TestClipTo(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 80, "short"},
		{"exactly", 7, "exactly"},
		{"abcdefgh", 4, "abcd..."},
		{"héllo", 2, "h..."}, // é is two bytes: the cut moves back to a rune start
		{"日本語", 4, "日..."},
		{"日本語", 0, "..."},
	}
	for _, tt := range tests {
		if got := ClipTo(tt.in, tt.max); got != tt.want {
			t.Errorf("ClipTo(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}
