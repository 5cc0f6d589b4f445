package orchestrator

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/hosts/host"
)

// TestHandoverRoundTrip: a new session given the old one's Handover after
// Restore holds the same history, open overlay and kept conversations, and
// the reopened persistent mode goes on with its conversation.
func TestHandoverRoundTrip(t *testing.T) {
	ag := &echoAgent{}
	r := newRig(t, files{"app.yaml": overlayStory}, withHostOpts(host.WithBuiltin(ag)))
	r.do("go") // hall → yard
	say(t, r, "/meta")
	say(t, r, "first question")
	say(t, r, "/onpath")
	say(t, r, "/freeform")
	say(t, r, "off the path")
	h := r.sess.Handover()
	want := Handover{History: []string{"hall"},
		Overlay: &OverlayState{Name: "off_path", Transcript: []string{"user: off the path", "agent: noted"}},
		Kept:    []OverlayState{{Name: "story", Meta: true, Transcript: []string{"user: first question", "agent: noted"}}}}
	if d := cmp.Diff(want, h); d != "" {
		t.Fatalf("handover (-want +got):\n%s", d)
	}

	r2 := unstarted(t, newRig(t, files{"app.yaml": overlayStory}, withHostOpts(host.WithBuiltin(ag))))
	if err := r2.sess.Restore(r.sess.State(), r.sess.World(), r.sess.TurnNumber()); err != nil {
		t.Fatal(err)
	}
	if err := r2.sess.RestoreHandover(h); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(h, r2.sess.Handover()); d != "" {
		t.Fatalf("restored (-handed over +restored):\n%s", d)
	}
	if r2.sess.Overlay() != "off_path" {
		t.Fatalf("overlay %q, want off_path", r2.sess.Overlay())
	}
	say(t, r2, "/onpath")
	say(t, r2, "/meta")
	ag.prompts = nil
	say(t, r2, "second question")
	if want := "[conversation]\nuser: first question\nagent: noted\n[/conversation]"; len(ag.prompts) != 1 || !strings.Contains(ag.prompts[0], want) {
		t.Errorf("the reopened mode's prompt lacks the kept conversation %q: %q", want, ag.prompts)
	}
}

func TestRestoreHandoverRefusals(t *testing.T) {
	tests := []struct {
		name string
		h    Handover
		want string
	}{
		{"unknown room", Handover{History: []string{"hall", "attic"}},
			`the carried room history names state "attic", which is not in the story (states: hall, yard)`},
		{"unknown meta mode", Handover{Overlay: &OverlayState{Name: "stroy", Meta: true}},
			`the carried meta mode "stroy" is not in the story's meta_modes: (declared: story)`},
		{"kept off_path", Handover{Kept: []OverlayState{{Name: "off_path"}}},
			`the carried overlay "off_path" is kept closed, but only a persistent meta mode (persist: true) keeps its conversation`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := unstarted(t, newRig(t, files{"app.yaml": overlayStory}))
			if err := r.sess.Restore("hall", map[string]any{}, 1); err != nil {
				t.Fatal(err)
			}
			err := r.sess.RestoreHandover(tc.h)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
		})
	}
	r := unstarted(t, newRig(t, files{"app.yaml": "app: {id: bare}\nroot: a\nstates: {a: {}}\n"}))
	if err := r.sess.Restore("a", map[string]any{}, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.sess.RestoreHandover(Handover{Overlay: &OverlayState{Name: "off_path"}}); err == nil ||
		err.Error() != "the carried overlay is off_path, but the story declares no off_path:" {
		t.Fatalf("err = %v", err)
	}
}

// unstarted replaces the rig's session by a new one on the same story,
// host and sink that has not started, as a driver restoring one has.
func unstarted(t *testing.T, r *rig) *rig {
	t.Helper()
	sess, err := New(r.story, r.host, r.sink, WithSessionID("s1"))
	if err != nil {
		t.Fatal(err)
	}
	r.sess = sess
	return r
}

const parallelStory = `
app: {id: par}
intents: {rain: {}}
root: clock
states:
  clock:
    type: parallel
    states:
      weather:
        type: compound
        initial: dry
        states:
          dry: {on: {rain: [{target: ../wet}]}}
          wet: {}
      calendar:
        type: compound
        initial: day1
        states:
          day1: {}
`

// TestRestoreInAParallelConfiguration: a session restored (a local
// resume, a continue-as-new) where the previous one stood inside a
// parallel state takes the configuration, and its history may hold
// configurations; a configuration that does not name one leaf per region
// is refused.
func TestRestoreInAParallelConfiguration(t *testing.T) {
	const cfg = "clock#clock.calendar.day1|clock.weather.dry"
	r := unstarted(t, newRig(t, files{"app.yaml": parallelStory}))
	if err := r.sess.Restore(cfg, map[string]any{}, 1); err != nil {
		t.Fatal(err)
	}
	if err := r.sess.RestoreHandover(Handover{History: []string{cfg}}); err != nil {
		t.Fatal(err)
	}
	if out := r.do("rain"); out.State != "clock#clock.calendar.day1|clock.weather.wet" {
		t.Fatalf("after rain: %q", out.State)
	}
	r = unstarted(t, newRig(t, files{"app.yaml": parallelStory}))
	if err := r.sess.Restore("clock#clock.weather.dry", map[string]any{}, 1); err == nil ||
		!strings.HasPrefix(err.Error(), `the journal's state "clock#clock.weather.dry" is not in the story (states: `) {
		t.Fatalf("a configuration missing a region: %v", err)
	}
}
