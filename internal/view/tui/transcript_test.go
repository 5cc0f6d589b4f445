package tui

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The transcript wraps each entry to the width it is drawn at, re-wraps
// after a resize, and a clear (a transient room entered) empties the
// screen's window while the text printed when the UI ends keeps it all.
func TestTranscriptWrapResizeAndClear(t *testing.T) {
	var tr transcript
	tr.add("one two three four five six")
	tr.add("seven")
	if diff := cmp.Diff([]string{"one two", "three", "four five", "six", "seven"}, tr.lines(9)); diff != "" {
		t.Errorf("at 9 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"one two three four five six", "seven"}, tr.lines(40)); diff != "" {
		t.Errorf("at 40 (-want +got):\n%s", diff)
	}
	scroll := 0
	if diff := cmp.Diff([]string{"six", "seven"}, tr.window(9, 2, &scroll)); diff != "" {
		t.Errorf("window (-want +got):\n%s", diff)
	}
	scroll = 99 // clamped to the top
	if diff := cmp.Diff([]string{"one two", "three"}, tr.window(9, 2, &scroll)); diff != "" || scroll != 3 {
		t.Errorf("window scrolled back (scroll %d) (-want +got):\n%s", scroll, diff)
	}
	tr.clear()
	tr.add("eight")
	scroll = 0
	if diff := cmp.Diff([]string{"eight"}, tr.window(40, 5, &scroll)); diff != "" {
		t.Errorf("after clear (-want +got):\n%s", diff)
	}
	if got, want := tr.text(40), strings.Join([]string{"one two three four five six", "seven", "eight"}, "\n"); got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}
