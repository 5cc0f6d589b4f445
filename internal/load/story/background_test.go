package story

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBackgroundLoadErrors(t *testing.T) {
	got := loadErr(t, filepath.Join("testdata", "background", "bad.yaml"), nil)
	want := []string{
		`bad.yaml:8:9: states.start.on_enter[0].background: background: is only valid on an invoke effect (add invoke: <handler>)`,
		`bad.yaml:11:9: states.start.on_enter[1].on_complete: on_complete: needs background: true on the same invoke (it runs when the background job ends)`,
		`bad.yaml:19:13: states.start.on_enter[2].on_complete[0].background: background: true is not allowed inside on_complete: (a job's completion cannot start another background job)`,
		`bad.yaml:21:13: states.start.on_enter[2].on_complete[1].target: target: cannot share an effect with set: put the set in its own effect before the target: one`,
		`bad.yaml:22:21: states.start.on_enter[2].on_complete[2].target: unknown state "nowhere"`,
		`bad.yaml:24:9: states.start.on_enter[3].target: target: on an effect is only valid inside a background invoke's on_complete: (for a transition, write target: on the arm)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestBackgroundLoads(t *testing.T) {
	s := load(t, filepath.Join("testdata", "background", "good.yaml"), nil)
	inv := s.States["start"].OnEnter[0].Invoke
	if !inv.Background || len(inv.OnComplete) != 3 || inv.OnError != "failed" {
		t.Fatalf("invoke: %+v", inv)
	}
	oc := inv.OnComplete
	if oc[0].Say == nil || oc[1].Target != "done" || oc[1].When == nil || oc[2].Target != "start" || !oc[2].TargetStay {
		t.Errorf("on_complete: %+v %+v %+v", oc[0], oc[1], oc[2])
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %v", lines(s.Warnings))
	}
}
