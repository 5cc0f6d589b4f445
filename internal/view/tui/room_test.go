package tui

import (
	"testing"

	"github.com/charmbracelet/lipgloss"

	"github.com/kitsoki/kitsoki/internal/run/orchestrator"
)

// The room's footer: shows under the input.
func TestFooterShowsUnderTheInput(t *testing.T) {
	st := lobby
	st.Room, st.Footer = "lobby", "guests 0 · doors open"
	d := &fakeDriver{status: st}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "[lobby]", "guests 0 · doors open")
	enter(tm, ":quit")
	finalCode(t, tm)
}

// A room with transcript: transient starts on a clear screen when a turn
// enters it from another room; staying in it, or entering a persistent
// room, keeps the transcript.
func TestTransientRoomClearsOnEntry(t *testing.T) {
	hall := Status{Room: "hall", Transcript: TranscriptPersistent}
	chat := Status{Room: "chat", Transcript: TranscriptTransient}
	tests := []struct {
		name       string
		prev, next Status
		want       bool
	}{
		{"into a transient room", hall, chat, true},
		{"staying in it", chat, chat, false},
		{"into a persistent room", chat, hall, false},
		{"the first frame", Status{}, chat, false},
	}
	for _, tt := range tests {
		if got := entersTransient(tt.prev, tt.next); got != tt.want {
			t.Errorf("%s: entersTransient = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A room theme changes the accent colour of the state line; an unknown
// theme draws as the default.
func TestRoomThemeAccent(t *testing.T) {
	def := themeFor("")
	if got := themeFor("no-such-theme").state.GetForeground(); got != def.state.GetForeground() {
		t.Errorf("unknown theme: state colour %v, want the default %v", got, def.state.GetForeground())
	}
	for name, c := range themeAccents {
		if got := themeFor(name).state.GetForeground(); got != lipgloss.Color(c) {
			t.Errorf("theme %s: state colour %v, want %v", name, got, c)
		}
	}
}

// :annotate sends the note to the first media element that takes
// annotations, in its feedback slot; without such an element, or without
// a note, it says why.
func TestAnnotateSendsTheMediaIntent(t *testing.T) {
	view := []orchestrator.ViewElement{
		{Kind: "prose", Body: "The sheet."},
		{Kind: "media", Media: &orchestrator.ViewMedia{Handle: "h1", AnnotateIntent: "annotate", AnnotateSlot: "remark"}},
	}
	got, err := annotateLine(view, "warmer sky")
	if err != nil || got != `annotate remark="warmer sky"` {
		t.Errorf("annotateLine = %q, %v", got, err)
	}
	if _, err := annotateLine(view, ""); err == nil {
		t.Error("an empty note was accepted")
	}
	if _, err := annotateLine(view[:1], "x"); err == nil {
		t.Error("a view without annotatable media was accepted")
	}
	st := lobby
	st.View = view
	d := &fakeDriver{status: st}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "(:annotate <note> sends annotate)")
	enter(tm, ":annotate warmer sky")
	waitOut(t, tm, `did annotate remark="warmer sky"`)
	enter(tm, ":quit")
	finalCode(t, tm)
}

// The state line carries the relevant world values and slots.
func TestStateLineShowsRelevant(t *testing.T) {
	st := lobby
	st.Relevant = []string{"guests=3", "<name>"}
	d := &fakeDriver{status: st}
	_, tm := newTest(t, d, Config{})
	waitOut(t, tm, "guests=3 <name>")
	enter(tm, ":quit")
	finalCode(t, tm)
}
