package testrunner

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

// A cassette's phase is the state the turn began in, as Kitsoki's runner
// derives it: the call work's on_enter makes in the turn that leaves idle
// is in phase idle (Kitsoki's recorded cassettes carry exactly that), and a
// call made in a turn that starts in work is in phase work.
func TestCassettePhaseIsTheTurnStartState(t *testing.T) {
	story := `app: {id: phased}
world:
  entered: {type: string, default: ""}
  poked: {type: string, default: ""}
intents: {start: {}, poke: {}}
root: idle
states:
  idle:
    on:
      start: [{target: work}]
  work:
    on_enter:
      - invoke: host.probe
        bind: {entered: v}
    on:
      poke: [{target: ".", effects: [{invoke: host.probe, bind: {poked: v}}]}]
`
	cas := `kind: host_cassette
episodes:
  - id: probe_work
    match: {handler: host.probe, phase: work}
    response: {data: {v: work}}
  - id: probe_idle
    match: {handler: host.probe, phase: idle}
    response: {data: {v: idle}}
`
	flow := `test_kind: flow
app: app.yaml
host_cassette: c.yaml
turns:
  - intent: start
    expect_state: work
    expect_world: {entered: idle}
  - intent: poke
    expect_world: {poked: work}
strict_cassette_coverage: true
`
	dir := testkit.Tree(t, map[string]string{"app.yaml": story, "c.yaml": cas, "f.yaml": flow})
	fxs, err := LoadFixtures(filepath.Join(dir, "app.yaml"), filepath.Join(dir, "f.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(WithFlowGetenv(testkit.NoEnv))
	defer r.Close()
	rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("PASS  f.yaml\n", report(rep.Results, false)); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}
