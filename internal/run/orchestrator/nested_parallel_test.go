package orchestrator

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nestedParallel is testdata/nested_parallel/app.yaml: release (parallel)
// runs build and docs; build's parts is a parallel state of its own.
func nestedParallel(t *testing.T) files {
	t.Helper()
	b, err := os.ReadFile("testdata/nested_parallel/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return files{"app.yaml": string(b)}
}

const (
	nestStart    = "release#(release.build.parts#release.build.parts.back.todo|release.build.parts.front.todo)|release.docs.draft"
	nestFrontEnd = "release#(release.build.parts#release.build.parts.back.todo|release.build.parts.front.done)|release.docs.draft"
	nestNoted    = "release#(release.build.parts#release.build.parts.back.todo|release.build.parts.front.done)|release.docs.final"
	nestShipped  = "release#release.build.shipped|release.docs.final"
)

// TestNestedParallel walks a parallel state nested in a region: entry
// enters every region of both, an intent moves one inner region, an emit:
// from the outer sibling reaches an inner region, and the inner parallel
// state's done event moves the outer region on; the outer parallel state
// is then done.
func TestNestedParallel(t *testing.T) {
	r := newRig(t, nestedParallel(t))
	steps := []struct {
		line, state, view string
		done              bool
	}{
		{"start", nestStart, "release\n\nparts\n\nback todo\n\nfront todo\n\ndraft", false},
		{"fe", nestFrontEnd, "release\n\nparts\n\nback todo\n\nfront done\n\ndraft", false},
		// note moves docs; its emit: ping reaches back, inside parts.
		{"note", nestNoted, "release\n\nparts\n\nback todo\n\nfront done\n\nfinal", false},
		// be finishes parts: done.state.release.build.parts moves build to shipped.
		{"be", nestShipped, "release\n\nshipped\n\nfinal", true},
	}
	for _, st := range steps {
		out := r.do(st.line)
		if out.Outcome != OutcomeTransitioned {
			t.Fatalf("%s: outcome %s (%+v %v)", st.line, out.Outcome, out.Rejection, out.Err)
		}
		if got := r.sess.State(); got != st.state {
			t.Fatalf("%s: state = %s, want %s", st.line, got, st.state)
		}
		if v, _ := r.sess.View(); v != st.view {
			t.Errorf("%s: view = %q, want %q", st.line, v, st.view)
		}
		if out.Done != st.done {
			t.Errorf("%s: done = %v, want %v", st.line, out.Done, st.done)
		}
	}
	if got := r.sess.World()["log"]; got != ">parts>ping>built" {
		t.Errorf("log = %v, want >parts>ping>built", got)
	}
	var entered []string
	for _, ev := range r.turnEvents(1, "machine.state_entered") {
		entered = append(entered, ev.Payload["state"].(string))
	}
	want := []string{"release", "release.build", "release.build.parts",
		"release.build.parts.front", "release.build.parts.front.todo",
		"release.build.parts.back", "release.build.parts.back.todo",
		"release.docs", "release.docs.draft"}
	if d := cmp.Diff(want, entered); d != "" {
		t.Errorf("entry order (-want +got):\n%s", d)
	}
	var moves []string
	for _, ev := range r.turnEvents(4, "machine.transition", "machine.state_exited", "machine.state_entered") {
		p := ev.Payload
		switch ev.Kind {
		case "machine.transition":
			moves = append(moves, "transition "+p["intent"].(string))
		case "machine.state_exited":
			moves = append(moves, "exit "+p["state"].(string))
		default:
			moves = append(moves, "enter "+p["state"].(string))
		}
	}
	want = []string{"transition be", "exit release.build.parts.back.todo", "enter release.build.parts.back.done",
		"transition done.state.release.build.parts",
		"exit release.build.parts.front.done", "exit release.build.parts.front",
		"exit release.build.parts.back.done", "exit release.build.parts.back",
		"exit release.build.parts", "enter release.build.shipped"}
	if d := cmp.Diff(want, moves); d != "" {
		t.Errorf("turn 4 (-want +got):\n%s", d)
	}
}

// TestNestedParallelLeave leaves both parallel states from an inner
// region's leaf: every region exits, innermost first, in reverse
// configuration order; and from the outer parallel state's own arm.
func TestNestedParallelLeave(t *testing.T) {
	r := newRig(t, nestedParallel(t))
	r.do("start")
	if allowed := strings.Join(r.sess.AllowedIntents(), ","); allowed != "abort,bail,be,fe,note,ping" {
		t.Errorf("allowed = %s, want abort,bail,be,fe,note,ping (no done.state.* event)", allowed)
	}
	out := r.do("bail")
	if out.Outcome != OutcomeTransitioned || r.sess.State() != "lobby" {
		t.Fatalf("bail: %s, state %s", out.Outcome, r.sess.State())
	}
	var exited []string
	for _, ev := range r.turnEvents(2, "machine.state_exited") {
		exited = append(exited, ev.Payload["state"].(string))
	}
	want := []string{"release.docs.draft", "release.docs",
		"release.build.parts.front.todo", "release.build.parts.front",
		"release.build.parts.back.todo", "release.build.parts.back",
		"release.build.parts", "release.build", "release"}
	if d := cmp.Diff(want, exited); d != "" {
		t.Errorf("exit order (-want +got):\n%s", d)
	}
	r.do("start")
	r.do("fe")
	if out := r.do("abort"); out.Outcome != OutcomeTransitioned || r.sess.State() != "lobby" {
		t.Fatalf("abort: %s, state %s", out.Outcome, r.sess.State())
	}
	if got := r.sess.World()["log"]; got != ">parts>bail>parts>abort" {
		t.Errorf("log = %v", got)
	}
}

// TestNestedParallelDoneEventRefused: a turn cannot send a done event; the
// runtime raises it.
func TestNestedParallelDoneEventRefused(t *testing.T) {
	r := newRig(t, nestedParallel(t))
	r.do("start")
	out, err := r.sess.Turn(t.Context(), "done.state.release.build.parts", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if out.Rejection == nil || out.Rejection.Code != CodeIntentNotAllowed {
		t.Fatalf("outcome %s %+v, want INTENT_NOT_ALLOWED_IN_STATE", out.Outcome, out.Rejection)
	}
}

// TestNestedParallelResume: a session restored mid-nest (as a journal
// leaves it) goes on from there: the inner region moves, and finishing
// the inner parallel state moves the outer region on.
func TestNestedParallelResume(t *testing.T) {
	r := newRig(t, nestedParallel(t))
	r.do("start")
	r.do("fe")
	state, world, n := r.sess.State(), r.sess.World(), r.sess.TurnNumber()

	r2 := unstarted(t, newRig(t, nestedParallel(t)))
	if err := r2.sess.Restore(state, world, n); err != nil {
		t.Fatal(err)
	}
	if v, _ := r2.sess.View(); v != "release\n\nparts\n\nback todo\n\nfront done\n\ndraft" {
		t.Errorf("restored view = %q", v)
	}
	if out := r2.do("be"); r2.sess.State() != "release#release.build.shipped|release.docs.draft" || out.Done {
		t.Fatalf("be after restore: state %s, done %v", r2.sess.State(), out.Done)
	}
	if out := r2.do("note"); !out.Done {
		t.Errorf("note: not done in %s", r2.sess.State())
	}
}

// TestNestedParallelRoot: a nested configuration given as the root (a
// flow's initial_state) is checked region by region.
func TestNestedParallelRoot(t *testing.T) {
	tests := []struct{ root, err string }{
		{nestNoted, ""},
		{"release#release.build.parts|release.docs.draft",
			`state path "release#release.build.parts|release.docs.draft": "release.build.parts" is a parallel state; write its configuration in parentheses, (release.build.parts#<leaf>|<leaf>)`},
		{"release#(release.build.parts#release.build.parts.back.todo)|release.docs.draft",
			`state path "release#(release.build.parts#release.build.parts.back.todo)|release.docs.draft": name one leaf for each of the 2 regions of release.build.parts`},
		{"release#(release.build.parts#release.build.parts.back.todo|release.build.parts.front.todo|release.docs.draft",
			`state path "release#(release.build.parts#release.build.parts.back.todo|release.build.parts.front.todo|release.docs.draft": a ")" is missing at offset 108 (write <parallel>#<leaf>|<leaf>, with a nested parallel configuration in parentheses)`},
	}
	for _, tc := range tests {
		t.Run(tc.root, func(t *testing.T) {
			r := newRig(t, nestedParallel(t))
			_, err := New(r.story, nil, nil, WithRoot(tc.root))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err {
				t.Errorf("New: %q\nwant %q", got, tc.err)
			}
		})
	}
}
