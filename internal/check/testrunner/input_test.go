package testrunner

import (
	"path/filepath"
	"testing"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

const inputApp = `app: {id: input-checks}
world:
  count: {type: int, default: 0}
intents:
  greet:
    slots:
      name: {type: string, required: true}
      color: {type: string}
root: hello
states:
  hello:
    on:
      greet: [{target: "."}]
`

// runInline runs the fixtures of one inline flow file against inputApp.
func runInline(t *testing.T, flow string) string {
	t.Helper()
	dir := testkit.Tree(t, map[string]string{"app.yaml": inputApp, "flows/f.yaml": flow})
	rep := runFixtures(t, filepath.Join(dir, "app.yaml"), filepath.Join(dir, "flows", "f.yaml"))
	for _, res := range rep.Results {
		res.Name = "f.yaml"
	}
	return report(rep.Results, false)
}

// A flow sees an unknown slot as the rejection UNKNOWN_SLOT: expect_error
// can assert it, and a flow expecting another code is shown its message.
func TestFlowUnknownSlot(t *testing.T) {
	got := runInline(t, `test_kind: flow
turns:
  - intent: {name: greet, slots: {name: Ada, colour: red}}
    expect_error: {code: UNKNOWN_SLOT}
  - intent: {name: greet, slots: {colour: red}}
    expect_error: {code: MISSING_SLOTS}
`)
	want := `FAIL  f.yaml
  FAIL  turn 2 → hello
  ✗ expect_error: got code UNKNOWN_SLOT, want MISSING_SLOTS (unknown slot "colour" for intent greet; did you mean "color"?)
`
	if got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}

// An initial_world value that does not fit its declared type is taken as
// given (Kitsoki's flows seed lists into keys declared string): the flow
// runs with it and the report warns, naming the key, the type and the value.
func TestFlowInitialWorldTypes(t *testing.T) {
	got := runInline(t, `test_kind: flow
initial_world: {count: lots}
turns:
  - intent: {name: greet, slots: {name: Ada}}
    expect_world: {count: lots}
`)
	want := `PASS  f.yaml
  warning: initial_world: world key "count" is declared int; the seeded value "lots" is not an int; the flow uses it as given
`
	if got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}
