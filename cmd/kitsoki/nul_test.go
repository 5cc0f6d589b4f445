package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command printing a NUL byte or text not in Unicode NFC, and an agent
// answering with a NUL byte, fail their call as an error on_error handles:
// the run goes on, the journal keeps every turn, and a resume works,
// including one that takes again a turn an older kitsoki left unfinished
// (issue 28: the run ended with exit 1 past on_error, and every resume
// failed the same way).
func TestNULFailsTheCallNotTheRun(t *testing.T) {
	dir := copyFixture(t, "nul")
	app, tr := filepath.Join(dir, "app.yaml"), filepath.Join(dir, "t.jsonl")
	const intents = "print,print,nfd,nfd,ask,ask,clean"
	wantErrs := []string{
		"host.run: its result cannot be kept in the journal: payload contains NUL byte at stdout; " +
			"a NUL byte (U+0000) cannot be stored: strip or encode it where it is made (for a command: | tr -d '\\0', or base64)",
		"host.run: its result cannot be kept in the journal: payload string contains NFD-normalised unicode (must be NFC) at stdout; " +
			"text must be in Unicode NFC: normalise it where it is made (for a command: | uconv -x NFC)",
		"agent: schema_invalid: the answer cannot be kept in the journal: payload contains NUL byte at submission.text",
	}
	check := func(what string, code int, out, errs string) {
		t.Helper()
		if code != exitIncomplete {
			t.Fatalf("%s: exit %d, want %d (the input ends before a terminal state)\n%s\n%s", what, code, exitIncomplete, out, errs)
		}
		if !strings.Contains(out, "errors=3 out=clean") {
			t.Errorf("%s: the session did not go on to the clean call:\n%s", what, out)
		}
		for _, w := range wantErrs {
			if !strings.Contains(out, "broke: "+w) {
				t.Errorf("%s: on_error's view lacks %q:\n%s", what, w, out)
			}
		}
	}
	code, out, errs := runCLI(t, "", "run", app, "--trace", tr, "--intents", intents)
	check("run", code, out, errs)

	// Resume with more inputs.
	code, out, errs = runCLI(t, "", "run", app, "--trace", tr, "--continue", "--intents", intents+",print,clean")
	if code != exitIncomplete || !strings.Contains(out, "errors=4 out=clean") {
		t.Errorf("resume: exit %d\n%s\n%s", code, out, errs)
	}

	// A journal whose first turn stopped at the call (what the NUL byte
	// left before): the resume takes the turn again, and it fails as an
	// error on_error handles.
	b, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		kept = append(kept, line)
		if strings.Contains(line, `"turn":1,`) && strings.Contains(line, `"kind":"harness.dispatched"`) {
			break
		}
	}
	if err := os.WriteFile(tr, []byte(strings.Join(kept, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "", "run", app, "--trace", tr, "--continue", "--intents", intents)
	if !strings.Contains(errs, "turn 1 did not finish; taking it again") {
		t.Errorf("the resume did not take turn 1 again:\n%s", errs)
	}
	check("resume of an unfinished turn", code, out, errs)
}

// A NUL byte in a typed line is refused before a turn starts, as a line
// that does not parse is (exit 3, the message on stderr): the journal
// keeps every turn before it and the session resumes. Before, the turn's
// first event failed and the run ended with exit 1 (issue 28, item 5).
func TestNULInATypedLineIsRefused(t *testing.T) {
	dir := copyFixture(t, "nul")
	app, tr := filepath.Join(dir, "app.yaml"), filepath.Join(dir, "t.jsonl")
	code, out, errs := runCLI(t, "clean\nclean\x00\nclean\n", "run", app, "--trace", tr, "--no-tui")
	if code != exitRejected || !strings.Contains(errs, `the input holds a NUL byte (\x00), which a session cannot record: remove it`) {
		t.Fatalf("exit %d, want %d with the refusal\n%s\n%s", code, exitRejected, out, errs)
	}
	if strings.Contains(errs, "trace:") {
		t.Errorf("the refusal reached the trace writer:\n%s", errs)
	}
	code, out, errs = runCLI(t, "clean\nclean\n", "run", app, "--trace", tr, "--continue", "--no-tui")
	if code != exitIncomplete || !strings.Contains(out, "out=clean") {
		t.Errorf("resume: exit %d\n%s\n%s", code, out, errs)
	}
}
