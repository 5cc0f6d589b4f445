package nearmiss

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"greet", "greet", 0},
		{"gret", "greet", 1},
		{"greet", "great", 1},
		{"kitten", "sitting", 3},
		{"intnets", "intents", 2},
		{"srve", "serve", 1},
		{"ab", "ba", 2}, // a swap is two edits here
		{"café", "cafe", 1},
		{"naïve", "naive", 1},
		{"日本", "日本語", 1},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	cands := []string{"greet", "great", "back", "quit"}
	tests := []struct {
		word string
		max  int
		want string
	}{
		{"gret", 2, "greet"},  // 1 from greet and from great: the first wins
		{"grate", 2, "great"}, // 1 from great, 2 from greet
		{"bakc", 2, "back"},   // 2 edits
		{"bakc", 1, ""},       // beyond the bound
		{"quit", 0, "quit"},   // an exact match at bound 0
		{"zzzzzz", 2, ""},     // nothing near
		{"", 4, "back"},       // the first of the shortest
	}
	for _, tt := range tests {
		if got := Closest(tt.word, cands, tt.max); got != tt.want {
			t.Errorf("Closest(%q, max %d) = %q, want %q", tt.word, tt.max, got, tt.want)
		}
	}
	if got := Closest("x", nil, 3); got != "" {
		t.Errorf("Closest with no candidates = %q, want empty", got)
	}
}
