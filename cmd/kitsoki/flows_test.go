package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/kitsoki/kitsoki/internal/serve/mcpserve"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
	"github.com/spf13/cobra"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kitsoki/kitsoki/internal/observe/trace"
)

const shopApp = "../../internal/check/testrunner/testdata/shop/app.yaml"

func TestFlowsHelloPass(t *testing.T) {
	code, out, errs := runCLI(t, "", "test", "flows", hello)
	want := "PASS  agent_error.yaml\nPASS  guard_failure.yaml\nPASS  happy_path.yaml\n\nSummary: 3/3 flows pass\nPASS\n"
	if code != 0 || out != want {
		t.Errorf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errs)
	}
}

func TestFlowsExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("test_kind: flow\nturns: [{intent: add, expect_stat: x}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badBindings := filepath.Join(dir, "bindings.yaml")
	if err := os.WriteFile(badBindings, []byte("test_kind: flow\nhost_bindings: [host.run]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"bad host_bindings", []string{"test", "flows", shopApp, "--flows", badBindings}, 2,
			[]string{"FAIL  bindings.yaml\n  ✗ setup: " + badBindings + ":2:16: host_bindings must be a mapping", "\nSummary: 0/1 flows pass\nFAIL\n"},
			`kitsoki test flows: ` + badBindings + `:2:16: host_bindings must be a mapping of {interface or handler: handler}, e.g. host_bindings: {host.run: host.run} or {transport: host.artifacts_dir}; got a list` + "\n"},
		{"failing flows", []string{"test", "flows", shopApp, "--flows", "../../internal/check/testrunner/testdata/shop/failing/*.yaml"}, 1,
			[]string{"FAIL  state.yaml\n  FAIL  turn 1 → cart\n  ✗ expect_state: got \"cart\", want \"paying\"\n", "\nSummary: 0/7 flows pass\nFAIL\n"}, ""},
		{"verbose passing", []string{"test", "flows", shopApp, "--v"}, 0,
			[]string{"PASS  passing.yaml#1\n  ok    turn 1 → cart\n", "SKIP  passing.yaml#3\n  skipped: test_kind is \"\", not flow\n", "Summary: 2/2 flows pass\nPASS\n"}, ""},
		{"fail fast", []string{"test", "flows", shopApp, "--flows", "../../internal/check/testrunner/testdata/shop/failing/*.yaml", "--fail-fast"}, 1,
			[]string{"FAIL  events.yaml\n", "\nSummary: 0/1 flows pass\nFAIL\n"}, ""},
		{"bad fixture", []string{"test", "flows", shopApp, "--flows", bad}, 2,
			[]string{"FAIL  bad.yaml\n  ✗ setup: " + bad + ":2:23: turns[0].expect_stat: unknown key"},
			`kitsoki test flows: ` + bad + `:2:23: turns[0].expect_stat: unknown key "expect_stat"`},
		{"no fixtures", []string{"test", "flows", shopApp, "--flows", filepath.Join(dir, "none", "*.yaml")}, 2, nil,
			"kitsoki test flows: no flow fixtures match"},
		{"missing story", []string{"test", "flows", filepath.Join(dir, "nope.yaml")}, 2, nil, "nope.yaml: cannot read story file: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "", tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tt.stderr != "" && !strings.Contains(errs, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, errs)
			}
			if tt.code == 2 && tt.stdout == nil && out != "" {
				t.Errorf("a setup error of the whole run prints no report:\n%s", out)
			}
		})
	}
}

func TestFlowsJSONAndTraceOut(t *testing.T) {
	dir := t.TempDir()
	js, tr := filepath.Join(dir, "r.json"), filepath.Join(dir, "traces", "run.jsonl")
	code, out, errs := runCLI(t, "", "test", "flows", hello, "--json", js, "--trace-out", tr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			File    string
			Passed  bool
			Skipped bool
			Turns   []struct {
				TurnIndex int
				Passed    bool
				Failures  []string
				NewState  string
				View      string
				Events    []map[string]any
			}
		}
		Passed, Failed int
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Passed != 3 || rep.Failed != 0 || len(rep.Results) != 3 || rep.Results[2].File != "../../stories/hello/flows/happy_path.yaml" {
		t.Fatalf("report = %+v", rep)
	}
	happy := rep.Results[2]
	if happy.Turns[0].NewState != "greeted" || happy.Turns[0].View != "Ada was greeted (formal)." || len(happy.Turns[0].Events) == 0 {
		t.Errorf("turn 1 = %+v", happy.Turns[0])
	}
	for _, name := range []string{"run.agent_error.jsonl", "run.guard_failure.jsonl", "run.happy_path.jsonl"} {
		evs, err := trace.ReadFile(filepath.Join(dir, "traces", name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(evs) == 0 || evs[0].Kind != trace.KindMachineTransition || evs[0].Payload["intent"] != "__seed__" {
			t.Errorf("%s starts with %+v", name, evs[0])
		}
	}
	one := filepath.Join(dir, "one.jsonl")
	if code, out, errs := runCLI(t, "", "test", "flows", hello, "--flows", "../../stories/hello/flows/happy_path.yaml", "--trace-out", one); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := trace.ReadFile(one); err != nil {
		t.Errorf("single flow trace: %v", err)
	}
}

// Re-recording the demo run gives the committed cassette byte for byte.
func TestRecordHelloIsDeterministic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.yaml")
	code, out, errs := runCLI(t, "", "run", hello, "--record", path, "--trace", filepath.Join(t.TempDir(), "t.jsonl"),
		"--intents", "greet name=Ada style=formal,again,greet name=Grace,bye")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "kitsoki: recorded 2 episode(s) to "+path) {
		t.Errorf("stderr: %s", errs)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../stories/hello/cassettes/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("re-recording differs from stories/hello/cassettes/demo.yaml:\n%s", got)
	}
}

// make demo's command: the story replays its cassette, and the output is
// the live run's.
func TestRunFromCassette(t *testing.T) {
	intents := "greet name=Ada style=formal,again,greet name=Grace,bye"
	_, live, _ := runCLI(t, "", "run", hello, "--trace", filepath.Join(t.TempDir(), "a.jsonl"), "--intents", intents)
	tr := filepath.Join(t.TempDir(), "b.jsonl")
	code, out, errs := runCLI(t, "", "run", hello, "--cassette", "../../stories/hello/cassettes/demo.yaml", "--trace", tr, "--intents", intents)
	if code != 0 || out != live {
		t.Fatalf("exit %d\nstdout:\n%s\nlive:\n%s\nstderr:\n%s", code, out, live, errs)
	}
	evs, err := trace.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	var eps []string
	for _, ev := range evs {
		if ev.Kind == trace.KindAgentCallStart {
			eps = append(eps, fmt.Sprintf("%s/%s", ev.EpisodeID, ev.CallID))
		}
	}
	want := []string{"recorded_agent.demo_greeting/" + trace.CallID("hello", "recorded_agent.demo_greeting:0"),
		"recorded_agent.demo_greeting_2/" + trace.CallID("hello", "recorded_agent.demo_greeting_2:0")}
	if strings.Join(eps, " ") != strings.Join(want, " ") {
		t.Errorf("agent.call.start episodes = %v, want %v", eps, want)
	}
}

func TestRunCassetteErrors(t *testing.T) {
	dir := t.TempDir()
	ne := filepath.Join(dir, "ne.yaml")
	if err := os.WriteFile(ne, []byte("kind: host_cassette\nrecord_mode: new_episodes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trf := func() string { return filepath.Join(t.TempDir(), "t.jsonl") }
	code, _, errs := runCLI(t, "", "run", hello, "--cassette", ne, "--record", filepath.Join(dir, "x.yaml"), "--trace", trf())
	if code != exitFailure || !strings.Contains(errs, "--cassette and --record cannot be combined") {
		t.Errorf("both flags: exit %d stderr %s", code, errs)
	}
	code, _, errs = runCLI(t, "", "run", hello, "--cassette", filepath.Join(dir, "missing.yaml"), "--trace", trf())
	if code != exitFailure || !strings.Contains(errs, `cassette: "`+filepath.Join(dir, "missing.yaml")+`": open `) {
		t.Errorf("missing cassette: exit %d stderr %s", code, errs)
	}
	code, _, errs = runCLI(t, "", "run", hello, "--cassette-strict", "--trace", trf())
	if code != exitFailure || !strings.Contains(errs, "--cassette-strict applies to a replay: give --cassette FILE too\n") {
		t.Errorf("--cassette-strict alone: exit %d stderr %s", code, errs)
	}
	t.Setenv("KITSOKI_CASSETTE_STRICT", "1")
	code, _, errs = runCLI(t, "", "run", hello, "--cassette", ne, "--trace", trf())
	if code != exitFailure || !strings.Contains(errs, `KITSOKI_CASSETTE_STRICT=1 but cassette record mode is "new_episodes"`) {
		t.Errorf("strict: exit %d stderr %s", code, errs)
	}
}

// With KITSOKI_CASSETTE_RECORD=new_episodes, a miss runs the real agent and
// the exchange is appended to the cassette file.
func TestRunCassetteNewEpisodes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("kind: host_cassette\napp_id: hello\nepisodes: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KITSOKI_CASSETTE_RECORD", "new_episodes")
	code, out, errs := runCLI(t, "", "run", hello, "--cassette", path, "--trace", filepath.Join(t.TempDir(), "t.jsonl"),
		"--intents", "greet name=Ada,bye")
	if code != 0 || !strings.Contains(out, "Hey Ada, good to see you!") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "# appended by KITSOKI_CASSETTE_RECORD\n  - id: recorded_agent.demo_greeting\n") {
		t.Errorf("cassette:\n%s", b)
	}
}

func TestTraceToCassette(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "run.jsonl")
	intents := "greet name=Ada style=formal,again,greet name=Grace,bye"
	if code, out, errs := runCLI(t, "", "run", hello, "--trace", tr, "--intents", intents); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, yml, errs := runCLI(t, "", "trace", "to-cassette", tr, "--app-id", "hello")
	if code != 0 || !strings.HasPrefix(yml, "kind: host_cassette\napp_id: hello\n") || !strings.Contains(yml, "id: recorded_host.agent.decide_greeting_2\n") {
		t.Fatalf("exit %d\n%s\n%s", code, yml, errs)
	}
	cas := filepath.Join(dir, "bug.yaml.zst")
	if code, _, errs := runCLI(t, "", "trace", "to-cassette", tr, "-o", cas); code != 0 || !strings.Contains(errs, "wrote 2 episode(s)") {
		t.Fatalf("exit %d %s", code, errs)
	}
	code, out, errs := runCLI(t, "", "run", hello, "--cassette", cas, "--trace", filepath.Join(dir, "replay.jsonl"), "--intents", intents)
	if code != 0 || !strings.Contains(out, "Hey Grace, good to see you!") {
		t.Errorf("replay of the converted trace: exit %d\n%s\n%s", code, out, errs)
	}
	broken := filepath.Join(dir, "broken.jsonl")
	if err := os.WriteFile(broken, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLI(t, "", "trace", "to-cassette", broken)
	if code != exitFailure || !strings.Contains(errs, "kitsoki trace to-cassette: "+broken+": ") {
		t.Errorf("broken trace: exit %d stderr %s", code, errs)
	}
}

// An invoke of a handler nothing provides is refused when the story loads
// (validate and run: exit 2, naming the handler), while a flow whose
// fixture stubs the handler passes.
func TestUnknownHandlerRefusedAtLoad(t *testing.T) {
	dir := testkit.Tree(t, map[string]string{
		"app.yaml": `app: {id: x}
intents: {go: {}}
root: a
states:
  a: {on: {go: [{target: b}]}}
  b: {terminal: true, on_enter: [{invoke: host.nothing.here}]}
`,
		"flows/stub.yaml": `test_kind: flow
app: ../app.yaml
host_handlers:
  host.nothing.here: {data: {v: 1}}
turns:
  - intent: go
expect_no_errors: true
`,
	})
	app := filepath.Join(dir, "app.yaml")
	const want = `app.yaml:6:43: states.b.on_enter[0].invoke: state "b": on_enter invoke "host.nothing.here": no handler provides host.nothing.here: it is not built in, no host plugin serves it and it is no interface's; declare a host plugin that serves it (host_plugins:) or remove the call (kitsoki hosts lists the handlers kitsoki provides)`
	for _, args := range [][]string{
		{"validate", app},
		{"run", app, "--trace", filepath.Join(dir, "t.jsonl"), "--intents", "go"},
	} {
		code, _, errs := runCLI(t, "", args...)
		if code != exitLoad || !strings.Contains(errs, want) {
			t.Errorf("kitsoki %s: exit %d (want %d) stderr:\n%s\nwant it to hold:\n%s", args[0], code, exitLoad, errs, want)
		}
	}
	code, out, errs := runCLI(t, "", "test", "flows", app)
	if code != 0 || !strings.Contains(out, "PASS  stub.yaml") {
		t.Errorf("kitsoki test flows: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// A cassette with episodes for the handler provides it to a run.
	tape := filepath.Join(dir, "tape.yaml")
	if err := os.WriteFile(tape, []byte("kind: host_cassette\napp_id: x\nepisodes:\n  - id: here\n    match: {handler: host.nothing}\n    response: {data: {v: 1}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "", "run", app, "--cassette", tape, "--trace", filepath.Join(dir, "c.jsonl"), "--intents", "go"); code != exitOK {
		t.Errorf("kitsoki run --cassette: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// A run an MCP client starts loads the story the same way.
	if _, err := startRun(&globals{}, &cobra.Command{}, nil)(t.Context(), mcpserve.StartRunRequest{Story: app, Workspace: dir, Intents: []string{"go"}}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("MCP-started run: error %v, want it to hold %s", err, want)
	}
	// viz loads as flows do: the call is drawn.
	code, out, errs = runCLI(t, "", "viz", app)
	if code != 0 || !strings.Contains(out, `s1(["b (terminal)<br/>on_enter: host.nothing.here"])`) {
		t.Errorf("kitsoki viz: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// The flows replay the demo cassette with the request hashes it was
// recorded with: strict replay passes and warns of nothing.
func TestFlowsHelloCassetteStrict(t *testing.T) {
	code, out, errs := runCLI(t, "", "test", "flows", hello, "--cassette-strict")
	want := "PASS  agent_error.yaml\nPASS  guard_failure.yaml\nPASS  happy_path.yaml\n\nSummary: 3/3 flows pass\nPASS\n"
	if code != 0 || out != want {
		t.Errorf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errs)
	}
}

// A replay for another request than the recorded one answers with a
// warning on stderr; --cassette-strict refuses the episode, and the miss
// ends the run with exit 4 although on_error handled the call.
func TestRunCassetteRequestHash(t *testing.T) {
	const demo = "../../stories/hello/cassettes/demo.yaml"
	// The hash of the greet call for Bob (formal), which the demo did not record.
	const bobHash = "60b248ea47938650"
	mismatch := `cassette episode 1 "recorded_agent.demo_greeting" (agent.demo): recorded for a different request (hash 6def3da81df21156 ≠ ` + bobHash + `)`
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{"same requests", nil, exitOK, "", nil},
		{"warn", []string{"--intents", "greet name=Bob style=formal,bye"}, exitOK,
			"Good day, Ada. It is a pleasure to make your acquaintance.\n", []string{"warning: " + mismatch + "\n"}},
		{"strict", []string{"--cassette-strict", "--intents", "greet name=Bob style=formal,bye"}, exitAgent, "",
			[]string{"kitsoki: --cassette " + demo + ": " + mismatch + "; refused under --cassette-strict\n",
				"kitsoki: stopped at input line 1: greet name=Bob style=formal\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"run", hello, "--cassette", demo, "--trace", filepath.Join(t.TempDir(), "t.jsonl")}
			if tt.args == nil {
				args = append(args, "--cassette-strict", "--intents", "greet name=Ada style=formal,again,greet name=Grace,bye")
			}
			code, out, errs := runCLI(t, "", append(args, tt.args...)...)
			if code != tt.code || !strings.Contains(out, tt.stdout) {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
			if tt.stderr == nil && strings.Contains(errs, "warning:") {
				t.Errorf("unexpected warning:\n%s", errs)
			}
		})
	}
}

// A replay miss is an error with exit 4, also when on_error handled the
// failed call and the run could have gone on.
func TestRunCassetteMiss(t *testing.T) {
	code, out, errs := runCLI(t, "", "run", hello, "--cassette", "../../stories/hello/cassettes/demo.yaml",
		"--trace", filepath.Join(t.TempDir(), "t.jsonl"),
		"--intents", "greet name=Ada style=formal,again,greet name=Grace,again,greet name=Lin,bye")
	want := `kitsoki: --cassette ../../stories/hello/cassettes/demo.yaml: cassette miss: no episode matched handler="agent.demo" args=`
	if code != exitAgent || !strings.Contains(errs, want) || !strings.Contains(errs, "kitsoki: stopped at input line 5: greet name=Lin\n") {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitAgent, out, errs)
	}
}

// --trace-out writes each flow's transcript sidecars into transcripts/
// beside the traces; two flows that would write different transcripts
// under one call_id (cassettes sharing an app id and episode id) are a
// setup error that says so, and the same transcript twice is written once.
func TestFlowTraceOutTranscripts(t *testing.T) {
	t.Setenv("LEAKY_TOKEN", leakySecret)
	for _, tc := range []struct {
		name   string
		second string // flow b's transcript event
		code   int
		errs   string
	}{
		{"same transcript", `{"n":1}`, 0, ""},
		{"different transcripts", `{"n":2}`, exitFlowsSetup, "write different transcripts under the same call_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyFixture(t, "leaky")
			write := fileWriter(t, dir)
			if err := os.MkdirAll(filepath.Join(dir, "flows"), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, ev := range map[string]string{"a": `{"n":1}`, "b": tc.second} {
				write(name+"-cassette.yaml", `kind: host_cassette
episodes:
  - id: e
    match: {handler: agent.answer}
    agent: {verb: decide, response: '{"text":"hi"}', transcript: {format: test, events: ['`+ev+`']}}
`, 0o644)
				write("flows/"+name+".yaml", `test_kind: flow
app: ../app.yaml
host_cassette: ../`+name+`-cassette.yaml
turns:
  - intent: {name: answer}
    expect_view_matches: "^leak: hi$"
`, 0o644)
			}
			tr := filepath.Join(dir, "out", "run.jsonl")
			code, out, errs := runCLI(t, "", "test", "flows", filepath.Join(dir, "app.yaml"), "--trace-out", tr)
			if code != tc.code || !strings.Contains(errs, tc.errs) {
				t.Fatalf("exit %d, want %d; stderr lacks %q?\n%s\n%s", code, tc.code, tc.errs, out, errs)
			}
			if tc.code != 0 {
				return
			}
			side, err := filepath.Glob(filepath.Join(dir, "out", "transcripts", "*.jsonl"))
			if err != nil || len(side) != 1 {
				t.Fatalf("sidecars %v (%v), want the one both flows share", side, err)
			}
			if got := readArtifact(t, side[0]); got != "{\"n\":1}\n" {
				t.Errorf("sidecar %q", got)
			}
			for _, f := range []string{"run.a.jsonl", "run.b.jsonl"} {
				if !strings.Contains(readArtifact(t, filepath.Join(dir, "out", f)), `"path":"transcripts/`+strings.TrimSuffix(filepath.Base(side[0]), ".jsonl")+`.jsonl"`) {
					t.Errorf("%s does not point at %s", f, side[0])
				}
			}
		})
	}
}
