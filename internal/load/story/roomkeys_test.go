package story

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A room's menu:, transcript:, theme: and footer: load into the state; a
// bad value is an error (or, for what Kitsoki accepts, a warning) at the
// key.
func TestRoomKeys(t *testing.T) {
	got := loadErr(t, "testdata/roomkeys/bad.yaml", nil)
	want := []string{
		`bad.yaml:6:17: states.hall.transcript: unknown transcript "forever": use persistent (prior output stays in view) or transient (the room starts on a clear screen)`,
		`bad.yaml:8:16: states.hall.menu[1]: menu: names "stai", which state "hall" has no on: arms for`,
		`bad.yaml:16:9: states.yard.states.gate.transcript: transcript: is a room's (a top-level state's); state "yard.gate" is nested in "yard"`,
		`bad.yaml:17:9: states.yard.states.gate.theme: theme: is a room's (a top-level state's); state "yard.gate" is nested in "yard"`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diagnostics (-want +got):\n%s", d)
	}
	var le *LoadError
	_, err := Load("testdata/roomkeys/bad.yaml")
	if !errors.As(err, &le) {
		t.Fatalf("err = %v", err)
	}
	wantWarn := []string{
		`bad.yaml:7:12: states.hall.theme: unknown theme "meta-blu" draws as "default" (themes: default, meta-blue, meta-amber, off-path) (did you mean "meta-blue"?)`,
		`bad.yaml:18:9: states.yard.states.gate.footer: footer: of nested state "yard.gate" is not shown: the status line is the room's, the footer of top-level state "yard"`,
	}
	if d := cmp.Diff(wantWarn, lines(le.Warnings)); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
	s, err := Load("../../check/kitsokiformat/testdata/rooms/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lamp := s.States["lamp_room"]
	if d := cmp.Diff([]string{"light", "refill", "descend"}, lamp.Menu); d != "" {
		t.Errorf("menu (-want +got):\n%s", d)
	}
	if lamp.Theme != "meta-amber" || lamp.Transcript != TranscriptTransient || lamp.Footer == nil {
		t.Errorf("lamp_room theme %q transcript %q footer %v", lamp.Theme, lamp.Transcript, lamp.Footer)
	}
}
