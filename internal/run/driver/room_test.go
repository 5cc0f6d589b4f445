package driver

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/load/story"
)

// The TUI's location indicator shows a state's relevant_world: values and
// its relevant_slots: names.
func TestRelevantIndicator(t *testing.T) {
	s := &story.State{RelevantWorld: []string{"loans", "member", "tags"}, RelevantSlots: []string{"shelf"}}
	got := Relevant(s, map[string]any{"loans": 2, "member": "Ada", "tags": []any{"a"}})
	if d := cmp.Diff([]string{"loans=2", "member=Ada", `tags=["a"]`, "<shelf>"}, got); d != "" {
		t.Errorf("indicator (-want +got):\n%s", d)
	}
}

// An intent's title: and description: both reach the menu, the title
// first.
func TestMenuHintShowsTitleAndDescription(t *testing.T) {
	for _, tt := range []struct{ title, desc, want string }{
		{"Borrow a book", "From any shelf.", "Borrow a book: From any shelf."},
		{"Borrow a book", "", "Borrow a book"},
		{"", "From any shelf.", "From any shelf."},
	} {
		if got := (IntentInfo{Title: tt.title, Description: tt.desc}).Hint(); got != tt.want {
			t.Errorf("Hint(%q, %q) = %q, want %q", tt.title, tt.desc, got, tt.want)
		}
	}
}
