package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCloakIntentFixturesWithoutAModel(t *testing.T) {
	app := kitsokiApp(t, "cloak")
	code, out, errs := runCLI(t, "", "test", "intents", app)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "intents: 15 passed, 0 failed") {
		t.Errorf("stdout lacks the 15 of 15 line:\n%s", out)
	}
	for _, want := range []string{
		"PASS   state:foyer          go-south-canonical           100/100 (100.0%)",
		"PASS   state:foyer          adversarial-out-of-state     25/25 (100.0%)",
		`skip  "toward the bar": no recording entry; only a model can answer it`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// Without the recording the tiers still answer; what only the
	// recording knew ("s", "leave") is skipped, nothing fails.
	if err := os.Remove(filepath.Join(filepath.Dir(app), "recording.yaml")); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "", "test", "intents", app, "--runs", "1")
	if code != exitOK || !strings.Contains(out, "intents: 15 passed, 0 failed") || !strings.Contains(out, `skip  "s"`) {
		t.Errorf("without a recording: exit %d\n%s", code, out)
	}
}

func TestIntentFixtureErrors(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	src := "app: {id: door}\nintents:\n  open: {examples: [\"open it\"]}\nroot: hall\nstates:\n  hall:\n    on:\n      open: [{target: .}]\n"
	if err := os.WriteFile(app, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "intents"), 0o755); err != nil {
		t.Fatal(err)
	}
	fx := "test_kind: intents\nstate: hal\ndefaults: {runs: 0, min_pass_rat: 0.5}\nfixtures:\n  - id: x\n    intent: {name: opn}\n    inputs: [\"open it\"]\n    expect_failure: {any_of: [UNKNOWN_INTENT]}\n"
	if err := os.WriteFile(filepath.Join(dir, "intents", "a.yaml"), []byte(fx), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "", "test", "intents", app)
	if code != exitIntentsSetup {
		t.Fatalf("exit %d, want %d\n%s", code, exitIntentsSetup, errs)
	}
	for _, want := range []string{
		`a.yaml:2:8: state: state "hal" is not declared in the story (did you mean "hall"?)`,
		`a.yaml:3:18: defaults.runs: runs must be a whole number of at least 1, got the scalar "0"`,
		`a.yaml:3:21: defaults.min_pass_rat: unknown key "min_pass_rat" (did you mean "min_pass_rate"?) (known: runs, min_pass_rate, temperature)`,
		`a.yaml:6:20: fixtures[0].intent.name: intent "opn" is not declared in the story (did you mean "open"?)`,
		`a.yaml:6:13: fixtures[0]: a fixture expects one of intent:, expect_failure: or expect_fallthrough: true`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestRunRecordingAnswersFreeText(t *testing.T) {
	app := kitsokiApp(t, "cloak")
	rec := filepath.Join(filepath.Dir(app), "recording.yaml")
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	code, out, errs := runCLI(t, "", "run", app, "--recording", rec, "--trace", tr, "--say", "head south", "--say", "go north", "--say", "go to the cloakroom")
	if code != exitIncomplete {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "BAR (DARK)") || !strings.Contains(out, "CLOAKROOM") {
		t.Errorf("head south must reach the bar and the recording's \"go to the cloakroom\" the cloakroom:\n%s", out)
	}
	b, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"tier":"recording"`) {
		t.Errorf("the trace records no turn routed by the recording:\n%s", b)
	}
	code, _, errs = runCLI(t, "", "run", app, "--recording", rec, "--say", "dance a jig")
	if code == exitOK || !strings.Contains(errs, `UNKNOWN_INTENT: input "dance a jig" in state "foyer" has no entry in the recording`) {
		t.Errorf("a recording miss: exit %d\n%s", code, errs)
	}
}
