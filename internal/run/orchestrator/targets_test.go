package orchestrator

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func targetsStory(t *testing.T) files {
	t.Helper()
	b, err := os.ReadFile("testdata/targets/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return files{"app.yaml": string(b)}
}

// A templated target is rendered when its arm is taken, against the turn's
// world and slots, and resolved like a literal one.
func TestTemplatedTargetTaken(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string // the state after each line
	}{
		{"world value", []string{"open_help", "back"}, []string{"help", "review"}},
		{"ternary, false arm", []string{"route"}, []string{"queue"}},
		{"ternary, true arm", []string{"toggle", "route"}, []string{"review", "escalated"}},
		{"slot value", []string{"jump to=queue"}, []string{"queue"}},
		{"slash path", []string{"jump to=side/inner"}, []string{"side.inner"}},
		{"rendered dot stays", []string{"jump to=."}, []string{"review"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, targetsStory(t))
			var got []string
			for _, line := range tt.lines {
				out := r.do(line)
				if out.Outcome == OutcomeError {
					t.Fatalf("%s: %v", line, out.Err)
				}
				got = append(got, out.State)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
		})
	}
}

// The machine.transition event carries the rendered state, and the entries
// run down to it as for a literal target.
func TestTemplatedTargetTrace(t *testing.T) {
	r := newRig(t, targetsStory(t))
	r.do("jump to=side/inner")
	tr := r.events("machine.transition")
	if len(tr) != 2 || tr[1].Payload["to"] != "side.inner" {
		t.Fatalf("machine.transition = %v", tr)
	}
	var entered []string
	for _, e := range r.events("machine.state_entered") {
		entered = append(entered, e.Payload["state"].(string))
	}
	if diff := cmp.Diff([]string{"review", "side", "side.inner"}, entered); diff != "" {
		t.Errorf("entered states (-want +got):\n%s", diff)
	}
}

// A target that renders to no state, or fails to render, is a fault that
// names the state, the arm and where the target is written.
func TestTemplatedTargetErrors(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"unknown state", []string{"jump to=nowhere"},
			`transition error in state review, arm 0 of on.jump (app.yaml:24:19): target "{{ slots.to }}" rendered "nowhere", which is not a state`},
		{"empty world value", []string{"jump to=help", "back"},
			`transition error in state help, arm 1 of on.back (app.yaml:34:19): target "{{ world.prev_state }}" rendered "", which is empty (render a state name, or "." to stay)`},
		{"exit pseudo-state", []string{"jump to=@exit:gone"},
			`transition error in state review, arm 0 of on.jump (app.yaml:24:19): target "{{ slots.to }}" rendered "@exit:gone", which names an exit not declared in exits:`},
		{"render error", []string{"open_help", "jump to=x"},
			`transition error in state help, arm 0 of on.jump (app.yaml:36:19): target "{{ world.missing.deeper }}": col 18: cannot fetch deeper from <nil>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, targetsStory(t))
			var out *Outcome
			for _, line := range tt.lines {
				out = r.do(line)
			}
			if out.Outcome != OutcomeError {
				t.Fatalf("outcome = %s (state %s), want error", out.Outcome, out.State)
			}
			if got := out.Err.Error(); got != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tt.want)
			}
			me := r.events("machine.error")
			if len(me) != 1 || me[0].Payload["error"] != tt.want {
				t.Errorf("machine.error = %v", me)
			}
		})
	}
}
