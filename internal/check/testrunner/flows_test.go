package testrunner

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kitsoki/kitsoki/internal/agents/cassette"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

const shopApp = "testdata/shop/app.yaml"

// runFile runs the fixtures of one file and returns the results.
func runFile(t *testing.T, file string, opts ...FlowOption) []*FlowResult {
	t.Helper()
	return runFixtures(t, shopApp, file, opts...).Results
}

// report renders results as `kitsoki test flows` prints them.
func report(results []*FlowResult, verbose bool) string {
	var b bytes.Buffer
	for _, r := range results {
		WriteResult(&b, r, verbose)
	}
	return b.String()
}

// Every failing assertion kind, with its exact message and report layout.
func TestFlowFailureMessages(t *testing.T) {
	tests := []struct{ file, want string }{
		{"state.yaml", `FAIL  state.yaml
  FAIL  turn 1 → cart
  ✗ expect_state: got "cart", want "paying"
  ✗ expect_not_state: got "cart", which the turn must not end in
  ✗ expect_state_in: got "cart", want one of ["paying", "finished"]
`},
		{"world.yaml", `FAIL  world.yaml
  FAIL  turn 1 → cart
  ✗ expect_world["extra"]: got null (<nil>), want [1] ([]interface {})
  ✗ expect_world["items"]: got 1 (int64), want 2 (int)
  ✗ expect_world: world differs (-want +got):
      map[string]any{
    - 	"extra":   []any{int64(1)},
    + 	"extra":   nil,
    - 	"items":   int64(2),
    + 	"items":   int64(1),
      	"missing": nil,
      	"note":    string("gift"),
      }
  ✗ expect_world_full: unexpected key "last_error" = "" (string)
  ✗ expect_world_full: unexpected key "receipt" = "" (string)
  ✗ expect_world_full: unexpected key "session_cost_usd" = 0 (float64)
  ✗ expect_world_full: unexpected key "session_id" = "flow" (string)
  ✗ expect_world_full: unexpected key "turn_cost_usd" = 0 (float64)
  ✗ expect_world_full: unexpected key "write_mode_scope" = "" (string)
  ✗ expect_world_full: missing key "bogus" (want true (bool))
  ✗ expect_world_full: world differs (-want +got):
      map[string]any{
    - 	"bogus":            bool(true),
      	"items":            int64(1),
    + 	"last_error":       string(""),
      	"note":             string("gift"),
    + 	"receipt":          string(""),
    + 	"session_cost_usd": int64(0),
    + 	"session_id":       string("flow"),
    + 	"turn_cost_usd":    int64(0),
    + 	"write_mode_scope": string(""),
      }
  ✗ expect_slots["n"]: got 1 (int), want 2 (int)
`},
		{"rejection.yaml", `FAIL  rejection.yaml
  FAIL  turn 1 → cart
  ✗ unexpected rejection: code=GUARD_FAILED: no transition matched for intent "pay" in state "cart"; hint=Add something first.
  FAIL  turn 2 → cart
  ✗ expect_error: got code GUARD_FAILED, want MISSING_SLOTS (no transition matched for intent "pay" in state "cart")
  ✗ expect_error.allowed_contains: "done" is not among the allowed intents []
  FAIL  turn 3 → cart
  ✗ expect_error: want code GUARD_FAILED, got no rejection (the turn ended in "cart")
  FAIL  turn 4 → cart
  ✗ expect_slots: the intent was not accepted, so it has no slots
  FAIL  turn 5 → cart
  ✗ unexpected rejection: code=INTENT_NOT_ALLOWED_IN_STATE: intent "bogus" is not allowed in state "cart": it is not a declared intent (allowed: add, pay)
`},
		{"view.yaml", `FAIL  view.yaml
  FAIL  turn 1 → cart
  ✗ expect_view_matches: view does not match /^Items: 2$/: "Items: 1"
  ✗ expect_no_view: got view "Items: 1"
`},
		{"events.yaml", `FAIL  events.yaml
  FAIL  turn 1 → cart
  ✗ expect_events[0]: no world.update event with payload including {"set":{"note":"wrapped"}}; the turn's world.update events: [4: {"increment":{"items":1}}, 5: {"set":{"note":"gift"}}]
  FAIL  turn 2 → cart
  ✗ expect_events[1]: no world.update event with payload including {"increment":{"items":1}} after expect_events[0], which matched event 5; event 4 matches but comes earlier (entries are matched in order); the turn's world.update events: [4: {"increment":{"items":1}}, 5: {"set":{"note":""}}]
  FAIL  turn 3 → paying
  ✗ expect_events[1]: no agent.call.start event after expect_events[0], which matched event 2; the turn has none (its events: [turn.input turn.start machine.intent_accepted machine.transition machine.state_exited machine.state_entered harness.called harness.dispatched world.update harness.returned turn.end])
  FAIL  turn 4 → cart
  ✗ expect_events[0]: no machine.transition event in state "cart" with payload including {"to":"cart"}; the turn's machine.transition events: [3: in "paying" {"from":"paying","intent":"cancel","slots":{},"to":"cart"}]
`},
		{"hostcalls.yaml", `FAIL  hostcalls.yaml
  FAIL  turn 1 → cart
  ✗ expect_host_calls[0]: host.pay was not called, want at least once (no host calls were dispatched)
  FAIL  turn 2 → paying
  ✗ expect_host_calls[0]: host.pay called 1 time(s), want 2
  ✗ expect_host_calls[1]: host.pay with args {"amount":5} was not called, want at least once [host.pay.charge]
  ✗ expect_no_host_calls: 1 host call(s) dispatched: [host.pay.charge]
  FAIL  [session]
  ✗ expect_no_host_calls: 1 host call(s) dispatched: [host.pay.charge]
`},
		{"session.yaml", `FAIL  session.yaml
  FAIL  turn 5 → cart
  ✗ cassette miss: no episode matched handler="host.pay" args={"amount":3,"call":"charge","op":"charge"}; available episodes: [charge_ok charge_two]; nearest: "charge_ok" differs on amount (episode wants 1, call has 3); "charge_two" differs on amount (episode wants 2, call has 3)
  FAIL  [session]
  ✗ expect_terminal: state "cart" is not terminal
  ✗ expect_no_errors: there were validation errors
  ✗ expect_world_final["items"]: got 3 (int64), want 2 (int)
  ✗ expect_world_final: world differs (-want +got):
      map[string]any{
    - 	"items": int64(2),
    + 	"items": int64(3),
      }
  ✗ unexpected remaining episodes: [charge_ok charge_two]
`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res := runFile(t, "testdata/shop/failing/"+tt.file)
			if len(res) != 1 || res[0].Passed {
				t.Fatalf("results = %+v", res)
			}
			got := report(res, false)
			// go-cmp randomises its diff spacing between runs (it uses
			// U+00A0 or a space); compare with either.
			got = strings.ReplaceAll(got, "\u00a0", " ")
			if got != tt.want {
				t.Errorf("report:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// The passing fixtures: every assertion kind holds; a multi-document file
// gives one result per document (name#N); a non-flow document is skipped.
func TestFlowPassing(t *testing.T) {
	res := runFile(t, "testdata/shop/flows/passing.yaml")
	got := report(res, true)
	want := `PASS  passing.yaml#1
  ok    turn 1 → cart
  ok    turn 2 → paying
  ok    turn 3 → paying
  ok    turn 4 → finished
  ok    [session]
PASS  passing.yaml#2
  ok    turn 1 → cart
  ok    turn 2 → paying
  ok    [session]
SKIP  passing.yaml#3
  skipped: test_kind is "", not flow
`
	if got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
	if quiet := report(res, false); quiet != "PASS  passing.yaml#1\nPASS  passing.yaml#2\nSKIP  passing.yaml#3\n" {
		t.Errorf("non-verbose report:\n%s", quiet)
	}
}

// Seeding writes turn-0 events (the __seed__ transition, one world.update
// per initial_world key) and does not run the initial state's on_enter.
func TestFlowSeed(t *testing.T) {
	res := runFile(t, "testdata/shop/flows/passing.yaml", WithTrace())
	evs, err := trace.Read(bytes.NewReader(res[1].Trace))
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		Kind    string
		Payload string
	}
	var turn0 []ev
	for _, e := range evs {
		if e.Turn == 0 {
			p, _ := json.Marshal(e.Payload)
			turn0 = append(turn0, ev{e.Kind, string(p)})
		}
	}
	want := []ev{
		{trace.KindMachineTransition, `{"from":"","intent":"__seed__","to":"paying"}`},
		{trace.KindWorldUpdate, `{"set":{"items":2}}`},
		{trace.KindWorldUpdate, `{"set":{"note":"seeded"}}`},
		{trace.KindWorldUpdate, `{"set":{"session_id":"flow"}}`}, // the flow's session id, projected
	}
	if d := cmp.Diff(want, turn0); d != "" {
		t.Errorf("turn 0 (-want +got):\n%s", d)
	}
}

// Without host_handlers or host_cassette, host calls are dropped: nothing
// is bound, nothing fails, and they do not count as host calls; the report
// says how many were dropped.
func TestFlowDropsHostCallsWithoutHandlers(t *testing.T) {
	tests := []struct {
		name, turns, want string
		n                 int
	}{
		{"one", "  - intent: {name: pay}\n    expect_state: paying\n", "PASS  f.yaml (1 host call dropped: no stubs)\n", 1},
		{"three", "  - intent: {name: pay}\n  - intent: {name: cancel}\n  - intent: {name: pay}\n  - intent: {name: cancel}\n  - intent: {name: pay}\n",
			"PASS  f.yaml (3 host calls dropped: no stubs)\n", 3},
		{"none", "  - intent: {name: add}\n", "PASS  f.yaml\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testkit.Tree(t, map[string]string{"f.yaml": `test_kind: flow
app: ` + mustAbs(t, shopApp) + `
turns:
  - intent: {name: add}
` + tt.turns + `    expect_world: {receipt: "", last_error: ""}
    expect_no_host_calls: true
expect_no_errors: true
expect_no_host_calls: true
`})
			res := runFile(t, filepath.Join(dir, "f.yaml"))
			if !res[0].Passed {
				t.Errorf("report:\n%s", report(res, true))
			}
			if got := report(res, false); got != tt.want || res[0].DroppedHostCalls != tt.n {
				t.Errorf("report = %q (DroppedHostCalls %d), want %q (%d)", got, res[0].DroppedHostCalls, tt.want, tt.n)
			}
		})
	}
}

// A host_handlers entry keyed by an agent alias would answer nothing (stubs
// answer invoke names), so it is a setup error that says what to key it by.
func TestFlowStubKeyedByAgentAlias(t *testing.T) {
	files := testkit.GreetFiles()
	files["f.yaml"] = `test_kind: flow
app: app.yaml
host_handlers:
  host.other: {data: {}}
  agent.g:
    data: {submitted: {text: hi}}
turns:
  - intent: {name: greet, slots: {name: Ada}}
`
	files["g.yaml"] = `test_kind: flow
app: app.yaml
host_handlers:
  agent.nobody: {data: {}}
turns:
  - intent: {name: greet, slots: {name: Ada}}
`
	dir := testkit.Tree(t, files)
	tests := []struct{ file, want string }{
		{"f.yaml", filepath.Join(dir, "f.yaml") + `:5:3: host_handlers["agent.g"]: "agent.g" is an agent alias, not a host handler, so this stub would answer nothing; ` +
			`key the stub by its invoke name ("host.agent.decide"), or answer the agent from a host_cassette whose episodes have match.handler: agent.g`},
		{"g.yaml", filepath.Join(dir, "g.yaml") + `:4:3: host_handlers["agent.nobody"]: "agent.nobody" is an agent alias, not a host handler, so this stub would answer nothing; ` +
			`key the stub by its invoke name (host.agent.<verb>), or answer the agent from a host_cassette whose episodes have match.handler: agent.nobody`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			fxs, err := LoadFixtures(filepath.Join(dir, "app.yaml"), filepath.Join(dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			r := NewRunner(WithFlowGetenv(testkit.NoEnv))
			defer r.Close()
			_, err = firstSetupError(r, fxs)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
	// Keyed by the invoke name, the same stub answers the call.
	files["ok.yaml"] = `test_kind: flow
app: app.yaml
host_handlers:
  host.agent.decide:
    data: {submitted: {text: hi}}
turns:
  - intent: {name: greet, slots: {name: Ada}}
    expect_state: greeting
    expect_world: {greeting: {text: hi}}
`
	dir = testkit.Tree(t, files)
	fxs, err := LoadFixtures(filepath.Join(dir, "app.yaml"), filepath.Join(dir, "ok.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(WithFlowGetenv(testkit.NoEnv))
	defer r.Close()
	rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
	if err != nil || !rep.OK() {
		t.Fatalf("err %v, report:\n%s", err, report(rep.Results, true))
	}
}

func mustAbs(t *testing.T, p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// An expected rejection still counts for expect_no_errors; an unhandled
// host error does too; a fault aborting the turn fails it.
func TestFlowErrorsAndFaults(t *testing.T) {
	story := `app: {id: faulty}
world: {x: {type: object, default: {}}}
intents: {boom: {}, call: {}}
root: a
states:
  a:
    on:
      boom: [{target: ".", effects: [{set: {x: "{{ world.nope.deeper }}"}}]}]
      call: [{target: ".", effects: [{invoke: host.thing, bind: {x: v}}]}]
`
	dir := testkit.Tree(t, map[string]string{"app.yaml": story, "f.yaml": `test_kind: flow
app: app.yaml
host_handlers:
  host.thing: {infra_error: thing is down}
turns:
  - intent: {name: call}
  - intent: {name: boom}
expect_no_errors: true
`})
	fxs, err := LoadFixtures(filepath.Join(dir, "app.yaml"), filepath.Join(dir, "f.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner()
	defer r.Close()
	rep, err := r.RunFixtures(context.Background(), fxs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := report(rep.Results, true)
	for _, want := range []string{
		"  FAIL  turn 2 → a\n  ✗ unexpected turn error: arm boom, effect 0: set x: ",
		// An unhandled host failure is reported (under --v) but, as in
		// Kitsoki, is not one of expect_no_errors' validation errors.
		"  host error: turn 1: host.thing: thing is down\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "expect_no_errors") {
		t.Errorf("expect_no_errors failed on a host error:\n%s", got)
	}
	if h := rep.Results[0].HostErrors; len(h) != 1 || h[0] != "turn 1: host.thing: thing is down" {
		t.Errorf("HostErrors = %q", h)
	}
}

// Setup errors: the fixture or what it names cannot be used at all.
func TestFlowSetupErrors(t *testing.T) {
	app := mustAbs(t, shopApp)
	tests := []struct{ name, fixture, want string }{
		{"exclusive", "test_kind: flow\napp: " + app + "\nhost_cassette: c.yaml\nhost_handlers: {h: {data: {}}}\n",
			"f.yaml:4:16: host_cassette and host_handlers are mutually exclusive"},
		{"unknown key", "test_kind: flow\napp: " + app + "\nturn: []\n", `f.yaml:3:1: fixture.turn: unknown key "turn" (did you mean "turns"?)`},
		{"unknown turn key", "test_kind: flow\napp: " + app + "\nturns: [{intent: add, expect_sate: cart}]\n", `f.yaml:3:23: turns[0].expect_sate: unknown key "expect_sate" (did you mean "expect_state"?)`},
		{"turn without intent", "test_kind: flow\napp: " + app + "\nturns: [{expect_state: cart}]\n", "f.yaml:3:9: turns[0]: intent: {name, slots} is required"},
		{"bad regex", "test_kind: flow\napp: " + app + "\nturns: [{intent: add, expect_view_matches: '('}]\n", "expect_view_matches: error parsing regexp"},
		{"initial state", "test_kind: flow\napp: " + app + "\ninitial_state: nowhere\n", `f.yaml: initial_state "nowhere" is not a state of shop (states: cart, finished, paying)`},
		{"initial configuration", "test_kind: flow\napp: " + app + "\ninitial_state: 'cart#cart.a|cart.b'\n", `f.yaml: initial_state: state path "cart#cart.a|cart.b": "cart" is not a parallel state`},
		{"missing cassette", "test_kind: flow\napp: " + app + "\nhost_cassette: nope.yaml\n", "nope.yaml"},
		{"missing app", "test_kind: flow\napp: nope/app.yaml\n", "nope/app.yaml"},
		{"expect_events not a list", "test_kind: flow\napp: " + app + "\nturns:\n  - intent: add\n    expect_events: {kind: x}\n",
			"f.yaml:5:20: turns[0].expect_events must be a list of {kind, payload keys}, got a mapping"},
		{"expect_events without kind", "test_kind: flow\napp: " + app + "\nturns:\n  - intent: add\n    expect_events: [{to: cart}]\n",
			"f.yaml:5:21: turns[0].expect_events[0]: kind is required (a trace event kind, e.g. machine.transition)"},
		{"expect_events payload and effect", "test_kind: flow\napp: " + app + "\nturns:\n  - intent: add\n    expect_events: [{kind: x, payload: {}, effect: {}}]\n",
			"f.yaml:5:52: turns[0].expect_events[0]: payload and effect are the same thing (the event's payload); write one"},
		{"expect_events key twice", "test_kind: flow\napp: " + app + "\nturns:\n  - intent: add\n    expect_events: [{kind: x, to: a, payload: {to: b}}]\n",
			`f.yaml:5:35: turns[0].expect_events[0]: "to" is given both beside kind and in payload`},
		{"expect_jobs status", "test_kind: flow\napp: " + app + "\nturns:\n  - intent: add\n    expect_jobs: [{namespace: host.run, status: finished}]\n",
			"expect_jobs[0].status \"finished\" is not one of done, failed, cancelled, awaiting_input"},
		{"event count", "test_kind: flow\napp: " + app + "\nexpect_events_count_atmost: -1\n",
			`f.yaml:3:29: fixture.expect_events_count_atmost must be a whole number >= 0, got "-1"`},
		{"stub infra with data", "test_kind: flow\napp: " + app + "\nhost_handlers: {h: {data: {}, infra_error: x}}\n", "host_handlers.h: infra_error cannot be combined with data or error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testkit.Tree(t, map[string]string{"f.yaml": tt.fixture})
			fxs, err := LoadFixtures(app, filepath.Join(dir, "f.yaml"))
			if err == nil {
				r := NewRunner()
				defer r.Close()
				_, err = firstSetupError(r, fxs)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	t.Run("strict env", func(t *testing.T) {
		dir := testkit.Tree(t, map[string]string{"f.yaml": "test_kind: flow\napp: " + app + "\nhost_cassette: c.yaml\n",
			"c.yaml": "kind: host_cassette\nrecord_mode: new_episodes\n"})
		fxs, err := LoadFixtures(app, filepath.Join(dir, "f.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		r := NewRunner(WithFlowGetenv(func(k string) string { return map[string]string{cassette.EnvStrict: "1"}[k] }))
		defer r.Close()
		_, err = firstSetupError(r, fxs)
		if err == nil || !strings.Contains(err.Error(), `KITSOKI_CASSETTE_STRICT=1 but cassette record mode is "new_episodes"`) {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("no fixtures", func(t *testing.T) {
		_, err := LoadFixtures(app, filepath.Join(t.TempDir(), "*.yaml"))
		if err == nil || !strings.Contains(err.Error(), "no flow fixtures match") {
			t.Errorf("error = %v", err)
		}
	})
}

// --fail-fast stops after the first failing flow.
func TestRunFixturesFailFast(t *testing.T) {
	fxs, err := LoadFixtures(shopApp, "testdata/shop/failing/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRunner(WithFlowGetenv(testkit.NoEnv))
	defer r.Close()
	var seen int
	rep, err := r.RunFixtures(context.Background(), fxs, true, func(*FlowResult) { seen++ })
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || seen != 1 || rep.Failed != 1 {
		t.Errorf("fail-fast ran %d flows (saw %d), failed %d", len(rep.Results), seen, rep.Failed)
	}
	rep, _ = NewRunner(WithFlowGetenv(testkit.NoEnv)).RunFixtures(context.Background(), fxs, false, nil)
	if len(rep.Results) != 7 || rep.Failed != 7 {
		t.Errorf("without fail-fast: %d results, %d failed", len(rep.Results), rep.Failed)
	}
	var b bytes.Buffer
	rep.WriteSummary(&b)
	if b.String() != "\nSummary: 0/7 flows pass\nFAIL\n" {
		t.Errorf("summary = %q", b.String())
	}
}

// The --json document has Kitsoki's untagged field names.
func TestReportJSONShape(t *testing.T) {
	rep := runFixtures(t, shopApp, "testdata/shop/flows/passing.yaml", WithEvents())
	path := filepath.Join(t.TempDir(), "r.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string { return sortedKeys(m) }
	if d := cmp.Diff([]string{"Failed", "Passed", "Results"}, keys(doc)); d != "" {
		t.Errorf("top keys: %s", d)
	}
	results := doc["Results"].([]any)
	first := results[0].(map[string]any)
	if d := cmp.Diff([]string{"File", "Passed", "Skipped", "Turns"}, keys(first)); d != "" {
		t.Errorf("result keys: %s", d)
	}
	turn := first["Turns"].([]any)[0].(map[string]any)
	if d := cmp.Diff([]string{"Events", "Failures", "NewState", "Passed", "TurnIndex", "View"}, keys(turn)); d != "" {
		t.Errorf("turn keys: %s", d)
	}
	if turn["TurnIndex"] != 0.0 || turn["NewState"] != "cart" || turn["View"] != "Items: 1" || doc["Passed"] != 2.0 || doc["Failed"] != 0.0 {
		t.Errorf("turn = %v", turn)
	}
	evs := turn["Events"].([]any)
	if len(evs) == 0 || evs[0].(map[string]any)["kind"] != trace.KindTurnInput || evs[0].(map[string]any)["turn"] != 1.0 {
		t.Errorf("events = %v", evs)
	}
	last := first["Turns"].([]any)[4].(map[string]any)
	if last["TurnIndex"] != -1.0 {
		t.Errorf("session entry = %v", last)
	}
	if results[2].(map[string]any)["Skipped"] != true {
		t.Errorf("third result = %v", results[2])
	}
}

func TestDefaultFlowsGlob(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{"a/app.yaml": "", "a/flows/x.yaml": "", "b/app.yaml": ""})
	if got := DefaultFlowsGlob(filepath.Join(dir, "a", "app.yaml")); got != filepath.Join(dir, "a", "flows", "*.yaml") {
		t.Errorf("with flows dir: %s", got)
	}
	if got := DefaultFlowsGlob(filepath.Join(dir, "b", "app.yaml")); got != filepath.Join(dir, "b", "app")+"-flows/*.yaml" {
		t.Errorf("without: %s", got)
	}
}

// A stub's by_call envelope (the invoke's id) wins over its by_op one,
// which wins over its own data; a stub or episode delay is slept on the
// flow's fake clock, so it moves the trace's time, not the test's.
func TestFlowStubPrecedenceAndDelays(t *testing.T) {
	app := mustAbs(t, shopApp)
	dir := testkit.Tree(t, map[string]string{
		"stub.yaml": `test_kind: flow
app: ` + app + `
host_handlers:
  host.pay:
    data: {receipt: top-level}
    delay: 3d
    by_op: {charge: {data: {receipt: by-op}}}
    by_call: {charge: {data: {receipt: by-call}}}
turns:
  - intent: {name: add}
  - intent: {name: pay}
    expect_world: {receipt: by-call}
`,
		"cassette.yaml": `test_kind: flow
app: ` + app + `
host_cassette: c.yaml
turns:
  - intent: {name: add}
  - intent: {name: pay}
    expect_world: {receipt: R-1}
`,
		"c.yaml": "kind: host_cassette\nepisodes:\n  - {id: slow, match: {handler: host.pay}, delay: 1d12h, response: {data: {receipt: R-1}}}\n",
	})
	for file, wantAfter := range map[string]time.Duration{"stub.yaml": 72 * time.Hour, "cassette.yaml": 36 * time.Hour} {
		t.Run(file, func(t *testing.T) {
			res := runFile(t, filepath.Join(dir, file), WithTrace())
			if !res[0].Passed {
				t.Fatalf("report:\n%s", report(res, true))
			}
			evs, err := trace.Read(bytes.NewReader(res[0].Trace))
			if err != nil {
				t.Fatal(err)
			}
			var dispatched, returned time.Time
			for _, ev := range evs {
				ts, err := time.Parse(time.RFC3339Nano, ev.TS)
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Kind {
				case trace.KindHarnessDispatched:
					dispatched = ts
				case trace.KindHarnessReturned:
					returned = ts
				}
			}
			if !dispatched.Equal(FlowEpoch) || returned.Sub(dispatched) != wantAfter {
				t.Errorf("dispatched at %v, returned at %v: want the clock to move by %v", dispatched, returned, wantAfter)
			}
		})
	}
}

// Without <app dir>/flows, fixtures are looked for in ./flows, then next
// to the story as <app>-flows.
func TestDefaultFlowsGlobWorkingDir(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{"stories/app.yaml": "", "flows/x.yaml": ""})
	t.Chdir(dir)
	if got := DefaultFlowsGlob(filepath.Join("stories", "app.yaml")); got != filepath.Join("flows", "*.yaml") {
		t.Errorf("with ./flows: %s", got)
	}
}

// expect_events_count_atleast / _atmost bound the events the flow's turns
// write (the turn-0 seed is not counted).
func TestFlowEventCounts(t *testing.T) {
	app := mustAbs(t, shopApp)
	tests := []struct{ bounds, want string }{
		{"expect_events_count_atleast: 7\nexpect_events_count_atmost: 7\n", "PASS  f.yaml\n"},
		{"expect_events_count_atleast: 8\n", "FAIL  f.yaml\n  FAIL  [session]\n  ✗ expect_events_count_atleast: the flow's turns wrote 7 trace event(s), want at least 8\n"},
		{"expect_events_count_atmost: 6\n", "FAIL  f.yaml\n  FAIL  [session]\n  ✗ expect_events_count_atmost: the flow's turns wrote 7 trace event(s), want at most 6\n"},
	}
	for _, tt := range tests {
		t.Run(tt.bounds, func(t *testing.T) {
			dir := testkit.Tree(t, map[string]string{"f.yaml": "test_kind: flow\napp: " + app + "\ninitial_world: {note: x}\nturns: [{intent: add}]\n" + tt.bounds})
			if got := report(runFile(t, filepath.Join(dir, "f.yaml")), false); got != tt.want {
				t.Errorf("report:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// A fixture that cannot run (a setup error) fails on its own line with
// the error; the fixtures before and after it still run.
func TestSetupErrorDoesNotStopTheRun(t *testing.T) {
	dir := t.TempDir()
	abs, err := filepath.Abs(shopApp)
	if err != nil {
		t.Fatal(err)
	}
	good := "test_kind: flow\napp: " + abs + "\nturns: []\n"
	files := map[string]string{
		"a.yaml": good,
		"b.yaml": "test_kind: flow\napp: " + abs + "\ninitial_state: nowhere\nturns: []\n",
		"c.yaml": good,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep := runFixtures(t, abs, filepath.Join(dir, "*.yaml"), WithFlowWorkspace("/"))
	if rep.Passed != 2 || rep.Failed != 1 {
		t.Errorf("passed %d, failed %d; want 2 and 1:\n%s", rep.Passed, rep.Failed, report(rep.Results, false))
	}
	errs := rep.SetupErrors()
	if len(errs) != 1 || !strings.HasPrefix(errs[0], `b.yaml: initial_state "nowhere" is not a state of`) {
		t.Fatalf("setup errors = %q", errs)
	}
	want := "PASS  a.yaml\nFAIL  b.yaml\n  ✗ setup: " + errs[0] + "\nPASS  c.yaml\n"
	if diff := cmp.Diff(want, report(rep.Results, false)); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// WithSummaryReport: each still sees every result whole, while the report
// keeps each flow's outcome only; the counts and the summary are the same.
func TestSummaryReportKeepsOutcomes(t *testing.T) {
	fxs, err := LoadFixtures(shopApp, "testdata/shop/failing/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		Name                 string
		Passed, Skipped      bool
		SetupError           string
		Turns, SeenTurns     int
		Warnings, HostErrors int
	}
	run := func(opts ...FlowOption) ([]outcome, string) {
		r := NewRunner(append([]FlowOption{WithFlowGetenv(testkit.NoEnv)}, opts...)...)
		defer r.Close()
		seen := map[string]int{}
		rep, err := r.RunFixtures(context.Background(), fxs, false, func(res *FlowResult) { seen[res.Name] = len(res.Turns) })
		if err != nil {
			t.Fatal(err)
		}
		var out []outcome
		for _, res := range rep.Results {
			out = append(out, outcome{Name: res.Name, Passed: res.Passed, Skipped: res.Skipped, SetupError: res.SetupError,
				Turns: len(res.Turns), SeenTurns: seen[res.Name], Warnings: len(res.Warnings), HostErrors: len(res.HostErrors)})
		}
		var b bytes.Buffer
		rep.WriteSummary(&b)
		return out, b.String()
	}
	full, fullSummary := run()
	summary, summarySummary := run(WithSummaryReport())
	want := make([]outcome, len(full))
	for i, o := range full {
		if o.Turns == 0 {
			t.Fatalf("%s: no turns in the full report; the test needs flows that ran", o.Name)
		}
		o.Turns, o.Warnings, o.HostErrors = 0, 0, 0
		want[i] = o
	}
	if diff := cmp.Diff(want, summary); diff != "" {
		t.Errorf("summary report (-want +got):\n%s", diff)
	}
	if summarySummary != fullSummary {
		t.Errorf("summary = %q, want %q", summarySummary, fullSummary)
	}
}
