package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A story directory is its app.yaml for every command that takes a story
// path; a missing file is named as typed; a YAML syntax error names the
// line it is on.
func TestStoryPaths(t *testing.T) {
	const dir = "../../stories/hello"
	for _, args := range [][]string{
		{"validate", dir},
		{"viz", dir},
		{"test", "flows", dir},
		{"run", dir, "--trace", filepath.Join(t.TempDir(), "t.jsonl"), "--intents", "greet name=Ada style=formal,bye",
			"--cassette", dir + "/cassettes/demo.yaml"},
	} {
		if code, out, errs := runCLI(t, "", args...); code != exitOK {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	empty := t.TempDir()
	code, _, errs := runCLI(t, "", "validate", empty)
	if want := filepath.Join(empty, "app.yaml") + ": " + empty + " is a directory without an app.yaml: name the story's root file"; code != exitLoad || !strings.Contains(errs, want) {
		t.Errorf("a directory without app.yaml: exit %d\n%s\nwant %q", code, errs, want)
	}
	code, _, errs = runCLI(t, "", "validate", "../../stories/hello/nope.yaml")
	if want := "../../stories/hello/nope.yaml: cannot read story file: no such file or directory"; code != exitLoad || !strings.Contains(errs, want) {
		t.Errorf("a missing file: exit %d\n%s\nwant %q", code, errs, want)
	}
	bad := filepath.Join(t.TempDir(), "app.yaml")
	os.WriteFile(bad, []byte("app: {id: x}\nroot: a\nstates:\n  a:\n    on: {go: [}\n"), 0o600)
	code, _, errs = runCLI(t, "", "validate", bad)
	if want := "app.yaml:5:1: YAML syntax error: did not find expected node content"; code != exitLoad || !strings.Contains(errs, want) {
		t.Errorf("a syntax error on line 5: exit %d\n%s\nwant %q", code, errs, want)
	}
}
