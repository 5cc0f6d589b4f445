package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/observe/trace"
	"github.com/kitsoki/kitsoki/internal/testsupport/testkit"
)

const (
	helloDir      = "../../stories/hello"
	helloEval     = helloDir + "/evals/compose.yaml"
	helloCassette = helloDir + "/evals/cassettes/compose.yaml"
	helloReport   = helloDir + "/evals/reports/compose/latest.json"
)

// copyHello copies the hello story (app, prompts, schemas, evals) to a
// temporary directory.
func copyHello(t *testing.T) string {
	t.Helper()
	return testkit.CopyDir(t, helloDir)
}

func TestEvalList(t *testing.T) {
	code, out, errs := runCLI(t, "", "eval", "list", helloDir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "CALL     STATUS   COMPARATOR  PIN                       PATH\n" +
		"compose  passing  enum        agent.demo/scripted-demo  " + filepath.Join(helloDir, "evals", "compose.yaml") + "\n"
	if out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	code, out, _ = runCLI(t, "", "eval", "list", helloEval, "--json")
	var rows []map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("exit %d, stdout %s", code, out)
	}
	wantRows := []map[string]any{{"call": "compose", "status": "passing", "comparator": "enum", "pin": "agent.demo/scripted-demo", "path": helloEval}}
	if diff := cmp.Diff(wantRows, rows); diff != "" {
		t.Errorf("--json (-want +got):\n%s", diff)
	}

	// A directory without evals lists nothing; an invalid dataset is listed
	// as invalid.
	dir := t.TempDir()
	if code, out, _ := runCLI(t, "", "eval", "list", dir, "--json"); code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("empty dir: exit %d, %q", code, out)
	}
	os.MkdirAll(filepath.Join(dir, "evals"), 0o755)
	os.WriteFile(filepath.Join(dir, "evals", "x.yaml"), []byte("kind: agent_eval\ncall: c\ncomparator: exact\n"), 0o644)
	if _, out, _ := runCLI(t, "", "eval", "list", dir); !strings.Contains(out, "\nc     invalid  exact       -    ") {
		t.Errorf("invalid dataset line = %q", out)
	}
}

func TestEvalShow(t *testing.T) {
	code, out, errs := runCLI(t, "", "eval", "show", helloEval)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "call: compose\nhandler: host.agent.decide\nstate: greeting\nschema: schemas/greeting.json\ncomparator: enum\nstatus: passing\n"
	if out != want {
		t.Errorf("dataset:\n%s\nwant:\n%s", out, want)
	}

	code, out, _ = runCLI(t, "", "eval", "show", helloEval, "--json")
	var v map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, k := range []string{"dataset", "call", "errors", "warnings", "latest_report"} {
		if _, ok := v[k]; !ok {
			t.Errorf("--json lacks %q: %s", k, out)
		}
	}
	if v["call"].(map[string]any)["state_path"] != "greeting" || v["latest_report"].(map[string]any)["kind"] != "agent_eval_report" {
		t.Errorf("--json = %s", out)
	}

	code, out, _ = runCLI(t, "", "eval", "show", helloReport)
	want = "eval: compose\ncall: compose\nstatus candidates: 1\n- agent.demo/scripted-demo effort= pass pass_rate=1.00 cost=0.000000 p95=0ms\n"
	if code != exitOK || out != want {
		t.Errorf("report: exit %d\n%s\nwant:\n%s", code, out, want)
	}
	raw, _ := os.ReadFile(helloReport)
	if _, out, _ = runCLI(t, "", "eval", "show", helloReport, "--json"); out != string(raw) {
		t.Errorf("report --json is not the report")
	}
	if _, out, _ = runCLI(t, "", "eval", "show", helloReport, "--md"); !strings.Contains(out, "| agent.demo/scripted-demo | yes | 1.00 (0.80–1.00) |") {
		t.Errorf("--md:\n%s", out)
	}
}

func TestEvalInvalid(t *testing.T) {
	dir := copyHello(t)
	p := filepath.Join(dir, "evals", "compose.yaml")
	os.WriteFile(p, []byte("kind: agent_eval\napp: ../app.yaml\ncall: nope\ncomparator: judge\nexamples: []\n"), 0o644)
	wantLines := "WARN: judge comparator requires passing evidence for the judge call site before promotion\n" +
		"ERROR: at least one example is required\n" +
		"ERROR: call site \"nope\" not found; add id: nope to the target host.agent.* invoke\n"
	code, out, errs := runCLI(t, "", "eval", "show", p)
	if code != exitFailure || !strings.HasSuffix(out, "status: invalid\n"+wantLines) || strings.TrimSpace(errs) != "eval validation failed" {
		t.Errorf("show: exit %d\nstdout:\n%s\nstderr: %s", code, out, errs)
	}
	// run prints only the ERROR lines on stdout (§7); the warning goes to
	// stderr, before the failure.
	code, out, errs = runCLI(t, "", "eval", "run", p)
	wantRun := "ERROR: at least one example is required\n" +
		"ERROR: call site \"nope\" not found; add id: nope to the target host.agent.* invoke\n"
	wantErr := "WARN: judge comparator requires passing evidence for the judge call site before promotion\neval validation failed"
	if code != exitFailure || out != wantRun || strings.TrimSpace(errs) != wantErr {
		t.Errorf("run: exit %d\nstdout:\n%s\nstderr: %s", code, out, errs)
	}
}

func TestEvalRunOffline(t *testing.T) {
	code, out, _ := runCLI(t, "", "eval", "run", helloEval)
	want := "OK offline eval contract: compose (host.agent.decide)\nlive benchmark not run; pass --live to use provider-backed harness profiles\n"
	if code != exitOK || out != want {
		t.Errorf("exit %d: %q", code, out)
	}
	code, out, _ = runCLI(t, "", "eval", "run", helloEval, "--json")
	want = `{
  "ok": true,
  "mode": "offline",
  "call": {
    "call": "compose",
    "handler": "host.agent.decide",
    "agent": "greeter",
    "prompt_path": "prompts/greet.md",
    "schema_path": "schemas/greeting.json",
    "schema_name": "greeting.json",
    "effect_index": 0,
    "state_path": "greeting",
    "selection_ref": ""
  }
}
`
	if code != exitOK || out != want {
		t.Errorf("--json (-want +got):\n%s", cmp.Diff(want, out))
	}
}

// validateEvalReport checks a report the CLI wrote against
// schemas/eval-report.schema.json.
func validateEvalReport(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := schema.NewCompiler("../../schemas")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sch, err := c.Compile("eval-report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sch.ValidateJSON(b); err != nil {
		t.Errorf("%s does not match schemas/eval-report.schema.json: %v", path, err)
	}
}

// --live --cassette replays the committed cassette into a fresh report;
// --live alone asks the scripted demo agent.
func TestEvalRunLive(t *testing.T) {
	reports := t.TempDir()
	code, out, errs := runCLI(t, "", "eval", "run", helloEval, "--live", "--cassette", helloCassette, "--report-dir", reports)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || lines[0] != "eval compose: call compose (host.agent.decide), replay run, status passing" ||
		lines[1] != "- agent.demo/scripted-demo effort= pass pass_rate=1.00 cost=0.000000 p95=0ms" ||
		lines[2] != "decision: cheapest_passing -> agent.demo/scripted-demo effort=" || !strings.HasPrefix(lines[3], "report: "+reports) {
		t.Errorf("stdout:\n%s", out)
	}
	if !strings.Contains(errs, "[15/15] agent.demo/scripted-demo") {
		t.Errorf("no plain progress lines on a non-terminal stderr:\n%s", errs)
	}
	validateEvalReport(t, filepath.Join(reports, "latest.json"))

	dir := copyHello(t)
	rec := filepath.Join(t.TempDir(), "rec.yaml")
	code, out, errs = runCLI(t, "", "eval", "run", filepath.Join(dir, "evals", "compose.yaml"), "--live", "--record", rec, "--md", "--parallel", "2")
	if code != exitOK || !strings.Contains(out, "**Decision** (`cheapest_passing`): `agent.demo/scripted-demo`") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	validateEvalReport(t, filepath.Join(dir, "evals", "reports", "compose", "latest.json"))
	if b, err := os.ReadFile(rec); err != nil || !strings.Contains(string(b), "handler: agent.demo@scripted-demo") {
		t.Errorf("recorded cassette: %v\n%s", err, b)
	}
	if code, _, errs := runCLI(t, "", "eval", "run", helloEval, "--cassette", rec, "--record", rec); code != exitFailure || !strings.Contains(errs, "cannot be combined") {
		t.Errorf("--cassette with --record: exit %d %s", code, errs)
	}
}

// A selection: pin is honoured when its evidence holds, warned about when
// it does not, and with --strict-pins refused at load.
func TestStrictPins(t *testing.T) {
	dir := copyHello(t)
	app := filepath.Join(dir, "app.yaml")
	b, _ := os.ReadFile(app)
	pin := func(evidence string) {
		s := strings.Replace(string(b), "        on_error: lobby\n",
			"        on_error: lobby\n        selection: {profile: agent.demo, model: scripted-demo, evidence: "+evidence+"}\n", 1)
		if s == string(b) {
			t.Fatal("hello app.yaml changed shape; update the test")
		}
		os.WriteFile(app, []byte(s), 0o644)
	}

	pin("evals/reports/compose/latest.json")
	if code, _, errs := runCLI(t, "", "validate", app, "--strict-pins"); code != exitOK || strings.Contains(errs, "pin") {
		t.Fatalf("honoured pin: exit %d %s", code, errs)
	}
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	if code, _, errs := runCLI(t, "", "run", app, "--strict-pins", "--trace", tr, "--intents", "greet name=Ada,bye"); code != exitOK {
		t.Fatalf("run: exit %d %s", code, errs)
	}
	evs, err := trace.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs {
		if ev.Kind == trace.KindAgentCallStart {
			found = true
			if ev.Payload["pinned"] != true || ev.Payload["profile"] != "agent.demo" || ev.Payload["model"] != "scripted-demo" {
				t.Errorf("agent.call.start = %v", ev.Payload)
			}
		}
	}
	if !found {
		t.Error("no agent.call.start")
	}

	pin("evals/reports/compose/missing.json")
	warning := `pin for call "compose" not applied: evidence evals/reports/compose/missing.json is missing (run kitsoki eval run --live to produce it); using the default route (agent.demo)`
	code, out, errs := runCLI(t, "", "validate", app)
	if code != exitOK || !strings.Contains(errs, "warning: "+warning) || !strings.Contains(out, ": ok (") {
		t.Errorf("validate: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runCLI(t, "", "validate", app, "--strict-pins")
	if code != exitLoad || !strings.Contains(errs, "pins not honoured (--strict-pins):\n  "+warning) {
		t.Errorf("validate --strict-pins: exit %d\n%s", code, errs)
	}
	code, _, errs = runCLI(t, "", "run", app, "--strict-pins", "--trace", tr+"2", "--intents", "greet name=Ada,bye")
	if code != exitLoad || !strings.Contains(errs, warning) {
		t.Errorf("run --strict-pins: exit %d\n%s", code, errs)
	}
}

// A live run (or replay) in which no candidate passes the bar still writes
// its report, then exits 7 so a CI step does not pass on it.
func TestEvalRunLiveNoCandidatePasses(t *testing.T) {
	dir := copyHello(t)
	ds := filepath.Join(dir, "evals", "compose.yaml")
	b, err := os.ReadFile(ds)
	if err != nil {
		t.Fatal(err)
	}
	// One example in five now expects the other register: a pass rate of
	// 0.80 against a bar of 0.95.
	s := strings.Replace(string(b), `expect: {text: "Hey Ada, good to see you!", tone: casual`, `expect: {text: "Hey Ada, good to see you!", tone: formal`, 1)
	if s == string(b) {
		t.Fatal("hello's compose.yaml changed shape; update the test")
	}
	if err := os.WriteFile(ds, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range [][]string{{"--cassette", helloCassette}, {"--live"}, {"--live", "--json"}, {"--live", "--md"}} {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			reports := t.TempDir()
			args := append([]string{"eval", "run", ds, "--report-dir", reports}, mode...)
			code, out, errs := runCLI(t, "", args...)
			if code != exitEvalNoPass {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitEvalNoPass, out, errs)
			}
			wantErr := "kitsoki eval run: no candidate of 1 passed the adherence bar of call compose (report " + filepath.Join(reports, "")
			if !strings.Contains(errs, wantErr) {
				t.Errorf("stderr lacks %q:\n%s", wantErr, errs)
			}
			if plain := mode[len(mode)-1] != "--json" && mode[len(mode)-1] != "--md"; plain && !strings.Contains(out, "decision: cheapest_passing -> none (no candidate passed the adherence bar)") {
				t.Errorf("stdout:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(reports, "latest.json")); err != nil {
				t.Errorf("the report was not written: %v", err)
			}
		})
	}
}
