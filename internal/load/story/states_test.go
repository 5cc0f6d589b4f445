package story

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestInterceptDrive: "rest" is kept on the state; any other value is
// refused with the one valid mode named.
func TestInterceptDrive(t *testing.T) {
	want := []string{
		`intercept.yaml:8:22: states.idle.intercept_drive: intercept_drive must be "rest" (the only mode), got "drive"`,
	}
	if diff := cmp.Diff(want, loadErr(t, "testdata/states/intercept.yaml", nil)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// TestHierarchyErrors checks the load errors of type:, initial: and nested
// states:, and of targets that climb out of nested states.
func TestHierarchyErrors(t *testing.T) {
	want := []string{
		`hierarchy_errors.yaml:6:11: states.a.type: unknown state type "compund" (one of atomic, compound, parallel) (did you mean "compound"?)`,
		"hierarchy_errors.yaml:8:5: states.b: a compound state needs initial: (the child it enters first; one of x)",
		`hierarchy_errors.yaml:13:14: states.c.initial: initial: "y" is not a child of c (children: x) (did you mean "x"?)`,
		"hierarchy_errors.yaml:18:5: states.d.initial: a parallel state enters every region at once; initial: applies only to a type: compound state",
		"hierarchy_errors.yaml:24:5: states.e.states: nested states: need type: compound (one child at a time, entered at initial:) or type: parallel (every child at once)",
		"hierarchy_errors.yaml:25:5: states.e.initial: initial: applies only to a type: compound state",
		"hierarchy_errors.yaml:27:5: states.f: a compound state needs states: (its children)",
		`hierarchy_errors.yaml:35:25: states.g.states.x.on.go[0].target: unknown state "../../nowhere" (resolved: "nowhere")`,
		`hierarchy_errors.yaml:36:7: states.g.states.y.z: nested state name "y.z" has a dot or slash; name the child alone (it is g.<name>)`,
	}
	if diff := cmp.Diff(want, loadErr(t, "testdata/states/hierarchy_errors.yaml", nil)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// TestHierarchy checks how nested states load: full paths, parents,
// children in order, initial children, and targets resolved against the
// state they are written in.
func TestHierarchy(t *testing.T) {
	s := load(t, "testdata/states/hierarchy.yaml", nil)
	type view struct {
		Kind, Parent, Initial string
		Children              []string
		Templated             bool
		Targets               map[string]string
	}
	got := map[string]view{}
	for name, st := range s.States {
		v := view{Kind: st.Kind, Parent: st.Parent, Initial: st.Initial, Children: st.Children, Templated: st.InitialValue != nil || st.InitialText != nil}
		for intent, arms := range st.On {
			if v.Targets == nil {
				v.Targets = map[string]string{}
			}
			v.Targets[intent] = arms[0].Target
		}
		got[name] = v
	}
	want := map[string]view{
		"top": {Kind: "atomic", Targets: map[string]string{"go": "box"}},
		"box": {Kind: "compound", Initial: "box.one", Children: []string{"box.one", "box.two", "box.deep"},
			Targets: map[string]string{"back": "top"}},
		"box.one":        {Kind: "atomic", Parent: "box", Targets: map[string]string{"go": "box.two", "back": "top", "step": "box.deep.inner"}},
		"box.two":        {Kind: "atomic", Parent: "box", Targets: map[string]string{"go": "box.one"}},
		"box.deep":       {Kind: "compound", Parent: "box", Templated: true, Children: []string{"box.deep.inner"}},
		"box.deep.inner": {Kind: "atomic", Parent: "box.deep", Targets: map[string]string{"go": "box.two", "back": "top"}},
		"par":            {Kind: "parallel", Children: []string{"par.r1", "par.r2"}},
		"par.r1":         {Kind: "atomic", Parent: "par"},
		"par.r2":         {Kind: "atomic", Parent: "par"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if ws := s.Warnings; len(ws) != 1 || ws[0].String() != `hierarchy.yaml:27:30: states.box.states.deep.states.inner.relevant_slots[0]: slot "nme" is not a slot of an intent this state takes (slots: name) (did you mean "name"?)` {
		t.Errorf("warnings = %v", ws)
	}
}

// TestTimeoutErrors checks timeout: with bad or missing after: and target:.
func TestTimeoutErrors(t *testing.T) {
	want := []string{
		`timeout_errors.yaml:5:22: states.a.timeout.after: timeout.after "soon" is not a duration (write e.g. "500ms", "30s", "8m", "2h" or "10d")`,
		`timeout_errors.yaml:7:22: states.b.timeout.after: timeout.after must be longer than zero, got "0s"`,
		`timeout_errors.yaml:9:5: states.c.timeout: timeout needs after: (how long the state waits, e.g. "30s", "8m", "10d")`,
		`timeout_errors.yaml:11:5: states.d.timeout: timeout needs target: (the state to move to when the time is up)`,
		`timeout_errors.yaml:13:34: states.e.timeout.target: unknown state "nowhere"`,
		`timeout_errors.yaml:13:43: states.e.timeout.then: unknown key "then"`,
		`timeout_errors.yaml:15:34: states.f.timeout.target: timeout.target must name a state; a template target is allowed only in an arm's target:`,
	}
	if diff := cmp.Diff(want, loadErr(t, "testdata/states/timeout_errors.yaml", nil)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"500ms", 500 * time.Millisecond, false},
		{"8m", 8 * time.Minute, false},
		{"10d", 240 * time.Hour, false},
		{"1d12h", 36 * time.Hour, false},
		{"xd", 0, true},
		{"soon", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseDuration(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestModeErrors: mode: takes "conversational" only; a conversational
// room without a default_intent loads (its free text falls back).
func TestModeErrors(t *testing.T) {
	want := []string{
		`mode_errors.yaml:7:11: states.a.mode: unknown state mode "conversatonal" (the one mode is "conversational": an agent room, whose free text goes to its default_intent, else to the story's free-form fallback) (did you mean "conversational"?)`,
	}
	if diff := cmp.Diff(want, loadErr(t, "testdata/states/mode_errors.yaml", nil)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// TestOffRampErrors: agent_off_ramp is true, false or {agent, persona,
// banner}, names a declared persona, and is refused on terminal and
// conversational rooms.
func TestOffRampErrors(t *testing.T) {
	want := []string{
		`offramp_errors.yaml:9:29: states.a.agent_off_ramp.agent: agent_off_ramp.agent "gide" is not declared in agents: (did you mean "guide"?) (declared: guide)`,
		`offramp_errors.yaml:9:35: states.a.agent_off_ramp.trigger: trigger: belongs to off_path:; agent_off_ramp takes agent, persona and banner`,
		`offramp_errors.yaml:12:5: states.b.agent_off_ramp: agent_off_ramp on a terminal state: there is no menu to stay on; put it on a room the story rests in`,
		`offramp_errors.yaml:17:5: states.c.agent_off_ramp: agent_off_ramp on a mode: conversational room: its free text already goes to its default_intent; drop one of the two`,
		`offramp_errors.yaml:19:21: states.d.agent_off_ramp: expected true or false, got the scalar "sometimes"; agent_off_ramp: takes true, false or a mapping {agent, persona, banner}, e.g. agent_off_ramp: {agent: guide}`,
	}
	got := loadErr(t, "testdata/states/offramp_errors.yaml", nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// TestOverlayErrors checks off_path: and meta_modes: entries.
func TestOverlayErrors(t *testing.T) {
	want := []string{
		`overlay_errors.yaml:8:1: off_path: off_path needs trigger: (the command that opens it, e.g. "/freeform")`,
		`overlay_errors.yaml:12:3: meta_modes.one: command /help is also the name of intent "help"; pick another trigger`,
		`overlay_errors.yaml:14:12: meta_modes.one.agent: agent "gide" is not declared in agents: (did you mean "guide"?)`,
		"overlay_errors.yaml:15:3: meta_modes.two: a meta mode needs agent: (a persona from agents:, or story-author)",
		"overlay_errors.yaml:17:3: meta_modes.three: trigger /meta is already used by meta_modes.four",
		"overlay_errors.yaml:20:10: meta_modes.three.cwd: cwd \"${MODE_DIR}\" names ${MODE_DIR}, which is not set",
		`overlay_errors.yaml:21:14: meta_modes.three.persist: expected true or false, got the scalar "sometimes"`,
		`overlay_errors.yaml:22:30: meta_modes.three.return.mesage: unknown key "mesage" (did you mean "message"?)`,
	}
	if diff := cmp.Diff(want, loadErr(t, "testdata/states/overlay_errors.yaml", nil)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// An off_path return: that is not a command names a state.
func TestOffPathReturnUnknown(t *testing.T) {
	want := []string{`offpath_return.yaml:5:35: off_path.return: unknown state "nowher"`}
	if diff := cmp.Diff(want, loadErr(t, "testdata/states/offpath_return.yaml", nil)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// A nested state and a top-level dotted name for the same path collide.
func TestNestedAndDottedCollide(t *testing.T) {
	want := []string{`dup.yaml:9:3: states.a.b: state "a.b" is declared twice: here and at dup.yaml:8:7 (a nested state and a dotted name are the same path)`}
	if diff := cmp.Diff(want, loadErr(t, "testdata/states/dup.yaml", nil)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}
